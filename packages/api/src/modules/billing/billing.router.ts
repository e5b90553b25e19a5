import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import {
  CancelSubscriptionInputSchema,
  CreatePlanInputSchema,
  CreateSubscriptionInputSchema,
  PlanSchema,
  SubscriptionSchema,
  UpdatePlanInputSchema,
  UpdateSubscriptionInputSchema,
} from './billing.schema.ts';
import {
  cancelSubscription,
  createPlan,
  createSubscription,
  deletePlan,
  getPlan,
  getSubscription,
  listPlans,
  listSubscriptions,
  updatePlan,
  updateSubscription,
} from './billing.service.ts';

const tags = ['Billing'];

const plansRouter = router({
  create: secretKeyProcedure('billing:write')
    .meta({
      idempotent: true,
      successStatus: 201,
      openapi: { method: 'POST', path: '/v1/billing/plans', tags, summary: 'Create a plan' },
    })
    .input(CreatePlanInputSchema)
    .output(PlanSchema)
    .mutation(({ ctx, input }) => createPlan(ctx, input)),
  list: secretKeyProcedure('billing:read')
    .meta({ openapi: { method: 'GET', path: '/v1/billing/plans', tags, summary: 'List plans, newest first' } })
    .input(z.strictObject({}).optional())
    .output(z.array(PlanSchema))
    .query(({ ctx }) => listPlans(ctx)),
  get: secretKeyProcedure('billing:read')
    .meta({ openapi: { method: 'GET', path: '/v1/billing/plans/{id}', tags, summary: 'Get a plan' } })
    .input(IdParamSchema)
    .output(PlanSchema)
    .query(({ ctx, input }) => getPlan(ctx, input.id)),
  update: secretKeyProcedure('billing:write')
    .meta({ openapi: { method: 'PATCH', path: '/v1/billing/plans/{id}', tags, summary: 'Update or archive a plan' } })
    .input(UpdatePlanInputSchema)
    .output(PlanSchema)
    .mutation(({ ctx, input }) => updatePlan(ctx, input)),
  delete: secretKeyProcedure('billing:write')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/v1/billing/plans/{id}',
        tags,
        summary: 'Delete a plan nobody subscribed to (one with subscriptions is archived instead: 409)',
      },
    })
    .input(IdParamSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => deletePlan(ctx, input.id)),
});

const subscriptionsRouter = router({
  create: secretKeyProcedure('billing:write')
    .meta({
      idempotent: true,
      successStatus: 201,
      openapi: { method: 'POST', path: '/v1/billing/subscriptions', tags, summary: 'Subscribe an organization to a plan' },
    })
    .input(CreateSubscriptionInputSchema)
    .output(SubscriptionSchema)
    .mutation(({ ctx, input }) => createSubscription(ctx, input)),
  list: secretKeyProcedure('billing:read')
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/billing/subscriptions',
        tags,
        summary: 'Every organization subscription of the application, newest first',
      },
    })
    .input(z.strictObject({}).optional())
    .output(z.array(SubscriptionSchema))
    .query(({ ctx }) => listSubscriptions(ctx)),
  get: secretKeyProcedure('billing:read')
    .meta({ openapi: { method: 'GET', path: '/v1/billing/subscriptions/{id}', tags, summary: 'Get a subscription' } })
    .input(IdParamSchema)
    .output(SubscriptionSchema)
    .query(({ ctx, input }) => getSubscription(ctx, input.id)),
  update: secretKeyProcedure('billing:write')
    .meta({
      openapi: { method: 'PATCH', path: '/v1/billing/subscriptions/{id}', tags, summary: 'Change seats, plan or status' },
    })
    .input(UpdateSubscriptionInputSchema)
    .output(SubscriptionSchema)
    .mutation(({ ctx, input }) => updateSubscription(ctx, input)),
  cancel: secretKeyProcedure('billing:write')
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/billing/subscriptions/{id}/cancel',
        tags,
        summary: 'Cancel now, or at the end of the current period',
      },
    })
    .input(CancelSubscriptionInputSchema)
    .output(SubscriptionSchema)
    .mutation(({ ctx, input }) => cancelSubscription(ctx, input)),
});

export const billingRouter = router({ plans: plansRouter, subscriptions: subscriptionsRouter });

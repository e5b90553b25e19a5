import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import {
  CreateWebhookInputSchema,
  DeliveryPageSchema,
  DeliveryParamsSchema,
  ListDeliveriesInputSchema,
  RecoverInputSchema,
  RecoverResultSchema,
  UpdateWebhookInputSchema,
  WebhookDeliveryDetailSchema,
  WebhookDeliverySchema,
  WebhookEndpointSchema,
  WebhookEndpointWithSecretSchema,
} from './webhooks.schema.ts';
import {
  createWebhook,
  deleteWebhook,
  getDelivery,
  getWebhook,
  listDeliveries,
  listWebhooks,
  recoverDeliveries,
  retryDelivery,
  rotateWebhookSecret,
  testWebhook,
  updateWebhook,
} from './webhooks.service.ts';

const tags = ['Webhooks'];

const deliveriesRouter = router({
  list: secretKeyProcedure('webhooks:read')
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/webhooks/{id}/deliveries',
        tags,
        summary: "List an endpoint's deliveries, newest first",
      },
    })
    .input(ListDeliveriesInputSchema)
    .output(DeliveryPageSchema)
    .query(({ ctx, input }) => listDeliveries(ctx, input)),
  get: secretKeyProcedure('webhooks:read')
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/webhooks/{id}/deliveries/{delivery_id}',
        tags,
        summary: 'Get a delivery with every attempt',
      },
    })
    .input(DeliveryParamsSchema)
    .output(WebhookDeliveryDetailSchema)
    .query(({ ctx, input }) => getDelivery(ctx, input)),
  retry: secretKeyProcedure('webhooks:write')
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/webhooks/{id}/deliveries/{delivery_id}/retry',
        tags,
        summary: 'Send a delivery again now',
      },
    })
    .input(DeliveryParamsSchema)
    .output(WebhookDeliverySchema)
    .mutation(({ ctx, input }) => retryDelivery(ctx, input)),
});

export const webhooksRouter = router({
  create: secretKeyProcedure('webhooks:write')
    .meta({
      idempotent: true,
      successStatus: 201,
      openapi: { method: 'POST', path: '/v1/webhooks', tags, summary: 'Create a webhook endpoint' },
    })
    .input(CreateWebhookInputSchema)
    .output(WebhookEndpointWithSecretSchema)
    .mutation(({ ctx, input }) => createWebhook(ctx, input)),
  list: secretKeyProcedure('webhooks:read')
    .meta({ openapi: { method: 'GET', path: '/v1/webhooks', tags, summary: 'List webhook endpoints' } })
    .input(z.strictObject({}).optional())
    .output(z.array(WebhookEndpointSchema))
    .query(({ ctx }) => listWebhooks(ctx)),
  get: secretKeyProcedure('webhooks:read')
    .meta({ openapi: { method: 'GET', path: '/v1/webhooks/{id}', tags, summary: 'Get a webhook endpoint' } })
    .input(IdParamSchema)
    .output(WebhookEndpointSchema)
    .query(({ ctx, input }) => getWebhook(ctx, input.id)),
  update: secretKeyProcedure('webhooks:write')
    .meta({ openapi: { method: 'PATCH', path: '/v1/webhooks/{id}', tags, summary: 'Update a webhook endpoint' } })
    .input(UpdateWebhookInputSchema)
    .output(WebhookEndpointSchema)
    .mutation(({ ctx, input }) => updateWebhook(ctx, input)),
  delete: secretKeyProcedure('webhooks:write')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/v1/webhooks/{id}',
        tags,
        summary: 'Delete a webhook endpoint and its delivery history',
      },
    })
    .input(IdParamSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => deleteWebhook(ctx, input.id)),
  rotateSecret: secretKeyProcedure('webhooks:write')
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/webhooks/{id}/rotate-secret',
        tags,
        summary: 'Rotate the signing secret (the old one keeps signing for 24 hours)',
      },
    })
    .input(IdParamSchema)
    .output(WebhookEndpointWithSecretSchema)
    .mutation(({ ctx, input }) => rotateWebhookSecret(ctx, input.id)),
  test: secretKeyProcedure('webhooks:write')
    .meta({
      openapi: { method: 'POST', path: '/v1/webhooks/{id}/test', tags, summary: 'Send a webhook.test event to this endpoint' },
    })
    .input(IdParamSchema)
    .output(WebhookDeliverySchema)
    .mutation(({ ctx, input }) => testWebhook(ctx, input.id)),
  recover: secretKeyProcedure('webhooks:write')
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/webhooks/{id}/recover',
        tags,
        summary: 'Re-queue the failed deliveries since a time',
      },
    })
    .input(RecoverInputSchema)
    .output(RecoverResultSchema)
    .mutation(({ ctx, input }) => recoverDeliveries(ctx, input)),
  deliveries: deliveriesRouter,
});

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { EditableTenantRowEntity } from '../applications/tenant-row.entity.ts';
import { OrganizationEntity } from '../organizations/organization.entity.ts';
import { PlanEntity } from './plan.entity.ts';

/** The statuses in which a subscription is live (holds the organization's one slot, and its seat limit applies). */
export const LIVE_STATUSES = ['trialing', 'active', 'past_due'] as const;

/** An organization's subscription to a plan. At most one live subscription per organization (a partial unique index). */
export const SubscriptionEntity = defineEntity({
  name: 'Subscription',
  tableName: 'billing_subscriptions',
  extends: EditableTenantRowEntity,
  properties: {
    organization: () => p.manyToOne(OrganizationEntity).mapToPk().deleteRule('cascade'),
    /** A plan with subscriptions is archived, never deleted. */
    plan: () => p.manyToOne(PlanEntity).mapToPk(),
    /** `trialing` | `active` | `past_due` | `canceled`. */
    status: p.string().length(16),
    seats: p.integer(),
    /** The end of the trial while `trialing`, else of the paid period; housekeeping moves it on. */
    currentPeriodEnd: p.datetime(),
    /** Set by a cancellation: at once (status `canceled`) or at the period's end (status unchanged until then). */
    canceledAt: p.datetime().nullable(),
    cancelAtPeriodEnd: p.boolean().default(false),
  },
  indexes: [
    { properties: ['application', 'createdAt', 'id'] },
    { properties: ['plan'] },
    {
      name: 'billing_subscriptions_live_organization_unique',
      expression: `create unique index "billing_subscriptions_live_organization_unique" on "billing_subscriptions" ("organization_id") where "status" <> 'canceled'`,
    },
    {
      name: 'billing_subscriptions_due_index',
      expression: `create index "billing_subscriptions_due_index" on "billing_subscriptions" ("current_period_end") where "status" <> 'canceled'`,
    },
  ],
});
export type Subscription = InferEntity<typeof SubscriptionEntity>;

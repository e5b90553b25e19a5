import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';
import { OrganizationEntity } from '../organizations/organization.entity.ts';

/** What an organization can subscribe to: a price per interval, plus a price per seat. */
export const PlanEntity = defineEntity({
  name: 'Plan',
  tableName: 'billing_plans',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    key: p.string().length(64),
    name: p.string().length(200),
    /** `month` | `year`. */
    interval: p.string().length(8),
    /** ISO 4217, upper case. */
    currency: p.string().length(3),
    priceCents: p.integer(),
    perSeatCents: p.integer(),
    trialDays: p.integer().default(0),
    /** Set instead of deleting a plan that has subscriptions: it keeps them, and takes no new ones. */
    archivedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ name: 'billing_plans_application_key_unique', properties: ['application', 'key'] }],
  indexes: [{ properties: ['application', 'createdAt', 'id'] }],
});
export type Plan = InferEntity<typeof PlanEntity>;

/** The statuses in which a subscription is live (holds the organization's one slot, and its seat limit applies). */
export const LIVE_STATUSES = ['trialing', 'active', 'past_due'] as const;

/** An organization's subscription to a plan. At most one live subscription per organization (a partial unique index). */
export const SubscriptionEntity = defineEntity({
  name: 'Subscription',
  tableName: 'billing_subscriptions',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
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
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
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

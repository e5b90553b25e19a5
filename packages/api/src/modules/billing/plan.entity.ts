import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';

/** What an organization can subscribe to: a price per interval, plus a price per seat. */
export const PlanEntity = defineEntity({
  name: 'Plan',
  tableName: 'billing_plans',
  extends: TenantRowEntity,
  properties: {
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
  },
  uniques: [{ name: 'billing_plans_application_key_unique', properties: ['application', 'key'] }],
  indexes: [{ properties: ['application', 'createdAt', 'id'] }],
});
export type Plan = InferEntity<typeof PlanEntity>;

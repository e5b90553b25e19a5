import { z } from 'zod';
import { text } from '../../lib/schemas.ts';

export const INTERVALS = ['month', 'year'] as const;
export const SUBSCRIPTION_STATUSES = ['trialing', 'active', 'past_due', 'canceled'] as const;

const Cents = z.number().int().min(0).max(2_000_000_000);

export const PlanSchema = z
  .object({
    id: z.uuid(),
    key: text(),
    name: text(),
    interval: z.enum(INTERVALS),
    currency: text(),
    price_cents: z.number().int(),
    per_seat_cents: z.number().int(),
    trial_days: z.number().int(),
    /** Set when the plan was retired: it keeps its subscriptions and takes no new ones. */
    archived_at: z.iso.datetime().nullable(),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'Plan' });
export type PlanRecord = z.infer<typeof PlanSchema>;

export const CreatePlanInputSchema = z.strictObject({
  key: text()
    .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'a plan key: [a-z0-9][a-z0-9_-]{0,63}')
    .meta({ description: 'Unique within the application', example: 'team' }),
  name: text().trim().min(1).max(200),
  interval: z.enum(INTERVALS),
  // Stripe and most code written against it send lower case: any case is taken, the ISO 4217 form is stored.
  currency: text()
    .regex(/^[A-Za-z]{3}$/, 'an ISO 4217 code of three letters, e.g. USD')
    .toUpperCase()
    .meta({ description: 'ISO 4217, any case (answered in upper case), e.g. USD', example: 'USD' }),
  price_cents: Cents,
  per_seat_cents: Cents.default(0),
  trial_days: z.number().int().min(0).max(365).default(0),
});

export const UpdatePlanInputSchema = z.strictObject({
  id: z.uuid(),
  name: text().trim().min(1).max(200).optional(),
  price_cents: Cents.optional(),
  per_seat_cents: Cents.optional(),
  trial_days: z.number().int().min(0).max(365).optional(),
  archived: z.boolean().optional().meta({ description: 'Retire the plan (true) or offer it again (false)' }),
});

/** S13: exactly the seed's fields. */
export const SubscriptionSchema = z
  .object({
    id: z.uuid(),
    organization_id: z.uuid(),
    organization_name: text(),
    plan_id: z.uuid(),
    plan_key: text(),
    plan_name: text(),
    status: z.enum(SUBSCRIPTION_STATUSES),
    interval: z.enum(INTERVALS),
    currency: text(),
    price_cents: z.number().int(),
    per_seat_cents: z.number().int(),
    seats: z.number().int(),
    current_period_end: z.iso.datetime().meta({ description: 'The end of the trial while trialing, else of the paid period' }),
    canceled_at: z.iso.datetime().nullable().meta({
      description: 'When it was canceled; with a status other than canceled it ends at current_period_end',
    }),
  })
  .meta({ id: 'Subscription' });
export type SubscriptionRecord = z.infer<typeof SubscriptionSchema>;

const Seats = z.number().int().min(1).max(1_000_000);

export const CreateSubscriptionInputSchema = z.strictObject({
  organization_id: z.uuid(),
  plan_id: z.uuid(),
  seats: Seats,
});

export const UpdateSubscriptionInputSchema = z.strictObject({
  id: z.uuid(),
  seats: Seats.optional(),
  plan_id: z.uuid().optional(),
  status: z
    .enum(['active', 'past_due'])
    .optional()
    .meta({ description: 'As a payment provider reports it (ends a trial when active)' }),
});

export const CancelSubscriptionInputSchema = z.strictObject({
  id: z.uuid(),
  at_period_end: z.boolean().default(false).meta({ description: 'Keep it live until current_period_end' }),
});

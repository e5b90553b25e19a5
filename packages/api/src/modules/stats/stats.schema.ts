import { z } from 'zod';

/** The longest range of the daily statistics, in days (a leap year). */
export const MAX_STATS_DAYS = 366;
/** The range when none is given: the last 30 days, today (UTC) included. */
export const DEFAULT_STATS_DAYS = 30;

const DAY_MS = 86_400_000;
/** A `YYYY-MM-DD` day as the UTC midnight that starts it (the schema checked it is a real day). */
export const dayStart = (day: string) => Date.parse(`${day}T00:00:00Z`);
export const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** The days from `from` to `to`, both included. */
export const daysBetween = (from: string, to: string) => Math.round((dayStart(to) - dayStart(from)) / DAY_MS) + 1;
export const addDays = (day: string, days: number) => dayOf(dayStart(day) + days * DAY_MS);

/**
 * The range of the daily statistics: UTC days, both included. Left out, `to` is today and `from` is 29 days before
 * `to` (30 days); a range of more than 366 days, or one that ends before it starts, is 422.
 */
export const DailyStatsInputSchema = z
  .strictObject({
    id: z.uuid(),
    from: z.iso.date().optional().meta({ description: 'First UTC day (YYYY-MM-DD); default: 29 days before `to`' }),
    to: z.iso.date().optional().meta({ description: 'Last UTC day, included (YYYY-MM-DD); default: today (UTC)' }),
  })
  .superRefine((input, ctx) => {
    if (!input.from || !input.to) return;
    if (input.from > input.to) ctx.addIssue({ code: 'custom', path: ['from'], message: 'must not be after `to`' });
    else if (daysBetween(input.from, input.to) > MAX_STATS_DAYS)
      ctx.addIssue({ code: 'custom', path: ['from'], message: `the range covers at most ${MAX_STATS_DAYS} days` });
  });
export type DailyStatsInput = z.output<typeof DailyStatsInputSchema>;

const count = () => z.number().int().min(0);

export const SignInsByMethodSchema = z
  .object({
    total: count().meta({ description: 'Sessions opened that day (sign-ins), every method' }),
    magic_link: count().meta({ description: 'First factor: a magic link (`amr` `email`)' }),
    passkey: count().meta({ description: 'First factor: a passkey (`amr` `pop`, no `email` or `fed`)' }),
    federated: count().meta({
      description: 'First factor: social sign-in (OAuth) or enterprise SSO (SAML): both are `amr` `fed`',
    }),
    other: count().meta({ description: 'Sessions that recorded no method (opened before methods were kept)' }),
  })
  .meta({ id: 'SignInsByMethod' });

export const DailyStatsDaySchema = z
  .object({
    date: z.iso.date().meta({ description: 'The UTC day' }),
    sign_ins: SignInsByMethodSchema,
    active_users: count().meta({
      description: 'Distinct users with a session opened that day or a session whose last activity fell that day',
    }),
    new_users: count().meta({ description: '`user.created` events that day' }),
    failed_sign_ins: count().meta({ description: 'Refused sign-ins that day (`access.denied` events)' }),
    webhook_deliveries: z
      .object({
        succeeded: count(),
        failed: count().meta({ description: 'Deliveries that gave up after their last retry' }),
        pending: count().meta({ description: 'Deliveries still being tried' }),
      })
      .meta({ description: 'Webhook deliveries of that day’s events, by their outcome so far' }),
  })
  .meta({ id: 'DailyStatsDay' });

export const DailyStatsSchema = z
  .object({
    from: z.iso.date(),
    to: z.iso.date(),
    days: z.array(DailyStatsDaySchema).meta({ description: 'One entry per day from `from` to `to`, oldest first' }),
    monthly_active_users: z.object({ from: z.iso.date(), to: z.iso.date(), count: count() }).meta({
      description:
        'Distinct users active (as `active_users` counts a day) on any of the 30 days ending at `to` (`from` to `to`, included)',
    }),
  })
  .meta({ id: 'DailyStats' });
export type DailyStats = z.output<typeof DailyStatsSchema>;

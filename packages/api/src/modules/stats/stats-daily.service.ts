import type { EntityManager } from '../../db/orm.ts';
import { AppError } from '../../errors.ts';
import type { HousekeepingTask } from '../../lib/housekeeping.ts';
import { ownApplication } from '../applications/applications.service.ts';
import type { TenantContext } from '../applications/contexts.ts';
import {
  addDays,
  type DailyStats,
  type DailyStatsInput,
  DEFAULT_STATS_DAYS,
  dayOf,
  daysBetween,
  MAX_STATS_DAYS,
} from './stats.schema.ts';

/** The days of the monthly active users: the 30 days that end at the range's last day. */
const MONTH_DAYS = 30;

const invalid = (path: string, message: string) => new AppError('validation_failed', message, [{ path, message }]);

/** The range asked for, with its defaults (`to` today in UTC, `from` 29 days before it), checked again once filled. */
export function statsRange(input: Pick<DailyStatsInput, 'from' | 'to'>, now = new Date()): { from: string; to: string } {
  const to = input.to ?? dayOf(now.getTime());
  const from = input.from ?? addDays(to, -(DEFAULT_STATS_DAYS - 1));
  if (from > to) throw invalid('from', 'must not be after `to` (which defaults to today, UTC)');
  if (daysBetween(from, to) > MAX_STATS_DAYS) throw invalid('from', `the range covers at most ${MAX_STATS_DAYS} days`);
  return { from, to };
}

/**
 * One day's figures, counted live, for each row `d` of the statement (`d.app`, the application; `d.start` and
 * `d.stop`, the day's first instant and the next day's, timestamptz) where `when` holds (a condition on the row only:
 * elsewhere nothing is read and every count is 0). Each is a count over a range of one index, never the table: the
 * sessions by `(application_id, created_at)` and `(application_id, last_active_at)` (both carrying `user_id`, the first
 * `amr`), the events by `(application_id, type, created_at, id)`, the deliveries by `(application_id, created_at)`
 * (carrying `status`). The columns: `o.total`, `o.magic_link`, `o.passkey`, `o.federated`, `a.active_users`,
 * `l.new_users`, `l.failed_sign_ins`, `w.succeeded`, `w.failed`, `w.pending`.
 *
 * The first factor comes from the methods the session recorded (`amrOf`): a magic link is `email`, a passkey `pop`
 * (with `user` and `mfa`), social and SAML sign-ins `fed`; a second factor only adds `otp`, `pop` or `mfa`. A user is
 * active on a day with a session opened then (a sign-in), or a session whose last activity (its latest refresh or
 * hosted-page use) fell then: the sessions keep no more of their history.
 */
const liveFigures = (when: string) => `
       cross join lateral (
         select count(*) as total,
                count(*) filter (where amr @> '["email"]') as magic_link,
                count(*) filter (where amr @> '["pop"]' and not amr @> '["email"]' and not amr @> '["fed"]') as passkey,
                count(*) filter (where amr @> '["fed"]' and not amr @> '["email"]') as federated
           from sessions where application_id = d.app and created_at >= d.start and created_at < d.stop and ${when}
       ) o
       cross join lateral (
         select count(*) as active_users from (
           select user_id from sessions
            where application_id = d.app and created_at >= d.start and created_at < d.stop and ${when}
            union
           select user_id from sessions
            where application_id = d.app and last_active_at >= d.start and last_active_at < d.stop and ${when}
         ) u
       ) a
       cross join lateral (
         select count(*) filter (where type = 'user.created') as new_users,
                count(*) filter (where type = 'access.denied') as failed_sign_ins
           from events where application_id = d.app and type in ('user.created', 'access.denied')
            and created_at >= d.start and created_at < d.stop and ${when}
       ) l
       cross join lateral (
         select count(*) filter (where status = 'succeeded') as succeeded,
                count(*) filter (where status = 'failed') as failed,
                count(*) filter (where status = 'pending') as pending
           from webhook_deliveries where application_id = d.app and created_at >= d.start and created_at < d.stop and ${when}
       ) w`;

/** A day's UTC bounds, as the columns `start` and `stop` of a row whose day is the timestamp `g`. */
const BOUNDS = `g::date as day, g at time zone 'UTC' as start, (g + interval '1 day') at time zone 'UTC' as stop`;

/**
 * A day is rolled up once it is over by this many days (today and yesterday are always counted live): a delivery still
 * tried then is counted again at every run until it is finished.
 */
const SETTLE_DAYS = 2;
/** How many application-days one housekeeping run rolls up at most (the most recent first). */
const ROLL_UP_BATCH = 1000;

/**
 * Housekeeping: rolls up every application's finished days of the last 366 (those that ended at least a day ago) that
 * have no row yet, or whose row still counted pending deliveries, at most ROLL_UP_BATCH a run, the most recent first.
 * One process at a time (a transaction-scoped advisory lock; the others skip the run).
 */
export const rollUpStatsDays: HousekeepingTask = (em: EntityManager) =>
  em.transactional(async (tx) => {
    const [lock] = await tx.execute<Array<{ locked: boolean }>>(
      "select pg_try_advisory_xact_lock(hashtext('gatehouse.stats_days')) as locked",
    );
    if (!lock?.locked) return 0;
    const rows = await tx.execute<Array<{ day: string }>>(
      `insert into stats_days (application_id, day, sign_ins_magic_link, sign_ins_passkey, sign_ins_federated,
                               sign_ins_other, active_users, new_users, failed_sign_ins, webhooks_succeeded,
                               webhooks_failed, webhooks_pending, computed_at)
       select d.app, d.day, o.magic_link, o.passkey, o.federated, o.total - o.magic_link - o.passkey - o.federated,
              a.active_users, l.new_users, l.failed_sign_ins, w.succeeded, w.failed, w.pending, now()
         from (
           select a.id as app, ${BOUNDS}
             from applications a
            cross join lateral generate_series(((now() at time zone 'UTC')::date - ${MAX_STATS_DAYS})::timestamp,
                                               ((now() at time zone 'UTC')::date - ?)::timestamp, interval '1 day') g
            where not exists (select 1 from stats_days s where s.application_id = a.id and s.day = g::date
                                 and s.webhooks_pending = 0)
            order by g desc
            limit ?
         ) d
         ${liveFigures('true')}
       on conflict (application_id, day) do update set
         sign_ins_magic_link = excluded.sign_ins_magic_link, sign_ins_passkey = excluded.sign_ins_passkey,
         sign_ins_federated = excluded.sign_ins_federated, sign_ins_other = excluded.sign_ins_other,
         active_users = excluded.active_users, new_users = excluded.new_users, failed_sign_ins = excluded.failed_sign_ins,
         webhooks_succeeded = excluded.webhooks_succeeded, webhooks_failed = excluded.webhooks_failed,
         webhooks_pending = excluded.webhooks_pending, computed_at = excluded.computed_at
       returning day`,
      [SETTLE_DAYS, ROLL_UP_BATCH],
    );
    return rows.length;
  });

interface DayRow {
  date: string;
  magic_link: string | number;
  passkey: string | number;
  federated: string | number;
  other: string | number;
  active_users: string | number;
  new_users: string | number;
  failed_sign_ins: string | number;
  succeeded: string | number;
  failed: string | number;
  pending: string | number;
  mau: string | number;
}

/**
 * The monthly active users of the 30 days from `monthFrom` to `to`, as a SQL expression and its parameters. When the
 * window reaches today, a session opened in it was also last active in it: one index range then.
 */
function monthlyActive(applicationId: string, monthFrom: string, to: string, today: string) {
  const start = "(?::date::timestamp at time zone 'UTC')";
  const stop = "((?::date + 1)::timestamp at time zone 'UTC')";
  const lastActive = `select user_id from sessions where application_id = ? and last_active_at >= ${start} and last_active_at < ${stop}`;
  if (to >= today)
    return {
      sql: `(select count(*) from (select distinct user_id from (${lastActive}) r) m)`,
      params: [applicationId, monthFrom, to],
    };
  return {
    sql: `(select count(*) from (
             select user_id from sessions where application_id = ? and created_at >= ${start} and created_at < ${stop}
              union ${lastActive}) m)`,
    params: [applicationId, monthFrom, to, applicationId, monthFrom, to],
  };
}

/**
 * `GET /v1/applications/{id}/stats/daily`: per UTC day, sign-ins by first factor, active users, new users, refused
 * sign-ins and webhook deliveries, with the monthly active users of the range's last 30 days, in one statement: the
 * days housekeeping rolled up (`stats_days`) are read, the others (today, yesterday, any not rolled up yet) counted
 * live (`liveFigures`).
 */
export async function dailyStats(ctx: TenantContext, input: DailyStatsInput): Promise<DailyStats> {
  const application = ownApplication(ctx, input.id);
  const now = new Date();
  const { from, to } = statsRange(input, now);
  const monthFrom = addDays(to, -(MONTH_DAYS - 1));
  const month = monthlyActive(application.id, monthFrom, to, dayOf(now.getTime()));
  const figure = (column: string, live: string) => `coalesce(s.${column}, ${live}) as`;
  // JIT compilation off: it is for long scans, and the plan's estimate (a lateral per day) can pass its threshold while
  // the statement reads a row a day, so compiling (hundreds of milliseconds) would cost far more than it saves.
  const rows = await ctx.em.transactional(async (tx) => {
    await tx.execute('set local jit = off');
    return tx.execute<DayRow[]>(
      `with days as (
       select ?::uuid as app, ${BOUNDS}
         from (select ?::date::timestamp + make_interval(days => i) as g from generate_series(0, ?::int) i) series
     )
     select to_char(d.day, 'YYYY-MM-DD') as date,
            ${figure('sign_ins_magic_link', 'o.magic_link')} magic_link, ${figure('sign_ins_passkey', 'o.passkey')} passkey,
            ${figure('sign_ins_federated', 'o.federated')} federated,
            ${figure('sign_ins_other', 'o.total - o.magic_link - o.passkey - o.federated')} other,
            ${figure('active_users', 'a.active_users')} active_users, ${figure('new_users', 'l.new_users')} new_users,
            ${figure('failed_sign_ins', 'l.failed_sign_ins')} failed_sign_ins,
            ${figure('webhooks_succeeded', 'w.succeeded')} succeeded, ${figure('webhooks_failed', 'w.failed')} failed,
            ${figure('webhooks_pending', 'w.pending')} pending,
            ${month.sql} as mau
       from days d
       left join stats_days s on s.application_id = d.app and s.day = d.day
       ${liveFigures('s.day is null')}
      order by d.day`,
      [application.id, from, daysBetween(from, to) - 1, ...month.params],
    );
  });
  const n = (value: string | number) => Number(value);
  return {
    from,
    to,
    days: rows.map((r) => {
      const [magicLink, passkey, federated, other] = [n(r.magic_link), n(r.passkey), n(r.federated), n(r.other)];
      return {
        date: r.date,
        sign_ins: { total: magicLink + passkey + federated + other, magic_link: magicLink, passkey, federated, other },
        active_users: n(r.active_users),
        new_users: n(r.new_users),
        failed_sign_ins: n(r.failed_sign_ins),
        webhook_deliveries: { succeeded: n(r.succeeded), failed: n(r.failed), pending: n(r.pending) },
      };
    }),
    monthly_active_users: { from: monthFrom, to, count: n(rows[0]?.mau ?? 0) },
  };
}

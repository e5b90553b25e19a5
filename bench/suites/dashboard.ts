/**
 * dashboard: `GET /v1/applications/{id}/stats/daily`, the console dashboard's query, at BENCH_DASHBOARD_EVENTS events
 * (1 000 000) on PostgreSQL, with users, sessions and webhook deliveries in proportion, seeded in SQL over the last
 * 364 days; a second application holds a tenth as much beside it. The default range (the last 30 days) and the longest
 * (366 days) under a steady open load of BENCH_DASHBOARD_RATE requests per second.
 */
import type { Client } from 'pg';
import { config, log, sleep } from '../harness/env.ts';
import { api, startGatehouse } from '../harness/gatehouse.ts';
import { load, type Scenario } from '../harness/load.ts';
import { scratchDatabase } from '../harness/postgres.ts';
import { startServer } from '../harness/processes.ts';
import { limitTarget, num, type SuiteResult } from '../harness/report.ts';

const EVENTS = config.dashboardEvents;
const RATE = config.dashboardRate;
/** Per event: users (`user.created`), sessions (`session.created`); every event has one webhook delivery. */
const USERS_PER_EVENT = 0.05;
const SESSIONS_PER_EVENT = 0.4;
const BUDGET_MS = 50;

/** Kept a year, so that the server's housekeeping deletes none of the seed while it is measured. */
const SETTINGS = {
  retention: { events_days: 365, messages_days: 30, ended_sessions_days: 365 },
  audit_log_retention_days: 3650,
};

/**
 * An application's year of traffic, in SQL: `events` events (40 % `session.created`, 5 % `user.created`, 2 %
 * `access.denied`, the rest other kinds), a user per `user.created`, a session per `session.created` (half by magic
 * link, 30 % by passkey, 20 % federated; last active up to 20 days after it opened), and one webhook delivery per event
 * to one (disabled) endpoint: 97 % succeeded, 3 % failed, half of the last day's still pending (not due for a week).
 * Triggers and foreign-key checks are off for the seed (`session_replication_role`): it writes consistent rows itself.
 */
async function seed(client: Client, applicationId: string, events: number) {
  const users = Math.round(events * USERS_PER_EVENT);
  const sessions = Math.round(events * SESSIONS_PER_EVENT);
  const at = `now() - random() * interval '364 days'`;
  await client.query(
    `insert into users (id, application_id, primary_email, email_normalized, email_verified, status, profile, created_at, updated_at)
     select gen_random_uuid(), $1::uuid, e, e, true, 'active', '{}', t, t
       from (select 'dash-' || $1::text || '-' || i || '@bench.example.com' as e, ${at} as t from generate_series(0, $2 - 1) i) s`,
    [applicationId, users],
  );
  await client.query('drop table if exists seed_users');
  await client.query(
    'create temp table seed_users as select (row_number() over (order by id)) - 1 as n, id from users where application_id = $1',
    [applicationId],
  );
  await client.query('create index on seed_users (n)');
  await client.query(
    `insert into sessions (id, application_id, user_id, aal, amr, refresh_token_hash, mfa_enrollment_required, host_id,
                           user_agent, ip, created_at, last_active_at, expires_at, revoked_at)
     select gen_random_uuid(), $1::uuid, u.id, case when s.i % 10 between 5 and 7 then 2 else 1 end,
            (case when s.i % 10 < 5 then '["email"]' when s.i % 10 < 8 then '["pop", "user", "mfa"]' else '["fed"]' end)::jsonb,
            encode(sha256(convert_to($1::text || '-' || s.i, 'UTF8')), 'hex'), false, null, 'bench', '127.0.0.1',
            s.t, least(now(), s.t + random() * interval '20 days'), s.t + interval '90 days',
            case when s.i % 4 = 0 then least(now(), s.t + interval '1 day') end
       from (select i, ${at} as t from generate_series(0, $2 - 1) i) s
       join seed_users u on u.n = (s.i::bigint * 7919) % $3`,
    [applicationId, sessions, users],
  );
  await client.query(
    `insert into events (id, application_id, type, data, created_at, actor_type, actor_id, ip, user_agent, organization_id,
                         target_type, target_id)
     select gen_random_uuid(), $1,
            case when k < 40 then 'session.created' when k < 45 then 'user.created' when k < 47 then 'access.denied'
                 when k < 67 then 'session.revoked' when k < 87 then 'user.updated' else 'organization_membership.created' end,
            '{}', t, 'system', 'gatehouse', null, null, null, null, null
       from (select i % 100 as k, ${at} as t from generate_series(0, $2 - 1) i) s`,
    [applicationId, events],
  );
  const endpoint = await client.query(
    `insert into webhook_endpoints (id, application_id, url, description, event_types, status, disabled_reason, secret_sealed,
                                    created_at, updated_at)
     values (gen_random_uuid(), $1, 'https://receiver.bench.example.com/hooks', 'bench', '[]', 'disabled', 'gone', 'unused',
             now(), now())
     returning id`,
    [applicationId],
  );
  await client.query(
    `insert into webhook_deliveries (id, application_id, endpoint_id, event_id, event_type, status, attempts, response_status,
                                     last_attempt_at, next_attempt_at, created_at)
     select gen_random_uuid(), e.application_id, $2, e.id, e.type, s.status,
            1, case when s.status = 'succeeded' then 200 end, case when s.status <> 'pending' then e.created_at end,
            case when s.status = 'pending' then now() + interval '7 days' end, e.created_at
       from events e
       cross join lateral (select case when e.created_at > now() - interval '1 day' and random() < 0.5 then 'pending'
                                       when random() < 0.03 then 'failed' else 'succeeded' end as status) s
      where e.application_id = $1`,
    [applicationId, endpoint.rows[0].id],
  );
  return { users, sessions };
}

/** Both applications' traffic, then VACUUM (ANALYZE) and a CHECKPOINT: as a deployment that has had it a while. */
export async function seedFor(client: Client, applicationId: string, events: number, neighbourId?: string) {
  await client.query('set session_replication_role = replica');
  await client.query('select setseed(0.42)');
  const seeded = await seed(client, applicationId, events);
  if (neighbourId) await seed(client, neighbourId, Math.round(events / 10));
  await client.query('set session_replication_role = origin');
  await client.query('vacuum (analyze) users, sessions, events, webhook_deliveries');
  await client.query('checkpoint');
  return seeded;
}

const daily = (applicationId: string, headers: Record<string, string>, query = ''): Scenario => ({
  method: 'GET',
  path: `/v1/applications/${applicationId}/stats/daily${query}`,
  headers,
  expect: 200,
});

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export async function dashboardSuite(): Promise<SuiteResult> {
  const db = await scratchDatabase();
  // No housekeeping while the seed is written (a day rolled up half-seeded would stay so).
  const quiet = { GATEHOUSE_HOUSEKEEPING_INTERVAL_S: '86400' };
  const first = await startGatehouse('Gatehouse (setup)', db.url, { settings: SETTINGS, env: quiet });
  const { app, env } = first;
  const other = await api(
    first.server.url,
    'POST',
    '/v1/applications',
    { authorization: `Bearer ${env.GATEHOUSE_OPERATOR_TOKEN}` },
    { name: 'Neighbour', settings: SETTINGS },
    201,
  );

  const started = performance.now();
  const seeded = await seedFor(db.client, app.id, EVENTS, other.application.id as string);
  await first.server.stop();
  const seedSeconds = (performance.now() - started) / 1000;
  log(
    `seeded ${num(EVENTS)} events, ${num(seeded.sessions)} sessions, ${num(seeded.users)} users in ${seedSeconds.toFixed(1)} s`,
  );

  // Housekeeping rolls up the finished days (today and yesterday stay live): a process running it every minute (a run
  // first scans the seeded tables for its purge steps: a shorter interval piles runs up), until both applications have
  // their 365 rows; then the measured process, whose housekeeping does not run meanwhile.
  const rolling = await startServer('Gatehouse (roll-up)', { ...env, GATEHOUSE_HOUSEKEEPING_INTERVAL_S: '60' });
  const rollStarted = performance.now();
  for (;;) {
    const { rows } = await db.client.query('select count(*)::int as n from stats_days');
    if (rows[0].n >= 2 * 365) break;
    if (performance.now() - rollStarted > 600_000) throw new Error(`${rows[0].n} days rolled up after 600 s`);
    await sleep(500);
  }
  const rollSeconds = (performance.now() - rollStarted) / 1000;
  await rolling.stop();
  await db.client.query('vacuum (analyze) stats_days');
  log(`rolled up 2 × 365 days in ${rollSeconds.toFixed(1)} s`);
  const server = await startServer('Gatehouse', { ...env, ...quiet });

  // The answers are checked here (a paced load cannot read them): 30 days, and what the tables hold.
  const today = day(Date.now());
  const yearFrom = day(Date.now() - 365 * 86_400_000);
  const month = await api(server.url, 'GET', `/v1/applications/${app.id}/stats/daily`, app.sk);
  const year = await api(server.url, 'GET', `/v1/applications/${app.id}/stats/daily?from=${yearFrom}&to=${today}`, app.sk);
  if (month.days.length !== 30 || month.to !== today) throw new Error(`the default range is ${month.from}..${month.to}`);
  if (year.days.length !== 366) throw new Error(`the year has ${year.days.length} days`);
  const sum = (days: Array<Record<string, any>>, pick: (d: Record<string, any>) => number) =>
    days.reduce((n, d) => n + pick(d), 0);
  const counted = (
    await db.client.query(
      `select (select count(*) from sessions where application_id = $1 and created_at >= $2::date) as sessions,
              (select count(*) from events where application_id = $1 and type = 'user.created' and created_at >= $2::date) as users,
              (select count(*) from webhook_deliveries where application_id = $1 and created_at >= $2::date) as deliveries`,
      [app.id, yearFrom],
    )
  ).rows[0];
  const answered = {
    sessions: sum(year.days, (d) => d.sign_ins.total),
    users: sum(year.days, (d) => d.new_users),
    deliveries: sum(
      year.days,
      (d) => d.webhook_deliveries.succeeded + d.webhook_deliveries.failed + d.webhook_deliveries.pending,
    ),
  };
  for (const key of ['sessions', 'users', 'deliveries'] as const)
    if (Number(counted[key]) !== answered[key])
      throw new Error(`the year's ${key}: ${answered[key]} answered, ${counted[key]} in the tables`);

  const monthLoad = await load(server, daily(app.id, app.sk), db, config.durationSeconds, RATE);
  const yearLoad = await load(server, daily(app.id, app.sk, `?from=${yearFrom}&to=${today}`), db, config.durationSeconds, RATE);
  await server.stop();

  return {
    title: 'Dashboard: daily statistics at 1 000 000 events',
    software: [db.version],
    targets: [
      limitTarget(
        `\`GET /v1/applications/{id}/stats/daily\` (last 30 days) p95 at ${RATE} req/s, ${num(EVENTS)} events`,
        monthLoad.p95Ms,
        'ms',
        BUDGET_MS,
      ),
    ],
    method: [
      `Gatehouse: the server as \`npm start\` runs it (bundled, \`apps/server/start.js\`) on a scratch PostgreSQL database; two applications made through the ` +
        'operator API, both keeping events, ended sessions and webhook deliveries for 365 days (the housekeeping deletes ' +
        'nothing of the seed while it is measured).',
      `Seeded in SQL (triggers and foreign-key checks off for the seed, then VACUUM (ANALYZE) and a CHECKPOINT), spread ` +
        `at random over the last 364 days: ${num(EVENTS)} events (40 % \`session.created\`, 5 % \`user.created\`, 2 % ` +
        `\`access.denied\`, the rest \`session.revoked\`, \`user.updated\`, \`organization_membership.created\`), ` +
        `${num(seeded.users)} users, ${num(seeded.sessions)} sessions (half by magic link, 30 % by passkey, 20 % ` +
        'federated; last active up to 20 days after they opened; a quarter revoked) and one webhook delivery per event ' +
        `(${num(EVENTS)}; 97 % succeeded, 3 % failed, half of the last day's pending); a second application holds a ` +
        `tenth as much beside it. Seeding took ${seedSeconds.toFixed(0)} s.`,
      'Then a process started with `GATEHOUSE_HOUSEKEEPING_INTERVAL_S=60` until housekeeping has rolled up both ' +
        `applications' finished days (365 each: today and yesterday are always counted live), ${rollSeconds.toFixed(1)} s ` +
        'from its start; the measured process is started after it, its own housekeeping not due during the suite.',
      'Before the loads, the 30-day answer (the default range) and the 366-day one are read and checked: 30 and 366 ' +
        "days, the year's sign-ins, new users and deliveries equal to what the tables hold.",
      `Each range under a steady open load of ${RATE} req/s (BENCH_DASHBOARD_RATE; the requests are sent on schedule ` +
        'over at most 64 keep-alive connections, latency from the scheduled send), with the secret key.',
    ],
    measurements: [monthLoad, yearLoad],
    details: [],
    notes: [
      `A day holds about ${num(EVENTS / 364)} events (as many deliveries) and ${num(seeded.sessions / 364)} sign-ins. The ` +
        'statement reads the rolled-up days (one `stats_days` row each) and counts today and yesterday live, day by day ' +
        'over index ranges (index-only scans after the VACUUM), with the monthly active users counted live over the ' +
        'last 30 days of sessions.',
      `The 366-day range is no target (the dashboard's default is 30 days): ${num(yearLoad.p95Ms)} ms p95 at ${RATE} req/s.`,
      `Rolling up both applications' 365 finished days took ${rollSeconds.toFixed(1)} s from the start of a process ` +
        'running housekeeping every minute (its first run, a minute after the start, does it after the purge steps; ' +
        'later runs roll up one new day per application).',
    ],
  };
}

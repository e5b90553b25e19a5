import { describe, expect, it } from 'vitest';
import { expectError, ok, sql, type TestApp } from './helpers/server.ts';
import { endUser, requestMagicLink, signIn } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

const UNKNOWN_ID = '01890000-0000-7000-8000-000000000000';

const daily = (app: TestApp, query = '', id = app.id, headers?: Record<string, string>) =>
  app.rest('GET', `/v1/applications/${id}/stats/daily${query}`, undefined, headers);

const today = () => new Date().toISOString().slice(0, 10);
const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);

async function user(app: TestApp, email: string): Promise<string> {
  return (await ok(app.rest('POST', '/v1/users', { primary_email: email }), 201)).id;
}

/** A session as the service writes one, opened at `created` and last used at `lastActive` (ISO times, UTC). */
const session = (app: TestApp, userId: string, created: string, lastActive: string, amr: string[] | null) =>
  sql(
    suite.server,
    `insert into sessions (id, application_id, user_id, aal, amr, refresh_token_hash, mfa_enrollment_required, ip,
                           created_at, last_active_at, expires_at)
     values (gen_random_uuid(), ?, ?, 1, ?::jsonb, md5(random()::text) || md5(random()::text), false, '127.0.0.1',
             ?::timestamptz, ?::timestamptz, ?::timestamptz + interval '90 days')`,
    [app.id, userId, amr === null ? null : JSON.stringify(amr), created, lastActive, created],
  );

/** An event of `type` written at `at`; answers its id. */
async function event(app: TestApp, type: string, at: string): Promise<string> {
  const [row] = await sql(
    suite.server,
    `insert into events (id, application_id, type, data, created_at, actor_type, actor_id)
     values (gen_random_uuid(), ?, ?, '{}', ?::timestamptz, 'system', 'gatehouse') returning id`,
    [app.id, type, at],
  );
  return row.id;
}

/** A webhook endpoint (disabled: the worker leaves its deliveries alone) and deliveries of events written at `at`. */
async function deliveries(app: TestApp, entries: Array<{ at: string; status: 'succeeded' | 'failed' | 'pending' }>) {
  const [endpoint] = await sql(
    suite.server,
    `insert into webhook_endpoints (id, application_id, url, description, event_types, status, disabled_reason,
                                    secret_sealed, created_at, updated_at)
     values (gen_random_uuid(), ?, 'https://hooks.example.com/in', '', '[]', 'disabled', 'gone', 'unused', now(), now())
     returning id`,
    [app.id],
  );
  for (const { at, status } of entries) {
    const eventId = await event(app, 'user.updated', at);
    await sql(
      suite.server,
      `insert into webhook_deliveries (id, application_id, endpoint_id, event_id, event_type, status, attempts,
                                       next_attempt_at, created_at)
       values (gen_random_uuid(), ?, ?, ?, 'user.updated', ?, 1, case when ? = 'pending' then now() + interval '7 days' end,
               ?::timestamptz)`,
      [app.id, endpoint.id, eventId, status, status, at],
    );
  }
}

const signIns = (total: number, by: Partial<Record<'magic_link' | 'passkey' | 'federated' | 'other', number>> = {}) => ({
  total,
  magic_link: 0,
  passkey: 0,
  federated: 0,
  other: 0,
  ...by,
});
const hooks = (succeeded = 0, failed = 0, pending = 0) => ({ succeeded, failed, pending });

/** Seeds three days (2026-01-10 to 2026-01-12) of one application's traffic, with rows on each side of the range. */
async function seedJanuary(app: TestApp) {
  const [ada, grace, linus, margaret, bob] = await Promise.all(
    ['ada', 'grace', 'linus', 'margaret', 'bob'].map((name) => user(app, `${name}@example.com`)),
  );
  // Sign-ins: the first factor decides the method, whatever second factor followed.
  await session(app, ada!, '2026-01-10T08:00:00Z', '2026-01-10T09:00:00Z', ['email']);
  await session(app, ada!, '2026-01-10T23:59:59Z', '2026-01-12T10:00:00Z', ['pop', 'user', 'mfa']);
  await session(app, grace!, '2026-01-11T00:00:00Z', '2026-01-11T01:00:00Z', ['fed']);
  await session(app, grace!, '2026-01-11T12:00:00Z', '2026-01-11T12:00:00Z', ['email', 'otp', 'mfa']);
  // Opened the day before the range, used on its second day: active then, no sign-in of the range.
  await session(app, linus!, '2026-01-09T23:59:59Z', '2026-01-11T05:00:00Z', ['email']);
  // A session that recorded no method; last used the day after the range.
  await session(app, linus!, '2026-01-12T06:00:00Z', '2026-01-13T00:00:00Z', null);
  // Within the 30 days ending 2026-01-12 (from 2025-12-14) but not the range; and one day before them.
  await session(app, margaret!, '2025-12-14T00:00:00Z', '2025-12-14T00:00:00Z', ['pop', 'user', 'mfa']);
  await session(app, bob!, '2025-12-13T23:00:00Z', '2025-12-13T23:59:59Z', ['email']);

  for (const at of ['2026-01-10T10:00:00Z', '2026-01-10T10:00:01Z', '2026-01-12T23:59:59Z', '2026-01-13T00:00:00Z'])
    await event(app, 'user.created', at);
  for (const at of ['2026-01-11T03:00:00Z', '2026-01-11T03:00:01Z', '2026-01-11T04:00:00Z', '2026-01-09T23:59:59Z'])
    await event(app, 'access.denied', at);
  await event(app, 'session.created', '2026-01-11T00:00:00Z');

  await deliveries(app, [
    { at: '2026-01-10T01:00:00Z', status: 'succeeded' },
    { at: '2026-01-10T02:00:00Z', status: 'succeeded' },
    { at: '2026-01-11T01:00:00Z', status: 'failed' },
    { at: '2026-01-11T02:00:00Z', status: 'succeeded' },
    { at: '2026-01-11T03:00:00Z', status: 'pending' },
    { at: '2026-01-13T00:00:00Z', status: 'succeeded' },
  ]);
}

const JANUARY = {
  from: '2026-01-10',
  to: '2026-01-12',
  days: [
    {
      date: '2026-01-10',
      sign_ins: signIns(2, { magic_link: 1, passkey: 1 }),
      active_users: 1,
      new_users: 2,
      failed_sign_ins: 0,
      webhook_deliveries: hooks(2),
    },
    {
      date: '2026-01-11',
      sign_ins: signIns(2, { magic_link: 1, federated: 1 }),
      active_users: 2,
      new_users: 0,
      failed_sign_ins: 3,
      webhook_deliveries: hooks(1, 1, 1),
    },
    {
      date: '2026-01-12',
      sign_ins: signIns(1, { other: 1 }),
      active_users: 2,
      new_users: 1,
      failed_sign_ins: 0,
      webhook_deliveries: hooks(),
    },
  ],
  // Ada, Grace, Linus and Margaret; not Bob, last seen the day before the 30 days.
  monthly_active_users: { from: '2025-12-14', to: '2026-01-12', count: 4 },
};

describe('GET /v1/applications/{id}/stats/daily', () => {
  it('counts each UTC day exactly: sign-ins by first factor, active and new users, refused sign-ins, deliveries', async () => {
    const app = await suite.server.createApp();
    await seedJanuary(app);
    // Another application's traffic on the same days counts for it alone.
    const other = await suite.server.createApp();
    await seedJanuary(other);
    await session(other, await user(other, 'extra@example.com'), '2026-01-11T09:00:00Z', '2026-01-11T09:00:00Z', ['email']);

    expect(await ok(daily(app, '?from=2026-01-10&to=2026-01-12'))).toEqual(JANUARY);
    const others = await ok(daily(other, '?from=2026-01-10&to=2026-01-12'));
    expect(others.days[1]).toMatchObject({ sign_ins: signIns(3, { magic_link: 2, federated: 1 }), active_users: 3 });
    expect(others.monthly_active_users.count).toBe(5);

    // One day; and a range of days with nothing in them answers zeros, one entry per day.
    expect((await ok(daily(app, '?from=2026-01-11&to=2026-01-11'))).days).toEqual([JANUARY.days[1]]);
    const quiet = await ok(daily(app, '?from=2025-06-01&to=2025-06-03'));
    expect(quiet.days.map((d: { date: string }) => d.date)).toEqual(['2025-06-01', '2025-06-02', '2025-06-03']);
    expect(quiet.days[2]).toEqual({
      date: '2025-06-03',
      sign_ins: signIns(0),
      active_users: 0,
      new_users: 0,
      failed_sign_ins: 0,
      webhook_deliveries: hooks(),
    });
    expect(quiet.monthly_active_users).toEqual({ from: '2025-05-05', to: '2025-06-03', count: 0 });
  });

  it('defaults to the last 30 days, today (UTC) included, and counts real sign-ins and refusals', async () => {
    const app = await suite.server.createApp();
    await signIn(suite.server, suite.smtp, app, 'ada@example.com');
    await signIn(suite.server, suite.smtp, app, 'ada@example.com');
    // A banned user's sign-in is refused and recorded (access.denied).
    const banned = await user(app, 'mallory@example.com');
    const { token } = await requestMagicLink(suite.smtp, app, 'mallory@example.com');
    await ok(app.rest('PATCH', `/v1/users/${banned}`, { status: 'banned' }));
    expectError(await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token }), 403, 'access_denied');

    const stats = await ok(daily(app));
    expect(stats.from).toBe(daysAgo(29));
    expect(stats.to).toBe(today());
    expect(stats.days).toHaveLength(30);
    expect(stats.days.at(-1)).toEqual({
      date: today(),
      sign_ins: signIns(2, { magic_link: 2 }),
      active_users: 1,
      // Ada signed up by her first link; Mallory was created through the API.
      new_users: 2,
      failed_sign_ins: 1,
      webhook_deliveries: hooks(),
    });
    expect(stats.monthly_active_users).toEqual({ from: daysAgo(29), to: today(), count: 1 });
    // Only `to`: the 30 days ending there; only `from`: from there to today.
    expect(await ok(daily(app, `?to=${today()}`))).toEqual(stats);
    expect((await ok(daily(app, `?from=${daysAgo(2)}`))).days.map((d: { date: string }) => d.date)).toEqual([
      daysAgo(2),
      daysAgo(1),
      today(),
    ]);
  });

  it('is 422 for a malformed or impossible day, a range that ends before it starts, or one over 366 days', async () => {
    const app = await suite.server.createApp();
    for (const query of [
      '?from=2026-1-10&to=2026-01-12',
      '?from=2026-01-10T00:00:00Z&to=2026-01-12',
      '?from=2026-02-30&to=2026-03-01',
      '?from=2026-01-10&to=tomorrow',
      '?from=2026-01-12&to=2026-01-10',
      '?from=2025-01-01&to=2026-01-02',
      // From a day after today, `to` (today by default) comes before it.
      `?from=${new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10)}`,
      // From long ago to today: over 366 days.
      '?from=2020-01-01',
    ])
      expectError(await daily(app, query), 422, 'validation_failed', query);
    // 366 days is the most (2024 was a leap year), and a leap day is a day.
    expect((await ok(daily(app, '?from=2024-01-01&to=2024-12-31'))).days).toHaveLength(366);
    expect((await ok(daily(app, '?from=2024-02-29&to=2024-02-29'))).days).toHaveLength(1);
  });

  it("is 404 for another application's id and needs stats:read", async () => {
    const a = await suite.server.createApp();
    const b = await suite.server.createApp();
    expectError(await daily(a, '', b.id), 404, 'not_found', "B's id with A's key");
    expectError(await daily(a, '', UNKNOWN_ID), 404, 'not_found', 'unknown id');
    const usersOnly = await ok(a.rest('POST', '/v1/api-keys', { name: 'users', scopes: ['users:read'] }), 201);
    expectError(await daily(a, '', a.id, { authorization: `Bearer ${usersOnly.secret}` }), 403, 'insufficient_scope');
    const statsOnly = await ok(a.rest('POST', '/v1/api-keys', { name: 'stats', scopes: ['stats:read'] }), 201);
    expect((await ok(daily(a, '', a.id, { authorization: `Bearer ${statsOnly.secret}` }))).days).toHaveLength(30);
    expectError(await daily(a, '', b.id, { authorization: `Bearer ${statsOnly.secret}` }), 404, 'not_found');
  });
});

describe('the roll-up of finished days', () => {
  /** Housekeeping until the application's January days are rolled up (a run takes at most 1 000 days of all). */
  async function rollUp(app: TestApp) {
    for (let run = 0; run < 20; run++) {
      await suite.server.server.housekeeping();
      const [row] = await sql(
        suite.server,
        `select count(*)::int as n from stats_days where application_id = ? and day between '2026-01-09' and '2026-01-13'`,
        [app.id],
      );
      if (row.n === 5) return;
    }
    throw new Error('housekeeping did not roll up the January days');
  }

  it('answers the same figures from the rolled-up days, recounts a day with pending deliveries, and counts today live', async () => {
    // Kept a year: housekeeping's purge (which runs first) leaves the January rows alone.
    const app = await suite.server.createApp({
      settings: { retention: { events_days: 365, messages_days: 30, ended_sessions_days: 365 } },
    });
    await seedJanuary(app);
    await rollUp(app);
    expect(await ok(daily(app, '?from=2026-01-10&to=2026-01-12'))).toEqual(JANUARY);
    // The days are read from the roll-up: the sessions, events and deliveries behind them no longer matter…
    await sql(suite.server, `delete from sessions where application_id = ? and created_at < '2026-01-13'`, [app.id]);
    await sql(suite.server, `delete from events where application_id = ? and created_at < '2026-01-14'`, [app.id]);
    const rolled = await ok(daily(app, '?from=2026-01-10&to=2026-01-12'));
    expect(rolled.days).toEqual(JANUARY.days);
    // …but the monthly active users are counted live, from the sessions (none left in those 30 days).
    expect(rolled.monthly_active_users).toEqual({ from: '2025-12-14', to: '2026-01-12', count: 0 });

    // The day whose delivery was still pending is rolled up again at the next run; the others are not.
    await sql(suite.server, `update stats_days set webhooks_succeeded = 99 where application_id = ? and day = '2026-01-10'`, [
      app.id,
    ]);
    await sql(suite.server, `update stats_days set webhooks_pending = 1 where application_id = ? and day = '2026-01-11'`, [
      app.id,
    ]);
    await suite.server.server.housekeeping();
    const again = await ok(daily(app, '?from=2026-01-10&to=2026-01-11'));
    expect(again.days[0].webhook_deliveries).toEqual(hooks(99));
    // Recounted from what is left: the events (and with them their deliveries) were deleted above.
    expect(again.days[1]).toMatchObject({ failed_sign_ins: 0, webhook_deliveries: hooks() });

    // Today and yesterday are never rolled up: a sign-in now counts at once.
    await housekeepingLeavesToday(app);
  });

  async function housekeepingLeavesToday(app: TestApp) {
    await suite.server.server.housekeeping();
    const [row] = await sql(
      suite.server,
      `select count(*)::int as n from stats_days where application_id = ? and day >= (now() at time zone 'UTC')::date - 1`,
      [app.id],
    );
    expect(row.n).toBe(0);
    await signIn(suite.server, suite.smtp, app, 'late@example.com');
    const stats = await ok(daily(app, `?from=${daysAgo(1)}&to=${today()}`));
    expect(stats.days[1]).toMatchObject({ date: today(), sign_ins: signIns(1, { magic_link: 1 }), active_users: 1 });
  }
});

describe('the SDK: stats.daily', () => {
  it('answers what the REST route answers, and its errors', async () => {
    const app = await suite.server.createApp();
    await seedJanuary(app);
    expect(await app.sdk.stats.daily({ id: app.id, from: '2026-01-10', to: '2026-01-12' })).toEqual(JANUARY);
    const defaults = await app.sdk.stats.daily({ id: app.id });
    expect(defaults.to).toBe(today());
    expect(defaults.days).toHaveLength(30);

    const other = await suite.server.createApp();
    await expect(app.sdk.stats.daily({ id: other.id })).rejects.toMatchObject({ code: 'not_found', status: 404 });
    await expect(app.sdk.stats.daily({ id: app.id, from: '2026-01-12', to: '2026-01-10' })).rejects.toMatchObject({
      code: 'validation_failed',
      status: 422,
    });
  });
});

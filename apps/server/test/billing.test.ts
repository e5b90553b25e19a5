import { beforeAll, describe, expect, inject, it } from 'vitest';
import { createOrg, createUser, expectExactlyOneWinner, unique } from './helpers/fixtures.ts';
import { acrossServers, expectError, isoDate, MISSING, ok, rejection, sql, type TestApp, UUID } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite({ smtp: false });

let app: TestApp;
beforeAll(async () => {
  app = await suite.server.createApp();
});

const createPlan = (on: TestApp, body: Record<string, unknown> = {}) =>
  ok(
    on.rest('POST', '/v1/billing/plans', {
      key: unique('plan'),
      name: 'Team',
      interval: 'month',
      currency: 'USD',
      price_cents: 2900,
      per_seat_cents: 900,
      ...body,
    }),
    201,
  );
const addMember = (on: TestApp, orgId: string, userId: string) =>
  on.rest('POST', `/v1/organizations/${orgId}/members`, { user_id: userId });
const subscribe = (on: TestApp, body: Record<string, unknown>) => on.rest('POST', '/v1/billing/subscriptions', body);
const events = async (on: TestApp, type: string) =>
  (await ok(on.rest('GET', `/v1/events?type=${type}&limit=100`))).events as Array<{ data: any }>;

/** Moves a subscription's period end into the past (periods are judged by the database clock). */
const endPeriod = (id: string) =>
  sql(suite.server, `update billing_subscriptions set current_period_end = now() - interval '1 second' where id = ?`, [id]);

const DAY_MS = 86_400_000;

describe('plans', () => {
  it('POST 201 with the plan; GET lists newest first; GET/PATCH one', async () => {
    const fresh = await suite.server.createApp();
    const first = await createPlan(fresh, { key: 'starter', name: 'Starter', price_cents: 0, per_seat_cents: 0 });
    expect(first).toEqual({
      id: expect.stringMatching(UUID),
      key: 'starter',
      name: 'Starter',
      interval: 'month',
      currency: 'USD',
      price_cents: 0,
      per_seat_cents: 0,
      trial_days: 0,
      archived_at: null,
      created_at: isoDate,
    });
    const second = await createPlan(fresh, { key: 'pro', interval: 'year', trial_days: 14 });
    expect((await ok(fresh.rest('GET', '/v1/billing/plans'))).map((p: any) => p.id)).toEqual([second.id, first.id]);
    expect(await ok(fresh.rest('GET', `/v1/billing/plans/${second.id}`))).toEqual(second);
    const patched = await ok(fresh.rest('PATCH', `/v1/billing/plans/${second.id}`, { name: 'Pro', price_cents: 9900 }));
    expect(patched).toEqual({ ...second, name: 'Pro', price_cents: 9900 });
  });

  it('takes the currency in any case and answers its ISO 4217 upper-case form', async () => {
    for (const currency of ['usd', 'Eur', 'GBP']) {
      const plan = await createPlan(app, { currency });
      expect(plan.currency, currency).toBe(currency.toUpperCase());
      expect((await ok(app.rest('GET', `/v1/billing/plans/${plan.id}`))).currency).toBe(currency.toUpperCase());
    }
  });

  it('a duplicate key is 409 conflict; bad input is 422 with the failing paths', async () => {
    await createPlan(app, { key: 'dup' });
    expectError(
      await app.rest('POST', '/v1/billing/plans', { key: 'dup', name: 'x', interval: 'month', currency: 'USD', price_cents: 1 }),
      409,
      'conflict',
    );
    const rows: Array<[Record<string, unknown>, string]> = [
      [{ interval: 'week' }, 'interval'],
      [{ currency: 'US' }, 'currency'],
      [{ currency: 'US$' }, 'currency'],
      [{ currency: 'USDT' }, 'currency'],
      [{ price_cents: -1 }, 'price_cents'],
      [{ price_cents: 1.5 }, 'price_cents'],
      [{ trial_days: 366 }, 'trial_days'],
      [{ key: 'Has Space' }, 'key'],
      [{ name: '' }, 'name'],
      [{ extra: 1 }, ''],
    ];
    for (const [patch, path] of rows) {
      const res = await app.rest('POST', '/v1/billing/plans', {
        key: unique('k'),
        name: 'x',
        interval: 'month',
        currency: 'USD',
        price_cents: 1,
        ...patch,
      });
      expectError(res, 422, 'validation_failed', JSON.stringify(patch));
      if (path)
        expect(
          res.body.error.details!.map((d) => d.path),
          JSON.stringify(patch),
        ).toContain(path);
    }
  });

  it('a subscribed plan cannot be deleted (409): it is archived instead and takes no new subscriptions', async () => {
    const plan = await createPlan(app);
    const unused = await createPlan(app);
    const org = await createOrg(app);
    await ok(subscribe(app, { organization_id: org.id, plan_id: plan.id, seats: 3 }), 201);
    expectError(await app.rest('DELETE', `/v1/billing/plans/${plan.id}`), 409, 'conflict');
    expect(await ok(app.rest('DELETE', `/v1/billing/plans/${unused.id}`))).toEqual({ id: unused.id, deleted: true });
    expectError(await app.rest('GET', `/v1/billing/plans/${unused.id}`), 404, 'not_found');

    const archived = await ok(app.rest('PATCH', `/v1/billing/plans/${plan.id}`, { archived: true }));
    expect(archived.archived_at).toEqual(isoDate);
    const other = await createOrg(app);
    expectError(await subscribe(app, { organization_id: other.id, plan_id: plan.id, seats: 1 }), 409, 'conflict');
    const offered = await ok(app.rest('PATCH', `/v1/billing/plans/${plan.id}`, { archived: false }));
    expect(offered.archived_at).toBeNull();
    await ok(subscribe(app, { organization_id: other.id, plan_id: plan.id, seats: 1 }), 201);
  });
});

describe('subscriptions', () => {
  it('S13: every subscription of the application with exactly the seed fields, newest first', async () => {
    const fresh = await suite.server.createApp();
    const plan = await createPlan(fresh, { key: 'team', name: 'Team', interval: 'year', currency: 'EUR', price_cents: 50000 });
    const acme = await createOrg(fresh, { name: 'Acme' });
    const globex = await createOrg(fresh, { name: 'Globex' });
    const before = Date.now();
    const first = await ok(subscribe(fresh, { organization_id: acme.id, plan_id: plan.id, seats: 5 }), 201);
    const second = await ok(subscribe(fresh, { organization_id: globex.id, plan_id: plan.id, seats: 2 }), 201);
    const list = await ok(fresh.rest('GET', '/v1/billing/subscriptions'));
    expect(list).toEqual([second, first]);
    expect(first).toEqual({
      id: expect.stringMatching(UUID),
      organization_id: acme.id,
      organization_name: 'Acme',
      plan_id: plan.id,
      plan_key: 'team',
      plan_name: 'Team',
      status: 'active',
      interval: 'year',
      currency: 'EUR',
      price_cents: 50000,
      per_seat_cents: 900,
      seats: 5,
      current_period_end: isoDate,
      canceled_at: null,
    });
    // A year from now (within a few days either way for leap years and a loaded machine).
    const end = Date.parse(first.current_period_end);
    expect(end - before).toBeGreaterThan(364 * DAY_MS);
    expect(end - before).toBeLessThan(367 * DAY_MS);
    expect(await ok(fresh.rest('GET', `/v1/billing/subscriptions/${first.id}`))).toEqual(first);
    // Through the SDK, the same records.
    expect(await fresh.sdk.billing.subscriptions.list()).toEqual(list);
    // The event carries the record.
    expect((await events(fresh, 'subscription.created')).map((e) => e.data)).toEqual([second, first]);
  });

  it('a plan with a trial starts trialing until the trial ends; housekeeping then makes it active for one interval', async () => {
    const plan = await createPlan(app, { trial_days: 14 });
    const org = await createOrg(app);
    const before = Date.now();
    const sub = await ok(subscribe(app, { organization_id: org.id, plan_id: plan.id, seats: 2 }), 201);
    expect(sub.status).toBe('trialing');
    const trialEnd = Date.parse(sub.current_period_end);
    expect(trialEnd - before).toBeGreaterThan(13.9 * DAY_MS);
    expect(trialEnd - before).toBeLessThan(14.1 * DAY_MS);

    // Housekeeping leaves a trial that has not ended alone.
    await suite.server.server.housekeeping();
    expect((await ok(app.rest('GET', `/v1/billing/subscriptions/${sub.id}`))).status).toBe('trialing');

    await endPeriod(sub.id);
    const [{ end: endedAt }] = await sql<{ end: Date }>(
      suite.server,
      'select current_period_end as end from billing_subscriptions where id = ?',
      [sub.id],
    );
    await suite.server.server.housekeeping();
    const active = await ok(app.rest('GET', `/v1/billing/subscriptions/${sub.id}`));
    expect(active.status).toBe('active');
    const months = (Date.parse(active.current_period_end) - new Date(endedAt).getTime()) / DAY_MS;
    expect(months).toBeGreaterThanOrEqual(28);
    expect(months).toBeLessThanOrEqual(31);
    const updated = (await events(app, 'subscription.updated')).filter((e) => e.data.id === sub.id);
    expect(updated[0]!.data).toEqual(active);

    // A second run changes nothing: the new period has not ended.
    await suite.server.server.housekeeping();
    expect(await ok(app.rest('GET', `/v1/billing/subscriptions/${sub.id}`))).toEqual(active);
  });

  it('an active subscription renews each period; a past_due one renews and stays past_due', async () => {
    const plan = await createPlan(app);
    const org = await createOrg(app);
    const sub = await ok(subscribe(app, { organization_id: org.id, plan_id: plan.id, seats: 1 }), 201);
    const pastDue = await ok(app.rest('PATCH', `/v1/billing/subscriptions/${sub.id}`, { status: 'past_due' }));
    expect(pastDue.status).toBe('past_due');
    await endPeriod(sub.id);
    await suite.server.server.housekeeping();
    const renewed = await ok(app.rest('GET', `/v1/billing/subscriptions/${sub.id}`));
    expect(renewed.status).toBe('past_due');
    expect(Date.parse(renewed.current_period_end)).toBeGreaterThan(Date.now() + 27 * DAY_MS);
    const active = await ok(app.rest('PATCH', `/v1/billing/subscriptions/${sub.id}`, { status: 'active' }));
    expect(active).toEqual({ ...renewed, status: 'active' });
  });

  it('cancel at period end keeps it live until then; housekeeping ends it (subscription.canceled)', async () => {
    const plan = await createPlan(app);
    const org = await createOrg(app);
    const sub = await ok(subscribe(app, { organization_id: org.id, plan_id: plan.id, seats: 2 }), 201);
    const scheduled = await ok(app.rest('POST', `/v1/billing/subscriptions/${sub.id}/cancel`, { at_period_end: true }));
    expect(scheduled).toEqual({ ...sub, canceled_at: isoDate });
    // Still live: it holds the organization's slot and its seats still count.
    expectError(await subscribe(app, { organization_id: org.id, plan_id: plan.id, seats: 2 }), 409, 'conflict');
    expect((await ok(app.rest('GET', `/v1/organizations/${org.id}`))).subscription).toMatchObject({
      id: sub.id,
      status: 'active',
    });

    await endPeriod(sub.id);
    await suite.server.server.housekeeping();
    const ended = await ok(app.rest('GET', `/v1/billing/subscriptions/${sub.id}`));
    expect(ended).toMatchObject({ status: 'canceled', canceled_at: scheduled.canceled_at });
    expect((await events(app, 'subscription.canceled')).map((e) => e.data)).toContainEqual(ended);
    // No longer live: no summary, no seat limit, and a new subscription is possible.
    expect((await ok(app.rest('GET', `/v1/organizations/${org.id}`))).subscription).toBeNull();
    await ok(subscribe(app, { organization_id: org.id, plan_id: plan.id, seats: 2 }), 201);
  });

  it('cancel now ends it at once; a canceled subscription cannot change (409)', async () => {
    const plan = await createPlan(app);
    const org = await createOrg(app);
    const sub = await ok(subscribe(app, { organization_id: org.id, plan_id: plan.id, seats: 2 }), 201);
    const canceled = await ok(app.rest('POST', `/v1/billing/subscriptions/${sub.id}/cancel`, {}));
    expect(canceled).toEqual({ ...sub, status: 'canceled', canceled_at: isoDate });
    expectError(await app.rest('POST', `/v1/billing/subscriptions/${sub.id}/cancel`, {}), 409, 'conflict');
    expectError(await app.rest('PATCH', `/v1/billing/subscriptions/${sub.id}`, { seats: 9 }), 409, 'conflict');
    // Housekeeping never touches a canceled subscription.
    await endPeriod(sub.id);
    await suite.server.server.housekeeping();
    expect((await ok(app.rest('GET', `/v1/billing/subscriptions/${sub.id}`))).status).toBe('canceled');
  });

  it('one live subscription per organization: a second is 409 conflict, even 10 at once', async () => {
    const plan = await createPlan(app);
    const org = await createOrg(app);
    const results = await Promise.all(
      Array.from({ length: 10 }, () => subscribe(app, { organization_id: org.id, plan_id: plan.id, seats: 1 })),
    );
    expectExactlyOneWinner(results, 201, 'conflict');
    const live = await sql(suite.server, `select count(*)::int as n from billing_subscriptions where organization_id = ?`, [
      org.id,
    ]);
    expect(live[0]!.n).toBe(1);
  });

  it('PATCH changes seats and plan; GET /v1/organizations/{id} shows the summary', async () => {
    const plan = await createPlan(app, { key: unique('basic') });
    const bigger = await createPlan(app, { key: unique('bigger'), interval: 'year' });
    const org = await createOrg(app);
    expect((await ok(app.rest('GET', `/v1/organizations/${org.id}`))).subscription).toBeNull();
    const sub = await ok(subscribe(app, { organization_id: org.id, plan_id: plan.id, seats: 2 }), 201);
    const changed = await ok(app.rest('PATCH', `/v1/billing/subscriptions/${sub.id}`, { seats: 10, plan_id: bigger.id }));
    expect(changed).toEqual({ ...sub, seats: 10, plan_id: bigger.id, plan_key: bigger.key, interval: 'year' });
    expect((await ok(app.rest('GET', `/v1/organizations/${org.id}`))).subscription).toEqual({
      id: sub.id,
      plan_id: bigger.id,
      plan_key: bigger.key,
      status: 'active',
      seats: 10,
      current_period_end: sub.current_period_end,
      canceled_at: null,
    });
  });

  it('an organization has one shape: create, get, update and the list items all carry its subscription', async () => {
    const fresh = await suite.server.createApp();
    const plan = await createPlan(fresh);
    const [subscribed, bare] = [await createOrg(fresh, { name: 'Paying' }), await createOrg(fresh, { name: 'Free' })];
    expect(subscribed.subscription).toBeNull();
    const sub = await ok(subscribe(fresh, { organization_id: subscribed.id, plan_id: plan.id, seats: 3 }), 201);
    const summary = {
      id: sub.id,
      plan_id: plan.id,
      plan_key: plan.key,
      status: 'active',
      seats: 3,
      current_period_end: sub.current_period_end,
      canceled_at: null,
    };
    const got = await ok(fresh.rest('GET', `/v1/organizations/${subscribed.id}`));
    expect(got.subscription).toEqual(summary);
    const updated = await ok(fresh.rest('PATCH', `/v1/organizations/${subscribed.id}`, { name: 'Paying Inc' }));
    expect(updated).toEqual({ ...got, name: 'Paying Inc', updated_at: isoDate });
    const listed = (await ok(fresh.rest('GET', '/v1/organizations'))).organizations;
    expect(listed).toEqual([bare, updated]);
    expect(Object.keys(listed[0]).sort()).toEqual(Object.keys(subscribed).sort());
  });

  it('seats are enforced at member add (409 seat_limit_reached); lowering seats below the members is 409', async () => {
    const plan = await createPlan(app);
    const org = await createOrg(app);
    const [a, b, c] = [await createUser(app), await createUser(app), await createUser(app)];
    await ok(addMember(app, org.id, a.id), 201);
    await ok(addMember(app, org.id, b.id), 201);
    // Fewer seats than members, at creation or later: refused, nothing changes.
    expectError(await subscribe(app, { organization_id: org.id, plan_id: plan.id, seats: 1 }), 409, 'seat_limit_reached');
    const sub = await ok(subscribe(app, { organization_id: org.id, plan_id: plan.id, seats: 2 }), 201);
    expectError(await app.rest('PATCH', `/v1/billing/subscriptions/${sub.id}`, { seats: 1 }), 409, 'seat_limit_reached');
    expect((await ok(app.rest('GET', `/v1/billing/subscriptions/${sub.id}`))).seats).toBe(2);

    const full = await addMember(app, org.id, c.id);
    expectError(full, 409, 'seat_limit_reached');
    // Nothing was written: no membership, no event.
    expect((await ok(app.rest('GET', `/v1/organizations/${org.id}`))).member_count).toBe(2);
    const created = (await events(app, 'organization_membership.created')).filter((e) => e.data.user_id === c.id);
    expect(created).toHaveLength(0);
    // An existing member is still `already_member`, not a seat problem.
    expectError(await addMember(app, org.id, a.id), 409, 'already_member');
    // Through the SDK: the same code.
    expect((await rejection(app.sdk.organizations.members.add({ id: org.id, user_id: c.id }))).code).toBe('seat_limit_reached');

    // A seat freed (member removed) or added (PATCH seats) makes room.
    await ok(app.rest('PATCH', `/v1/billing/subscriptions/${sub.id}`, { seats: 3 }));
    await ok(addMember(app, org.id, c.id), 201);
    // Canceled: no limit any more.
    await ok(app.rest('POST', `/v1/billing/subscriptions/${sub.id}/cancel`, {}));
    await ok(addMember(app, org.id, (await createUser(app)).id), 201);
  });

  it(`seat race: N seats, N-1 members, 20 parallel additions on ${inject('databaseUrl') ? 'two server processes' : 'one embedded server'} → exactly one succeeds`, async () => {
    const plan = await createPlan(app);
    const org = await createOrg(app);
    const seats = 3;
    for (let i = 0; i < seats - 1; i++) await ok(addMember(app, org.id, (await createUser(app)).id), 201);
    await ok(subscribe(app, { organization_id: org.id, plan_id: plan.id, seats }), 201);
    const users = await Promise.all(Array.from({ length: 20 }, () => createUser(app)));
    const results = await acrossServers(suite.server, 20, (server, i) => addMember(app.via(server), org.id, users[i]!.id));
    expectExactlyOneWinner(results, 201, 'seat_limit_reached');
    const [row] = await sql(suite.server, 'select count(*)::int as n from organization_members where organization_id = ?', [
      org.id,
    ]);
    expect(row!.n).toBe(seats);
  });

  it('unknown and foreign ids are 404; bad input is 422 with paths', async () => {
    const plan = await createPlan(app);
    const org = await createOrg(app);
    const other = await suite.server.createApp();
    const theirPlan = await createPlan(other);
    const theirOrg = await createOrg(other);
    const theirSub = await ok(subscribe(other, { organization_id: theirOrg.id, plan_id: theirPlan.id, seats: 1 }), 201);
    expectError(await subscribe(app, { organization_id: MISSING, plan_id: plan.id, seats: 1 }), 404, 'not_found');
    expectError(await subscribe(app, { organization_id: theirOrg.id, plan_id: plan.id, seats: 1 }), 404, 'not_found');
    expectError(await subscribe(app, { organization_id: org.id, plan_id: theirPlan.id, seats: 1 }), 404, 'not_found');
    for (const [method, path, body] of [
      ['GET', `/v1/billing/subscriptions/${theirSub.id}`, undefined],
      ['PATCH', `/v1/billing/subscriptions/${theirSub.id}`, { seats: 5 }],
      ['POST', `/v1/billing/subscriptions/${theirSub.id}/cancel`, {}],
      ['GET', `/v1/billing/plans/${theirPlan.id}`, undefined],
      ['PATCH', `/v1/billing/plans/${theirPlan.id}`, { name: 'x' }],
      ['DELETE', `/v1/billing/plans/${theirPlan.id}`, undefined],
      ['GET', `/v1/billing/subscriptions/${MISSING}`, undefined],
    ] as const) {
      expectError(await app.rest(method, path, body), 404, 'not_found', `${method} ${path}`);
    }
    // Nothing of theirs changed, and none of it is listed here.
    expect(await ok(other.rest('GET', `/v1/billing/subscriptions/${theirSub.id}`))).toEqual(theirSub);
    expect((await ok(app.rest('GET', '/v1/billing/subscriptions'))).map((s: any) => s.id)).not.toContain(theirSub.id);

    const sub = await ok(subscribe(app, { organization_id: org.id, plan_id: plan.id, seats: 1 }), 201);
    const rows: Array<[string, string, unknown, string]> = [
      ['POST', '/v1/billing/subscriptions', { organization_id: org.id, plan_id: plan.id, seats: 0 }, 'seats'],
      ['POST', '/v1/billing/subscriptions', { organization_id: org.id, plan_id: plan.id }, 'seats'],
      ['POST', '/v1/billing/subscriptions', { organization_id: 'nope', plan_id: plan.id, seats: 1 }, 'organization_id'],
      ['PATCH', `/v1/billing/subscriptions/${sub.id}`, { seats: -1 }, 'seats'],
      ['PATCH', `/v1/billing/subscriptions/${sub.id}`, { status: 'canceled' }, 'status'],
      ['PATCH', `/v1/billing/subscriptions/${sub.id}`, { status: 'trialing' }, 'status'],
      ['POST', `/v1/billing/subscriptions/${sub.id}/cancel`, { at_period_end: 'yes' }, 'at_period_end'],
    ];
    for (const [method, path, body, field] of rows) {
      const res = await app.rest(method, path, body);
      expectError(res, 422, 'validation_failed', `${method} ${JSON.stringify(body)}`);
      expect(res.body.error.details!.map((d) => d.path)).toContain(field);
    }
    expectError(await app.rest('GET', '/v1/billing/subscriptions/not-a-uuid'), 422, 'validation_failed');
    expect(await ok(app.rest('GET', `/v1/billing/subscriptions/${sub.id}`))).toEqual(sub);
  });

  it('scopes: billing:read lists but cannot write (403); other scopes cannot read (403)', async () => {
    const reader = await ok(app.rest('POST', '/v1/api-keys', { name: 'billing reader', scopes: ['billing:read'] }), 201);
    const users = await ok(app.rest('POST', '/v1/api-keys', { name: 'users only', scopes: ['users:read'] }), 201);
    const as = (key: { secret: string }) => ({ authorization: `Bearer ${key.secret}` });
    await ok(app.rest('GET', '/v1/billing/subscriptions', undefined, as(reader)));
    await ok(app.rest('GET', '/v1/billing/plans', undefined, as(reader)));
    expectError(
      await app.rest(
        'POST',
        '/v1/billing/plans',
        { key: 'x', name: 'x', interval: 'month', currency: 'USD', price_cents: 1 },
        as(reader),
      ),
      403,
      'insufficient_scope',
    );
    expectError(await app.rest('GET', '/v1/billing/subscriptions', undefined, as(users)), 403, 'insufficient_scope');
    expectError(
      await app.rest('GET', '/v1/billing/subscriptions', undefined, { authorization: undefined }),
      401,
      'missing_credentials',
    );
  });
});

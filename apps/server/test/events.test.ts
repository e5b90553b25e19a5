import { describe, expect, it } from 'vitest';
import { expectError, isoDate, MISSING, ok, type TestApp, UUID } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite({ smtp: false });

interface Event {
  id: string;
  type: string;
  data: Record<string, any>;
  created_at: string;
}

const events = async (on: TestApp, query = '') => {
  const res = await on.rest('GET', `/v1/events${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as { events: Event[]; total: number; limit: number; offset: number };
};

/** Every event of the application, newest first. */
const allEvents = async (on: TestApp) => (await events(on, '?limit=100')).events;

/** The events written since the total was `before`, newest first. */
async function newEvents(on: TestApp, before: number): Promise<Event[]> {
  const page = await events(on, '?limit=100');
  return page.events.slice(0, page.total - before);
}

const total = async (on: TestApp) => (await events(on, '?limit=1')).total;

describe('GET /v1/events', () => {
  it('a new application starts with the api_key.created event of its first key, without the secret', async () => {
    const app = await suite.server.createApp();
    const page = await events(app);
    expect(Object.keys(page).sort()).toEqual(['events', 'limit', 'offset', 'total']);
    expect(page).toMatchObject({ total: 1, limit: 25, offset: 0 });
    const [event] = page.events;
    expect(event).toEqual({
      id: expect.stringMatching(UUID),
      type: 'api_key.created',
      data: expect.any(Object),
      created_at: isoDate,
    });
    const keys = await ok(app.rest('GET', '/v1/api-keys'));
    expect(event!.data).toEqual({ id: keys[0].id, name: keys[0].name, scopes: ['*'] });
    expect(JSON.stringify(event)).not.toContain(app.secretKey);
  });

  it('every user mutation writes its event with the right data', async () => {
    const app = await suite.server.createApp();
    let before = await total(app);
    const user = await ok(app.rest('POST', '/v1/users', { primary_email: 'events@example.com', profile: { a: 1 } }), 201);
    let written = await newEvents(app, before);
    expect(written).toHaveLength(1);
    expect(written[0]).toEqual({ id: expect.stringMatching(UUID), type: 'user.created', data: user, created_at: isoDate });

    before = await total(app);
    const updated = await ok(app.rest('PATCH', `/v1/users/${user.id}`, { profile: { a: 2 }, status: 'banned' }));
    written = await newEvents(app, before);
    expect(written.map((e) => e.type)).toEqual(['user.updated']);
    expect(written[0]!.data).toEqual(updated);
    expect(written[0]!.data).toMatchObject({ id: user.id, status: 'banned', profile: { a: 2 } });

    const other = await ok(app.rest('POST', '/v1/users', {}), 201);
    before = await total(app);
    await ok(app.rest('POST', '/v1/users/merge', { source_user_id: other.id, target_user_id: user.id }));
    written = await newEvents(app, before);
    expect(written.map((e) => e.type)).toEqual(['user.merged']);
    expect(written[0]!.data).toEqual({ source_user_id: other.id, target_user_id: user.id });

    before = await total(app);
    expect(await ok(app.rest('DELETE', `/v1/users/${user.id}`))).toEqual({ id: user.id, deleted: true });
    written = await newEvents(app, before);
    expect(written.map((e) => e.type)).toEqual(['user.deleted']);
    expect(written[0]!.data).toMatchObject({ id: user.id });
  });

  it('every organization and membership mutation writes its event with the right data', async () => {
    const app = await suite.server.createApp();
    const user = await ok(app.rest('POST', '/v1/users', { primary_email: 'member@example.com' }), 201);

    let before = await total(app);
    const org = await ok(app.rest('POST', '/v1/organizations', { name: 'Evented' }), 201);
    let written = await newEvents(app, before);
    expect(written.map((e) => e.type)).toEqual(['organization.created']);
    expect(written[0]!.data).toEqual(org);

    before = await total(app);
    const renamed = await ok(app.rest('PATCH', `/v1/organizations/${org.id}`, { name: 'Renamed', slug: 'renamed' }));
    written = await newEvents(app, before);
    expect(written.map((e) => e.type)).toEqual(['organization.updated']);
    expect(written[0]!.data).toEqual(renamed);
    expect(written[0]!.data).toMatchObject({ id: org.id, name: 'Renamed', slug: 'renamed' });

    before = await total(app);
    const member = await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id }), 201);
    written = await newEvents(app, before);
    expect(written.map((e) => e.type)).toEqual(['organization_membership.created']);
    expect(written[0]!.data).toEqual({ organization_id: org.id, ...member });
    expect(written[0]!.data).toMatchObject({ organization_id: org.id, user_id: user.id, role: 'member' });

    before = await total(app);
    const changed = await ok(app.rest('PATCH', `/v1/organizations/${org.id}/members/${user.id}`, { role: 'admin' }));
    written = await newEvents(app, before);
    expect(written.map((e) => e.type)).toEqual(['organization_membership.updated']);
    expect(written[0]!.data).toEqual({ organization_id: org.id, ...changed });
    expect(written[0]!.data).toMatchObject({ user_id: user.id, role: 'admin' });

    before = await total(app);
    await ok(app.rest('DELETE', `/v1/organizations/${org.id}/members/${user.id}`));
    written = await newEvents(app, before);
    expect(written.map((e) => e.type)).toEqual(['organization_membership.deleted']);
    expect(written[0]!.data).toMatchObject({ organization_id: org.id, user_id: user.id });

    before = await total(app);
    await ok(app.rest('DELETE', `/v1/organizations/${org.id}`));
    written = await newEvents(app, before);
    expect(written.map((e) => e.type)).toEqual(['organization.deleted']);
    expect(written[0]!.data).toMatchObject({ id: org.id });
  });

  it('update events carry the record as it was stored (updated_at included), every time', async () => {
    const app = await suite.server.createApp();
    const user = await ok(app.rest('POST', '/v1/users', {}), 201);
    const org = await ok(app.rest('POST', '/v1/organizations', { name: 'Stored' }), 201);
    await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id }), 201);
    for (let i = 0; i < 5; i++) {
      await ok(app.rest('PATCH', `/v1/users/${user.id}`, { profile: { i } }));
      await ok(app.rest('PATCH', `/v1/organizations/${org.id}`, { name: `Stored ${i}` }));
      await ok(app.rest('PATCH', `/v1/organizations/${org.id}/members/${user.id}`, { role: `role_${i}` }));
      const [member, orgUpdate, userUpdate] = (await events(app, '?limit=3')).events;
      expect(userUpdate!.data, `user.updated #${i}`).toEqual(await ok(app.rest('GET', `/v1/users/${user.id}`)));
      expect(orgUpdate!.data, `organization.updated #${i}`).toEqual(await ok(app.rest('GET', `/v1/organizations/${org.id}`)));
      const stored = (await ok(app.rest('GET', `/v1/organizations/${org.id}/members`))).members[0];
      expect(member!.data, `organization_membership.updated #${i}`).toEqual({ organization_id: org.id, ...stored });
    }
  });

  it('creating and revoking an API key writes api_key.created and api_key.revoked, never the secret', async () => {
    const app = await suite.server.createApp();
    let before = await total(app);
    const key = await ok(app.rest('POST', '/v1/api-keys', { name: 'Reader', scopes: ['users:read'] }), 201);
    let written = await newEvents(app, before);
    expect(written.map((e) => e.type)).toEqual(['api_key.created']);
    expect(written[0]!.data).toMatchObject({ id: key.id, name: 'Reader', scopes: ['users:read'] });
    expect(JSON.stringify(written[0])).not.toContain(key.secret);

    before = await total(app);
    expect(await ok(app.rest('DELETE', `/v1/api-keys/${key.id}`))).toEqual({ id: key.id, deleted: true });
    written = await newEvents(app, before);
    expect(written.map((e) => e.type)).toEqual(['api_key.revoked']);
    expect(written[0]!.data).toMatchObject({ id: key.id });
    expect(JSON.stringify(written[0])).not.toContain(key.secret);
  });

  it('lists newest first (created_at DESC, id DESC), paginated', async () => {
    const app = await suite.server.createApp();
    const user = await ok(app.rest('POST', '/v1/users', {}), 201);
    await ok(app.rest('PATCH', `/v1/users/${user.id}`, { email_verified: true }));
    const org = await ok(app.rest('POST', '/v1/organizations', { name: 'Order' }), 201);
    await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id }), 201);
    await ok(app.rest('DELETE', `/v1/users/${user.id}`));

    const all = await allEvents(app);
    expect(all.map((e) => e.type)).toEqual([
      'user.deleted',
      'organization_membership.created',
      'organization.created',
      'user.updated',
      'user.created',
      'api_key.created',
    ]);
    const sorted = [...all].sort((x, y) => y.created_at.localeCompare(x.created_at) || y.id.localeCompare(x.id));
    expect(all.map((e) => e.id)).toEqual(sorted.map((e) => e.id));
    expect(new Set(all.map((e) => e.id)).size).toBe(all.length);

    const window = await events(app, '?limit=2&offset=1');
    expect(window).toMatchObject({ total: 6, limit: 2, offset: 1 });
    expect(window.events.map((e) => e.id)).toEqual(all.slice(1, 3).map((e) => e.id));
    for (const query of ['limit=0', 'limit=101', 'limit=-1', 'limit=1.5', 'limit=abc', 'offset=-1', 'offset=abc']) {
      expectError(await app.rest('GET', `/v1/events?${query}`), 422, 'validation_failed', query);
    }
  });

  it('filters by type; total reflects the filter; an unknown type is 422', async () => {
    const app = await suite.server.createApp();
    const users: any[] = [];
    for (let i = 0; i < 3; i++) users.push(await ok(app.rest('POST', '/v1/users', {}), 201));
    await ok(app.rest('PATCH', `/v1/users/${users[0].id}`, { email_verified: true }));
    await ok(app.rest('POST', '/v1/organizations', { name: 'Filter' }), 201);

    const created = await events(app, '?type=user.created');
    expect(created.total).toBe(3);
    expect(created.events.map((e) => e.type)).toEqual(['user.created', 'user.created', 'user.created']);
    expect(created.events.map((e) => e.data.id)).toEqual(users.map((u) => u.id).reverse());
    const pagedFilter = await events(app, '?type=user.created&limit=1&offset=2');
    expect(pagedFilter).toMatchObject({ total: 3, limit: 1, offset: 2 });
    expect(pagedFilter.events.map((e) => e.data.id)).toEqual([users[0].id]);
    expect((await events(app, '?type=user.updated')).total).toBe(1);
    expect((await events(app, '?type=organization.created')).total).toBe(1);
    expect((await events(app, '?type=user.merged')).total).toBe(0);

    for (const type of ['user.exploded', 'USER.CREATED', 'user.%', 'user']) {
      expectError(await app.rest('GET', `/v1/events?type=${encodeURIComponent(type)}`), 422, 'validation_failed', type);
    }
    expectError(await app.rest('GET', '/v1/events?kind=user.created'), 422, 'validation_failed');
  });

  it('a failed mutation writes no event', async () => {
    const app = await suite.server.createApp();
    const user = await ok(app.rest('POST', '/v1/users', { primary_email: 'taken@example.com' }), 201);
    const merged = await ok(app.rest('POST', '/v1/users', {}), 201);
    await ok(app.rest('POST', '/v1/users/merge', { source_user_id: merged.id, target_user_id: user.id }));
    const org = await ok(app.rest('POST', '/v1/organizations', { name: 'Taken', slug: 'taken' }), 201);
    await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id }), 201);
    const reader = await ok(app.rest('POST', '/v1/api-keys', { name: 'Reader', scopes: ['users:read'] }), 201);
    const before = await allEvents(app);

    const failures: Array<[string, string, unknown, number, string, Record<string, string>?]> = [
      ['POST', '/v1/users', { primary_email: 'TAKEN@example.com' }, 409, 'email_taken'],
      ['POST', '/v1/users', { primary_email: 'nope' }, 422, 'validation_failed'],
      [
        'POST',
        '/v1/users',
        { primary_email: 'scope@example.com' },
        403,
        'insufficient_scope',
        { authorization: `Bearer ${reader.secret}` },
      ],
      ['PATCH', `/v1/users/${MISSING}`, { profile: {} }, 404, 'not_found'],
      ['PATCH', `/v1/users/${user.id}`, { status: 'merged' }, 422, 'validation_failed'],
      ['PATCH', `/v1/users/${merged.id}`, { profile: { revived: true } }, 422, 'user_merged'],
      ['DELETE', `/v1/users/${MISSING}`, undefined, 404, 'not_found'],
      ['POST', '/v1/users/merge', { source_user_id: user.id, target_user_id: user.id }, 422, 'cannot_merge_into_self'],
      ['POST', '/v1/users/merge', { source_user_id: user.id, target_user_id: merged.id }, 422, 'user_merged'],
      ['POST', '/v1/users/merge', { source_user_id: user.id, target_user_id: MISSING }, 404, 'not_found'],
      ['POST', '/v1/organizations', { name: 'Again', slug: 'taken' }, 409, 'slug_taken'],
      ['POST', '/v1/organizations', { name: 'Bad', slug: 'Bad Slug' }, 422, 'validation_failed'],
      ['PATCH', `/v1/organizations/${org.id}`, { slug: 'Bad Slug' }, 422, 'validation_failed'],
      ['DELETE', `/v1/organizations/${MISSING}`, undefined, 404, 'not_found'],
      ['POST', `/v1/organizations/${org.id}/members`, { user_id: user.id }, 409, 'already_member'],
      ['POST', `/v1/organizations/${org.id}/members`, { user_id: MISSING }, 422, 'user_not_found'],
      ['POST', `/v1/organizations/${MISSING}/members`, { user_id: user.id }, 404, 'not_found'],
      ['PATCH', `/v1/organizations/${org.id}/members/${merged.id}`, { role: 'admin' }, 404, 'not_found'],
      ['DELETE', `/v1/organizations/${org.id}/members/${MISSING}`, undefined, 404, 'not_found'],
      ['POST', '/v1/api-keys', { name: 'Bad', scopes: ['nope:read'] }, 422, 'unknown_scope'],
      ['DELETE', `/v1/api-keys/${MISSING}`, undefined, 404, 'not_found'],
    ];
    for (const [method, path, body, status, code, headers] of failures) {
      expectError(await app.rest(method, path, body, headers), status, code, `${method} ${path} ${JSON.stringify(body)}`);
    }
    expect(await allEvents(app)).toEqual(before);
  });

  it("another application's events are never visible", async () => {
    const a = await suite.server.createApp();
    const b = await suite.server.createApp();
    const userB = await ok(b.rest('POST', '/v1/users', { primary_email: 'b@example.com' }), 201);
    const orgB = await ok(b.rest('POST', '/v1/organizations', { name: 'B org' }), 201);
    await ok(b.rest('POST', `/v1/organizations/${orgB.id}/members`, { user_id: userB.id }), 201);
    const userA = await ok(a.rest('POST', '/v1/users', { primary_email: 'a@example.com' }), 201);

    const seenByA = await allEvents(a);
    expect(seenByA.map((e) => e.type)).toEqual(['user.created', 'api_key.created']);
    expect(seenByA[0]!.data.id).toBe(userA.id);
    const text = JSON.stringify(seenByA);
    for (const id of [userB.id, orgB.id, b.id]) expect(text).not.toContain(id);
    expect((await events(a, '?type=organization.created')).total).toBe(0);
    expect((await events(a, '?type=organization_membership.created')).total).toBe(0);

    const seenByB = await allEvents(b);
    expect(seenByB).toHaveLength(4);
    expect(JSON.stringify(seenByB)).not.toContain(userA.id);
    // A's key with B's application id is refused outright.
    expectError(await a.rest('GET', '/v1/events', undefined, { 'x-application-id': b.id }), 401, 'invalid_api_key');
  });

  it('through the SDK: lists and filters events', async () => {
    const app = await suite.server.createApp();
    const user = await app.sdk.users.create({ primary_email: 'sdk.events@example.com' });
    const page = await app.sdk.events.list();
    expect(page).toMatchObject({ total: 2, limit: 25, offset: 0 });
    expect(page.events[0]).toEqual({ id: expect.stringMatching(UUID), type: 'user.created', data: user, created_at: isoDate });
    const filtered = await app.sdk.events.list({ type: 'api_key.created' });
    expect(filtered.total).toBe(1);
    expect(filtered.events[0]!.type).toBe('api_key.created');
    await expect(app.sdk.events.list({ type: 'nope' } as any)).rejects.toMatchObject({ code: 'validation_failed', status: 422 });
  });
});

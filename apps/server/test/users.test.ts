import { GatehouseError } from '@gatehouse/sdk';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, createOrg, createUser, expectExactlyOneWinner, scopedKey, uniqueEmail } from './helpers/fixtures.ts';
import { expectError, isoDate, MISSING, ok, type RestResponse, type TestApp, UUID } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite({ smtp: false });

let app: TestApp;

beforeAll(async () => {
  app = await suite.server.createApp();
});

const listUsers = async (on: TestApp, query = '') =>
  (await ok(on.rest('GET', `/v1/users${query}`))) as { users: any[]; total: number; limit: number; offset: number };

const addMember = (on: TestApp, orgId: string, userId: string, role?: string) =>
  ok(on.rest('POST', `/v1/organizations/${orgId}/members`, { user_id: userId, ...(role ? { role } : {}) }), 201);

const members = async (on: TestApp, orgId: string) =>
  (await ok(on.rest('GET', `/v1/organizations/${orgId}/members?limit=100`))).members as Array<{ user_id: string; role: string }>;

describe('POST /v1/users', () => {
  it('201 with the whole User shape, optional fields null', async () => {
    const res = await app.rest('POST', '/v1/users', { primary_email: 'shape@example.com' });
    expect(res.status).toBe(201);
    expect(res.body.success).toBe(true);
    expect(res.body.error).toBeNull();
    expect(res.body.data).toEqual({
      id: expect.stringMatching(UUID),
      primary_email: 'shape@example.com',
      email_verified: false,
      status: 'active',
      profile: {},
      merged_into: null,
      created_at: isoDate,
      updated_at: isoDate,
    });

    const bare = await app.rest('POST', '/v1/users', {});
    expect(bare.status).toBe(201);
    expect(bare.body.data).toMatchObject({ primary_email: null, merged_into: null, status: 'active', profile: {} });
    expect(Object.keys(bare.body.data).sort()).toEqual(Object.keys(res.body.data).sort());

    // Users without an email do not collide with each other.
    expect((await app.rest('POST', '/v1/users', {})).status).toBe(201);
  });

  it('stores email_verified and profile, and GET answers the same record', async () => {
    const created = await createUser(app, { primary_email: uniqueEmail(), email_verified: true, profile: { plan: 'pro', n: 1 } });
    expect(created).toMatchObject({ email_verified: true, profile: { plan: 'pro', n: 1 } });
    const got = await app.rest('GET', `/v1/users/${created.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(created);
  });

  it('trims the email and compares it case-insensitively: 409 email_taken', async () => {
    const other = await suite.server.createApp();
    const created = await createUser(other, { primary_email: '  Alice.Smith@Example.COM  ' });
    expect(created.primary_email).toBe('Alice.Smith@Example.COM');
    for (const duplicate of ['alice.smith@example.com', 'ALICE.SMITH@EXAMPLE.COM', '\tAlice.Smith@Example.COM ']) {
      expectError(await other.rest('POST', '/v1/users', { primary_email: duplicate }), 409, 'email_taken');
    }
    expect((await listUsers(other)).total).toBe(1);
    // Unique per application only: another tenant may use the same address.
    expect((await app.rest('POST', '/v1/users', { primary_email: 'alice.smith@example.com' })).status).toBe(201);
  });

  it('422 validation_failed for an invalid email, unknown fields or a status', async () => {
    for (const body of [
      { primary_email: 'not-an-email' },
      { primary_email: '' },
      { primary_email: 42 },
      { primary_email: uniqueEmail(), id: MISSING },
      { primary_email: uniqueEmail(), status: 'banned' },
      { primary_email: uniqueEmail(), merged_into: MISSING },
      { profile: [] },
    ]) {
      expectError(await app.rest('POST', '/v1/users', body), 422, 'validation_failed');
    }
  });

  it('401 application_not_resolved when x-application-id is missing, malformed or unknown', async () => {
    const fresh = await suite.server.createApp();
    for (const id of [undefined, 'not-a-uuid', '', MISSING, `${fresh.id}x`]) {
      const res = await fresh.rest('POST', '/v1/users', { primary_email: uniqueEmail() }, { 'x-application-id': id });
      expectError(res, 401, 'application_not_resolved');
    }
    // Checked first: even without a key, the missing tenant is what is reported.
    const noKey = await fresh.rest(
      'POST',
      '/v1/users',
      { primary_email: uniqueEmail() },
      { 'x-application-id': undefined, authorization: undefined },
    );
    expectError(noKey, 401, 'application_not_resolved');
    expect((await listUsers(fresh)).total).toBe(0);
  });

  it("401 invalid_api_key for another tenant's key, an unknown, malformed or revoked key; 401 missing_credentials without one", async () => {
    const a = await suite.server.createApp();
    const b = await suite.server.createApp();
    const crossed = await a.rest('POST', '/v1/users', { primary_email: uniqueEmail() }, { 'x-application-id': b.id });
    expectError(crossed, 401, 'invalid_api_key');
    expectError(await a.rest('GET', '/v1/users', undefined, { 'x-application-id': b.id }), 401, 'invalid_api_key');
    for (const authorization of [`Bearer sk_test_${'A'.repeat(43)}`, 'Bearer nope', `Bearer ${a.secretKey}x`, 'Basic abc']) {
      expectError(await a.rest('POST', '/v1/users', { primary_email: uniqueEmail() }, { authorization }), 401, 'invalid_api_key');
    }
    expectError(
      await a.rest('POST', '/v1/users', { primary_email: uniqueEmail() }, { authorization: undefined }),
      401,
      'missing_credentials',
    );
    const extra = await a.rest('POST', '/v1/api-keys', { name: 'to revoke', scopes: ['users:write'] });
    expect(extra.status).toBe(201);
    const revokedAuth = { authorization: `Bearer ${extra.body.data.secret}` };
    expect((await a.rest('GET', '/v1/users', undefined, revokedAuth)).status).toBe(200);
    expect((await a.rest('DELETE', `/v1/api-keys/${extra.body.data.id}`)).status).toBe(200);
    expectError(await a.rest('POST', '/v1/users', { primary_email: uniqueEmail() }, revokedAuth), 401, 'invalid_api_key');
    expect((await listUsers(a)).total).toBe(0);
    expect((await listUsers(b)).total).toBe(0);
  });
});

describe('GET /v1/users', () => {
  it('answers {users, total, limit, offset}, newest first, with defaults 25/0', async () => {
    const fresh = await suite.server.createApp();
    const sequential: any[] = [];
    for (let i = 0; i < 3; i++) sequential.push(await createUser(fresh));
    const first = await listUsers(fresh);
    expect(Object.keys(first).sort()).toEqual(['limit', 'offset', 'total', 'users']);
    expect(first).toMatchObject({ total: 3, limit: 25, offset: 0 });
    expect(first.users.map((u) => u.id)).toEqual(sequential.map((u) => u.id).reverse());
    expect(first.users[0]).toEqual(sequential[2]);

    await Promise.all(Array.from({ length: 25 }, () => createUser(fresh)));
    const page = await listUsers(fresh);
    expect(page).toMatchObject({ total: 28, limit: 25, offset: 0 });
    expect(page.users).toHaveLength(25);
    const rest = await listUsers(fresh, '?offset=25');
    expect(rest).toMatchObject({ total: 28, limit: 25, offset: 25 });
    expect(rest.users).toHaveLength(3);

    const all = await listUsers(fresh, '?limit=100');
    expect(all.users).toHaveLength(28);
    expect([...page.users, ...rest.users].map((u) => u.id)).toEqual(all.users.map((u) => u.id));
    // created_at DESC, id DESC
    const sorted = [...all.users].sort((x, y) => y.created_at.localeCompare(x.created_at) || y.id.localeCompare(x.id));
    expect(all.users.map((u) => u.id)).toEqual(sorted.map((u) => u.id));

    const window = await listUsers(fresh, '?limit=2&offset=1');
    expect(window).toMatchObject({ total: 28, limit: 2, offset: 1 });
    expect(window.users.map((u) => u.id)).toEqual(all.users.slice(1, 3).map((u) => u.id));
    const beyond = await listUsers(fresh, '?offset=1000');
    expect(beyond).toMatchObject({ users: [], total: 28, offset: 1000 });
  });

  it('422 validation_failed for out-of-range or non-integer limit and offset', async () => {
    for (const query of ['limit=0', 'limit=101', 'limit=-1', 'limit=1.5', 'limit=abc', 'offset=-1', 'offset=1.5', 'offset=abc']) {
      expectError(await app.rest('GET', `/v1/users?${query}`), 422, 'validation_failed');
    }
    expect((await listUsers(app, '?limit=100')).limit).toBe(100);
    expect((await listUsers(app, '?limit=1')).limit).toBe(1);
  });

  it('search matches within the email, case-insensitively and literally (% and _ are not wildcards)', async () => {
    const fresh = await suite.server.createApp();
    const snake = await createUser(fresh, { primary_email: 'snake_case@example.com' });
    const upper = await createUser(fresh, { primary_email: 'UPPER_X@Example.com' });
    const dashed = await createUser(fresh, { primary_email: 'lower-x@example.com' });
    const plain = await createUser(fresh, { primary_email: 'plain@example.org' });
    await createUser(fresh, {});

    const search = async (term: string) => {
      const page = await listUsers(fresh, `?search=${encodeURIComponent(term)}`);
      expect(page.total, term).toBe(page.users.length);
      return page.users.map((u) => u.id).sort();
    };
    expect(await search('_')).toEqual([snake.id, upper.id].sort());
    expect(await search('r_x')).toEqual([upper.id]);
    expect(await search('R_X')).toEqual([upper.id]);
    expect(await search('%')).toEqual([]);
    expect(await search('e%x')).toEqual([]);
    expect(await search('plain%')).toEqual([]);
    expect(await search('PLAIN')).toEqual([plain.id]);
    expect(await search('example.com')).toEqual([snake.id, upper.id, dashed.id].sort());
    expect(await search('nobody')).toEqual([]);
  });
});

describe('GET, PATCH, DELETE /v1/users/{id}', () => {
  it('reads, updates and deletes a user', async () => {
    const user = await createUser(app, { primary_email: uniqueEmail() });
    const got = await app.rest('GET', `/v1/users/${user.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(user);

    const patched = await app.rest('PATCH', `/v1/users/${user.id}`, { profile: { name: 'Ada' }, email_verified: true });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({
      id: user.id,
      primary_email: user.primary_email,
      profile: { name: 'Ada' },
      email_verified: true,
      status: 'active',
      merged_into: null,
      created_at: user.created_at,
    });
    expect(patched.body.data.updated_at >= user.updated_at).toBe(true);

    const banned = await app.rest('PATCH', `/v1/users/${user.id}`, { status: 'banned' });
    expect(banned.status).toBe(200);
    expect(banned.body.data).toMatchObject({ status: 'banned', profile: { name: 'Ada' }, email_verified: true });
    const reread = await app.rest('GET', `/v1/users/${user.id}`);
    expect(reread.body.data).toMatchObject({ status: 'banned', profile: { name: 'Ada' }, email_verified: true });
    const unbanned = await app.rest('PATCH', `/v1/users/${user.id}`, { status: 'active' });
    expect(unbanned.body.data.status).toBe('active');

    const deleted = await app.rest('DELETE', `/v1/users/${user.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ success: true, data: { id: user.id, deleted: true }, error: null });
    expectError(await app.rest('GET', `/v1/users/${user.id}`), 404, 'not_found');
    expectError(await app.rest('PATCH', `/v1/users/${user.id}`, { profile: {} }), 404, 'not_found');
    expectError(await app.rest('DELETE', `/v1/users/${user.id}`), 404, 'not_found');
    // Its email is free again.
    expect((await app.rest('POST', '/v1/users', { primary_email: user.primary_email })).status).toBe(201);
  });

  it('PATCH answers exactly the record that is stored (updated_at included), every time', async () => {
    const user = await createUser(app);
    for (let i = 0; i < 20; i++) {
      const patched = await app.rest('PATCH', `/v1/users/${user.id}`, { profile: { i } });
      expect(patched.status).toBe(200);
      const stored = await app.rest('GET', `/v1/users/${user.id}`);
      expect(patched.body.data, `PATCH #${i}`).toEqual(stored.body.data);
    }
  });

  it('PATCH rejects unknown fields, status merged and fields that may not be set (422), changing nothing', async () => {
    const user = await createUser(app);
    for (const body of [
      { status: 'merged' },
      { status: 'deleted' },
      { merged_into: MISSING },
      { primary_email: uniqueEmail() },
      { application_id: MISSING },
      { created_at: '2020-01-01T00:00:00.000Z' },
      { nickname: 'x' },
      { profile: 'nope' },
    ]) {
      expectError(await app.rest('PATCH', `/v1/users/${user.id}`, body), 422, 'validation_failed', JSON.stringify(body));
    }
    expect((await app.rest('GET', `/v1/users/${user.id}`)).body.data).toEqual(user);
  });

  it('PATCH rejects an `id` in the body (a path parameter, not a body field): 422, changing nothing', async () => {
    const user = await createUser(app);
    const other = await createUser(app);
    for (const id of [MISSING, other.id, user.id]) {
      const res = await app.rest('PATCH', `/v1/users/${user.id}`, { id, profile: { smuggled: true } });
      expectError(res, 422, 'validation_failed', id);
    }
    expect((await app.rest('GET', `/v1/users/${user.id}`)).body.data).toEqual(user);
    expect((await app.rest('GET', `/v1/users/${other.id}`)).body.data).toEqual(other);
  });

  it('404 for unknown and malformed ids', async () => {
    expectError(await app.rest('GET', `/v1/users/${MISSING}`), 404, 'not_found');
    expectError(await app.rest('PATCH', `/v1/users/${MISSING}`, { profile: {} }), 404, 'not_found');
    expectError(await app.rest('DELETE', `/v1/users/${MISSING}`), 404, 'not_found');
    const malformed = await app.rest('GET', '/v1/users/not-a-uuid');
    expect([404, 422]).toContain(malformed.status);
  });

  it("another application's user is 404 on GET, PATCH and DELETE and stays unchanged", async () => {
    const other = await suite.server.createApp();
    const theirs = await createUser(other, { primary_email: uniqueEmail('theirs'), profile: { keep: true } });
    const notFound = async (res: Promise<RestResponse>) => {
      const r = await res;
      expectError(r, 404, 'not_found');
      return r.body.error!.message;
    };
    const messages = [
      await notFound(app.rest('GET', `/v1/users/${theirs.id}`)),
      await notFound(app.rest('PATCH', `/v1/users/${theirs.id}`, { status: 'banned', profile: {} })),
      await notFound(app.rest('DELETE', `/v1/users/${theirs.id}`)),
    ];
    // Indistinguishable from an id that exists nowhere.
    expect(messages[0]).toBe((await app.rest('GET', `/v1/users/${MISSING}`)).body.error!.message);
    const after = await other.rest('GET', `/v1/users/${theirs.id}`);
    expect(after.status).toBe(200);
    expect(after.body.data).toEqual(theirs);
    expect((await listUsers(app, `?search=${encodeURIComponent(theirs.primary_email)}`)).total).toBe(0);
  });
});

describe('scopes', () => {
  it('a users:read key may list and read users but not create, update or delete them (403 insufficient_scope)', async () => {
    const fresh = await suite.server.createApp();
    const user = await createUser(fresh);
    const auth = bearer(await scopedKey(fresh, ['users:read']));
    expectError(await fresh.rest('POST', '/v1/users', { primary_email: uniqueEmail() }, auth), 403, 'insufficient_scope');
    expectError(await fresh.rest('PATCH', `/v1/users/${user.id}`, { status: 'banned' }, auth), 403, 'insufficient_scope');
    expectError(await fresh.rest('DELETE', `/v1/users/${user.id}`, undefined, auth), 403, 'insufficient_scope');
    const other = await createUser(fresh);
    expectError(
      await fresh.rest('POST', '/v1/users/merge', { source_user_id: user.id, target_user_id: other.id }, auth),
      403,
      'insufficient_scope',
    );
    const list = await fresh.rest('GET', '/v1/users', undefined, auth);
    expect(list.status).toBe(200);
    expect(list.body.data.total).toBe(2);
    const got = await fresh.rest('GET', `/v1/users/${user.id}`, undefined, auth);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(user);
    expect((await fresh.rest('GET', `/v1/users/${user.id}`)).body.data.status).toBe('active');
  });

  it('users:write implies users:read; another scope grants neither', async () => {
    const fresh = await suite.server.createApp();
    const writer = bearer(await scopedKey(fresh, ['users:write']));
    expect((await fresh.rest('POST', '/v1/users', { primary_email: uniqueEmail() }, writer)).status).toBe(201);
    expect((await fresh.rest('GET', '/v1/users', undefined, writer)).status).toBe(200);
    const orgsOnly = bearer(await scopedKey(fresh, ['organizations:write']));
    expectError(await fresh.rest('GET', '/v1/users', undefined, orgsOnly), 403, 'insufficient_scope');
    expectError(await fresh.rest('POST', '/v1/users', { primary_email: uniqueEmail() }, orgsOnly), 403, 'insufficient_scope');
  });
});

describe('POST /v1/users/merge (S20)', () => {
  it('200 with the target user; the source is tombstoned with merged_into', async () => {
    const source = await createUser(app, { primary_email: uniqueEmail('source'), profile: { from: 'source' } });
    const target = await createUser(app, { primary_email: uniqueEmail('target'), profile: { from: 'target' } });
    const res = await app.rest('POST', '/v1/users/merge', { source_user_id: source.id, target_user_id: target.id });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.data).toMatchObject({ ...target, updated_at: expect.any(String) });
    const targetAfter = await app.rest('GET', `/v1/users/${target.id}`);
    expect(targetAfter.body.data).toEqual(res.body.data);
    expect(targetAfter.body.data).toMatchObject({ status: 'active', merged_into: null, profile: { from: 'target' } });

    const sourceAfter = await app.rest('GET', `/v1/users/${source.id}`);
    expect(sourceAfter.status).toBe(200);
    expect(sourceAfter.body.data).toMatchObject({ id: source.id, status: 'merged', merged_into: target.id });

    const events = await app.rest('GET', '/v1/events?type=user.merged&limit=100');
    expect(events.status).toBe(200);
    const mine = events.body.data.events.filter((e: any) => e.data.source_user_id === source.id);
    expect(mine).toHaveLength(1);
    expect(mine[0].data).toEqual({ source_user_id: source.id, target_user_id: target.id });
  });

  it("moves the source's memberships to the target, except where the target already is a member", async () => {
    const fresh = await suite.server.createApp();
    const source = await createUser(fresh);
    const target = await createUser(fresh);
    const bystander = await createUser(fresh);
    const onlySource = await createOrg(fresh, { name: 'Only source' });
    const both = await createOrg(fresh, { name: 'Both' });
    const onlyTarget = await createOrg(fresh, { name: 'Only target' });
    await addMember(fresh, onlySource.id, source.id, 'admin');
    await addMember(fresh, onlySource.id, bystander.id);
    await addMember(fresh, both.id, source.id, 'admin');
    await addMember(fresh, both.id, target.id, 'owner');
    await addMember(fresh, onlyTarget.id, target.id);

    const res = await fresh.rest('POST', '/v1/users/merge', { source_user_id: source.id, target_user_id: target.id });
    expect(res.status, JSON.stringify(res.body)).toBe(200);

    const m1 = await members(fresh, onlySource.id);
    expect(m1.map((m) => m.user_id).sort()).toEqual([target.id, bystander.id].sort());
    expect(m1.find((m) => m.user_id === target.id)!.role).toBe('admin');
    const m2 = await members(fresh, both.id);
    expect(m2).toHaveLength(1);
    expect(m2[0]).toMatchObject({ user_id: target.id, role: 'owner' });
    const m3 = await members(fresh, onlyTarget.id);
    expect(m3.map((m) => m.user_id)).toEqual([target.id]);

    const count = async (id: string) => (await fresh.rest('GET', `/v1/organizations/${id}`)).body.data.member_count;
    expect([await count(onlySource.id), await count(both.id), await count(onlyTarget.id)]).toEqual([2, 1, 1]);
    const orgs = (await fresh.rest('GET', '/v1/organizations')).body.data.organizations as any[];
    expect(Object.fromEntries(orgs.map((o) => [o.id, o.member_count]))).toEqual({
      [onlySource.id]: 2,
      [both.id]: 1,
      [onlyTarget.id]: 1,
    });
  });

  it('422 cannot_merge_into_self', async () => {
    const user = await createUser(app);
    expectError(
      await app.rest('POST', '/v1/users/merge', { source_user_id: user.id, target_user_id: user.id }),
      422,
      'cannot_merge_into_self',
    );
    expect((await app.rest('GET', `/v1/users/${user.id}`)).body.data).toEqual(user);
  });

  it('422 validation_failed for a missing or malformed id and unknown fields', async () => {
    const user = await createUser(app);
    for (const body of [
      { source_user_id: user.id },
      { target_user_id: user.id },
      { source_user_id: 'nope', target_user_id: user.id },
      { source_user_id: user.id, target_user_id: MISSING, force: true },
    ]) {
      expectError(await app.rest('POST', '/v1/users/merge', body), 422, 'validation_failed');
    }
  });

  it('404 when either user is missing or belongs to another application; nothing changes', async () => {
    const other = await suite.server.createApp();
    const mine = await createUser(app);
    const mine2 = await createUser(app);
    const theirs = await createUser(other);
    const theirs2 = await createUser(other);
    for (const [source, target] of [
      [mine.id, MISSING],
      [MISSING, mine.id],
      [mine.id, theirs.id],
      [theirs.id, mine.id],
      [theirs.id, theirs2.id],
    ]) {
      expectError(
        await app.rest('POST', '/v1/users/merge', { source_user_id: source, target_user_id: target }),
        404,
        'not_found',
      );
    }
    expect((await app.rest('GET', `/v1/users/${mine.id}`)).body.data).toEqual(mine);
    expect((await app.rest('GET', `/v1/users/${mine2.id}`)).body.data).toEqual(mine2);
    expect((await other.rest('GET', `/v1/users/${theirs.id}`)).body.data).toEqual(theirs);
    expect((await other.rest('GET', `/v1/users/${theirs2.id}`)).body.data).toEqual(theirs2);
  });

  it('422 user_merged when the source or the target was already merged', async () => {
    const a = await createUser(app);
    const b = await createUser(app);
    const c = await createUser(app);
    expect((await app.rest('POST', '/v1/users/merge', { source_user_id: a.id, target_user_id: b.id })).status).toBe(200);
    // merged source, either target
    expectError(await app.rest('POST', '/v1/users/merge', { source_user_id: a.id, target_user_id: c.id }), 422, 'user_merged');
    expectError(await app.rest('POST', '/v1/users/merge', { source_user_id: a.id, target_user_id: b.id }), 422, 'user_merged');
    // merged target, either source
    expectError(await app.rest('POST', '/v1/users/merge', { source_user_id: c.id, target_user_id: a.id }), 422, 'user_merged');
    expectError(await app.rest('POST', '/v1/users/merge', { source_user_id: b.id, target_user_id: a.id }), 422, 'user_merged');
    expect((await app.rest('GET', `/v1/users/${a.id}`)).body.data).toMatchObject({ status: 'merged', merged_into: b.id });
    expect((await app.rest('GET', `/v1/users/${b.id}`)).body.data).toMatchObject({ status: 'active', merged_into: null });
    expect((await app.rest('GET', `/v1/users/${c.id}`)).body.data).toEqual(c);
    // A tombstone cannot be revived through PATCH.
    expectError(await app.rest('PATCH', `/v1/users/${a.id}`, { status: 'active' }), 422, 'user_merged');
    expect((await app.rest('GET', `/v1/users/${a.id}`)).body.data).toMatchObject({ status: 'merged', merged_into: b.id });
  });
});

describe('through the SDK (tRPC)', () => {
  it('creates, lists, reads, updates, merges and deletes users', async () => {
    const fresh = await suite.server.createApp();
    const { sdk } = fresh;
    const a = await sdk.users.create({ primary_email: '  Sdk.User@Example.com ', profile: { via: 'sdk' } });
    expect(a).toEqual({
      id: expect.stringMatching(UUID),
      primary_email: 'Sdk.User@Example.com',
      email_verified: false,
      status: 'active',
      profile: { via: 'sdk' },
      merged_into: null,
      created_at: isoDate,
      updated_at: isoDate,
    });
    const b = await sdk.users.create({});
    expect(b.primary_email).toBeNull();
    const rest = await fresh.rest('GET', `/v1/users/${a.id}`);
    expect(rest.body.data).toEqual(a);

    expect(await sdk.users.get({ id: a.id })).toEqual(a);
    const page = await sdk.users.list({ limit: 1 });
    expect(page).toMatchObject({ total: 2, limit: 1, offset: 0 });
    expect(page.users.map((u) => u.id)).toEqual([b.id]);
    expect((await sdk.users.list({ search: 'SDK.user' })).users.map((u) => u.id)).toEqual([a.id]);
    expect(await sdk.users.list()).toMatchObject({ total: 2, limit: 25, offset: 0 });

    const updated = await sdk.users.update({ id: a.id, email_verified: true });
    expect(updated).toMatchObject({ id: a.id, email_verified: true, profile: { via: 'sdk' } });

    const merged = await sdk.users.merge({ source_user_id: b.id, target_user_id: a.id });
    expect(merged).toMatchObject({ id: a.id, status: 'active', merged_into: null });
    expect(await sdk.users.get({ id: b.id })).toMatchObject({ status: 'merged', merged_into: a.id });

    expect(await sdk.users.delete({ id: a.id })).toEqual({ id: a.id, deleted: true });
    await expect(sdk.users.get({ id: a.id })).rejects.toMatchObject({ code: 'not_found', status: 404 });
  });

  it('fails with GatehouseError carrying the same code and status as REST', async () => {
    const fresh = await suite.server.createApp();
    const { sdk } = fresh;
    const user = await sdk.users.create({ primary_email: 'dup@example.com' });
    const dup = await sdk.users.create({ primary_email: 'DUP@example.com' }).catch((e: unknown) => e);
    expect(dup).toBeInstanceOf(GatehouseError);
    expect(dup).toMatchObject({ code: 'email_taken', status: 409 });
    await expect(sdk.users.merge({ source_user_id: user.id, target_user_id: user.id })).rejects.toMatchObject({
      code: 'cannot_merge_into_self',
      status: 422,
    });
    await expect(sdk.users.merge({ source_user_id: user.id, target_user_id: MISSING })).rejects.toMatchObject({
      code: 'not_found',
      status: 404,
    });
    await expect(sdk.users.update({ id: user.id, status: 'merged' } as any)).rejects.toMatchObject({
      code: 'validation_failed',
      status: 422,
    });
    await expect(sdk.users.list({ limit: 0 })).rejects.toMatchObject({ code: 'validation_failed', status: 422 });
    await expect(app.sdk.users.get({ id: user.id })).rejects.toMatchObject({ code: 'not_found', status: 404 });
  });
});

describe('races', () => {
  it('20 concurrent creates of one email: exactly one 201, nineteen 409 email_taken, one user', async () => {
    const fresh = await suite.server.createApp();
    const address = 'race@example.com';
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fresh.rest('POST', '/v1/users', { primary_email: i % 2 ? address.toUpperCase() : ` ${address}` }),
      ),
    );
    expectExactlyOneWinner(results, 201, 'email_taken');
    const list = await listUsers(fresh);
    expect(list.total).toBe(1);
    expect(list.users).toHaveLength(1);
    const created = await fresh.rest('GET', '/v1/events?type=user.created');
    expect(created.body.data.total).toBe(1);
  });

  it('concurrent merges A→B and B→A: exactly one wins, the other is 422 user_merged, no cycle', async () => {
    const fresh = await suite.server.createApp();
    for (let round = 0; round < 8; round++) {
      const [a, b] = await Promise.all([createUser(fresh), createUser(fresh)]);
      const [ab, ba] = await Promise.all([
        fresh.rest('POST', '/v1/users/merge', { source_user_id: a.id, target_user_id: b.id }),
        fresh.rest('POST', '/v1/users/merge', { source_user_id: b.id, target_user_id: a.id }),
      ]);
      const statuses = [ab.status, ba.status].sort();
      expect(statuses, JSON.stringify([ab.body, ba.body])).toEqual([200, 422]);
      const loser = ab.status === 422 ? ab : ba;
      expect(loser.body.error?.code).toBe('user_merged');

      const [aAfter, bAfter] = await Promise.all([
        fresh.rest('GET', `/v1/users/${a.id}`).then((r) => r.body.data),
        fresh.rest('GET', `/v1/users/${b.id}`).then((r) => r.body.data),
      ]);
      const [merged, survivor] = ab.status === 200 ? [aAfter, bAfter] : [bAfter, aAfter];
      expect(merged).toMatchObject({ status: 'merged', merged_into: survivor.id });
      expect(survivor).toMatchObject({ status: 'active', merged_into: null });
    }
    const events = await fresh.rest('GET', '/v1/events?type=user.merged');
    expect(events.body.data.total).toBe(8);
  });
});

import { createGatehouseClient } from '@gatehouse/sdk';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, createUser, scopedKey, unique, uniqueEmail } from './helpers/fixtures.ts';
import { acrossServers, expectError, isoDate, ok, rejection, sql, type TestApp } from './helpers/server.ts';
import { endUser, requestMagicLink, signIn } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

let app: TestApp;

beforeAll(async () => {
  app = await suite.server.createApp();
});

interface Tuple {
  object: string;
  relation: string;
  subject: string;
}

const write = (on: TestApp, writes: Tuple[], deletes: Tuple[] = []) => on.rest('POST', '/v1/authz/tuples', { writes, deletes });

const check = async (on: TestApp, object: string, relation: string, subject: string) =>
  (await ok(on.rest('POST', '/v1/authz/check', { object, relation, subject }))).allowed as boolean;

const tuples = async (on: TestApp, query = '') => ok(on.rest('GET', `/v1/authz/tuples${query}`));

const t = (object: string, relation: string, subject: string): Tuple => ({ object, relation, subject });

describe('POST /v1/authz/tuples', () => {
  it('writes and deletes, idempotently, answering a growing consistency token', async () => {
    const user = (await createUser(app)).id;
    const doc = `doc:${unique('w')}`;
    const first = await ok(write(app, [t(doc, 'viewer', `user:${user}`), t(doc, 'editor', 'group:eng#member')]));
    expect(first).toEqual({ consistency_token: expect.stringMatching(/^\d+$/), written: 2, deleted: 0 });
    const again = await ok(write(app, [t(doc, 'viewer', `user:${user}`)], [t(doc, 'owner', `user:${user}`)]));
    expect(again).toMatchObject({ written: 0, deleted: 0 });
    expect(BigInt(again.consistency_token)).toBeGreaterThan(BigInt(first.consistency_token));
    const page = await tuples(app, `?object=${doc}`);
    expect(page.total).toBe(2);
    const removed = await ok(write(app, [], [t(doc, 'viewer', `user:${user}`)]));
    expect(removed).toMatchObject({ written: 0, deleted: 1 });
    expect((await tuples(app, `?object=${doc}`)).tuples).toEqual([
      { object: doc, relation: 'editor', subject: 'group:eng#member', created_at: isoDate },
    ]);
  });

  it('applies a batch atomically: one invalid write and nothing is applied (422 with its path)', async () => {
    const user = (await createUser(app)).id;
    const doc = `doc:${unique('atomic')}`;
    await ok(write(app, [t(doc, 'keep', `user:${user}`)]));
    const good = [t(doc, 'viewer', `user:${user}`), t(doc, 'editor', 'team:x#member')];
    const badShape = await write(app, [...good, t(doc, 'viewer', 'user:not-a-uuid')], [t(doc, 'keep', `user:${user}`)]);
    expectError(badShape, 422, 'validation_failed');
    expect(badShape.body.error.details).toEqual([{ path: 'writes.2.subject', message: expect.any(String) }]);
    for (const [bad, path] of [
      [t('Doc:1', 'viewer', `user:${user}`), 'writes.2.object'],
      [t(doc, 'Viewer', `user:${user}`), 'writes.2.relation'],
      [t(doc, 'viewer', 'group:eng'), 'writes.2.subject'],
      [t(doc, 'viewer', 'group:eng#'), 'writes.2.subject'],
      [t('user:bob', 'manager', `user:${user}`), 'writes.2.object'],
      [t(doc, 'viewer', 'user:bob#friend'), 'writes.2.subject'],
      [t(`doc:${'x'.repeat(257)}`, 'viewer', `user:${user}`), 'writes.2.object'],
    ] as const) {
      const res = await write(app, [...good, bad]);
      expectError(res, 422, 'validation_failed', JSON.stringify(bad));
      expect(res.body.error.details?.map((d) => d.path)).toEqual([path]);
    }
    // A user of no application (or of another one) is a business rule: 422 user_not_found with the failing path.
    const missing = await write(
      app,
      [...good, t(doc, 'viewer', 'user:00000000-0000-7000-8000-000000000000')],
      [t(doc, 'keep', `user:${user}`)],
    );
    expectError(missing, 422, 'user_not_found');
    expect(missing.body.error.details).toEqual([{ path: 'writes.2.subject', message: expect.any(String) }]);
    const other = await suite.server.createApp();
    const foreign = (await createUser(other)).id;
    expectError(await write(app, [t(`user:${foreign}`, 'manager', `user:${user}`)]), 422, 'user_not_found');
    // Nothing of any refused batch was applied: the delete did not run, the good writes were not written.
    expect((await tuples(app, `?object=${doc}`)).tuples.map((x: Tuple) => x.relation)).toEqual(['keep']);
  });

  it('refuses empty batches, more than 1,000 tuples, the same tuple written and deleted, and unknown fields', async () => {
    const doc = `doc:${unique('limits')}`;
    expectError(await write(app, []), 422, 'validation_failed');
    const many = (n: number, rel: string) => Array.from({ length: n }, (_, i) => t(`${doc}-${i}`, rel, 'group:g#member'));
    expectError(await write(app, many(1001, 'viewer')), 422, 'validation_failed');
    expectError(await write(app, many(600, 'viewer'), many(401, 'editor')), 422, 'validation_failed');
    const both = await write(app, [t(doc, 'viewer', 'group:g#member')], [t(doc, 'viewer', 'group:g#member')]);
    expectError(both, 422, 'validation_failed');
    expect(both.body.error.details).toEqual([{ path: 'deletes.0', message: expect.any(String) }]);
    expectError(
      await app.rest('POST', '/v1/authz/tuples', { writes: [{ ...t(doc, 'viewer', 'group:g#member'), id: 'x' }] }),
      422,
      'validation_failed',
    );
    expect((await tuples(app, `?namespace=doc&relation=viewer&subject=group:g%23member`)).total).toBe(0);
    // Exactly 1,000 is allowed, in one transaction.
    expect(await ok(write(app, many(1000, 'viewer')))).toMatchObject({ written: 1000 });
    expect((await tuples(app, '?subject=group:g%23member&limit=1')).total).toBe(1000);
  });

  it('20 identical batches at once on two processes store each tuple once, and only one reports writing it', async () => {
    const user = (await createUser(app)).id;
    const doc = `doc:${unique('race')}`;
    const batch = [t(doc, 'viewer', `user:${user}`), t(doc, 'editor', 'team:race#member')];
    const results = await acrossServers(suite.server, 20, (server, i) =>
      ok(write(app.via(server), i % 2 ? batch : [...batch].reverse())),
    );
    expect(results.reduce((sum, r) => sum + r.written, 0)).toBe(2);
    expect(new Set(results.map((r) => r.consistency_token)).size).toBe(20);
    expect((await tuples(app, `?object=${doc}`)).total).toBe(2);
  });

  it('needs authz:write; authz:read lists and checks', async () => {
    const reader = bearer(await scopedKey(app, ['authz:read']));
    const body = { writes: [t('doc:scoped', 'viewer', 'group:g#member')] };
    expectError(await app.rest('POST', '/v1/authz/tuples', body, reader), 403, 'insufficient_scope');
    expect((await ok(app.rest('GET', '/v1/authz/tuples', undefined, reader))).tuples).toBeInstanceOf(Array);
    await ok(app.rest('POST', '/v1/authz/check', { ...body.writes[0] }, reader));
    const other = bearer(await scopedKey(app, ['users:read']));
    expectError(await app.rest('GET', '/v1/authz/tuples', undefined, other), 403, 'insufficient_scope');
    expectError(await app.rest('POST', '/v1/authz/check', { ...body.writes[0] }, other), 403, 'insufficient_scope');
    expectError(await app.rest('GET', '/v1/authz/tuples', undefined, { authorization: undefined }), 401, 'missing_credentials');
  });
});

describe('GET /v1/authz/tuples', () => {
  it('filters by object, namespace, relation and subject, newest first, paginated', async () => {
    const fresh = await suite.server.createApp();
    const user = (await createUser(fresh)).id;
    await ok(write(fresh, [t('doc:a', 'viewer', `user:${user}`), t('doc:a', 'editor', 'group:eng#member')]));
    await ok(write(fresh, [t('folder:f', 'viewer', `user:${user}`)]));
    await ok(write(fresh, [t('doc:b', 'viewer', 'group:eng#member')]));
    const all = await tuples(fresh);
    expect(all).toMatchObject({ total: 4, limit: 25, offset: 0 });
    expect(all.tuples[0]).toEqual({ object: 'doc:b', relation: 'viewer', subject: 'group:eng#member', created_at: isoDate });
    expect(all.tuples[1].object).toBe('folder:f');
    expect((await tuples(fresh, '?object=doc:a')).total).toBe(2);
    expect((await tuples(fresh, '?namespace=doc')).total).toBe(3);
    expect((await tuples(fresh, '?namespace=folder&object=doc:a')).total).toBe(0);
    expect((await tuples(fresh, '?relation=viewer')).total).toBe(3);
    expect((await tuples(fresh, `?subject=user:${user}`)).tuples.map((x: Tuple) => x.object)).toEqual(['folder:f', 'doc:a']);
    expect((await tuples(fresh, '?subject=group:eng%23member&namespace=doc')).total).toBe(2);
    const page = await tuples(fresh, '?limit=2&offset=1');
    expect(page).toMatchObject({ total: 4, limit: 2, offset: 1 });
    expect(page.tuples).toEqual(all.tuples.slice(1, 3));
    for (const bad of ['?limit=0', '?limit=101', '?limit=-1', '?offset=-1', '?limit=x', '?object=doc', '?subject=group:g'])
      expectError(await fresh.rest('GET', `/v1/authz/tuples${bad}`), 422, 'validation_failed', bad);
  });
});

describe('POST /v1/authz/check', () => {
  it('follows subject sets three levels deep; other users and relations are denied', async () => {
    const [alice, bob] = [(await createUser(app)).id, (await createUser(app)).id];
    const [doc, folder, team, core] = [unique('doc'), unique('folder'), unique('team'), unique('core')];
    await ok(
      write(app, [
        t(`doc:${doc}`, 'viewer', `folder:${folder}#viewer`),
        t(`folder:${folder}`, 'viewer', `team:${team}#member`),
        t(`team:${team}`, 'member', `team:${core}#member`),
        t(`team:${core}`, 'member', `user:${alice}`),
      ]),
    );
    expect(await check(app, `doc:${doc}`, 'viewer', `user:${alice}`)).toBe(true);
    expect(await check(app, `doc:${doc}`, 'viewer', `user:${bob}`)).toBe(false);
    expect(await check(app, `doc:${doc}`, 'editor', `user:${alice}`)).toBe(false);
    expect(await check(app, `doc:${doc}`, 'viewer', `team:${core}#member`)).toBe(true);
    expect(await check(app, `doc:${doc}`, 'viewer', `team:${core}#admin`)).toBe(false);
    expect(await check(app, `doc:other`, 'viewer', `user:${alice}`)).toBe(false);
    // Removing the middle link removes the access.
    await ok(write(app, [], [t(`folder:${folder}`, 'viewer', `team:${team}#member`)]));
    expect(await check(app, `doc:${doc}`, 'viewer', `user:${alice}`)).toBe(false);
  });

  it('is safe on cycles: a cycle without the user answers false, with the user true', async () => {
    const [alice, bob] = [(await createUser(app)).id, (await createUser(app)).id];
    const [a, b, c] = [unique('a'), unique('b'), unique('c')];
    await ok(
      write(app, [
        t(`group:${a}`, 'member', `group:${b}#member`),
        t(`group:${b}`, 'member', `group:${c}#member`),
        t(`group:${c}`, 'member', `group:${a}#member`),
        t(`group:${c}`, 'member', `user:${alice}`),
      ]),
    );
    expect(await check(app, `group:${a}`, 'member', `user:${alice}`)).toBe(true);
    expect(await check(app, `group:${a}`, 'member', `user:${bob}`)).toBe(false);
    const self = unique('self');
    await ok(write(app, [t(`group:${self}`, 'member', `group:${self}#member`)]));
    expect(await check(app, `group:${self}`, 'member', `user:${alice}`)).toBe(false);
  });

  it('follows 25 levels of subject sets; beyond that it is 422 depth_limit_exceeded', async () => {
    const alice = (await createUser(app)).id;
    const chain = async (levels: number) => {
      const name = unique('chain');
      const links = Array.from({ length: levels }, (_, k) => t(`level:${name}-${k}`, 'member', `level:${name}-${k + 1}#member`));
      await ok(write(app, [...links, t(`level:${name}-${levels}`, 'member', `user:${alice}`)]));
      return `level:${name}-0`;
    };
    expect(await check(app, await chain(24), 'member', `user:${alice}`)).toBe(true);
    const deep = await chain(26);
    const res = await app.rest('POST', '/v1/authz/check', { object: deep, relation: 'member', subject: `user:${alice}` });
    expectError(res, 422, 'depth_limit_exceeded');
    // 25 hops and the user's own tuple at the end: the deepest decidable answer.
    expect(await check(app, await chain(25), 'member', `user:${alice}`)).toBe(true);
  });

  it('resolves organization:<id>#member and #<role> from the membership table, the moment it changes', async () => {
    const user = (await createUser(app)).id;
    const org = await ok(app.rest('POST', '/v1/organizations', { name: unique('Acme') }), 201);
    const doc = `doc:${unique('org')}`;
    await ok(write(app, [t(doc, 'viewer', `organization:${org.id}#member`), t(doc, 'editor', `organization:${org.id}#admin`)]));
    expect(await check(app, doc, 'viewer', `user:${user}`)).toBe(false);
    await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user }), 201);
    expect(await check(app, doc, 'viewer', `user:${user}`)).toBe(true);
    expect(await check(app, doc, 'editor', `user:${user}`)).toBe(false);
    expect(await check(app, `organization:${org.id}`, 'member', `user:${user}`)).toBe(true);
    await ok(app.rest('PATCH', `/v1/organizations/${org.id}/members/${user}`, { role: 'admin' }));
    expect(await check(app, doc, 'editor', `user:${user}`)).toBe(true);
    await ok(app.rest('DELETE', `/v1/organizations/${org.id}/members/${user}`));
    expect(await check(app, doc, 'viewer', `user:${user}`)).toBe(false);
    expect(await check(app, doc, 'editor', `user:${user}`)).toBe(false);
  });

  it('honours consistency: a token a write answered is met; one never issued is 422', async () => {
    const user = (await createUser(app)).id;
    const doc = `doc:${unique('fresh')}`;
    const { consistency_token } = await ok(write(app, [t(doc, 'viewer', `user:${user}`)]));
    const ask = (consistency: unknown) =>
      app.rest('POST', '/v1/authz/check', { object: doc, relation: 'viewer', subject: `user:${user}`, consistency });
    expect((await ok(ask({ mode: 'at_least_as_fresh', token: consistency_token }))).allowed).toBe(true);
    expect((await ok(ask({ mode: 'fully_consistent' }))).allowed).toBe(true);
    expect((await ok(ask({ mode: 'minimize_latency' }))).allowed).toBe(true);
    const future = (BigInt(consistency_token) + 1_000_000n).toString();
    const refused = await ask({ mode: 'at_least_as_fresh', token: future });
    expectError(refused, 422, 'validation_failed');
    expect(refused.body.error.details).toEqual([{ path: 'consistency.token', message: expect.any(String) }]);
    expectError(await ask({ mode: 'at_least_as_fresh' }), 422, 'validation_failed');
    expectError(await ask({ mode: 'fully_consistent', token: consistency_token }), 422, 'validation_failed');
    expectError(await ask({ mode: 'eventually' }), 422, 'validation_failed');
  });

  it('checks its secret key inside the check statement with the answers and order of every other route', async () => {
    const user = (await createUser(app)).id;
    const doc = `doc:${unique('keyed')}`;
    const { consistency_token } = await ok(write(app, [t(doc, 'viewer', `user:${user}`)]));
    const body = { object: doc, relation: 'viewer', subject: `user:${user}` };
    const ask = (headers: Record<string, string | undefined>, input: unknown = body) =>
      app.rest('POST', '/v1/authz/check', input, headers);
    const key = await ok(app.rest('POST', '/v1/api-keys', { name: 'to revoke', scopes: ['authz:write'] }), 201);
    const writer = { authorization: `Bearer ${key.secret}` };
    // authz:write implies authz:read, in the statement as in every other route.
    expect((await ok(ask(writer))).allowed).toBe(true);
    const other = await suite.server.createApp();
    const otherKey = { authorization: `Bearer ${other.secretKey}` };
    const cases: Array<[Record<string, string | undefined>, number, string]> = [
      [{ authorization: 'Bearer sk_test_unknown' }, 401, 'invalid_api_key'],
      [{ authorization: 'Bearer not-a-key' }, 401, 'invalid_api_key'],
      // A key of another application, with this application's id: 401, never its answer.
      [otherKey, 401, 'invalid_api_key'],
      [{ 'x-application-id': '00000000-0000-7000-8000-000000000000' }, 401, 'application_not_resolved'],
      [{ authorization: undefined }, 401, 'missing_credentials'],
    ];
    for (const [headers, status, code] of cases) {
      expectError(await ask(headers), status, code, JSON.stringify(headers));
      // The credential is judged first: a bad key with a bad body or a consistency token is still 401.
      expectError(await ask(headers, { object: 'no-colon' }), status, code, `bad body, ${JSON.stringify(headers)}`);
      expectError(
        await ask(headers, { ...body, consistency: { mode: 'at_least_as_fresh', token: consistency_token } }),
        status,
        code,
        `consistency, ${JSON.stringify(headers)}`,
      );
    }
    expectError(await ask({}, { object: 'no-colon' }), 422, 'validation_failed');
    // Revocation is immediate, on this process and on another one.
    await ok(app.rest('DELETE', `/v1/api-keys/${key.id}`));
    const answers = await acrossServers(suite.server, 4, (server) =>
      app.via(server).rest('POST', '/v1/authz/check', body, writer),
    );
    for (const answer of answers) expectError(answer, 401, 'invalid_api_key');
    // The key is marked used by a check, as by any other call.
    const reader = await ok(app.rest('POST', '/v1/api-keys', { name: 'reader', scopes: ['authz:read'] }), 201);
    await ok(ask({ authorization: `Bearer ${reader.secret}` }));
    const keys = (await ok(app.rest('GET', '/v1/api-keys'))) as Array<{ id: string; last_used_at: string | null }>;
    expect(keys.find((k) => k.id === reader.id)?.last_used_at).toEqual(isoDate);
  });

  it("never sees another application's tuples or organizations", async () => {
    const other = await suite.server.createApp();
    const user = (await createUser(app)).id;
    const doc = `doc:${unique('tenant')}`;
    await ok(write(app, [t(doc, 'viewer', `user:${user}`)]));
    expect(await check(app, doc, 'viewer', `user:${user}`)).toBe(true);
    expect(await check(other, doc, 'viewer', `user:${user}`)).toBe(false);
    expect((await tuples(other, `?object=${doc}`)).total).toBe(0);
    expect((await tuples(other)).total).toBe(0);
    // An organization of this application, named in the other application's tuple, lends it no members.
    const org = await ok(app.rest('POST', '/v1/organizations', { name: unique('Tenant') }), 201);
    await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user }), 201);
    await ok(write(other, [t(doc, 'viewer', `organization:${org.id}#member`)]));
    expect(await check(other, doc, 'viewer', `user:${user}`)).toBe(false);
    expect(
      (await ok(other.rest('POST', '/v1/authz/lookup', { subject: `user:${user}`, relation: 'viewer', namespace: 'doc' }))).total,
    ).toBe(0);
    // Deleting in the other application deletes nothing here.
    expect(await ok(write(other, [], [t(doc, 'viewer', `user:${user}`)]))).toMatchObject({ deleted: 0 });
    expect(await check(app, doc, 'viewer', `user:${user}`)).toBe(true);
  });
});

describe('expand and lookup', () => {
  it('expand answers every userset reached with its subjects, nearest first; organizations list their members', async () => {
    const fresh = await suite.server.createApp();
    const [alice, bob] = [(await createUser(fresh)).id, (await createUser(fresh)).id];
    const org = await ok(fresh.rest('POST', '/v1/organizations', { name: 'Expand' }), 201);
    await ok(fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: bob }), 201);
    await ok(
      write(fresh, [
        t('doc:1', 'viewer', `user:${alice}`),
        t('doc:1', 'viewer', 'team:eng#member'),
        t('team:eng', 'member', `organization:${org.id}#member`),
        t('team:eng', 'member', 'team:eng#member'),
      ]),
    );
    const tree = await ok(fresh.rest('POST', '/v1/authz/expand', { object: 'doc:1', relation: 'viewer' }));
    expect(tree).toEqual({
      object: 'doc:1',
      relation: 'viewer',
      usersets: [
        { userset: 'doc:1#viewer', depth: 0, subjects: ['team:eng#member', `user:${alice}`] },
        { userset: 'team:eng#member', depth: 1, subjects: [`organization:${org.id}#member`, 'team:eng#member'] },
        { userset: `organization:${org.id}#member`, depth: 2, subjects: [`user:${bob}`] },
      ],
    });
    expectError(await fresh.rest('POST', '/v1/authz/expand', { object: 'doc', relation: 'viewer' }), 422, 'validation_failed');
  });

  it('lookup answers the objects of a namespace a subject reaches, through subject sets and memberships, paginated', async () => {
    const fresh = await suite.server.createApp();
    const [alice, bob] = [(await createUser(fresh)).id, (await createUser(fresh)).id];
    const org = await ok(fresh.rest('POST', '/v1/organizations', { name: 'Lookup' }), 201);
    await ok(fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: alice, role: 'admin' }), 201);
    await ok(
      write(fresh, [
        t('doc:a', 'viewer', `user:${alice}`),
        t('doc:b', 'viewer', 'folder:f#viewer'),
        t('folder:f', 'viewer', 'team:t#member'),
        t('team:t', 'member', `user:${alice}`),
        t('doc:c', 'viewer', `organization:${org.id}#member`),
        t('doc:d', 'viewer', `organization:${org.id}#admin`),
        t('doc:e', 'viewer', `organization:${org.id}#owner`),
        t('doc:f', 'editor', `user:${alice}`),
        t('doc:g', 'viewer', `user:${bob}`),
      ]),
    );
    const lookup = (body: Record<string, unknown>) => fresh.rest('POST', '/v1/authz/lookup', body);
    const all = await ok(lookup({ subject: `user:${alice}`, relation: 'viewer', namespace: 'doc' }));
    expect(all).toEqual({ objects: ['doc:a', 'doc:b', 'doc:c', 'doc:d'], total: 4, limit: 25, offset: 0 });
    for (const object of all.objects) expect(await check(fresh, object, 'viewer', `user:${alice}`)).toBe(true);
    const page = await ok(lookup({ subject: `user:${alice}`, relation: 'viewer', namespace: 'doc', limit: 2, offset: 1 }));
    expect(page).toEqual({ objects: ['doc:b', 'doc:c'], total: 4, limit: 2, offset: 1 });
    expect((await ok(lookup({ subject: 'team:t#member', relation: 'viewer', namespace: 'doc' }))).objects).toEqual(['doc:b']);
    expect((await ok(lookup({ subject: `user:${alice}`, relation: 'viewer', namespace: 'folder' }))).objects).toEqual([
      'folder:f',
    ]);
    for (const limit of [0, 101, -1])
      expectError(
        await lookup({ subject: `user:${alice}`, relation: 'viewer', namespace: 'doc', limit }),
        422,
        'validation_failed',
      );
  });
});

describe('users and tuples', () => {
  it("merge rewrites user:<source> to user:<target>, dropping the target's duplicates", async () => {
    const [source, target] = [(await createUser(app)).id, (await createUser(app)).id];
    const [doc, shared] = [`doc:${unique('merge')}`, `doc:${unique('shared')}`];
    await ok(
      write(app, [
        t(doc, 'viewer', `user:${source}`),
        t(shared, 'viewer', `user:${source}`),
        t(shared, 'viewer', `user:${target}`),
        t(`user:${source}`, 'manager', 'team:x#member'),
        t('team:m', 'member', `user:${source}#friend`),
      ]),
    );
    await ok(app.rest('POST', '/v1/users/merge', { source_user_id: source, target_user_id: target }));
    expect((await tuples(app, `?subject=user:${source}`)).total).toBe(0);
    expect((await tuples(app, `?object=user:${source}`)).total).toBe(0);
    expect((await tuples(app, `?subject=user:${source}%23friend`)).total).toBe(0);
    expect(await check(app, doc, 'viewer', `user:${target}`)).toBe(true);
    expect(await check(app, doc, 'viewer', `user:${source}`)).toBe(false);
    expect((await tuples(app, `?object=${shared}`)).tuples.map((x: Tuple) => x.subject)).toEqual([`user:${target}`]);
    expect((await tuples(app, `?object=user:${target}`)).tuples.map((x: Tuple) => x.subject)).toEqual(['team:x#member']);
    expect((await tuples(app, `?subject=user:${target}%23friend`)).total).toBe(1);
    // A merged user can be named by no new tuple.
    expectError(await write(app, [t(doc, 'editor', `user:${source}`)]), 422, 'user_not_found');
  });

  it("deleting a user removes that user's tuples, as subject, subject set and object", async () => {
    const [gone, stays] = [(await createUser(app)).id, (await createUser(app)).id];
    const doc = `doc:${unique('delete')}`;
    await ok(
      write(app, [
        t(doc, 'viewer', `user:${gone}`),
        t(doc, 'viewer', `user:${stays}`),
        t(`user:${gone}`, 'manager', `user:${stays}`),
        t('team:d', 'member', `user:${gone}#friend`),
      ]),
    );
    await ok(app.rest('DELETE', `/v1/users/${gone}`));
    const left = await sql(suite.server, `select subject_id, object_id from authz_tuples where subject_id = ? or object_id = ?`, [
      gone,
      gone,
    ]);
    expect(left).toEqual([]);
    expect((await tuples(app, `?object=${doc}`)).tuples.map((x: Tuple) => x.subject)).toEqual([`user:${stays}`]);
  });
});

describe('GET /v1/authz/relations (S11)', () => {
  it("answers the signed-in user's tuples newest first, with the namespace filter and paging", async () => {
    const fresh = await suite.server.createApp();
    const { tokens, user } = await signIn(suite.server, suite.smtp, fresh, uniqueEmail('relations'));
    const other = (await createUser(fresh)).id;
    await ok(write(fresh, [t('doc:1', 'viewer', `user:${user.id}`), t('doc:1', 'viewer', `user:${other}`)]));
    await ok(write(fresh, [t('folder:a', 'owner', `user:${user.id}`)]));
    await ok(write(fresh, [t('doc:2', 'editor', `user:${user.id}`), t('doc:3', 'viewer', 'team:t#member')]));
    const relations = (query = '') => endUser(fresh, 'GET', `/v1/authz/relations${query}`, undefined, tokens.access_token);
    const all = await ok(relations());
    expect(all).toEqual({
      relations: [
        { object: 'doc:2', relation: 'editor', subject: `user:${user.id}`, created_at: isoDate },
        { object: 'folder:a', relation: 'owner', subject: `user:${user.id}`, created_at: isoDate },
        { object: 'doc:1', relation: 'viewer', subject: `user:${user.id}`, created_at: isoDate },
      ],
      total: 3,
      limit: 25,
      offset: 0,
    });
    const dates = all.relations.map((r: { created_at: string }) => r.created_at);
    expect([...dates].sort().reverse()).toEqual(dates);
    expect(await ok(relations('?namespace=doc'))).toMatchObject({
      total: 2,
      relations: [{ object: 'doc:2' }, { object: 'doc:1' }],
    });
    expect(await ok(relations('?namespace=team'))).toEqual({ relations: [], total: 0, limit: 25, offset: 0 });
    expect(await ok(relations('?limit=1&offset=1'))).toEqual({ relations: [all.relations[1]], total: 3, limit: 1, offset: 1 });
    expect(await ok(relations('?limit=100&offset=3'))).toEqual({ relations: [], total: 3, limit: 100, offset: 3 });
    for (const bad of ['?limit=0', '?limit=101', '?limit=-1', '?offset=-1', '?limit=1.5', '?namespace=Doc', '?extra=1'])
      expectError(await relations(bad), 422, 'validation_failed', bad);
    // Signed in only: no token, a secret key, or another application's token is 401.
    expectError(await endUser(fresh, 'GET', '/v1/authz/relations'), 401, 'missing_credentials');
    expectError(await fresh.rest('GET', '/v1/authz/relations'), 401, 'invalid_token');
    const elsewhere = await suite.server.createApp();
    expectError(await endUser(elsewhere, 'GET', '/v1/authz/relations', undefined, tokens.access_token), 401, 'invalid_token');
  });
});

describe('SDK', () => {
  it('authz.tuples.write|list, check, expand and lookup over tRPC, with the same error codes', async () => {
    const fresh = await suite.server.createApp();
    const user = (await createUser(fresh)).id;
    const written = await fresh.sdk.authz.tuples.write({
      writes: [t('doc:sdk', 'viewer', 'team:sdk#member'), t('team:sdk', 'member', `user:${user}`)],
    });
    expect(written).toMatchObject({ written: 2, deleted: 0 });
    expect(
      await fresh.sdk.authz.check({
        object: 'doc:sdk',
        relation: 'viewer',
        subject: `user:${user}`,
        consistency: { mode: 'at_least_as_fresh', token: written.consistency_token },
      }),
    ).toEqual({ allowed: true });
    expect((await fresh.sdk.authz.tuples.list({ namespace: 'team' })).tuples).toHaveLength(1);
    expect((await fresh.sdk.authz.expand({ object: 'doc:sdk', relation: 'viewer' })).usersets).toHaveLength(2);
    expect((await fresh.sdk.authz.lookup({ subject: `user:${user}`, relation: 'viewer', namespace: 'doc' })).objects).toEqual([
      'doc:sdk',
    ]);
    const refused = await rejection(fresh.sdk.authz.tuples.write({ writes: [t('doc:sdk', 'viewer', 'nobody')] }));
    expect(refused).toMatchObject({ code: 'validation_failed', status: 422 });
    expect(refused.details?.[0]?.path).toBe('writes.0.subject');
  });

  it("the browser client's relations() answers S11 for its signed-in user", async () => {
    const fresh = await suite.server.createApp();
    const client = createGatehouseClient({ baseUrl: suite.server.url, applicationId: fresh.id });
    await expect(client.relations()).rejects.toMatchObject({ code: 'missing_credentials', status: 401 });
    const { token } = await requestMagicLink(suite.smtp, fresh, uniqueEmail('browser'));
    const result = await client.magicLink.verify({ token });
    if (result.status !== 'complete') throw new Error(`sign-in ended ${result.status}`);
    await ok(write(fresh, [t('doc:b1', 'viewer', `user:${result.user.id}`), t('folder:f1', 'owner', `user:${result.user.id}`)]));
    expect(await client.relations({ namespace: 'doc' })).toEqual({
      relations: [{ object: 'doc:b1', relation: 'viewer', subject: `user:${result.user.id}`, created_at: isoDate }],
      total: 1,
      limit: 25,
      offset: 0,
    });
    expect((await client.relations()).total).toBe(2);
    await expect(client.relations({ limit: 101 })).rejects.toMatchObject({ code: 'validation_failed', status: 422 });
  });
});

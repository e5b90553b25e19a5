import { GatehouseError } from '@gatehouse/sdk';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, createOrg, createUser, expectExactlyOneWinner, scopedKey } from './helpers/fixtures.ts';
import { expectError, isoDate, MISSING, ok, type TestApp, UUID } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite({ smtp: false });

let app: TestApp;

beforeAll(async () => {
  app = await suite.server.createApp();
});

const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

const listOrgs = async (on: TestApp, query = '') =>
  (await ok(on.rest('GET', `/v1/organizations${query}`))) as {
    organizations: any[];
    total: number;
    limit: number;
    offset: number;
  };

const getOrg = (on: TestApp, id: string) => ok(on.rest('GET', `/v1/organizations/${id}`));

const memberCount = async (on: TestApp, id: string) => (await getOrg(on, id)).member_count as number;

const listMembers = async (on: TestApp, orgId: string, query = '') =>
  (await ok(on.rest('GET', `/v1/organizations/${orgId}/members${query}`))) as {
    members: any[];
    total: number;
    limit: number;
    offset: number;
  };

describe('POST /v1/organizations', () => {
  it('201 with the organization, its slug generated from the name', async () => {
    const res = await app.rest('POST', '/v1/organizations', { name: 'Ünïcode  Café & Co!' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ success: true, error: null });
    expect(res.body.data).toEqual({
      id: expect.stringMatching(UUID),
      name: 'Ünïcode  Café & Co!',
      slug: 'unicode-cafe-co',
      member_count: 0,
      created_at: isoDate,
      updated_at: isoDate,
      subscription: null,
    });
    expect(await getOrg(app, res.body.data.id)).toEqual(res.body.data);

    const trimmed = await createOrg(app, { name: '  Spaced Out Inc.  ' });
    expect(trimmed).toMatchObject({ name: 'Spaced Out Inc.', slug: 'spaced-out-inc' });
    const symbols = await createOrg(app, { name: '!!! ***' });
    expect(symbols.slug).toMatch(SLUG);
    const long = await createOrg(app, { name: `${'Long name '.repeat(19)}end` });
    expect(long.slug).toMatch(SLUG);
    expect(long.slug.length).toBeLessThanOrEqual(100);
  });

  it('takes an explicit slug; an explicit slug that is taken is 409 slug_taken', async () => {
    const fresh = await suite.server.createApp();
    const org = await createOrg(fresh, { name: 'Acme', slug: 'acme-corp' });
    expect(org).toMatchObject({ name: 'Acme', slug: 'acme-corp' });
    expectError(await fresh.rest('POST', '/v1/organizations', { name: 'Other', slug: 'acme-corp' }), 409, 'slug_taken');
    expect((await listOrgs(fresh)).total).toBe(1);
    // Slugs are unique per application only.
    expect((await createOrg(app, { name: 'Acme', slug: 'acme-corp' })).slug).toBe('acme-corp');
  });

  it('a generated slug that is taken becomes a different, valid, unique slug (still 201)', async () => {
    const fresh = await suite.server.createApp();
    const first = await createOrg(fresh, { name: 'Same Name' });
    expect(first.slug).toBe('same-name');
    const again: any[] = [];
    for (let i = 0; i < 3; i++) again.push(await createOrg(fresh, { name: 'Same Name' }));
    await createOrg(fresh, { name: 'Taken', slug: 'taken-explicitly' });
    again.push(await createOrg(fresh, { name: 'Taken explicitly' }));
    const slugs = [first, ...again].map((o) => o.slug);
    for (const slug of slugs) {
      expect(slug).toMatch(SLUG);
      expect(slug.length).toBeLessThanOrEqual(100);
    }
    expect(new Set(slugs).size).toBe(slugs.length);
    expect(again.at(-1)!.slug).not.toBe('taken-explicitly');
    expect((await listOrgs(fresh)).total).toBe(6);
  });

  it('a taken generated slug of the maximum length still becomes a valid slug of at most 100 characters', async () => {
    const fresh = await suite.server.createApp();
    // Generated slugs of exactly 100 characters, with a hyphen around where a suffix could be cut in.
    for (const name of [
      `${'a'.repeat(92)} ${'b'.repeat(7)}`,
      `${'c'.repeat(93)} ${'d'.repeat(6)}`,
      `${'e'.repeat(91)} ${'f'.repeat(8)}`,
    ]) {
      const first = await createOrg(fresh, { name });
      expect(first.slug).toBe(name.replace(' ', '-'));
      const slugs = [first.slug];
      for (let i = 0; i < 2; i++) {
        const again = await fresh.rest('POST', '/v1/organizations', { name });
        expect(again.status, JSON.stringify(again.body)).toBe(201);
        slugs.push(again.body.data.slug);
      }
      for (const slug of slugs) {
        expect(slug, slug).toMatch(SLUG);
        expect(slug.length).toBeLessThanOrEqual(100);
      }
      expect(new Set(slugs).size).toBe(3);
    }
  });

  it('422 validation_failed for an invalid slug, a missing or empty name, or unknown fields', async () => {
    const fresh = await suite.server.createApp();
    for (const slug of ['Has-Caps', 'a--b', '-a', 'a-', 'a b', 'a_b', '', 'ünï', 'x'.repeat(101), 7]) {
      expectError(await fresh.rest('POST', '/v1/organizations', { name: 'Valid', slug }), 422, 'validation_failed', String(slug));
    }
    for (const body of [
      {},
      { name: '' },
      { name: '   ' },
      { name: 'x'.repeat(201) },
      { name: 'Ok', member_count: 3 },
      { name: 'Ok', id: MISSING },
    ]) {
      expectError(await fresh.rest('POST', '/v1/organizations', body), 422, 'validation_failed', JSON.stringify(body));
    }
    expect((await listOrgs(fresh)).total).toBe(0);
  });
});

describe('GET /v1/organizations (S10)', () => {
  it('answers {organizations, total, limit, offset}, newest first, defaults 25/0, with member_count', async () => {
    const fresh = await suite.server.createApp();
    const sequential: any[] = [];
    for (let i = 0; i < 3; i++) sequential.push(await createOrg(fresh, { name: `Seq ${i}` }));
    const user = await createUser(fresh);
    expect((await fresh.rest('POST', `/v1/organizations/${sequential[1].id}/members`, { user_id: user.id })).status).toBe(201);
    const first = await listOrgs(fresh);
    expect(Object.keys(first).sort()).toEqual(['limit', 'offset', 'organizations', 'total']);
    expect(first).toMatchObject({ total: 3, limit: 25, offset: 0 });
    expect(first.organizations.map((o) => o.id)).toEqual(sequential.map((o) => o.id).reverse());
    expect(first.organizations.map((o) => o.member_count)).toEqual([0, 1, 0]);
    // One shape: a list item is exactly what create and get answer (the live subscription included, none here).
    expect(first.organizations[0]).toEqual(sequential[2]);
    expect(first.organizations[1]).toEqual(await getOrg(fresh, sequential[1].id));
    for (const item of first.organizations) {
      expect(item).toEqual({
        id: expect.stringMatching(UUID),
        name: expect.any(String),
        slug: expect.stringMatching(SLUG),
        member_count: expect.any(Number),
        subscription: null,
        created_at: isoDate,
        updated_at: isoDate,
      });
    }

    await Promise.all(Array.from({ length: 24 }, (_, i) => createOrg(fresh, { name: `Bulk ${i}` })));
    const page = await listOrgs(fresh);
    expect(page).toMatchObject({ total: 27, limit: 25, offset: 0 });
    expect(page.organizations).toHaveLength(25);
    const rest = await listOrgs(fresh, '?offset=25');
    expect(rest).toMatchObject({ total: 27, limit: 25, offset: 25 });
    expect(rest.organizations).toHaveLength(2);
    const all = await listOrgs(fresh, '?limit=100');
    expect([...page.organizations, ...rest.organizations].map((o) => o.id)).toEqual(all.organizations.map((o) => o.id));
    const sorted = [...all.organizations].sort((x, y) => y.created_at.localeCompare(x.created_at) || y.id.localeCompare(x.id));
    expect(all.organizations.map((o) => o.id)).toEqual(sorted.map((o) => o.id));
    const window = await listOrgs(fresh, '?limit=2&offset=3');
    expect(window).toMatchObject({ total: 27, limit: 2, offset: 3 });
    expect(window.organizations.map((o) => o.id)).toEqual(all.organizations.slice(3, 5).map((o) => o.id));
  });

  it('422 validation_failed for out-of-range or non-integer limit and offset', async () => {
    for (const query of ['limit=0', 'limit=101', 'limit=-1', 'limit=1.5', 'limit=abc', 'offset=-1', 'offset=1.5', 'offset=abc']) {
      expectError(await app.rest('GET', `/v1/organizations?${query}`), 422, 'validation_failed', query);
    }
  });

  it('search is case-insensitive on name or slug, literal for %, _ and \\, and total reflects it', async () => {
    const fresh = await suite.server.createApp();
    const percent = await createOrg(fresh, { name: '100% Pure' });
    const underscore = await createOrg(fresh, { name: 'Snake_Case Co' });
    const backslash = await createOrg(fresh, { name: 'Back\\Slash Ltd' });
    const typeX = await createOrg(fresh, { name: 'Type X Corp' });
    const bySlug = await createOrg(fresh, { name: 'Hidden', slug: 'findme-by-slug' });
    const plain = await createOrg(fresh, { name: 'Plain' });

    const search = async (term: string, query = '') => {
      const page = await listOrgs(fresh, `?search=${encodeURIComponent(term)}${query}`);
      return { ids: page.organizations.map((o) => o.id).sort(), total: page.total, page };
    };
    const expectOnly = async (term: string, ...orgs: any[]) => {
      const found = await search(term);
      expect(found.ids, term).toEqual(orgs.map((o) => o.id).sort());
      expect(found.total, term).toBe(orgs.length);
    };
    await expectOnly('%', percent);
    await expectOnly('0%', percent);
    await expectOnly('_', underscore);
    await expectOnly('E_C', underscore);
    await expectOnly('e_x');
    await expectOnly('\\', backslash);
    await expectOnly('k\\s', backslash);
    await expectOnly('\\%');
    await expectOnly('p%e');
    await expectOnly('FINDME', bySlug);
    await expectOnly('hidden', bySlug);
    await expectOnly('TYPE X', typeX);
    await expectOnly('type-x', typeX);
    await expectOnly('snake-case', underscore);
    await expectOnly('PLAIN', plain);
    await expectOnly('nothing like this');

    const paged = await search('o', '&limit=1');
    expect(paged.page.organizations).toHaveLength(1);
    expect(paged.total).toBeGreaterThan(1);
    expect(paged.page.limit).toBe(1);
  });
});

describe('GET, PATCH, DELETE /v1/organizations/{id}', () => {
  it('reads, renames, re-slugs and deletes an organization', async () => {
    const fresh = await suite.server.createApp();
    const org = await createOrg(fresh, { name: 'Before' });
    expect(await getOrg(fresh, org.id)).toEqual(org);

    const renamed = await fresh.rest('PATCH', `/v1/organizations/${org.id}`, { name: 'After' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({
      id: org.id,
      name: 'After',
      slug: org.slug,
      member_count: 0,
      created_at: org.created_at,
    });
    const reslugged = await fresh.rest('PATCH', `/v1/organizations/${org.id}`, { slug: 'after-slug' });
    expect(reslugged.status).toBe(200);
    expect(reslugged.body.data).toMatchObject({ name: 'After', slug: 'after-slug' });
    const both = await fresh.rest('PATCH', `/v1/organizations/${org.id}`, { name: 'Both', slug: 'both-slug' });
    expect(both.body.data).toMatchObject({ name: 'Both', slug: 'both-slug' });
    expect(await getOrg(fresh, org.id)).toMatchObject({ name: 'Both', slug: 'both-slug', member_count: 0 });

    const other = await createOrg(fresh, { name: 'Other', slug: 'other-slug' });
    expectError(await fresh.rest('PATCH', `/v1/organizations/${org.id}`, { slug: 'other-slug' }), 409, 'slug_taken');
    for (const body of [{ slug: 'Bad Slug' }, { name: '' }, { member_count: 5 }, { nickname: 'x' }]) {
      expectError(await fresh.rest('PATCH', `/v1/organizations/${org.id}`, body), 422, 'validation_failed', JSON.stringify(body));
    }
    expect(await getOrg(fresh, org.id)).toMatchObject({ name: 'Both', slug: 'both-slug' });
    // Its own slug again is not a conflict.
    expect((await fresh.rest('PATCH', `/v1/organizations/${org.id}`, { slug: 'both-slug' })).status).toBe(200);

    const deleted = await fresh.rest('DELETE', `/v1/organizations/${org.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ success: true, data: { id: org.id, deleted: true }, error: null });
    expectError(await fresh.rest('GET', `/v1/organizations/${org.id}`), 404, 'not_found');
    expectError(await fresh.rest('PATCH', `/v1/organizations/${org.id}`, { name: 'x' }), 404, 'not_found');
    expectError(await fresh.rest('DELETE', `/v1/organizations/${org.id}`), 404, 'not_found');
    expect((await listOrgs(fresh)).organizations.map((o) => o.id)).toEqual([other.id]);
    // The slug is free again.
    expect((await createOrg(fresh, { name: 'Reborn', slug: 'both-slug' })).slug).toBe('both-slug');
  });

  it('PATCH answers exactly the record that is stored (updated_at included), every time', async () => {
    const fresh = await suite.server.createApp();
    const org = await createOrg(fresh, { name: 'Stable' });
    const user = await createUser(fresh);
    expect((await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id })).status).toBe(201);
    for (let i = 0; i < 10; i++) {
      const patched = await fresh.rest('PATCH', `/v1/organizations/${org.id}`, { name: `Stable ${i}` });
      expect(patched.status).toBe(200);
      expect(patched.body.data, `organization PATCH #${i}`).toEqual(await getOrg(fresh, org.id));
      const role = await fresh.rest('PATCH', `/v1/organizations/${org.id}/members/${user.id}`, { role: `role_${i}` });
      expect(role.status).toBe(200);
      expect([role.body.data], `member PATCH #${i}`).toEqual((await listMembers(fresh, org.id)).members);
    }
  });

  it('deleting an organization that has members succeeds and takes the memberships with it', async () => {
    const fresh = await suite.server.createApp();
    const org = await createOrg(fresh, { name: 'Doomed' });
    const user = await createUser(fresh);
    expect((await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id })).status).toBe(201);
    expect((await fresh.rest('DELETE', `/v1/organizations/${org.id}`)).status).toBe(200);
    expectError(await fresh.rest('GET', `/v1/organizations/${org.id}/members`), 404, 'not_found');
    expect((await fresh.rest('GET', `/v1/users/${user.id}`)).body.data.status).toBe('active');
  });

  it("another application's organization is 404 everywhere and stays unchanged", async () => {
    const other = await suite.server.createApp();
    const theirs = await createOrg(other, { name: 'Theirs' });
    const theirUser = await createUser(other);
    expect((await other.rest('POST', `/v1/organizations/${theirs.id}/members`, { user_id: theirUser.id })).status).toBe(201);
    const mine = await createUser(app);
    const base = `/v1/organizations/${theirs.id}`;
    const attempts: Array<[string, string, unknown?]> = [
      ['GET', base],
      ['PATCH', base, { name: 'Hijacked', slug: 'hijacked' }],
      ['DELETE', base],
      ['GET', `${base}/members`],
      ['POST', `${base}/members`, { user_id: mine.id }],
      ['POST', `${base}/members`, { user_id: theirUser.id }],
      ['PATCH', `${base}/members/${theirUser.id}`, { role: 'owner' }],
      ['DELETE', `${base}/members/${theirUser.id}`],
    ];
    for (const [method, path, body] of attempts) {
      expectError(await app.rest(method, path, body), 404, 'not_found', `${method} ${path}`);
    }
    expect(await getOrg(other, theirs.id)).toEqual({ ...theirs, member_count: 1 });
    const theirMembers = await listMembers(other, theirs.id);
    expect(theirMembers.members).toEqual([expect.objectContaining({ user_id: theirUser.id, role: 'member' })]);
    expect((await listOrgs(app, `?search=${theirs.slug}`)).total).toBe(0);
  });

  it('organizations:write implies organizations:read; a read key cannot write; another scope grants neither', async () => {
    const fresh = await suite.server.createApp();
    const writer = bearer(await scopedKey(fresh, ['organizations:write']));
    const created = await fresh.rest('POST', '/v1/organizations', { name: 'By writer' }, writer);
    expect(created.status).toBe(201);
    const list = await fresh.rest('GET', '/v1/organizations', undefined, writer);
    expect(list.status).toBe(200);
    expect(list.body.data.total).toBe(1);
    expect((await fresh.rest('GET', `/v1/organizations/${created.body.data.id}`, undefined, writer)).status).toBe(200);
    expect((await fresh.rest('GET', `/v1/organizations/${created.body.data.id}/members`, undefined, writer)).status).toBe(200);

    const reader = bearer(await scopedKey(fresh, ['organizations:read']));
    expect((await fresh.rest('GET', '/v1/organizations', undefined, reader)).status).toBe(200);
    expectError(await fresh.rest('POST', '/v1/organizations', { name: 'By reader' }, reader), 403, 'insufficient_scope');
    expectError(
      await fresh.rest('PATCH', `/v1/organizations/${created.body.data.id}`, { name: 'x' }, reader),
      403,
      'insufficient_scope',
    );
    expectError(
      await fresh.rest('DELETE', `/v1/organizations/${created.body.data.id}`, undefined, reader),
      403,
      'insufficient_scope',
    );

    const usersOnly = bearer(await scopedKey(fresh, ['users:write']));
    expectError(await fresh.rest('GET', '/v1/organizations', undefined, usersOnly), 403, 'insufficient_scope');
    expect((await listOrgs(fresh)).total).toBe(1);
  });
});

describe('organization members (S8)', () => {
  it('POST 201 with {user_id, email, role, user_status, created_at}; role defaults to member', async () => {
    const fresh = await suite.server.createApp();
    const org = await createOrg(fresh, { name: 'Team' });
    const user = await createUser(fresh, { primary_email: 'Member.One@Example.com' });
    const res = await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ success: true, error: null });
    expect(res.body.data).toEqual({
      user_id: user.id,
      email: 'Member.One@Example.com',
      role: 'member',
      user_status: 'active',
      status: 'active',
      source: 'manual',
      created_at: isoDate,
      updated_at: isoDate,
    });
    const list = await listMembers(fresh, org.id);
    expect(list.members).toEqual([res.body.data]);

    const admin = await createUser(fresh, {});
    const adminRes = await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: admin.id, role: 'admin' });
    expect(adminRes.status).toBe(201);
    expect(adminRes.body.data).toMatchObject({ user_id: admin.id, email: null, role: 'admin', user_status: 'active' });
    const owner = await createUser(fresh);
    expect(
      (await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: owner.id, role: 'owner' })).body.data.role,
    ).toBe('owner');
    expect(await memberCount(fresh, org.id)).toBe(3);
  });

  it('accepts application-defined role keys and rejects invalid roles (422)', async () => {
    const fresh = await suite.server.createApp();
    const org = await createOrg(fresh, { name: 'Roles' });
    for (const role of ['billing_admin', 'a', 'team:lead', 'x-y_z9', `r${'a'.repeat(63)}`]) {
      const user = await createUser(fresh);
      const res = await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id, role });
      expect(res.status, role).toBe(201);
      expect(res.body.data.role).toBe(role);
    }
    const user = await createUser(fresh);
    for (const role of ['Admin', '1abc', '_x', 'a b', '', `r${'a'.repeat(64)}`, 'ünï', 42, null]) {
      expectError(
        await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id, role }),
        422,
        'validation_failed',
        String(role),
      );
    }
    for (const body of [{}, { user_id: 'nope' }, { user_id: user.id, extra: 1 }]) {
      expectError(
        await fresh.rest('POST', `/v1/organizations/${org.id}/members`, body),
        422,
        'validation_failed',
        JSON.stringify(body),
      );
    }
    expect(await memberCount(fresh, org.id)).toBe(5);
  });

  it('404 not_found for an unknown organization; 422 user_not_found for an unknown or foreign user; 409 already_member', async () => {
    const fresh = await suite.server.createApp();
    const other = await suite.server.createApp();
    const org = await createOrg(fresh, { name: 'Strict' });
    const user = await createUser(fresh);
    const foreign = await createUser(other);

    expectError(await fresh.rest('POST', `/v1/organizations/${MISSING}/members`, { user_id: user.id }), 404, 'not_found');
    expectError(await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: MISSING }), 422, 'user_not_found');
    expectError(await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: foreign.id }), 422, 'user_not_found');
    expect(await memberCount(fresh, org.id)).toBe(0);

    expect((await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id })).status).toBe(201);
    expectError(await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id }), 409, 'already_member');
    expectError(
      await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id, role: 'owner' }),
      409,
      'already_member',
    );
    const members = await listMembers(fresh, org.id);
    expect(members.members).toEqual([expect.objectContaining({ user_id: user.id, role: 'member' })]);
    expect(await memberCount(fresh, org.id)).toBe(1);
  });

  it('lists members paginated, newest first, and reports user_status', async () => {
    const fresh = await suite.server.createApp();
    const org = await createOrg(fresh, { name: 'Big' });
    const users: any[] = [];
    for (let i = 0; i < 4; i++) users.push(await createUser(fresh));
    for (const user of users) {
      expect((await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id })).status).toBe(201);
    }
    const page = await listMembers(fresh, org.id);
    expect(Object.keys(page).sort()).toEqual(['limit', 'members', 'offset', 'total']);
    expect(page).toMatchObject({ total: 4, limit: 25, offset: 0 });
    expect(page.members.map((m) => m.user_id)).toEqual(users.map((u) => u.id).reverse());
    const window = await listMembers(fresh, org.id, '?limit=2&offset=1');
    expect(window).toMatchObject({ total: 4, limit: 2, offset: 1 });
    expect(window.members.map((m) => m.user_id)).toEqual([users[2].id, users[1].id]);
    for (const query of ['limit=0', 'limit=101', 'offset=-1', 'limit=1.5', 'limit=abc']) {
      expectError(await fresh.rest('GET', `/v1/organizations/${org.id}/members?${query}`), 422, 'validation_failed', query);
    }
    expectError(await fresh.rest('GET', `/v1/organizations/${MISSING}/members`), 404, 'not_found');

    expect((await fresh.rest('PATCH', `/v1/users/${users[0].id}`, { status: 'banned' })).status).toBe(200);
    const after = await listMembers(fresh, org.id);
    expect(after.members.find((m) => m.user_id === users[0].id)).toMatchObject({ user_status: 'banned' });
  });

  it('PATCH changes the role; DELETE answers {id: user_id, deleted: true}; member_count follows', async () => {
    const fresh = await suite.server.createApp();
    const org = await createOrg(fresh, { name: 'Roles change' });
    const a = await createUser(fresh);
    const b = await createUser(fresh);
    const outsider = await createUser(fresh);
    const added = (await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: a.id })).body.data;
    expect(await memberCount(fresh, org.id)).toBe(1);
    expect((await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: b.id })).status).toBe(201);
    expect(await memberCount(fresh, org.id)).toBe(2);
    expect((await listOrgs(fresh)).organizations[0].member_count).toBe(2);

    const patched = await fresh.rest('PATCH', `/v1/organizations/${org.id}/members/${a.id}`, { role: 'billing_admin' });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ ...added, role: 'billing_admin', updated_at: expect.any(String) });
    expect((await listMembers(fresh, org.id)).members.find((m) => m.user_id === a.id).role).toBe('billing_admin');
    expectError(
      await fresh.rest('PATCH', `/v1/organizations/${org.id}/members/${a.id}`, { role: 'Bad Role' }),
      422,
      'validation_failed',
    );
    expectError(await fresh.rest('PATCH', `/v1/organizations/${org.id}/members/${a.id}`, {}), 422, 'validation_failed');
    expectError(
      await fresh.rest('PATCH', `/v1/organizations/${org.id}/members/${outsider.id}`, { role: 'admin' }),
      404,
      'not_found',
    );
    expectError(await fresh.rest('PATCH', `/v1/organizations/${org.id}/members/${MISSING}`, { role: 'admin' }), 404, 'not_found');

    const removed = await fresh.rest('DELETE', `/v1/organizations/${org.id}/members/${a.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body).toMatchObject({ success: true, data: { id: a.id, deleted: true }, error: null });
    expect(await memberCount(fresh, org.id)).toBe(1);
    expectError(await fresh.rest('DELETE', `/v1/organizations/${org.id}/members/${a.id}`), 404, 'not_found');
    expectError(await fresh.rest('DELETE', `/v1/organizations/${org.id}/members/${outsider.id}`), 404, 'not_found');
    expect((await listMembers(fresh, org.id)).members.map((m) => m.user_id)).toEqual([b.id]);
    // The user itself is untouched, and can be added again.
    expect((await fresh.rest('GET', `/v1/users/${a.id}`)).body.data.status).toBe('active');
    expect((await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: a.id })).status).toBe(201);
    expect(await memberCount(fresh, org.id)).toBe(2);
  });

  it("deleting a user removes all of that user's memberships", async () => {
    const fresh = await suite.server.createApp();
    const org1 = await createOrg(fresh, { name: 'One' });
    const org2 = await createOrg(fresh, { name: 'Two' });
    const leaving = await createUser(fresh);
    const staying = await createUser(fresh);
    for (const org of [org1, org2]) {
      for (const user of [leaving, staying]) {
        expect((await fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id })).status).toBe(201);
      }
    }
    expect(await memberCount(fresh, org1.id)).toBe(2);
    expect((await fresh.rest('DELETE', `/v1/users/${leaving.id}`)).status).toBe(200);
    for (const org of [org1, org2]) {
      expect(await memberCount(fresh, org.id)).toBe(1);
      const list = await listMembers(fresh, org.id);
      expect(list.total).toBe(1);
      expect(list.members.map((m) => m.user_id)).toEqual([staying.id]);
    }
    expect((await listOrgs(fresh)).organizations.map((o) => o.member_count)).toEqual([1, 1]);
  });

  it('20 concurrent adds of one user: exactly one 201, nineteen 409 already_member, member_count 1', async () => {
    const fresh = await suite.server.createApp();
    const org = await createOrg(fresh, { name: 'Race' });
    const user = await createUser(fresh);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => fresh.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id })),
    );
    expectExactlyOneWinner(results, 201, 'already_member');
    expect(await memberCount(fresh, org.id)).toBe(1);
    expect((await listMembers(fresh, org.id)).total).toBe(1);
    const events = await fresh.rest('GET', '/v1/events?type=organization_membership.created');
    expect(events.body.data.total).toBe(1);
  });
});

describe('GET /v1/users/{id}/organizations', () => {
  it('lists the organizations a user is an active member of, by name, with their role (REST and SDK)', async () => {
    const fresh = await suite.server.createApp();
    const user = await createUser(fresh, {});
    expect(await ok(fresh.rest('GET', `/v1/users/${user.id}/organizations`))).toEqual([]);
    const zeta = await createOrg(fresh, { name: 'Zeta' });
    const alpha = await createOrg(fresh, { name: 'Alpha' });
    await ok(fresh.rest('POST', `/v1/organizations/${zeta.id}/members`, { user_id: user.id }), 201);
    await ok(fresh.rest('POST', `/v1/organizations/${alpha.id}/members`, { user_id: user.id, role: 'admin' }), 201);
    const listed = await ok(fresh.rest('GET', `/v1/users/${user.id}/organizations`));
    expect(listed).toEqual([
      { id: alpha.id, name: 'Alpha', role: 'admin' },
      { id: zeta.id, name: 'Zeta', role: 'member' },
    ]);
    expect(await fresh.sdk.users.organizations({ id: user.id })).toEqual(listed);
    // A removed membership is gone from the list.
    await ok(fresh.rest('DELETE', `/v1/organizations/${zeta.id}/members/${user.id}`));
    expect((await ok(fresh.rest('GET', `/v1/users/${user.id}/organizations`))).map((o: { id: string }) => o.id)).toEqual([
      alpha.id,
    ]);

    // Another application's user, an unknown one: 404; the scope is organizations:read.
    const other = await suite.server.createApp();
    expectError(await other.rest('GET', `/v1/users/${user.id}/organizations`), 404, 'not_found');
    expectError(await fresh.rest('GET', `/v1/users/${MISSING}/organizations`), 404, 'not_found');
    const usersOnly = await scopedKey(fresh, ['users:read']);
    expectError(
      await fresh.rest('GET', `/v1/users/${user.id}/organizations`, undefined, bearer(usersOnly)),
      403,
      'insufficient_scope',
    );
  });
});

describe('organization races', () => {
  it('10 concurrent creates with one name: all 201, each with its own valid slug', async () => {
    const fresh = await suite.server.createApp();
    const results = await Promise.all(
      Array.from({ length: 10 }, () => fresh.rest('POST', '/v1/organizations', { name: 'Popular Name' })),
    );
    expect(
      results.map((r) => r.status),
      JSON.stringify(results.filter((r) => r.status !== 201).map((r) => r.body)),
    ).toEqual(Array(10).fill(201));
    const slugs = results.map((r) => r.body.data.slug as string);
    for (const slug of slugs) expect(slug).toMatch(SLUG);
    expect(slugs).toContain('popular-name');
    expect(new Set(slugs).size).toBe(10);
    expect((await listOrgs(fresh)).total).toBe(10);
  });

  it('10 concurrent creates with one explicit slug: exactly one 201, nine 409 slug_taken', async () => {
    const fresh = await suite.server.createApp();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => fresh.rest('POST', '/v1/organizations', { name: `Claimant ${i}`, slug: 'contested' })),
    );
    expectExactlyOneWinner(results, 201, 'slug_taken');
    expect((await listOrgs(fresh)).total).toBe(1);
    expect((await fresh.rest('GET', '/v1/events?type=organization.created')).body.data.total).toBe(1);
  });

  it('two organizations renamed to one slug at once: one 200, one 409 slug_taken', async () => {
    const fresh = await suite.server.createApp();
    const [a, b] = await Promise.all([createOrg(fresh, { name: 'First' }), createOrg(fresh, { name: 'Second' })]);
    const results = await Promise.all(
      [a, b].map((org) => fresh.rest('PATCH', `/v1/organizations/${org.id}`, { slug: 'shared-target' })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(results.find((r) => r.status === 409)!.body.error?.code).toBe('slug_taken');
    const slugs = (await listOrgs(fresh)).organizations.map((o) => o.slug).sort();
    expect(slugs.filter((s) => s === 'shared-target')).toHaveLength(1);
  });
});

describe('through the SDK (tRPC)', () => {
  it('creates, lists, reads, updates and deletes organizations and members', async () => {
    const fresh = await suite.server.createApp();
    const { sdk } = fresh;
    const org = await sdk.organizations.create({ name: 'Ünïcode  Café & Co!' });
    expect(org).toEqual({
      id: expect.stringMatching(UUID),
      name: 'Ünïcode  Café & Co!',
      slug: 'unicode-cafe-co',
      member_count: 0,
      created_at: isoDate,
      updated_at: isoDate,
      subscription: null,
    });
    const second = await sdk.organizations.create({ name: 'Second', slug: 'second-org' });
    expect((await fresh.rest('GET', `/v1/organizations/${org.id}`)).body.data).toEqual(org);
    expect(await sdk.organizations.get({ id: org.id })).toEqual(org);
    const page = await sdk.organizations.list({ search: 'CAFÉ' });
    expect(page).toMatchObject({ total: 1, limit: 25, offset: 0 });
    expect(page.organizations.map((o) => o.id)).toEqual([org.id]);
    expect((await sdk.organizations.list()).organizations.map((o) => o.id)).toEqual([second.id, org.id]);

    const updated = await sdk.organizations.update({ id: org.id, name: 'Renamed', slug: 'renamed' });
    expect(updated).toMatchObject({ id: org.id, name: 'Renamed', slug: 'renamed' });

    const user = await sdk.users.create({ primary_email: 'sdk.member@example.com' });
    const member = await sdk.organizations.members.add({ id: org.id, user_id: user.id });
    expect(member).toEqual({
      user_id: user.id,
      email: 'sdk.member@example.com',
      role: 'member',
      user_status: 'active',
      status: 'active',
      source: 'manual',
      created_at: isoDate,
      updated_at: isoDate,
    });
    const members = await sdk.organizations.members.list({ id: org.id });
    expect(members).toMatchObject({ total: 1, limit: 25, offset: 0 });
    expect(members.members).toEqual([member]);
    expect((await sdk.organizations.get({ id: org.id })).member_count).toBe(1);
    expect(await sdk.organizations.members.update({ id: org.id, user_id: user.id, role: 'admin' })).toMatchObject({
      role: 'admin',
    });
    expect(await sdk.organizations.members.remove({ id: org.id, user_id: user.id })).toEqual({ id: user.id, deleted: true });
    expect((await sdk.organizations.get({ id: org.id })).member_count).toBe(0);

    expect(await sdk.organizations.delete({ id: org.id })).toEqual({ id: org.id, deleted: true });
    await expect(sdk.organizations.get({ id: org.id })).rejects.toMatchObject({ code: 'not_found', status: 404 });
  });

  it('fails with GatehouseError carrying the same code and status as REST', async () => {
    const fresh = await suite.server.createApp();
    const { sdk } = fresh;
    const org = await sdk.organizations.create({ name: 'Errors', slug: 'errors' });
    const taken = await sdk.organizations.create({ name: 'Again', slug: 'errors' }).catch((e: unknown) => e);
    expect(taken).toBeInstanceOf(GatehouseError);
    expect(taken).toMatchObject({ code: 'slug_taken', status: 409 });
    const user = await sdk.users.create({});
    await sdk.organizations.members.add({ id: org.id, user_id: user.id, role: 'billing_admin' });
    await expect(sdk.organizations.members.add({ id: org.id, user_id: user.id })).rejects.toMatchObject({
      code: 'already_member',
      status: 409,
    });
    await expect(sdk.organizations.members.add({ id: org.id, user_id: MISSING })).rejects.toMatchObject({
      code: 'user_not_found',
      status: 422,
    });
    await expect(sdk.organizations.members.add({ id: MISSING, user_id: user.id })).rejects.toMatchObject({
      code: 'not_found',
      status: 404,
    });
    await expect(sdk.organizations.create({ name: 'Bad', slug: 'Bad Slug' })).rejects.toMatchObject({
      code: 'validation_failed',
      status: 422,
    });
    await expect(app.sdk.organizations.get({ id: org.id })).rejects.toMatchObject({ code: 'not_found', status: 404 });
  });
});

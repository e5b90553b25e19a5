import { createHash } from 'node:crypto';
import { decodeJwt } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, createOrg, createUser, scopedKey, unique, uniqueEmail } from './helpers/fixtures.ts';
import {
  CORE_GROUP,
  CORE_USER,
  createDirectory,
  ENTERPRISE,
  expectScimError,
  LIST,
  patch,
  scimClient,
  scimOk,
  scimUser,
  type TestDirectory,
} from './helpers/scim.ts';
import { expectError, isoDate, MISSING, ok, sql, type TestApp, UUID } from './helpers/server.ts';
import { endUser, signIn } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

let app: TestApp;
let other: TestApp;

beforeAll(async () => {
  app = await suite.server.createApp();
  other = await suite.server.createApp();
});

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const members = async (orgId: string, on: TestApp = app) =>
  (await ok(on.rest('GET', `/v1/organizations/${orgId}/members?limit=100`))).members as any[];
const memberOf = async (orgId: string, userId: string) => (await members(orgId)).find((m) => m.user_id === userId);
const events = async (type: string, on: TestApp = app) =>
  (await ok(on.rest('GET', `/v1/events?type=${type}&limit=100`))).events as any[];

describe('directories: the management API', () => {
  it('POST answers 201 with the record and its token once; GET and the list never show the token; it is stored hashed', async () => {
    const org = await createOrg(app);
    const res = await app.rest('POST', `/v1/organizations/${org.id}/directories`, {
      name: 'Okta',
      provider: 'okta',
      group_role_mappings: [{ group: 'Admins', role: 'admin' }],
    });
    expect(res.status).toBe(201);
    const created = res.body.data;
    expect(created).toEqual({
      id: expect.stringMatching(UUID),
      organization_id: org.id,
      name: 'Okta',
      provider: 'okta',
      status: 'active',
      scim_base_url: expect.stringMatching(new RegExp(`^http://[^/]+/scim/v2/${created.id}$`)),
      group_role_mappings: [{ group: 'Admins', role: 'admin' }],
      user_count: 0,
      group_count: 0,
      last_request_at: null,
      created_at: isoDate,
      updated_at: isoDate,
      token: expect.stringMatching(/^scim_[A-Za-z0-9]{43}$/),
    });
    const { token, ...record } = created;
    expect(await ok(app.rest('GET', `/v1/organizations/${org.id}/directories/${created.id}`))).toEqual(record);
    expect(await ok(app.rest('GET', `/v1/organizations/${org.id}/directories`))).toEqual([record]);
    const [row] = await sql(suite.server, 'select token_hash from directories where id = ?', [created.id]);
    expect(row.token_hash).toBe(sha256(token));
    expect(JSON.stringify(await sql(suite.server, 'select * from directories where id = ?', [created.id]))).not.toContain(token);
  });

  it('PATCH renames, disables and maps groups; a wrong field, provider or role is 422', async () => {
    const dir = await createDirectory(suite.server, app);
    const path = `/v1/organizations/${dir.organizationId}/directories/${dir.id}`;
    const updated = await ok(
      app.rest('PATCH', path, { name: 'Renamed', status: 'disabled', group_role_mappings: [{ group: 'Eng', role: 'engineer' }] }),
    );
    expect(updated).toMatchObject({
      name: 'Renamed',
      status: 'disabled',
      group_role_mappings: [{ group: 'Eng', role: 'engineer' }],
    });
    expectError(await app.rest('PATCH', path, { token: 'scim_x' }), 422, 'validation_failed');
    expectError(
      await app.rest('PATCH', path, { group_role_mappings: [{ group: 'x', role: 'Not A Role' }] }),
      422,
      'validation_failed',
    );
    expectError(
      await app.rest('POST', `/v1/organizations/${dir.organizationId}/directories`, { name: 'x', provider: 'ldap' }),
      422,
      'validation_failed',
    );
    expectError(
      await app.rest('POST', `/v1/organizations/${dir.organizationId}/directories`, { name: 'x', provider: 'okta', status: 'x' }),
      422,
      'validation_failed',
    );
  });

  it('an unknown organization or directory, or one of another organization or application, is 404', async () => {
    const dir = await createDirectory(suite.server, app);
    const otherOrg = await createOrg(app);
    expectError(await app.rest('GET', `/v1/organizations/${otherOrg.id}/directories/${dir.id}`), 404, 'not_found');
    expectError(await app.rest('GET', `/v1/organizations/${dir.organizationId}/directories/${MISSING}`), 404, 'not_found');
    expectError(await app.rest('GET', `/v1/organizations/${MISSING}/directories`), 404, 'not_found');
    expectError(await other.rest('GET', `/v1/organizations/${dir.organizationId}/directories/${dir.id}`), 404, 'not_found');
    expectError(await other.rest('GET', `/v1/organizations/${dir.organizationId}/directories`), 404, 'not_found');
    expectError(
      await other.rest('POST', `/v1/organizations/${dir.organizationId}/directories/${dir.id}/rotate-token`),
      404,
      'not_found',
    );
    expectError(await other.rest('DELETE', `/v1/organizations/${dir.organizationId}/directories/${dir.id}`), 404, 'not_found');
    expectError(
      await other.rest('POST', `/v1/organizations/${dir.organizationId}/directories`, { name: 'x', provider: 'okta' }),
      404,
      'not_found',
    );
  });

  it('directories:read reads, directories:write writes; organizations:write is not enough', async () => {
    const dir = await createDirectory(suite.server, app);
    const base = `/v1/organizations/${dir.organizationId}/directories`;
    const reader = await scopedKey(app, ['directories:read']);
    const orgWriter = await scopedKey(app, ['organizations:write']);
    expect(await ok(app.rest('GET', base, undefined, bearer(reader)))).toHaveLength(1);
    expectError(await app.rest('POST', base, { name: 'x', provider: 'okta' }, bearer(reader)), 403, 'insufficient_scope');
    expectError(await app.rest('POST', `${base}/${dir.id}/rotate-token`, undefined, bearer(reader)), 403, 'insufficient_scope');
    expectError(await app.rest('GET', base, undefined, bearer(orgWriter)), 403, 'insufficient_scope');
    expectError(await app.rest('POST', base, { name: 'x', provider: 'okta' }, bearer(orgWriter)), 403, 'insufficient_scope');
    const writer = await scopedKey(app, ['directories:write']);
    await ok(app.rest('POST', base, { name: 'x', provider: 'entra' }, bearer(writer)), 201);
  });

  it('rotate-token answers a new token; the old one stops at once', async () => {
    const dir = await createDirectory(suite.server, app);
    await scimOk(dir.scim('GET', '/Users'));
    const { token } = await ok(app.rest('POST', `/v1/organizations/${dir.organizationId}/directories/${dir.id}/rotate-token`));
    expect(token).toMatch(/^scim_/);
    expect(token).not.toBe(dir.token);
    expectScimError(await dir.scim('GET', '/Users'), 401);
    await scimOk(dir.scim('GET', '/Users', undefined, { token }));
  });

  it('DELETE removes the directory and its users and groups; the memberships it made stay; its token stops', async () => {
    const dir = await createDirectory(suite.server, app);
    const user = await scimOk(dir.scim('POST', '/Users', scimUser(uniqueEmail())), 201);
    await scimOk(dir.scim('POST', '/Groups', { schemas: [CORE_GROUP], displayName: 'G', members: [{ value: user.id }] }), 201);
    const shown = await ok(app.rest('GET', `/v1/organizations/${dir.organizationId}/directories/${dir.id}`));
    expect(shown).toMatchObject({ user_count: 1, group_count: 1, last_request_at: isoDate });
    expect(await ok(app.rest('DELETE', `/v1/organizations/${dir.organizationId}/directories/${dir.id}`))).toEqual({
      id: dir.id,
      deleted: true,
    });
    expectScimError(await dir.scim('GET', '/Users'), 401);
    expect(await sql(suite.server, 'select * from directory_users where directory_id = ?', [dir.id])).toEqual([]);
    expect(await memberOf(dir.organizationId, user.id)).toMatchObject({ source: 'directory' });
    expectError(await app.rest('GET', `/v1/organizations/${dir.organizationId}/directories/${dir.id}`), 404, 'not_found');
  });

  it('create, update, token rotation and delete each write an event naming the key that acted, never the token', async () => {
    const org = await createOrg(app);
    const key = await ok(app.rest('POST', '/v1/api-keys', { name: 'directories', scopes: ['directories:write'] }), 201);
    const byKey = (method: string, path: string, body?: unknown) => app.rest(method, path, body, bearer(key.secret));
    const created = await ok(byKey('POST', `/v1/organizations/${org.id}/directories`, { name: 'Entra', provider: 'entra' }), 201);
    const path = `/v1/organizations/${org.id}/directories/${created.id}`;
    await ok(byKey('PATCH', path, { name: 'Entra ID' }));
    const { token } = await ok(byKey('POST', `${path}/rotate-token`));
    await ok(byKey('DELETE', path));

    const kinds = ['directory.created', 'directory.updated', 'directory.token_rotated', 'directory.deleted'];
    const written = (await Promise.all(kinds.map((kind) => events(kind)))).map((list) =>
      list.find((e) => e.data.id === created.id),
    );
    expect(written.map((e) => [e?.type, e?.data.name])).toEqual([
      ['directory.created', 'Entra'],
      ['directory.updated', 'Entra ID'],
      ['directory.token_rotated', 'Entra ID'],
      ['directory.deleted', 'Entra ID'],
    ]);
    expect(JSON.stringify(written)).not.toContain(created.token);
    expect(JSON.stringify(written)).not.toContain(token);

    const audit = await ok(app.rest('GET', `/v1/audit-logs?target_id=${created.id}&organization_id=${org.id}`));
    expect(audit.audit_logs.map((e: any) => [e.action, e.actor])).toEqual(
      [...kinds].reverse().map((kind) => [kind, { type: 'api_key', id: key.id }]),
    );
  });

  it('the SDK drives the same procedures', async () => {
    const org = await createOrg(app);
    const created = await app.sdk.organizations.directories.create({ id: org.id, name: 'SDK', provider: 'google' });
    expect(created.token).toMatch(/^scim_/);
    expect(await app.sdk.organizations.directories.list({ id: org.id })).toHaveLength(1);
    expect(await app.sdk.organizations.directories.get({ id: org.id, directory_id: created.id })).toMatchObject({ name: 'SDK' });
    expect(
      await app.sdk.organizations.directories.update({ id: org.id, directory_id: created.id, name: 'Renamed' }),
    ).toMatchObject({ name: 'Renamed' });
    const { token } = await app.sdk.organizations.directories.rotateToken({ id: org.id, directory_id: created.id });
    expect(token).not.toBe(created.token);
    expect(await app.sdk.organizations.directories.delete({ id: org.id, directory_id: created.id })).toEqual({
      id: created.id,
      deleted: true,
    });
  });
});

describe('SCIM: authentication and isolation', () => {
  let a: TestDirectory;
  let b: TestDirectory;
  let userOfA: any;
  let groupOfA: any;

  beforeAll(async () => {
    a = await createDirectory(suite.server, app);
    b = await createDirectory(suite.server, app);
    userOfA = await scimOk(a.scim('POST', '/Users', scimUser(uniqueEmail('iso'))), 201);
    groupOfA = await scimOk(a.scim('POST', '/Groups', { schemas: [CORE_GROUP], displayName: 'A group' }), 201);
  });

  it('no token, a malformed one, an unknown one, and another directory’s token are all 401', async () => {
    expectScimError(await a.scim('GET', '/Users', undefined, { token: null }), 401);
    expectScimError(await a.scim('GET', '/Users', undefined, { token: 'scim_nope' }), 401);
    expectScimError(await a.scim('GET', '/Users', undefined, { token: app.secretKey }), 401);
    expectScimError(await a.scim('GET', '/Users', undefined, { token: b.token }), 401);
    expectScimError(await scimClient(suite.server, 'not-a-uuid', a.token)('GET', '/Users'), 401);
    expectScimError(await scimClient(suite.server, MISSING, a.token)('GET', '/Users'), 401);
    // a secret key with x-application-id does not open SCIM either
    const res = await scimClient(suite.server, a.id, app.secretKey)('GET', '/Users');
    expectScimError(res, 401);
  });

  it('a disabled directory answers 403 and changes nothing; enabled again it answers', async () => {
    const dir = await createDirectory(suite.server, app);
    const path = `/v1/organizations/${dir.organizationId}/directories/${dir.id}`;
    await ok(app.rest('PATCH', path, { status: 'disabled' }));
    expectScimError(await dir.scim('GET', '/Users'), 403);
    expectScimError(await dir.scim('POST', '/Users', scimUser(uniqueEmail())), 403);
    expectScimError(await dir.scim('GET', '/ServiceProviderConfig'), 403);
    expect(await sql(suite.server, 'select * from directory_users where directory_id = ?', [dir.id])).toEqual([]);
    await ok(app.rest('PATCH', path, { status: 'active' }));
    await scimOk(dir.scim('GET', '/Users'));
  });

  it("another directory's user and group ids are 404 through this directory's token, for every method", async () => {
    for (const [method, body] of [
      ['GET', undefined],
      ['PUT', scimUser('x@example.com')],
      ['PATCH', patch({ op: 'replace', path: 'active', value: false })],
      ['DELETE', undefined],
    ] as const) {
      expectScimError(await b.scim(method, `/Users/${userOfA.id}`, body), 404, undefined, `${method} user`);
      expectScimError(
        await b.scim(method, `/Groups/${groupOfA.id}`, method === 'PUT' ? { displayName: 'x' } : body),
        404,
        undefined,
        `${method} group`,
      );
    }
    expectScimError(await b.scim('GET', '/Users/not-an-id'), 404);
    const listed = await scimOk(b.scim('GET', `/Users?filter=${encodeURIComponent(`id eq "${userOfA.id}"`)}`));
    expect(listed.totalResults).toBe(0);
    // nor can it be made a member of one of b's groups
    const groupOfB = await scimOk(b.scim('POST', '/Groups', { displayName: 'B group' }), 201);
    expectScimError(
      await b.scim('PATCH', `/Groups/${groupOfB.id}`, patch({ op: 'add', path: 'members', value: [{ value: userOfA.id }] })),
      400,
      'invalidValue',
    );
    expectScimError(await b.scim('POST', '/Groups', { displayName: 'C', members: [{ value: userOfA.id }] }), 400, 'invalidValue');
    expect(await sql(suite.server, 'select * from directory_group_members where directory_id = ?', [b.id])).toEqual([]);
    // and nothing of a's changed
    expect(await scimOk(a.scim('GET', `/Users/${userOfA.id}`))).toMatchObject({ active: true });
  });

  it("another application's directory is unreachable with this application's token and the reverse", async () => {
    const theirs = await createDirectory(suite.server, other);
    expectScimError(await scimClient(suite.server, theirs.id, a.token)('GET', '/Users'), 401);
    expectScimError(await scimClient(suite.server, a.id, theirs.token)('GET', `/Users/${userOfA.id}`), 401);
    expectScimError(await theirs.scim('GET', `/Users/${userOfA.id}`), 404);
  });
});

describe('SCIM: discovery', () => {
  it('ServiceProviderConfig, ResourceTypes and Schemas', async () => {
    const dir = await createDirectory(suite.server, app);
    const config = await scimOk(dir.scim('GET', '/ServiceProviderConfig'));
    expect(config).toMatchObject({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
      patch: { supported: true },
      filter: { supported: true, maxResults: 1000 },
      bulk: { supported: false },
      authenticationSchemes: [expect.objectContaining({ type: 'oauthbearertoken' })],
    });
    const types = await scimOk(dir.scim('GET', '/ResourceTypes'));
    expect(types).toMatchObject({ schemas: [LIST], totalResults: 2 });
    expect(types.Resources.map((r: any) => r.id)).toEqual(['User', 'Group']);
    expect(await scimOk(dir.scim('GET', '/ResourceTypes/User'))).toMatchObject({
      schema: CORE_USER,
      schemaExtensions: [{ schema: ENTERPRISE, required: false }],
    });
    const schemas = await scimOk(dir.scim('GET', '/Schemas'));
    expect(schemas.Resources.map((r: any) => r.id)).toEqual([CORE_USER, ENTERPRISE, CORE_GROUP]);
    expect(await scimOk(dir.scim('GET', `/Schemas/${ENTERPRISE}`))).toMatchObject({ name: 'EnterpriseUser' });
    expectScimError(await dir.scim('GET', '/Schemas/urn:nope'), 404);
    expectScimError(await dir.scim('GET', '/Nope'), 404);
    expectScimError(await dir.scim('POST', '/ServiceProviderConfig', {}), 405);
  });
});

describe('SCIM: Users', () => {
  let dir: TestDirectory;
  beforeAll(async () => {
    dir = await createDirectory(suite.server, app);
  });

  it('POST creates the Gatehouse user (email unverified) and the membership; the SCIM id is the user id', async () => {
    const email = uniqueEmail('new');
    const res = await dir.scim('POST', '/Users', {
      ...scimUser(email, { externalId: 'ext-1', password: 'never-stored' }),
      schemas: [CORE_USER, ENTERPRISE],
      [ENTERPRISE]: { employeeNumber: '42', department: 'R&D' },
    });
    const created = await scimOk(res, 201);
    expect(res.headers.get('location')).toBe(created.meta.location);
    expect(created).toMatchObject({
      schemas: [CORE_USER, ENTERPRISE],
      id: expect.stringMatching(UUID),
      externalId: 'ext-1',
      userName: email,
      active: true,
      emails: [{ primary: true, value: email, type: 'work' }],
      groups: [],
      [ENTERPRISE]: { employeeNumber: '42', department: 'R&D' },
      meta: {
        resourceType: 'User',
        created: isoDate,
        lastModified: isoDate,
        location: `${dir.record.scim_base_url}/Users/${created.id}`,
      },
    });
    expect(created.password).toBeUndefined();
    expect(
      JSON.stringify(await sql(suite.server, 'select resource from directory_users where user_id = ?', [created.id])),
    ).not.toContain('never-stored');
    const user = await ok(app.rest('GET', `/v1/users/${created.id}`));
    expect(user).toMatchObject({ primary_email: email, email_verified: false, status: 'active' });
    expect(await memberOf(dir.organizationId, created.id)).toMatchObject({
      role: 'member',
      status: 'active',
      source: 'directory',
    });
    const [event] = (await events('directory_user.created')).filter((e) => e.data.id === created.id);
    expect(event.data).toEqual({
      directory_id: dir.id,
      organization_id: dir.organizationId,
      id: created.id,
      user_name: email,
      external_id: 'ext-1',
      email,
      first_name: 'Given',
      last_name: 'Family',
      active: true,
      role: 'member',
    });
  });

  it("a new user's email is verified when the organization verified its domain; the directory is the audit log's actor", async () => {
    const domain = `${unique('verified')}.test`;
    await sql(
      suite.server,
      `insert into organization_domains (id, application_id, organization_id, domain, status, verification_token,
         verified_at, created_at, updated_at)
       values (gen_random_uuid(), ?, ?, ?, 'verified', 'token', now(), now(), now())`,
      [app.id, dir.organizationId, domain],
    );
    const email = `Person@${domain.toUpperCase()}`;
    const created = await scimOk(dir.scim('POST', '/Users', scimUser(email)), 201);
    expect(await ok(app.rest('GET', `/v1/users/${created.id}`))).toMatchObject({ email_verified: true });
    const other = await scimOk(dir.scim('POST', '/Users', scimUser(uniqueEmail('elsewhere'))), 201);
    expect(await ok(app.rest('GET', `/v1/users/${other.id}`))).toMatchObject({ email_verified: false });

    const audit = await ok(app.rest('GET', `/v1/audit-logs?action=directory_user.created&target_id=${created.id}`));
    expect(audit.audit_logs).toEqual([
      expect.objectContaining({
        action: 'directory_user.created',
        actor: { type: 'directory', id: dir.id },
        organization_id: dir.organizationId,
        user_agent: expect.any(String),
      }),
    ]);
  });

  it('a user whose verified email matches (any case) is linked, not created', async () => {
    const email = uniqueEmail('known');
    const existing = await ok(app.rest('POST', '/v1/users', { primary_email: email, email_verified: true }), 201);
    const created = await scimOk(dir.scim('POST', '/Users', scimUser(email.toUpperCase())), 201);
    expect(created.id).toBe(existing.id);
    expect(created.userName).toBe(email.toUpperCase());
    expect(await memberOf(dir.organizationId, existing.id)).toMatchObject({ source: 'directory' });
  });

  it('an address held by an unverified account is 409 uniqueness, and nothing is linked', async () => {
    const email = uniqueEmail('unverified');
    const holder = await createUser(app, { primary_email: email });
    expectScimError(await dir.scim('POST', '/Users', scimUser(email)), 409, 'uniqueness');
    expect(await memberOf(dir.organizationId, holder.id)).toBeUndefined();
    expect(await sql(suite.server, 'select * from directory_users where user_id = ?', [holder.id])).toEqual([]);
  });

  it('a userName already in the directory (any case) is 409 uniqueness', async () => {
    const email = uniqueEmail('dup');
    await scimOk(dir.scim('POST', '/Users', scimUser(email)), 201);
    expectScimError(await dir.scim('POST', '/Users', scimUser(email.toUpperCase(), { emails: [] })), 409, 'uniqueness');
  });

  it('a body without userName, or with a wrong type, is 400 invalidValue; bad JSON is 400 invalidSyntax', async () => {
    expectScimError(await dir.scim('POST', '/Users', { schemas: [CORE_USER] }), 400, 'invalidValue');
    expectScimError(await dir.scim('POST', '/Users', { userName: 5 }), 400, 'invalidValue');
    expectScimError(await dir.scim('POST', '/Users', { userName: 'x@example.com', active: 'maybe' }), 400, 'invalidValue');
    expectScimError(await dir.scim('POST', '/Users', [1]), 400, 'invalidValue');
    expectScimError(await dir.scim('POST', '/Users', '{"userName":'), 400, 'invalidSyntax');
    expectScimError(await dir.scim('POST', '/Users', 'userName=x', { contentType: 'application/x-www-form-urlencoded' }), 415);
    expectScimError(await dir.scim('POST', '/Users', { userName: 'a\u0000b@example.com' }), 400, 'invalidValue');
  });

  it('a user without any email is created without an address', async () => {
    const created = await scimOk(dir.scim('POST', '/Users', { schemas: [CORE_USER], userName: `no-mail-${Date.now()}` }), 201);
    expect(await ok(app.rest('GET', `/v1/users/${created.id}`))).toMatchObject({ primary_email: null });
  });

  it('GET /Users/{id}; GET /Users filters, pages and counts', async () => {
    const d = await createDirectory(suite.server, app);
    const made = [];
    for (let i = 0; i < 5; i++) {
      made.push(
        await scimOk(
          d.scim(
            'POST',
            '/Users',
            scimUser(`Person${i}.${Date.now()}@Example.com`, {
              externalId: `ext-${i}`,
              displayName: `Person ${i}`,
              active: i !== 4,
              emails: [{ value: `p${i}.${Date.now()}@example.com`, type: i % 2 ? 'home' : 'work', primary: true }],
            }),
          ),
          201,
        ),
      );
    }
    expect(await scimOk(d.scim('GET', `/Users/${made[0].id}`))).toEqual(made[0]);
    const list = async (query: string) => scimOk(d.scim('GET', `/Users?${query}`));
    const filter = async (f: string) => (await list(`filter=${encodeURIComponent(f)}`)).Resources.map((r: any) => r.externalId);
    const all = await list('');
    expect(all).toMatchObject({ schemas: [LIST], totalResults: 5, startIndex: 1, itemsPerPage: 5 });
    expect(all.Resources.map((r: any) => r.id)).toEqual(made.map((m) => m.id));
    expect(await filter(`userName eq "${made[2].userName.toLowerCase()}"`)).toEqual(['ext-2']);
    expect(await filter(`USERNAME Eq "${made[2].userName.toUpperCase()}"`)).toEqual(['ext-2']);
    expect(await filter('externalId eq "ext-3"')).toEqual(['ext-3']);
    expect(await filter('externalId eq "EXT-3"')).toEqual([]);
    expect(await filter('active eq false')).toEqual(['ext-4']);
    expect(await filter('displayName eq "person 1"')).toEqual(['ext-1']);
    expect(await filter('userName sw "person3"')).toEqual(['ext-3']);
    expect(await filter('userName co "SON0."')).toEqual(['ext-0']);
    expect(await filter('emails.value co "p1."')).toEqual(['ext-1']);
    expect(await filter('emails[type eq "home"]')).toEqual(['ext-1', 'ext-3']);
    expect(await filter('emails[type eq "work" and value sw "p2."]')).toEqual(['ext-2']);
    expect(await filter('externalId eq "ext-1" or externalId eq "ext-2"')).toEqual(['ext-1', 'ext-2']);
    expect(await filter('active eq true and (externalId eq "ext-1" or externalId eq "ext-4")')).toEqual(['ext-1']);
    expect(await filter('externalId ne "ext-1"')).toEqual(['ext-0', 'ext-2', 'ext-3', 'ext-4']);
    expect(await filter('not (active eq true)')).toEqual(['ext-4']);
    expect(await filter('externalId pr')).toHaveLength(5);
    expect(await filter(`meta.created gt "${made[2].meta.created}"`)).toEqual(['ext-3', 'ext-4']);
    expect(await filter(`${ENTERPRISE}:department pr`)).toEqual([]);
    const page = await list('startIndex=2&count=2');
    expect(page).toMatchObject({ totalResults: 5, startIndex: 2, itemsPerPage: 2 });
    expect(page.Resources.map((r: any) => r.externalId)).toEqual(['ext-1', 'ext-2']);
    expect(await list('count=0')).toMatchObject({ totalResults: 5, itemsPerPage: 0, Resources: [] });
    expect((await list('startIndex=0&count=1')).startIndex).toBe(1);
    expect((await list('startIndex=6')).Resources).toEqual([]);
    const projected = await list(`attributes=userName&filter=${encodeURIComponent('externalId eq "ext-0"')}`);
    expect(Object.keys(projected.Resources[0]).sort()).toEqual(['id', 'schemas', 'userName']);
    const excluded = await list('excludedAttributes=groups,emails&count=1');
    expect(excluded.Resources[0].emails).toBeUndefined();
    expect(excluded.Resources[0].groups).toBeUndefined();
    for (const bad of [
      'userName eq',
      'userName zz "x"',
      'password eq "x"',
      'groups eq "x"',
      `x eq "a") or (1=1`,
      'name.given;drop eq "x"',
    ]) {
      expectScimError(await d.scim('GET', `/Users?filter=${encodeURIComponent(bad)}`), 400, 'invalidFilter', bad);
    }
    expectScimError(await d.scim('GET', '/Users?count=abc'), 400, 'invalidValue');
  });

  it('PUT replaces the user; PATCH applies add, replace and remove with value paths and the enterprise extension', async () => {
    const email = uniqueEmail('put');
    const created = await scimOk(dir.scim('POST', '/Users', scimUser(email, { nickName: 'nick' })), 201);
    const replaced = await scimOk(
      dir.scim('PUT', `/Users/${created.id}`, {
        ...scimUser(email, { externalId: 'new-ext' }),
        name: { givenName: 'New', familyName: 'Name' },
        id: 'ignored',
      }),
    );
    expect(replaced).toMatchObject({ id: created.id, externalId: 'new-ext', name: { givenName: 'New', familyName: 'Name' } });
    expect(replaced.nickName).toBeUndefined();
    const patched = await scimOk(
      dir.scim(
        'PATCH',
        `/Users/${created.id}`,
        patch(
          { op: 'replace', path: 'emails[type eq "work"].value', value: 'changed@example.com' },
          { op: 'add', path: 'phoneNumbers', value: [{ type: 'work', value: '+1 555' }] },
          { op: 'replace', path: 'name.familyName', value: 'Patched' },
          { op: 'add', path: `${ENTERPRISE}:department`, value: 'Sales' },
          { op: 'remove', path: 'externalId' },
        ),
      ),
    );
    expect(patched).toMatchObject({
      emails: [{ type: 'work', value: 'changed@example.com', primary: true }],
      phoneNumbers: [{ type: 'work', value: '+1 555' }],
      name: { givenName: 'New', familyName: 'Patched' },
      [ENTERPRISE]: { department: 'Sales' },
      schemas: [CORE_USER, ENTERPRISE],
    });
    expect(patched.externalId).toBeUndefined();
    expect(await scimOk(dir.scim('GET', `/Users/${created.id}`))).toEqual(patched);
    const updates = (await events('directory_user.updated')).filter((e) => e.data.id === created.id);
    expect(updates).toHaveLength(2);
    // The Gatehouse user's address stays what it was: the directory's copy is the directory's.
    expect(await ok(app.rest('GET', `/v1/users/${created.id}`))).toMatchObject({ primary_email: email });
    expectScimError(
      await dir.scim('PATCH', `/Users/${created.id}`, patch({ op: 'move', path: 'x', value: 1 })),
      400,
      'invalidSyntax',
    );
    expectScimError(await dir.scim('PATCH', `/Users/${created.id}`, { Operations: 'x' }), 400, 'invalidSyntax');
    expectScimError(await dir.scim('PATCH', `/Users/${created.id}`, patch({ op: 'remove' })), 400, 'noTarget');
    expectScimError(
      await dir.scim('PATCH', `/Users/${created.id}`, patch({ op: 'remove', path: 'userName' })),
      400,
      'invalidValue',
    );
  });

  it('a userName changed to another user’s is 409 uniqueness', async () => {
    const one = await scimOk(dir.scim('POST', '/Users', scimUser(uniqueEmail('one'))), 201);
    const two = await scimOk(dir.scim('POST', '/Users', scimUser(uniqueEmail('two'))), 201);
    expectScimError(
      await dir.scim('PATCH', `/Users/${two.id}`, patch({ op: 'replace', path: 'userName', value: one.userName.toUpperCase() })),
      409,
      'uniqueness',
    );
    expectScimError(await dir.scim('PUT', `/Users/${two.id}`, scimUser(one.userName)), 409, 'uniqueness');
  });

  it('a merged user: the directory user follows the source to the target, and the SCIM id becomes the target', async () => {
    const created = await scimOk(dir.scim('POST', '/Users', scimUser(uniqueEmail('merge-source'))), 201);
    const target = await createUser(app);
    await ok(app.rest('POST', '/v1/users/merge', { source_user_id: created.id, target_user_id: target.id }));
    expectScimError(await dir.scim('GET', `/Users/${created.id}`), 404);
    expect(await scimOk(dir.scim('GET', `/Users/${target.id}`))).toMatchObject({ id: target.id, userName: created.userName });
    expect(await memberOf(dir.organizationId, target.id)).toMatchObject({ source: 'directory' });
  });

  it('DELETE removes the membership; the user remains; the SCIM user is gone', async () => {
    const created = await scimOk(dir.scim('POST', '/Users', scimUser(uniqueEmail('del'))), 201);
    const res = await dir.scim('DELETE', `/Users/${created.id}`);
    expect(res.status).toBe(204);
    expect(res.body).toBeUndefined();
    expectScimError(await dir.scim('GET', `/Users/${created.id}`), 404);
    expectScimError(await dir.scim('DELETE', `/Users/${created.id}`), 404);
    expect(await memberOf(dir.organizationId, created.id)).toBeUndefined();
    await ok(app.rest('GET', `/v1/users/${created.id}`));
    const [event] = (await events('directory_user.deleted')).filter((e) => e.data.id === created.id);
    expect(event.data).toEqual({
      directory_id: dir.id,
      organization_id: dir.organizationId,
      id: created.id,
      user_name: created.userName,
    });
    expect((await events('organization_membership.deleted')).some((e) => e.data.user_id === created.id)).toBe(true);
  });
});

describe('SCIM: seats', () => {
  it("a new user beyond the subscription's seats is 409 and nothing is kept", async () => {
    const dir = await createDirectory(suite.server, app);
    const plan = await ok(
      app.rest('POST', '/v1/billing/plans', {
        key: `seats-${Date.now()}`,
        name: 'Seats',
        interval: 'month',
        currency: 'USD',
        price_cents: 0,
        per_seat_cents: 100,
      }),
      201,
    );
    await ok(
      app.rest('POST', '/v1/billing/subscriptions', { organization_id: dir.organizationId, plan_id: plan.id, seats: 1 }),
      201,
    );
    await scimOk(dir.scim('POST', '/Users', scimUser(uniqueEmail('seat'))), 201);
    const email = uniqueEmail('no-seat');
    const refused = await dir.scim('POST', '/Users', scimUser(email));
    expectScimError(refused, 409);
    expect(await sql(suite.server, 'select * from users where email_normalized = ?', [email])).toEqual([]);
    expect(await members(dir.organizationId)).toHaveLength(1);
  });
});

describe('SCIM: active false suspends the membership', () => {
  it('no org claim, switching refused, the sessions in that organization revoked; active true restores', async () => {
    const dir = await createDirectory(suite.server, app);
    const email = uniqueEmail('suspend');
    const created = await scimOk(dir.scim('POST', '/Users', scimUser(email)), 201);
    const signed = await signIn(suite.server, suite.smtp, app, email);
    expect(signed.user.id).toBe(created.id);
    const inOrg = await ok(
      endUser(app, 'POST', '/v1/auth/session/organization', { organization_id: dir.organizationId }, signed.tokens.access_token),
    );
    expect(decodeJwt(inOrg.access_token)).toMatchObject({ org: dir.organizationId, org_role: 'member' });
    // a second session without an active organization is left alone
    const elsewhere = await signIn(suite.server, suite.smtp, app, email);

    const deactivated = await scimOk(
      dir.scim('PATCH', `/Users/${created.id}`, patch({ op: 'replace', path: 'active', value: false })),
    );
    expect(deactivated.active).toBe(false);
    expect(await memberOf(dir.organizationId, created.id)).toMatchObject({ status: 'suspended', source: 'directory' });
    expectError(await endUser(app, 'GET', '/v1/auth/me', undefined, inOrg.access_token), 401, 'invalid_token');
    expectError(await app.rest('POST', '/v1/auth/token/refresh', { refresh_token: inOrg.refresh_token }), 401, 'invalid_token');
    await ok(endUser(app, 'GET', '/v1/auth/me', undefined, elsewhere.tokens.access_token));
    expectError(
      await endUser(
        app,
        'POST',
        '/v1/auth/session/organization',
        { organization_id: dir.organizationId },
        elsewhere.tokens.access_token,
      ),
      403,
      'access_denied',
    );
    const refreshed = await ok(app.rest('POST', '/v1/auth/token/refresh', { refresh_token: elsewhere.tokens.refresh_token }));
    expect(decodeJwt(refreshed.access_token)).toMatchObject({ org: null, org_role: null });
    const [event] = (await events('directory_user.deactivated')).filter((e) => e.data.id === created.id);
    expect(event.data).toMatchObject({ active: false, role: 'member' });

    await scimOk(dir.scim('PATCH', `/Users/${created.id}`, patch({ op: 'replace', path: 'active', value: true })));
    expect(await memberOf(dir.organizationId, created.id)).toMatchObject({ status: 'active' });
    const back = await ok(
      endUser(app, 'POST', '/v1/auth/session/organization', { organization_id: dir.organizationId }, refreshed.access_token),
    );
    expect(decodeJwt(back.access_token)).toMatchObject({ org: dir.organizationId, org_role: 'member' });
    expect((await events('directory_user.reactivated')).some((e) => e.data.id === created.id)).toBe(true);
  });

  it('a user created inactive is a suspended member', async () => {
    const dir = await createDirectory(suite.server, app);
    const created = await scimOk(dir.scim('POST', '/Users', scimUser(uniqueEmail('inactive'), { active: false })), 201);
    expect(await memberOf(dir.organizationId, created.id)).toMatchObject({ status: 'suspended' });
  });
});

describe('SCIM: Groups', () => {
  let dir: TestDirectory;
  let users: any[];
  beforeAll(async () => {
    dir = await createDirectory(suite.server, app, { group_role_mappings: [{ group: 'Admins', role: 'admin' }] });
    users = [];
    for (let i = 0; i < 4; i++) users.push(await scimOk(dir.scim('POST', '/Users', scimUser(uniqueEmail(`g${i}`))), 201));
  });

  it('POST creates the group with its members; GET, filter by displayName, excludedAttributes=members', async () => {
    const res = await dir.scim('POST', '/Groups', {
      schemas: [CORE_GROUP],
      displayName: 'Engineering',
      externalId: 'eng',
      members: [{ value: users[0].id }, { value: users[1].id }],
    });
    const group = await scimOk(res, 201);
    expect(res.headers.get('location')).toBe(group.meta.location);
    expect(group).toMatchObject({
      schemas: [CORE_GROUP],
      id: expect.stringMatching(UUID),
      displayName: 'Engineering',
      externalId: 'eng',
      members: [
        { value: users[0].id, display: users[0].userName },
        { value: users[1].id, display: users[1].userName },
      ],
      meta: { resourceType: 'Group', location: `${dir.record.scim_base_url}/Groups/${group.id}` },
    });
    expect(await scimOk(dir.scim('GET', `/Groups/${group.id}`))).toEqual(group);
    const found = await scimOk(
      dir.scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq "engineering"')}&excludedAttributes=members`),
    );
    expect(found.totalResults).toBe(1);
    expect(found.Resources[0].members).toBeUndefined();
    expect((await scimOk(dir.scim('GET', `/Groups/${group.id}?excludedAttributes=members`))).members).toBeUndefined();
    const byMember = await scimOk(dir.scim('GET', `/Groups?filter=${encodeURIComponent(`members.value eq "${users[1].id}"`)}`));
    expect(byMember.Resources.map((g: any) => g.id)).toEqual([group.id]);
    expect((await scimOk(dir.scim('GET', `/Users/${users[0].id}`))).groups).toEqual([
      { value: group.id, display: 'Engineering', $ref: group.meta.location },
    ]);
    const created = (await events('directory_group.created')).find((e) => e.data.id === group.id);
    expect(created.data).toEqual({
      directory_id: dir.id,
      organization_id: dir.organizationId,
      id: group.id,
      display_name: 'Engineering',
      external_id: 'eng',
    });
    const added = (await events('directory_group.user_added')).filter((e) => e.data.group_id === group.id);
    expect(added.map((e) => e.data.user_id).sort()).toEqual([users[0].id, users[1].id].sort());
    expectScimError(await dir.scim('POST', '/Groups', { schemas: [CORE_GROUP] }), 400, 'invalidValue');
  });

  it('PATCH adds and removes members in batches, removes by members[value eq …], renames; mapped groups give roles', async () => {
    const group = await scimOk(dir.scim('POST', '/Groups', { displayName: 'Staff' }), 201);
    const path = `/Groups/${group.id}`;
    await scimOk(dir.scim('PATCH', path, patch({ op: 'add', path: 'members', value: users.map((u) => ({ value: u.id })) })));
    expect((await scimOk(dir.scim('GET', path))).members).toHaveLength(4);
    // adding one already there changes nothing
    await scimOk(dir.scim('PATCH', path, patch({ op: 'add', path: 'members', value: [{ value: users[0].id }] })));
    await scimOk(dir.scim('PATCH', path, patch({ op: 'remove', path: `members[value eq "${users[0].id}"]` })));
    await scimOk(dir.scim('PATCH', path, patch({ op: 'remove', path: 'members', value: [{ value: users[1].id }] })));
    expect((await scimOk(dir.scim('GET', path))).members.map((m: any) => m.value)).toEqual([users[2].id, users[3].id]);
    expect(await memberOf(dir.organizationId, users[2].id)).toMatchObject({ role: 'member' });

    // renamed to the mapped name: its members become admins
    const renamed = await scimOk(dir.scim('PATCH', path, patch({ op: 'replace', path: 'displayName', value: 'Admins' })));
    expect(renamed.displayName).toBe('Admins');
    expect(await memberOf(dir.organizationId, users[2].id)).toMatchObject({ role: 'admin' });
    expect(await memberOf(dir.organizationId, users[0].id)).toMatchObject({ role: 'member' });
    await scimOk(dir.scim('PATCH', path, patch({ op: 'add', path: 'members', value: [{ value: users[0].id }] })));
    expect(await memberOf(dir.organizationId, users[0].id)).toMatchObject({ role: 'admin' });
    await scimOk(dir.scim('PATCH', path, patch({ op: 'remove', path: `members[value eq "${users[0].id}"]` })));
    expect(await memberOf(dir.organizationId, users[0].id)).toMatchObject({ role: 'member' });

    // the mappings changed at the directory: roles follow at once
    await ok(
      app.rest('PATCH', `/v1/organizations/${dir.organizationId}/directories/${dir.id}`, {
        group_role_mappings: [{ group: 'Admins', role: 'owner' }],
      }),
    );
    expect(await memberOf(dir.organizationId, users[2].id)).toMatchObject({ role: 'owner' });

    // replace the member list whole; remove them all
    await scimOk(dir.scim('PATCH', path, patch({ op: 'replace', path: 'members', value: [{ value: users[1].id }] })));
    expect((await scimOk(dir.scim('GET', path))).members.map((m: any) => m.value)).toEqual([users[1].id]);
    expect(await memberOf(dir.organizationId, users[2].id)).toMatchObject({ role: 'member' });
    await scimOk(dir.scim('PATCH', path, patch({ op: 'remove', path: 'members' })));
    expect((await scimOk(dir.scim('GET', path))).members).toEqual([]);
    const removed = (await events('directory_group.user_removed')).filter((e) => e.data.group_id === group.id);
    expect(removed.length).toBeGreaterThanOrEqual(4);
    expectScimError(await dir.scim('PATCH', path, patch({ op: 'replace', path: 'nope', value: 1 })), 400, 'invalidPath');
    expectScimError(
      await dir.scim('PATCH', path, patch({ op: 'remove', path: 'members[display eq "x"]' })),
      400,
      'invalidFilter',
    );
    expectScimError(
      await dir.scim('PATCH', path, patch({ op: 'add', path: 'members', value: [{ value: MISSING }] })),
      400,
      'invalidValue',
    );
  });

  it('PUT replaces the name and members; DELETE removes the group and the roles it gave', async () => {
    const group = await scimOk(dir.scim('POST', '/Groups', { displayName: 'Admins', members: [{ value: users[3].id }] }), 201);
    expect(await memberOf(dir.organizationId, users[3].id)).toMatchObject({ role: 'owner' });
    const put = await scimOk(
      dir.scim('PUT', `/Groups/${group.id}`, { schemas: [CORE_GROUP], displayName: 'Admins', members: [{ value: users[2].id }] }),
    );
    expect(put.members.map((m: any) => m.value)).toEqual([users[2].id]);
    expect(await memberOf(dir.organizationId, users[3].id)).toMatchObject({ role: 'member' });
    expect(await memberOf(dir.organizationId, users[2].id)).toMatchObject({ role: 'owner' });
    const res = await dir.scim('DELETE', `/Groups/${group.id}`);
    expect(res.status).toBe(204);
    expectScimError(await dir.scim('GET', `/Groups/${group.id}`), 404);
    expect(await memberOf(dir.organizationId, users[2].id)).toMatchObject({ role: 'member' });
    expect((await events('directory_group.deleted')).some((e) => e.data.id === group.id)).toBe(true);
  });
});

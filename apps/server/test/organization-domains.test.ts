import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalDns, startLocalDns } from './helpers/dns.ts';
import { createOrg, createUser, scopedKey } from './helpers/fixtures.ts';
import {
  acrossServers,
  expectError,
  isoDate,
  MISSING,
  ok,
  rejection,
  sql,
  startServer,
  type TestApp,
  type TestServer,
  UUID,
} from './helpers/server.ts';

/**
 * Organization domains (CONTRACT §8): claims, the DNS TXT check against a real local DNS server, the one-verified-
 * claim rule (also when two organizations verify at once, across processes on PostgreSQL), the policies and every
 * error row, over REST and the SDK. Their sign-in effects: organization-domains-sign-in.test.ts.
 */

let server: TestServer;
let dns: LocalDns;

beforeAll(async () => {
  dns = await startLocalDns();
  server = await startServer({ dnsServers: [dns.address] });
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

const fresh = (label = 'acme') => `${label}-${randomBytes(5).toString('hex')}.gatehouse-test.dev`;
const base = (orgId: string) => `/v1/organizations/${orgId}/domains`;
const add = (app: TestApp, orgId: string, domain: unknown) => app.rest('POST', base(orgId), { domain });
const verify = (app: TestApp, orgId: string, domainId: string) => app.rest('POST', `${base(orgId)}/${domainId}/verify`);
const patch = (app: TestApp, orgId: string, domainId: string, body: unknown) =>
  app.rest('PATCH', `${base(orgId)}/${domainId}`, body);
const publish = (record: { name: string; value: string }) => {
  dns.zone[record.name] = { txt: [record.value] };
};
const eventsOf = async (app: TestApp, type: string) =>
  (await ok(app.rest('GET', `/v1/events?type=${type}&limit=100`))).events as Array<{ data: Record<string, any> }>;

describe('claiming a domain', () => {
  it('answers 201 with the record of §8 exactly (pending, the TXT challenge, default policies); organization_domain.created', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const name = fresh();
    const domain = await ok(add(app, org.id, `  ${name.toUpperCase()}. `), 201);
    expect(domain).toEqual({
      id: expect.stringMatching(UUID),
      organization_id: org.id,
      domain: name,
      status: 'pending_verification',
      verification: {
        type: 'TXT',
        name: `_gatehouse-challenge.${name}`,
        value: expect.stringMatching(/^gatehouse-domain-verification=[A-Za-z0-9]{43}$/),
      },
      join_policy: 'invite_only',
      sso_policy: 'optional',
      verified_at: null,
      created_at: isoDate,
    });
    expect(await ok(app.rest('GET', base(org.id)))).toEqual([domain]);
    const created = await eventsOf(app, 'organization_domain.created');
    expect(created.map((e) => e.data)).toEqual([domain]);
  });

  it('422 invalid_domain for names that are not public hosts, public suffixes included; a missing one is validation_failed', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    for (const bad of [
      'com',
      'co.uk',
      'localhost',
      '127.0.0.1',
      'https://acme.com',
      'acme.com/x',
      '*.acme.com',
      'a..b.com',
      'acme.invalidtld',
      '',
    ]) {
      expectError(await add(app, org.id, bad), 422, 'invalid_domain', bad);
    }
    expectError(await app.rest('POST', base(org.id), {}), 422, 'validation_failed');
    expectError(await add(app, org.id, 42), 422, 'validation_failed');
    expect(await ok(app.rest('GET', base(org.id)))).toEqual([]);
  });

  it('IDN names are stored as punycode', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const domain = await ok(add(app, org.id, `bücher-${randomBytes(3).toString('hex')}.de`), 201);
    expect(domain.domain).toMatch(/^xn--bcher-.*\.de$/);
  });

  it('the same organization claiming a domain twice is 409 domain_already_claimed; another organization may claim it too', async () => {
    const app = await server.createApp();
    const [a, b] = [await createOrg(app), await createOrg(app)];
    const name = fresh();
    await ok(add(app, a.id, name), 201);
    expectError(await add(app, a.id, name.toUpperCase()), 409, 'domain_already_claimed');
    await ok(add(app, b.id, name), 201);
    // Another application is another world: it may claim and verify the same name.
    const other = await server.createApp();
    const theirs = await ok(add(other, (await createOrg(other)).id, name), 201);
    expect(theirs.domain).toBe(name);
  });

  it('another application’s organization, or an unknown one, is 404; so is a domain of another organization', async () => {
    const app = await server.createApp();
    const other = await server.createApp();
    const theirs = await createOrg(other);
    const theirDomain = await ok(add(other, theirs.id, fresh()), 201);
    const mine = await createOrg(app);
    const myDomain = await ok(add(app, mine.id, fresh()), 201);
    expectError(await add(app, theirs.id, fresh()), 404, 'not_found');
    expectError(await add(app, MISSING, fresh()), 404, 'not_found');
    expectError(await app.rest('GET', base(theirs.id)), 404, 'not_found');
    expectError(await verify(app, theirs.id, theirDomain.id), 404, 'not_found');
    expectError(await patch(app, theirs.id, theirDomain.id, { join_policy: 'automatic' }), 404, 'not_found');
    expectError(await app.rest('DELETE', `${base(theirs.id)}/${theirDomain.id}`), 404, 'not_found');
    // Their domain id under my organization, and my domain under theirs.
    expectError(await verify(app, mine.id, theirDomain.id), 404, 'not_found');
    expectError(await app.rest('DELETE', `${base(mine.id)}/${theirDomain.id}`), 404, 'not_found');
    expectError(await verify(other, theirs.id, myDomain.id), 404, 'not_found');
    const second = await createOrg(app);
    expectError(await verify(app, second.id, myDomain.id), 404, 'not_found');
    expect((await ok(other.rest('GET', base(theirs.id))))[0].status).toBe('pending_verification');
  });

  it('needs organizations:write to change and organizations:read to list (403 insufficient_scope)', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const reader = await scopedKey(app, ['organizations:read']);
    const readerHeaders = { authorization: `Bearer ${reader}` };
    expect(await ok(app.rest('GET', base(org.id), undefined, readerHeaders))).toEqual([]);
    expectError(await app.rest('POST', base(org.id), { domain: fresh() }, readerHeaders), 403, 'insufficient_scope');
    const users = await scopedKey(app, ['users:read']);
    expectError(await app.rest('GET', base(org.id), undefined, { authorization: `Bearer ${users}` }), 403, 'insufficient_scope');
  });
});

describe('verifying through DNS', () => {
  it('stays pending while the TXT record is missing or wrong; verifies once it is published; organization_domain.verified once', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const domain = await ok(add(app, org.id, fresh()), 201);
    expect((await ok(verify(app, org.id, domain.id))).status).toBe('pending_verification');
    dns.zone[domain.verification.name] = { txt: ['gatehouse-domain-verification=not-this-one'] };
    expect((await ok(verify(app, org.id, domain.id))).status).toBe('pending_verification');
    expectError(await patch(app, org.id, domain.id, { sso_policy: 'required' }), 409, 'domain_not_verified');

    publish(domain.verification);
    const verified = await ok(verify(app, org.id, domain.id));
    expect(verified).toEqual({ ...domain, status: 'verified', verified_at: isoDate });
    // Again: answered as it is, no second event, no lookup needed.
    delete dns.zone[domain.verification.name];
    expect(await ok(verify(app, org.id, domain.id))).toEqual(verified);
    const events = await eventsOf(app, 'organization_domain.verified');
    expect(events.map((e) => e.data)).toEqual([verified]);
  });

  it('each verify queries DNS: 60 a minute per application, then 429 rate_limited with retry-after', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const domain = await ok(add(app, org.id, fresh()), 201);
    const answers = [];
    for (let i = 0; i < 61; i++) answers.push(await verify(app, org.id, domain.id));
    expect(answers.slice(0, 60).every((r) => r.status === 200)).toBe(true);
    expectError(answers[60]!, 429, 'rate_limited');
    expect(answers[60]!.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it('a claim still unverified 7 days after it was made becomes failed at its next check (and can still verify later)', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const domain = await ok(add(app, org.id, fresh()), 201);
    await sql(server, `update organization_domains set created_at = now() - interval '8 days' where id = ?`, [domain.id]);
    expect((await ok(verify(app, org.id, domain.id))).status).toBe('failed');
    expectError(await patch(app, org.id, domain.id, { join_policy: 'automatic' }), 409, 'domain_not_verified');
    publish(domain.verification);
    expect((await ok(verify(app, org.id, domain.id))).status).toBe('verified');
  });

  it('the first organization to verify holds the domain: the other’s verify is 409 domain_already_claimed naming no organization; new claims too', async () => {
    const app = await server.createApp();
    const [a, b, c] = [await createOrg(app), await createOrg(app), await createOrg(app)];
    const name = fresh();
    const mine = await ok(add(app, a.id, name), 201);
    const theirs = await ok(add(app, b.id, name), 201);
    publish(mine.verification);
    dns.zone[mine.verification.name]!.txt!.push(theirs.verification.value);
    await ok(verify(app, a.id, mine.id));
    const refused = await verify(app, b.id, theirs.id);
    expectError(refused, 409, 'domain_already_claimed');
    expect(JSON.stringify(refused.body)).not.toContain(a.id);
    expect((await ok(app.rest('GET', base(b.id))))[0].status).toBe('pending_verification');
    expectError(await add(app, c.id, name), 409, 'domain_already_claimed');
    // Released by its holder, the domain can be verified by the other claim.
    expect(await ok(app.rest('DELETE', `${base(a.id)}/${mine.id}`))).toEqual({ id: mine.id, deleted: true });
    expect((await ok(verify(app, b.id, theirs.id))).status).toBe('verified');
    const deleted = await eventsOf(app, 'organization_domain.deleted');
    expect(deleted.map((e) => e.data)).toEqual([{ id: mine.id, organization_id: a.id, domain: name }]);
  });

  it('two organizations verifying one domain at once (20 requests, across processes on PostgreSQL): exactly one wins', async () => {
    const app = await server.createApp();
    const orgs = [await createOrg(app), await createOrg(app)];
    const name = fresh();
    const claims = [await ok(add(app, orgs[0]!.id, name), 201), await ok(add(app, orgs[1]!.id, name), 201)];
    dns.zone[claims[0]!.verification.name] = { txt: claims.map((c) => c.verification.value) };
    const results = await acrossServers(server, 20, (target, i) => verify(app.via(target), orgs[i % 2]!.id, claims[i % 2]!.id));
    const winners = results.filter((r) => r.status === 200);
    expect(winners.length).toBeGreaterThan(0);
    const winner = winners[0]!.body.data.organization_id;
    for (const r of winners) expect(r.body.data.organization_id).toBe(winner);
    for (const r of results.filter((r) => r.status !== 200)) expectError(r, 409, 'domain_already_claimed');
    const [row] = await sql(
      server,
      `select count(*)::int as n from organization_domains where application_id = ? and domain = ? and status = 'verified'`,
      [app.id, name],
    );
    expect(row.n).toBe(1);
    expect(await eventsOf(app, 'organization_domain.verified')).toHaveLength(1);
  });
});

describe('policies', () => {
  it('PATCH sets join_policy and sso_policy of a verified domain (organization_domain.updated); unknown values are 422', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const domain = await ok(add(app, org.id, fresh()), 201);
    expectError(await patch(app, org.id, domain.id, { join_policy: 'automatic' }), 409, 'domain_not_verified');
    publish(domain.verification);
    await ok(verify(app, org.id, domain.id));
    const joined = await ok(patch(app, org.id, domain.id, { join_policy: 'automatic' }));
    expect(joined).toMatchObject({ join_policy: 'automatic', sso_policy: 'optional', status: 'verified' });
    const both = await ok(patch(app, org.id, domain.id, { sso_policy: 'required' }));
    expect(both).toMatchObject({ join_policy: 'automatic', sso_policy: 'required' });
    expect(await ok(app.rest('GET', base(org.id)))).toEqual([both]);
    expectError(await patch(app, org.id, domain.id, { sso_policy: 'always' }), 422, 'validation_failed');
    expectError(await patch(app, org.id, domain.id, { join_policy: 'automatic', extra: 1 }), 422, 'validation_failed');
    expect((await eventsOf(app, 'organization_domain.updated')).map((e) => e.data)).toEqual([both, joined]);
  });

  it('an organization’s deletion takes its domains with it', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const domain = await ok(add(app, org.id, fresh()), 201);
    await ok(app.rest('DELETE', `/v1/organizations/${org.id}`));
    const [row] = await sql(server, 'select count(*)::int as n from organization_domains where id = ?', [domain.id]);
    expect(row.n).toBe(0);
  });
});

describe('the SDK', () => {
  it('organizations.domains.add|list|verify|update|delete, with the API’s error codes', async () => {
    const app = await server.createApp();
    const org = await app.sdk.organizations.create({ name: 'Acme' });
    const name = fresh();
    const domain = await app.sdk.organizations.domains.add({ id: org.id, domain: name });
    expect(domain).toMatchObject({ organization_id: org.id, domain: name, status: 'pending_verification' });
    expect(await app.sdk.organizations.domains.list({ id: org.id })).toEqual([domain]);
    const early = await rejection(
      app.sdk.organizations.domains.update({ id: org.id, domain_id: domain.id, sso_policy: 'required' }),
    );
    expect(early).toMatchObject({ code: 'domain_not_verified', status: 409 });
    const bad = await rejection(app.sdk.organizations.domains.add({ id: org.id, domain: 'co.uk' }));
    expect(bad).toMatchObject({ code: 'invalid_domain', status: 422 });
    publish(domain.verification);
    expect((await app.sdk.organizations.domains.verify({ id: org.id, domain_id: domain.id })).status).toBe('verified');
    const updated = await app.sdk.organizations.domains.update({ id: org.id, domain_id: domain.id, join_policy: 'automatic' });
    expect(updated.join_policy).toBe('automatic');
    expect(await app.sdk.organizations.domains.delete({ id: org.id, domain_id: domain.id })).toEqual({
      id: domain.id,
      deleted: true,
    });
    const gone = await rejection(app.sdk.organizations.domains.verify({ id: org.id, domain_id: domain.id }));
    expect(gone).toMatchObject({ code: 'not_found', status: 404 });
    // A user record exists to keep the fixture import honest about the application's users being untouched.
    await createUser(app);
  });
});

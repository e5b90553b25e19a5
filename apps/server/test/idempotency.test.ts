import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { createTestIdp } from './helpers/saml-idp.ts';
import { acrossServers, rawRequest, sql, startServer, type TestServer } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite({ smtp: false });

describe('Idempotency-Key on creating calls (Stripe semantics)', () => {
  it('the same key and body replays the first answer byte for byte, and creates nothing more', async () => {
    const app = await suite.server.createApp();
    const key = `create-user-${Date.now()}`;
    const body = { primary_email: uniqueEmail('idem') };
    const post = () =>
      fetch(`${suite.server.url}/v1/users`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${app.secretKey}`,
          'x-application-id': app.id,
          'idempotency-key': key,
        },
        body: JSON.stringify(body),
      });
    const first = await post();
    const firstText = await first.text();
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await post();
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(firstText);
    const users = await app.rest('GET', `/v1/users?search=${encodeURIComponent(body.primary_email)}`);
    expect(users.body.data.total).toBe(1);
  });

  it('the same key with another body is 422 idempotency_key_reused; keys are per application', async () => {
    const app = await suite.server.createApp();
    const other = await suite.server.createApp();
    const key = { 'idempotency-key': 'shared-key-1' };
    expect((await app.rest('POST', '/v1/organizations', { name: 'First' }, key)).status).toBe(201);
    const reused = await app.rest('POST', '/v1/organizations', { name: 'Second' }, key);
    expect(reused.status).toBe(422);
    expect(reused.body.error.code).toBe('idempotency_key_reused');
    // Another endpoint with the same key is another request too.
    expect((await app.rest('POST', '/v1/users', {}, key)).body.error.code).toBe('idempotency_key_reused');
    // Another application's key space is its own.
    expect((await other.rest('POST', '/v1/organizations', { name: 'Second' }, key)).status).toBe(201);
  });

  it('a first call that fails leaves no trace: the same key works once the request is fixed', async () => {
    const app = await suite.server.createApp();
    const key = { 'idempotency-key': 'fix-and-retry' };
    const taken = uniqueEmail('taken');
    expect((await app.rest('POST', '/v1/users', { primary_email: taken })).status).toBe(201);
    expect((await app.rest('POST', '/v1/users', { primary_email: taken }, key)).status).toBe(409);
    expect((await app.rest('POST', '/v1/users', { primary_email: taken }, key)).status).toBe(409);
    const malformed = await app.rest('POST', '/v1/users', {}, { 'idempotency-key': 'x'.repeat(256) });
    expect(malformed.status).toBe(422);
    expect(malformed.body.error.details?.[0]?.path).toBe('Idempotency-Key');
  });

  it('20 concurrent requests with one key create one object (across two servers on PostgreSQL)', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('concurrent');
    const results = await acrossServers(suite.server, 20, (server) =>
      app.via(server).rest('POST', '/v1/users', { primary_email: email }, { 'idempotency-key': 'one-user' }),
    );
    // The first creates; the others wait for it on the key (claim and answer commit together) and replay it.
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(201));
    expect(new Set(results.map((r) => r.body.data.id)).size).toBe(1);
    expect(results.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(19);
    const [{ n }] = await sql<{ n: string }>(suite.server, 'select count(*) as n from users where application_id = ?', [app.id]);
    expect(Number(n)).toBe(1);
  });

  it('operator creates are idempotent too', async () => {
    const create = () =>
      rawRequest(suite.server.url, 'POST', '/v1/applications', {
        body: { name: 'Idempotent app' },
        headers: { authorization: `Bearer ${suite.server.operatorToken}`, 'idempotency-key': `app-${suite.server.url}` },
      });
    const first = await create();
    const again = await create();
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
  });

  it('every create answers under a key, replays it, and keeps its own rules (a taken slug retried, a 409)', async () => {
    const app = await suite.server.createApp();
    let n = 0;
    /** Creates under a fresh key, then sends the same again: the same answer, replayed. */
    const twice = async (path: string, body: Record<string, unknown>, status = 201) => {
      const key = { 'idempotency-key': `every-${++n}` };
      const first = await app.rest('POST', path, body, key);
      expect(first.status, `${path}: ${JSON.stringify(first.body.error)}`).toBe(status);
      const again = await app.rest('POST', path, body, key);
      expect(again.status, path).toBe(status);
      expect(again.headers.get('idempotent-replayed'), path).toBe('true');
      expect(again.body.data, path).toEqual(first.body.data);
      return first.body.data;
    };
    await twice('/v1/organizations', { name: 'Taken Slug' });
    // The generated slug is taken: the create retries with a suffix inside the key's transaction.
    const suffixed = await twice('/v1/organizations', { name: 'Taken Slug' });
    expect(suffixed.slug).toMatch(/^taken-slug-[a-z0-9]{6}$/);
    const org = await twice('/v1/organizations', { name: 'Keyed org' });
    const user = await twice('/v1/users', { primary_email: uniqueEmail('every') });
    await twice(`/v1/organizations/${org.id}/members`, { user_id: user.id });
    const group = await twice('/v1/os/host-groups', { name: 'Keyed group' });
    const host = await twice('/v1/os/hosts', { name: 'keyed-host', host_group_id: group.id });
    await twice('/v1/os/access-rules', {
      effect: 'allow',
      subject_kind: 'user',
      subject_id: user.id,
      target_kind: 'host',
      target_id: host.id,
    });
    const plan = await twice('/v1/billing/plans', {
      key: 'keyed',
      name: 'Keyed',
      interval: 'month',
      currency: 'USD',
      price_cents: 900,
    });
    await twice('/v1/billing/subscriptions', { organization_id: org.id, plan_id: plan.id, seats: 5 });
    await twice('/v1/webhooks', { url: 'https://example.com/keyed' });
    await twice('/v1/api-keys', { name: 'Keyed key', scopes: ['users:read'] });
    await twice('/v1/oauth2/clients', { name: 'Keyed client', redirect_uris: ['https://example.com/cb'], type: 'confidential' });
    await twice(`/v1/applications/${app.id}/domains`, { domain: `keyed-${Date.now()}.example.com` }, 200);
    // A create refused by its own rule under a key stores nothing: its fixed retry runs.
    const key = { 'idempotency-key': 'taken-plan-key' };
    const taken = { key: 'keyed', name: 'Again', interval: 'month', currency: 'USD', price_cents: 900 };
    expect((await app.rest('POST', '/v1/billing/plans', taken, key)).status).toBe(409);
    expect((await app.rest('POST', '/v1/billing/plans', { ...taken, key: 'keyed-2' }, key)).status).toBe(201);
    const [{ n: plans }] = await sql<{ n: string }>(
      suite.server,
      'select count(*) as n from billing_plans where application_id = ?',
      [app.id],
    );
    expect(Number(plans)).toBe(2);
  });

  it('a REST call and a tRPC call with the same key and input are one request, whatever the order of the fields', async () => {
    const app = await suite.server.createApp();
    const headers = { 'idempotency-key': 'rest-then-trpc' };
    const first = await app.rest('POST', '/v1/organizations', { slug: 'one-request', name: 'One request' }, headers);
    expect(first.status).toBe(201);
    const again = await rawRequest(suite.server.url, 'POST', '/trpc/organizations.create', {
      body: { name: 'One request', slug: 'one-request' },
      headers: { authorization: `Bearer ${app.secretKey}`, 'x-application-id': app.id, ...headers },
    });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((again.body as unknown as { result: { data: { id: string } } }).result.data.id).toBe(first.body.data.id);
  });
});

describe('Idempotency-Key on a create that calls out first (SAML metadata fetched from a URL)', () => {
  let server: TestServer;
  let metadata: Server;
  let metadataUrl: string;
  const held: Array<() => void> = [];
  let fetched = 0;

  beforeAll(async () => {
    const idp = await createTestIdp();
    server = await startServer({ allowInsecureSaml: true });
    // Answers each fetch only when the test lets it.
    metadata = createServer((_req, res) => {
      fetched++;
      held.push(() => res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' }).end(idp.metadataXml));
    });
    await new Promise<void>((resolve) => metadata.listen(0, '127.0.0.1', resolve));
    const address = metadata.address();
    metadataUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/metadata`;
  });
  afterAll(async () => {
    await server?.close();
    metadata?.closeAllConnections();
    await new Promise((resolve) => metadata?.close(resolve));
  });

  it('holds no transaction while the IdP answers, then replays its first answer without fetching again', async () => {
    const app = await server.createApp();
    const key = { 'idempotency-key': 'from-metadata' };
    let settled = false;
    const first = app.rest('POST', '/v1/saml/connections/from-metadata', { metadata_url: metadataUrl }, key).finally(() => {
      settled = true;
    });
    while (held.length === 0) await new Promise((r) => setTimeout(r, 20));
    // While the fetch waits, the database serves others (on PGlite a transaction would hold its one connection).
    const other = await app.rest(
      'POST',
      '/v1/users',
      { primary_email: uniqueEmail('meanwhile') },
      { 'idempotency-key': 'other' },
    );
    expect(other.status).toBe(201);
    expect(settled).toBe(false);
    held.shift()!();
    const created = await first;
    expect(created.status).toBe(201);
    const again = await app.rest('POST', '/v1/saml/connections/from-metadata', { metadata_url: metadataUrl }, key);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data).toEqual(created.body.data);
    expect(fetched).toBe(1);
    const listed = await app.rest('GET', '/v1/saml/connections');
    expect(listed.body.data.map((c: { id: string }) => c.id)).toEqual([created.body.data.id]);
  });
});

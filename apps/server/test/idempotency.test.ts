import { describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { acrossServers, rawRequest, sql } from './helpers/server.ts';
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
    // The first creates; the others wait-free answer 409 while it runs, or replay it once it is done.
    expect(results.every((r) => r.status === 201 || (r.status === 409 && r.body.error.code === 'conflict'))).toBe(true);
    const created = results.filter((r) => r.status === 201);
    expect(new Set(created.map((r) => r.body.data.id)).size).toBe(1);
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
});

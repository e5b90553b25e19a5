import { verifyWebhook, WebhookVerificationError } from '@gatehouse/sdk/webhooks';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, uniqueEmail } from './helpers/fixtures.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';
import {
  expectError,
  isoDate,
  MISSING,
  ok,
  sql,
  startServer,
  type TestApp,
  type TestServer,
  UUID,
  until,
} from './helpers/server.ts';

let server: TestServer;
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
  // Short retries; a receiver timeout that a busy machine's ordinary answer stays well inside (a late answer would be a
  // spurious timeout and a second delivery).
  server = await startServer({ webhooks: { allowInsecure: true, retryScheduleS: [0.2, 0.2, 0.2], timeoutMs: 2000 } });
});
afterAll(async () => {
  await server?.close();
  await receiver?.close();
});

let paths = 0;
/** A fresh receiving path per endpoint, so tests sharing the receiver never see each other's requests. */
const hookPath = (label: string) => `/hooks/${label}/${++paths}`;

async function createEndpoint(app: TestApp, path: string, extra: Record<string, unknown> = {}) {
  return ok(app.rest('POST', '/v1/webhooks', { url: `${receiver.url}${path}`, ...extra }), 201);
}

const deliveries = async (app: TestApp, endpointId: string, query = '') =>
  ok(app.rest('GET', `/v1/webhooks/${endpointId}/deliveries${query}`));

/** Waits until the endpoint's only delivery of `type` has `status`, and answers it with its attempts. */
async function settled(app: TestApp, endpointId: string, type: string, status: string) {
  const delivery = await until(async () => {
    const page = await deliveries(app, endpointId);
    return page.deliveries.find((d: any) => d.event_type === type && d.status === status);
  }, `a ${status} ${type} delivery`);
  return ok(app.rest('GET', `/v1/webhooks/${endpointId}/deliveries/${delivery.id}`));
}

describe('webhook endpoints', () => {
  it('create answers 201 with the endpoint and a whsec_ secret shown only there; the secret is sealed at rest', async () => {
    const app = await server.createApp();
    const res = await app.rest('POST', '/v1/webhooks', {
      url: `${receiver.url}/hooks/shape`,
      description: 'Billing sync',
      event_types: ['user.created', 'user.deleted'],
    });
    expect(res.status).toBe(201);
    const created = res.body.data;
    expect(created).toEqual({
      id: expect.stringMatching(UUID),
      url: `${receiver.url}/hooks/shape`,
      description: 'Billing sync',
      event_types: ['user.created', 'user.deleted'],
      status: 'active',
      disabled_reason: null,
      created_at: isoDate,
      updated_at: isoDate,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]+=*$/),
    });
    const bytes = Buffer.from(created.secret.slice('whsec_'.length), 'base64').length;
    expect(bytes).toBeGreaterThanOrEqual(24);
    expect(bytes).toBeLessThanOrEqual(64);

    // S9: a plain array; no secret anywhere but the create (and rotate) answers.
    const list = await ok(app.rest('GET', '/v1/webhooks'));
    expect(Array.isArray(list)).toBe(true);
    expect(list).toEqual([expect.objectContaining({ id: created.id, description: 'Billing sync' })]);
    expect(JSON.stringify(list)).not.toContain(created.secret);
    const one = await ok(app.rest('GET', `/v1/webhooks/${created.id}`));
    expect(one).not.toHaveProperty('secret');

    const [row] = await sql(server, 'select * from webhook_endpoints where id = ?', [created.id]);
    expect(JSON.stringify(row)).not.toContain(created.secret.slice('whsec_'.length));
    expect(row!.secret_sealed).toMatch(/^v1\./);
  });

  it('empty event_types means every kind; unknown kinds, unknown fields and bad status are 422', async () => {
    const app = await server.createApp();
    const all = await createEndpoint(app, '/hooks/all');
    expect(all.event_types).toEqual([]);
    expectError(
      await app.rest('POST', '/v1/webhooks', { url: `${receiver.url}/x`, event_types: ['user.exploded'] }),
      422,
      'validation_failed',
    );
    expectError(
      await app.rest('POST', '/v1/webhooks', { url: `${receiver.url}/x`, secret: 'whsec_mine' }),
      422,
      'validation_failed',
    );
    expectError(
      await app.rest('POST', '/v1/webhooks', { url: `${receiver.url}/x`, status: 'disabled' }),
      422,
      'validation_failed',
    );
    expectError(await app.rest('PATCH', `/v1/webhooks/${all.id}`, { status: 'paused' }), 422, 'validation_failed');
    expectError(await app.rest('PATCH', `/v1/webhooks/${all.id}`, { application_id: MISSING }), 422, 'validation_failed');
    // A subscription to a catalogue kind another capability emits is accepted.
    await createEndpoint(app, '/hooks/domains', { event_types: ['custom_domain.added'] });
  });

  it('PATCH changes url, description, event_types and status; S17 DELETE removes it with its delivery history', async () => {
    const app = await server.createApp();
    const path = hookPath('patch');
    const endpoint = await createEndpoint(app, path);
    const updated = await ok(
      app.rest('PATCH', `/v1/webhooks/${endpoint.id}`, {
        description: 'renamed',
        event_types: ['user.created'],
        status: 'disabled',
      }),
    );
    expect(updated).toMatchObject({ description: 'renamed', event_types: ['user.created'], status: 'disabled' });
    expect(
      await ok(app.rest('PATCH', `/v1/webhooks/${endpoint.id}`, { status: 'active', url: `${receiver.url}${path}` })),
    ).toMatchObject({
      status: 'active',
    });
    await createUser(app);
    await receiver.until(path, 1);
    expect(
      (await sql(server, 'select count(*)::int as n from webhook_deliveries where endpoint_id = ?', [endpoint.id]))[0]!.n,
    ).toBe(1);

    const deleted = await app.rest('DELETE', `/v1/webhooks/${endpoint.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ success: true, error: null, data: { id: endpoint.id, deleted: true } });
    expect(
      (await sql(server, 'select count(*)::int as n from webhook_deliveries where endpoint_id = ?', [endpoint.id]))[0]!.n,
    ).toBe(0);
    expect(
      (
        await sql(
          server,
          'select count(*)::int as n from webhook_attempts a where not exists (select 1 from webhook_deliveries d where d.id = a.delivery_id)',
        )
      )[0]!.n,
    ).toBe(0);
    expectError(await app.rest('DELETE', `/v1/webhooks/${endpoint.id}`), 404, 'not_found');
    expectError(await app.rest('GET', `/v1/webhooks/${endpoint.id}`), 404, 'not_found');
    const events = await ok(app.rest('GET', '/v1/events?type=webhook_endpoint.deleted'));
    expect(events.events[0].data).toEqual({ id: endpoint.id, url: `${receiver.url}${path}` });
  });

  it('scopes: webhooks:read lists but cannot write; a key without webhooks scopes is 403', async () => {
    const app = await server.createApp();
    const endpoint = await createEndpoint(app, '/hooks/scoped');
    const reader = await ok(app.rest('POST', '/v1/api-keys', { name: 'reader', scopes: ['webhooks:read'] }), 201);
    const other = await ok(app.rest('POST', '/v1/api-keys', { name: 'other', scopes: ['users:read'] }), 201);
    const as = (secret: string) => ({ authorization: `Bearer ${secret}` });
    expect((await app.rest('GET', '/v1/webhooks', undefined, as(reader.secret))).status).toBe(200);
    expect((await app.rest('GET', `/v1/webhooks/${endpoint.id}/deliveries`, undefined, as(reader.secret))).status).toBe(200);
    expectError(
      await app.rest('POST', '/v1/webhooks', { url: `${receiver.url}/x` }, as(reader.secret)),
      403,
      'insufficient_scope',
    );
    expectError(await app.rest('DELETE', `/v1/webhooks/${endpoint.id}`, undefined, as(reader.secret)), 403, 'insufficient_scope');
    expectError(await app.rest('GET', '/v1/webhooks', undefined, as(other.secret)), 403, 'insufficient_scope');
  });

  it("another application's endpoint and delivery ids are 404 on every route", async () => {
    const owner = await server.createApp();
    const stranger = await server.createApp();
    const path = hookPath('owner');
    const endpoint = await createEndpoint(owner, path);
    const delivery = await ok(owner.rest('POST', `/v1/webhooks/${endpoint.id}/test`));
    for (const [method, route, body] of [
      ['GET', `/v1/webhooks/${endpoint.id}`],
      ['PATCH', `/v1/webhooks/${endpoint.id}`, { description: 'mine now' }],
      ['DELETE', `/v1/webhooks/${endpoint.id}`],
      ['POST', `/v1/webhooks/${endpoint.id}/rotate-secret`],
      ['POST', `/v1/webhooks/${endpoint.id}/test`],
      ['GET', `/v1/webhooks/${endpoint.id}/deliveries`],
      ['GET', `/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}`],
      ['POST', `/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}/retry`],
      ['POST', `/v1/webhooks/${endpoint.id}/recover`, { since: new Date(0).toISOString() }],
      ['GET', `/v1/webhooks/${MISSING}`],
    ] as const) {
      expectError(await stranger.rest(method, route, body), 404, 'not_found', `${method} ${route}`);
    }
    expect(await ok(stranger.rest('GET', '/v1/webhooks'))).toEqual([]);
    expect((await ok(owner.rest('GET', `/v1/webhooks/${endpoint.id}`))).description).toBe('');
  });
});

describe('delivery', () => {
  it('signs per Standard Webhooks: the receiver verifies every delivery, and a one-byte change fails verification', async () => {
    const app = await server.createApp();
    const path = hookPath('signed');
    const endpoint = await createEndpoint(app, path);
    const user = await createUser(app);
    const [got] = await receiver.until(path, 1);
    const wh = new Webhook(endpoint.secret);
    const payload = wh.verify(got!.body, got!.headers as Record<string, string>) as any;
    expect(payload).toEqual({ type: 'user.created', timestamp: isoDate, data: expect.objectContaining({ id: user.id }) });
    const [event] = (await ok(app.rest('GET', '/v1/events?type=user.created'))).events;
    expect(got!.headers['webhook-id']).toBe(event.id);
    expect(payload.timestamp).toBe(event.created_at);
    expect(got!.headers['content-type']).toBe('application/json');
    expect(Math.abs(Number(got!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
    expect(got!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);

    const tampered = got!.body.replace(user.id, `${user.id.slice(0, -1)}${user.id.endsWith('0') ? '1' : '0'}`);
    expect(tampered.length).toBe(got!.body.length);
    expect(() => wh.verify(tampered, got!.headers as Record<string, string>)).toThrow();
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(got!.body, got!.headers as any)).toThrow();

    const delivered = await settled(app, endpoint.id, 'user.created', 'succeeded');
    expect(delivered).toMatchObject({
      event_id: event.id,
      endpoint_id: endpoint.id,
      attempts: 1,
      response_status: 200,
      last_error: null,
      next_attempt_at: null,
      last_attempt_at: isoDate,
    });
    expect(delivered.attempt_log).toEqual([
      { attempted_at: isoDate, response_status: 200, duration_ms: expect.any(Number), response_excerpt: 'ok', error: null },
    ]);
  });

  it("event_types filter what an endpoint receives; another application's events never reach it", async () => {
    const app = await server.createApp();
    const other = await server.createApp();
    const usersPath = hookPath('users-only');
    const orgsPath = hookPath('orgs-only');
    await createEndpoint(app, usersPath, { event_types: ['user.created'] });
    const orgs = await createEndpoint(app, orgsPath, { event_types: ['organization.created'] });
    const otherPath = hookPath('other-app');
    await createEndpoint(other, otherPath);
    await createUser(app);
    await ok(app.rest('POST', '/v1/organizations', { name: 'Acme' }), 201);
    await receiver.until(usersPath, 1);
    const [org] = await receiver.until(orgsPath, 1);
    expect(JSON.parse(org!.body).type).toBe('organization.created');
    await createUser(other);
    await until(
      async () => (receiver.at(otherPath).some((r) => JSON.parse(r.body).type === 'user.created') ? true : undefined),
      "the other application's user.created",
    );
    await new Promise((r) => setTimeout(r, 600));
    expect(receiver.at(usersPath).map((r) => JSON.parse(r.body).type)).toEqual(['user.created']);
    expect(receiver.at(orgsPath).map((r) => JSON.parse(r.body).type)).toEqual(['organization.created']);
    const otherTypes = receiver.at(otherPath).map((r) => JSON.parse(r.body).type);
    expect(otherTypes).not.toContain('organization.created');
    expect(otherTypes.filter((t) => t === 'user.created')).toHaveLength(1);
    const orgDeliveries = await deliveries(app, orgs.id);
    expect(orgDeliveries.deliveries.map((d: any) => d.event_type)).toEqual(['organization.created']);
  });

  it('500 then 200: retried and succeeded; the retry keeps webhook-id and has a new timestamp and signature', async () => {
    // A server whose first retry waits 1.2 s, so the retry's (whole-second) timestamp differs from the first attempt's.
    const slow = await startServer({ webhooks: { allowInsecure: true, retryScheduleS: [1.2], timeoutMs: 2000 } });
    try {
      const app = await slow.createApp();
      const path = hookPath('flaky');
      receiver.script(path, { status: 500, body: 'boom \u0000\u0007 <b>bad</b>' });
      const endpoint = await createEndpoint(app, path, { event_types: ['user.created'] });
      await createUser(app);
      const [first, second] = await receiver.until(path, 2);
      const wh = new Webhook(endpoint.secret);
      expect(() => wh.verify(first!.body, first!.headers as any)).not.toThrow();
      expect(() => wh.verify(second!.body, second!.headers as any)).not.toThrow();
      expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
      expect(second!.body).toBe(first!.body);
      expect(Number(second!.headers['webhook-timestamp'])).toBeGreaterThan(Number(first!.headers['webhook-timestamp']));
      expect(second!.headers['webhook-signature']).not.toBe(first!.headers['webhook-signature']);
      // The first attempt's signature does not verify with the retry's timestamp: each attempt is signed anew.
      expect(() =>
        wh.verify(second!.body, { ...(second!.headers as any), 'webhook-signature': first!.headers['webhook-signature'] }),
      ).toThrow();
      const delivery = await settled(app, endpoint.id, 'user.created', 'succeeded');
      expect(delivery.attempts).toBe(2);
      expect(delivery.attempt_log).toMatchObject([
        { response_status: 500, error: 'http_500', response_excerpt: 'boom  <b>bad</b>' },
        { response_status: 200, error: null },
      ]);
    } finally {
      await slow.close();
    }
  });

  it('fails for good after the last retry, keeps a ≤ 1 KB excerpt; retry and recover send it again', async () => {
    const app = await server.createApp();
    const path = hookPath('down');
    receiver.script(path, ...Array(4).fill({ status: 502, body: 'x'.repeat(5000) }));
    const endpoint = await createEndpoint(app, path, { event_types: ['user.created'] });
    await createUser(app);
    const failed = await settled(app, endpoint.id, 'user.created', 'failed');
    expect(failed).toMatchObject({ attempts: 4, response_status: 502, last_error: 'http_502', next_attempt_at: null });
    expect(failed.attempt_log).toHaveLength(4);
    expect(Buffer.byteLength(failed.attempt_log[0].response_excerpt)).toBe(1024);
    expect((await deliveries(app, endpoint.id, '?status=failed')).total).toBe(1);
    expect((await deliveries(app, endpoint.id, '?status=succeeded')).total).toBe(0);
    expectError(await app.rest('GET', `/v1/webhooks/${endpoint.id}/deliveries?status=lost`), 422, 'validation_failed');
    expectError(await app.rest('GET', `/v1/webhooks/${endpoint.id}/deliveries?limit=101`), 422, 'validation_failed');

    const retried = await ok(app.rest('POST', `/v1/webhooks/${endpoint.id}/deliveries/${failed.id}/retry`));
    expect(retried).toMatchObject({ id: failed.id, status: 'pending' });
    const ids = new Set((await receiver.until(path, 5)).map((r) => r.headers['webhook-id']));
    expect(ids.size).toBe(1);
    const again = await settled(app, endpoint.id, 'user.created', 'succeeded');
    expect(again.attempts).toBe(5);

    // Recover: a failed one since a time is queued again.
    receiver.script(path, ...Array(4).fill({ status: 500 }));
    await createUser(app);
    await until(async () => ((await deliveries(app, endpoint.id, '?status=failed')).total === 1 ? true : undefined), 'a failure');
    expect(
      await ok(app.rest('POST', `/v1/webhooks/${endpoint.id}/recover`, { since: new Date(Date.now() + 60_000).toISOString() })),
    ).toEqual({
      recovered: 0,
    });
    expect(
      await ok(app.rest('POST', `/v1/webhooks/${endpoint.id}/recover`, { since: new Date(Date.now() - 60_000).toISOString() })),
    ).toEqual({
      recovered: 1,
    });
    await until(
      async () => ((await deliveries(app, endpoint.id, '?status=succeeded')).total === 2 ? true : undefined),
      'recovered',
    );
    expectError(await app.rest('POST', `/v1/webhooks/${endpoint.id}/recover`, { since: 'yesterday' }), 422, 'validation_failed');
  });

  it('a 3xx is a failure and is never followed', async () => {
    const app = await server.createApp();
    const path = hookPath('moved');
    const target = hookPath('moved-target');
    receiver.script(path, ...Array(4).fill({ status: 302, headers: { location: `${receiver.url}${target}` } }));
    const endpoint = await createEndpoint(app, path, { event_types: ['user.created'] });
    await createUser(app);
    const failed = await settled(app, endpoint.id, 'user.created', 'failed');
    expect(failed).toMatchObject({ response_status: 302, last_error: 'redirect_not_followed', attempts: 4 });
    expect(receiver.at(target)).toHaveLength(0);
  });

  it('410 disables the endpoint at once (webhook_endpoint.disabled) and nothing more is sent to it', async () => {
    const app = await server.createApp();
    const path = hookPath('gone');
    receiver.script(path, { status: 410 });
    const watcherPath = hookPath('watcher');
    const endpoint = await createEndpoint(app, path, { event_types: ['user.created'] });
    await createEndpoint(app, watcherPath, { event_types: ['webhook_endpoint.disabled'] });
    await createUser(app);
    const failed = await settled(app, endpoint.id, 'user.created', 'failed');
    expect(failed).toMatchObject({ attempts: 1, response_status: 410 });
    expect(await ok(app.rest('GET', `/v1/webhooks/${endpoint.id}`))).toMatchObject({
      status: 'disabled',
      disabled_reason: 'gone',
    });
    const [notice] = await receiver.until(watcherPath, 1);
    expect(JSON.parse(notice!.body)).toMatchObject({
      type: 'webhook_endpoint.disabled',
      data: { id: endpoint.id, reason: 'gone' },
    });
    await createUser(app);
    await new Promise((r) => setTimeout(r, 800));
    expect(receiver.at(path)).toHaveLength(1);
    // Re-enabled by hand: it receives again.
    await ok(app.rest('PATCH', `/v1/webhooks/${endpoint.id}`, { status: 'active' }));
    await createUser(app);
    await receiver.until(path, 2);
  });

  it('429 with Retry-After waits that long before the next attempt (503 likewise)', async () => {
    const app = await server.createApp();
    const path = hookPath('slow-down');
    receiver.script(path, { status: 429, headers: { 'retry-after': '2' } }, { status: 503, headers: { 'retry-after': '1' } });
    const endpoint = await createEndpoint(app, path, { event_types: ['user.created'] });
    await createUser(app);
    const [first, second, third] = await receiver.until(path, 3);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1900);
    expect(third!.at - second!.at).toBeGreaterThanOrEqual(900);
    const delivery = await settled(app, endpoint.id, 'user.created', 'succeeded');
    expect(delivery.attempt_log.map((a: any) => a.response_status)).toEqual([429, 503, 200]);
  });

  it('a receiver that hangs past the timeout is a failed attempt (timeout), then retried', async () => {
    const app = await server.createApp();
    const path = hookPath('hang');
    receiver.script(path, 'hang');
    const endpoint = await createEndpoint(app, path, { event_types: ['user.created'] });
    await createUser(app);
    const delivery = await settled(app, endpoint.id, 'user.created', 'succeeded');
    expect(delivery.attempt_log).toMatchObject([
      { response_status: null, error: 'timeout' },
      { response_status: 200, error: null },
    ]);
    expect(delivery.attempt_log[0].duration_ms).toBeGreaterThanOrEqual(1950);
    expect(delivery.attempt_log[0].duration_ms).toBeLessThan(10_000);
  });

  it('rotate-secret: the new secret verifies, and the old one still does for 24 h (two v1 signatures)', async () => {
    const app = await server.createApp();
    const path = hookPath('rotate');
    const endpoint = await createEndpoint(app, path, { event_types: ['user.created'] });
    const rotated = await ok(app.rest('POST', `/v1/webhooks/${endpoint.id}/rotate-secret`));
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(endpoint.secret);
    await createUser(app);
    const [got] = await receiver.until(path, 1);
    expect(String(got!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(() => new Webhook(rotated.secret).verify(got!.body, got!.headers as any)).not.toThrow();
    expect(() => new Webhook(endpoint.secret).verify(got!.body, got!.headers as any)).not.toThrow();
    // After the window, only the new secret signs.
    await sql(server, `update webhook_endpoints set previous_secret_expires_at = now() - interval '1 second' where id = ?`, [
      endpoint.id,
    ]);
    await createUser(app);
    const [, later] = await receiver.until(path, 2);
    expect(String(later!.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() => new Webhook(rotated.secret).verify(later!.body, later!.headers as any)).not.toThrow();
    expect(() => new Webhook(endpoint.secret).verify(later!.body, later!.headers as any)).toThrow();
  });

  it('test sends webhook.test to that endpoint only, whatever its event_types', async () => {
    const app = await server.createApp();
    const path = hookPath('tested');
    const bystander = hookPath('bystander');
    const endpoint = await createEndpoint(app, path, { event_types: ['organization.created'] });
    await createEndpoint(app, bystander);
    const delivery = await ok(app.rest('POST', `/v1/webhooks/${endpoint.id}/test`));
    expect(delivery).toMatchObject({ endpoint_id: endpoint.id, event_type: 'webhook.test', status: 'pending', attempts: 0 });
    const [got] = await receiver.until(path, 1);
    const payload = new Webhook(endpoint.secret).verify(got!.body, got!.headers as any) as any;
    expect(payload).toMatchObject({ type: 'webhook.test', data: { endpoint_id: endpoint.id } });
    expect(got!.headers['webhook-id']).toBe(delivery.event_id);
    await new Promise((r) => setTimeout(r, 600));
    expect(receiver.at(bystander).map((r) => JSON.parse(r.body).type)).not.toContain('webhook.test');
  });
});

describe('the SDK', () => {
  it('webhooks.* over tRPC, and verifyWebhook on the receiving side (Headers and Node headers alike)', async () => {
    const app = await server.createApp();
    const path = hookPath('sdk');
    const endpoint = await app.sdk.webhooks.create({ url: `${receiver.url}${path}`, event_types: ['user.created'] });
    expect(endpoint.secret).toMatch(/^whsec_/);
    expect((await app.sdk.webhooks.list()).map((w) => w.id)).toEqual([endpoint.id]);
    await app.sdk.users.create({ primary_email: uniqueEmail('sdk') });
    const [got] = await receiver.until(path, 1);
    const event = verifyWebhook(got!.body, got!.headers, endpoint.secret);
    expect(event.type).toBe('user.created');
    expect(
      verifyWebhook(Buffer.from(got!.body), new Headers(got!.headers as Record<string, string>), endpoint.secret).data,
    ).toEqual(event.data);
    expect(() => verifyWebhook(`${got!.body} `, got!.headers, endpoint.secret)).toThrow(WebhookVerificationError);
    const page = await app.sdk.webhooks.deliveries.list({ id: endpoint.id });
    expect(page.deliveries[0]).toMatchObject({ event_type: 'user.created' });
    expect(await app.sdk.webhooks.delete({ id: endpoint.id })).toEqual({ id: endpoint.id, deleted: true });
  });
});

describe('an endpoint failing for 5 days', () => {
  it('is disabled (reason failing) by the next failed attempt; a success before that clears the run', async () => {
    const app = await server.createApp();
    const path = hookPath('failing');
    receiver.script(path, { status: 500 });
    const endpoint = await createEndpoint(app, path, { event_types: ['user.created'] });
    await sql(server, `update webhook_endpoints set failing_since = now() - interval '5 days 1 minute' where id = ?`, [
      endpoint.id,
    ]);
    await createUser(app);
    await until(async () => {
      const got = await ok(app.rest('GET', `/v1/webhooks/${endpoint.id}`));
      return got.status === 'disabled' ? got : undefined;
    }, 'the endpoint disabled');
    expect(await ok(app.rest('GET', `/v1/webhooks/${endpoint.id}`))).toMatchObject({ disabled_reason: 'failing' });
    const [event] = (await ok(app.rest('GET', '/v1/events?type=webhook_endpoint.disabled'))).events;
    expect(event.data).toMatchObject({ id: endpoint.id, reason: 'failing' });
    // Its pending retries wait while it is disabled (parked: not due), and resume when it is enabled again.
    const attempts = receiver.at(path).length;
    await new Promise((r) => setTimeout(r, 800));
    expect(receiver.at(path)).toHaveLength(attempts);
    const [parked] = (await deliveries(app, endpoint.id)).deliveries;
    expect(parked).toMatchObject({ status: 'pending', next_attempt_at: null });
    await ok(app.rest('PATCH', `/v1/webhooks/${endpoint.id}`, { status: 'active' }));
    await settled(app, endpoint.id, 'user.created', 'succeeded');

    const healthy = await createEndpoint(app, hookPath('recovering'), { event_types: ['user.created'] });
    await sql(server, `update webhook_endpoints set failing_since = now() - interval '4 days' where id = ?`, [healthy.id]);
    await createUser(app);
    await settled(app, healthy.id, 'user.created', 'succeeded');
    const [row] = await sql(server, 'select failing_since, status from webhook_endpoints where id = ?', [healthy.id]);
    expect(row).toMatchObject({ failing_since: null, status: 'active' });
  });
});

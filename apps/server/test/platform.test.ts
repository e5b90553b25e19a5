import { beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, type TestApp } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite({ smtp: false });

let app: TestApp;

beforeAll(async () => {
  app = await suite.server.createApp();
});

describe('envelope and request ids', () => {
  it('wraps success in the envelope with both data and error present', async () => {
    const res = await app.rest('POST', '/v1/users', { primary_email: 'env@example.com' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      data: expect.objectContaining({ primary_email: 'env@example.com' }),
      error: null,
      meta: { timestamp: expect.any(String), request_id: expect.any(String) },
    });
    expect(new Date(res.body.meta.timestamp).toISOString()).toBe(res.body.meta.timestamp);
    expect(res.headers.get('x-request-id')).toBe(res.body.meta.request_id);
  });

  it('echoes a valid x-request-id and replaces an invalid one', async () => {
    const echoed = await app.rest('GET', '/v1/users', undefined, { 'x-request-id': 'abc.DEF:123-_' });
    expect(echoed.headers.get('x-request-id')).toBe('abc.DEF:123-_');
    expect(echoed.body.meta.request_id).toBe('abc.DEF:123-_');
    for (const bad of ['has space', 'x'.repeat(129), 'semi;colon']) {
      const replaced = await app.rest('GET', '/v1/users', undefined, { 'x-request-id': bad });
      expect(replaced.headers.get('x-request-id')).not.toBe(bad);
      expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('answers every error with the error envelope', async () => {
    const res = await app.rest('GET', '/v1/users/00000000-0000-7000-8000-000000000000');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      success: false,
      data: null,
      error: { code: 'not_found', message: expect.any(String) },
      meta: { timestamp: expect.any(String), request_id: expect.any(String) },
    });
  });
});

describe('malformed requests change nothing', () => {
  const countUsers = async () => (await app.rest('GET', '/v1/users')).body.data.total as number;

  it('400 invalid_json for a body that does not parse', async () => {
    const before = await countUsers();
    const res = await app.rest('POST', '/v1/users', '{"primary_email": "a@b.c",');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_json');
    expect(await countUsers()).toBe(before);
  });

  it('413 payload_too_large over 1 MiB', async () => {
    const res = await app.rest('POST', '/v1/users', { profile: { blob: 'x'.repeat(1024 * 1024 + 10) } });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
  });

  it('415 unsupported_media_type for a body that is not JSON', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const res = await app.rest('POST', '/v1/users', 'primary_email=a@b.c', { 'content-type': type });
      expect(res.status, type).toBe(415);
      expect(res.body.error.code).toBe('unsupported_media_type');
    }
  });

  it('422 validation_failed lists every failing path', async () => {
    const before = await countUsers();
    const res = await app.rest('POST', '/v1/users', { primary_email: 'not-an-email', profile: 'nope', extra: true });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    const paths = res.body.error.details!.map((d) => d.path);
    expect(paths).toEqual(expect.arrayContaining(['primary_email', 'profile']));
    expect(res.body.error.details!.some((d) => d.message.includes('extra'))).toBe(true);
    expect(await countUsers()).toBe(before);
  });

  it('422 for a wrong type in the query string', async () => {
    for (const query of ['limit=abc', 'limit=1.5', 'limit=0', 'limit=101', 'offset=-1']) {
      const res = await app.rest('GET', `/v1/organizations?${query}`);
      expect(res.status, query).toBe(422);
      expect(res.body.error.code).toBe('validation_failed');
    }
  });

  it('404 with the envelope for unknown routes, under /v1 and elsewhere', async () => {
    for (const path of ['/v1/nope', '/v1/users/x/y/z', '/nope']) {
      const res = await rawRequest(suite.server.url, 'GET', path);
      expect(res.status, path).toBe(404);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe('not_found');
    }
  });

  it('never leaks stack traces or SQL in error messages', async () => {
    const responses = await Promise.all([
      app.rest('GET', '/v1/users/not-a-uuid'),
      app.rest('POST', '/v1/users', '{'),
      app.rest('PATCH', '/v1/users/00000000-0000-7000-8000-000000000000', { status: 'merged' }),
    ]);
    for (const res of responses) {
      const text = JSON.stringify(res.body);
      expect(text).not.toMatch(/\bat .*\.ts:\d+|select |insert |node_modules|stack/i);
    }
  });
});

describe('operations endpoints', () => {
  it('/healthz and /readyz answer without an envelope', async () => {
    expect(await rawRequest(suite.server.url, 'GET', '/healthz')).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await rawRequest(suite.server.url, 'GET', '/readyz')).toMatchObject({ status: 200, body: { status: 'ready' } });
  });

  it('/docs serves an API reference page with its assets, offline', async () => {
    const page = await fetch(`${suite.server.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const html = await page.text();
    expect(html).toContain('/v1/openapi.json');
    for (const asset of html.matchAll(/(?:src|href)="(\/docs\/[^"]+)"/g)) {
      const res = await fetch(`${suite.server.url}${asset[1]}`);
      expect(res.status, asset[1]).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    }
    expect(html).not.toMatch(/https?:\/\/(?!localhost)/);
  });
});

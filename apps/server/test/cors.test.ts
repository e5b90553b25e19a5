import { describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { expectError, rawRequest, sql, type TestApp } from './helpers/server.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

/** The service's own origin: the base URL the harness configures. */
const OWN_ORIGIN = 'http://gatehouse.test';

let seq = 0;
/**
 * A fresh origin per test: preflight answers may be cached per origin, and origins of one test must not be allowed
 * by an application of another.
 */
const origin = (label: string) => `https://${label}-${Date.now().toString(36)}-${++seq}.example.com`;

/** An end-user REST call from a browser at `from` (no secret key). */
const browser = (app: TestApp, from: string | undefined, method: string, path: string, body?: unknown, token?: string) =>
  app.rest(method, path, body, { authorization: token ? `Bearer ${token}` : undefined, origin: from });

const start = (app: TestApp, from: string | undefined, address = uniqueEmail()) =>
  browser(app, from, 'POST', '/v1/auth/magic-link/start', { email: address });

const corsHeaders = (res: { headers: Headers }) =>
  [...res.headers.keys()].filter((name) => name.startsWith('access-control-')).sort();

function expectAllowed(res: { headers: Headers }, from: string) {
  expect(res.headers.get('access-control-allow-origin')).toBe(from);
  expect(
    res.headers
      .get('vary')
      ?.split(',')
      .map((v) => v.trim().toLowerCase()),
  ).toContain('origin');
}

function expectNoCors(res: { headers: Headers }) {
  expect(corsHeaders(res)).toEqual([]);
  expect(res.headers.get('vary')?.toLowerCase() ?? '').not.toContain('origin');
}

/** Signs in by magic link without an Origin (as a server would) and answers the tokens. */
async function signIn(app: TestApp) {
  const address = uniqueEmail('signed-in');
  expect((await start(app, undefined, address)).status).toBe(200);
  const token = linkIn(await suite.smtp.next(address)).searchParams.get('token')!;
  const verified = await browser(app, undefined, 'POST', '/v1/auth/magic-link/verify', { token });
  expect(verified.status, JSON.stringify(verified.body)).toBe(200);
  expect(verified.body.data.status).toBe('complete');
  return verified.body.data.tokens as { access_token: string; refresh_token: string };
}

const preflight = (path: string, from: string | undefined, requestHeaders = 'content-type, x-application-id, authorization') =>
  rawRequest(suite.server.url, 'OPTIONS', path, {
    headers: { origin: from, 'access-control-request-method': 'POST', 'access-control-request-headers': requestHeaders },
  });

describe('end-user routes, actual requests', () => {
  it('an allowed origin gets access-control-allow-origin = that origin and vary: Origin (start and /me)', async () => {
    const from = origin('allowed');
    const app = await suite.server.createApp({ allowed_origins: [origin('first'), from] });
    const started = await start(app, from);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expectAllowed(started, from);

    const { access_token } = await signIn(app);
    const me = await browser(app, from, 'GET', '/v1/auth/me', undefined, access_token);
    expect(me.status, JSON.stringify(me.body)).toBe(200);
    expectAllowed(me, from);
  });

  it('a change to the application applies to the very next /me and refresh (the process keeps its copy by version)', async () => {
    const from = origin('changed');
    const app = await suite.server.createApp({ allowed_origins: [from] });
    const { access_token, refresh_token } = await signIn(app);
    // Twice each: the second answers come from the process's copy of the application, not its row.
    for (let i = 0; i < 2; i++) expectAllowed(await browser(app, from, 'GET', '/v1/auth/me', undefined, access_token), from);
    let token = refresh_token;
    for (let i = 0; i < 2; i++) {
      const refreshed = await browser(app, from, 'POST', '/v1/auth/token/refresh', { refresh_token: token });
      expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
      expect(refreshed.body.data.expires_in).toBe(600);
      token = refreshed.body.data.refresh_token;
    }

    const patch = (body: unknown) => app.rest('PATCH', `/v1/applications/${app.id}`, body);
    expect((await patch({ allowed_origins: [origin('other')] })).status).toBe(200);
    expectError(await browser(app, from, 'GET', '/v1/auth/me', undefined, access_token), 403, 'origin_not_allowed');
    expectError(await browser(app, from, 'POST', '/v1/auth/token/refresh', { refresh_token: token }), 403, 'origin_not_allowed');

    // Allowed again, and a settings change: the refused refresh rotated nothing, and the new lifetime applies at once.
    expect((await patch({ allowed_origins: [from], settings: { session: { access_token_ttl_s: 120 } } })).status).toBe(200);
    expectAllowed(await browser(app, from, 'GET', '/v1/auth/me', undefined, access_token), from);
    const refreshed = await browser(app, from, 'POST', '/v1/auth/token/refresh', { refresh_token: token });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(refreshed.body.data.expires_in).toBe(120);
  });

  it('an allowed origin can read the error answers of end-user routes too', async () => {
    const from = origin('errors');
    const app = await suite.server.createApp({ allowed_origins: [from] });
    const me = await browser(app, from, 'GET', '/v1/auth/me');
    expectError(me, 401, 'missing_credentials');
    expectAllowed(me, from);
  });

  it('an allowed origin can read a 429 and its retry-after', async () => {
    const from = origin('limited');
    const app = await suite.server.createApp({
      allowed_origins: [from],
      settings: { rate_limits: { magic_link_per_email: 1, magic_link_per_address: 100, window_s: 60 } },
    });
    const address = uniqueEmail('limited');
    expect((await start(app, from, address)).status).toBe(200);
    const limited = await start(app, from, address);
    expectError(limited, 429, 'rate_limited');
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
    expectAllowed(limited, from);
    const exposed = limited.headers
      .get('access-control-expose-headers')
      ?.split(',')
      .map((h) => h.trim().toLowerCase());
    expect(exposed).toContain('retry-after');
  });

  it('a disallowed origin is 403 origin_not_allowed without any allow-origin header, and nothing happens', async () => {
    const from = origin('allowed');
    const app = await suite.server.createApp({ allowed_origins: [from] });
    const address = uniqueEmail('refused');
    const refused = await start(app, origin('evil'), address);
    expectError(refused, 403, 'origin_not_allowed');
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    const rows = await sql(suite.server, 'select id from magic_links where application_id = ?', [app.id]);
    expect(rows).toEqual([]);

    const { access_token, refresh_token } = await signIn(app);
    const me = await browser(app, origin('evil'), 'GET', '/v1/auth/me', undefined, access_token);
    expectError(me, 403, 'origin_not_allowed');
    expect(me.headers.get('access-control-allow-origin')).toBeNull();

    // The refresh reads its application in its own statement: refused there, it rotates nothing.
    const refreshed = await browser(app, origin('evil'), 'POST', '/v1/auth/token/refresh', { refresh_token });
    expectError(refreshed, 403, 'origin_not_allowed');
    expect(refreshed.headers.get('access-control-allow-origin')).toBeNull();
    const elsewhere = await app.rest(
      'POST',
      '/v1/auth/token/refresh',
      { refresh_token },
      { authorization: undefined, 'x-application-id': '01890000-0000-7000-8000-000000000000' },
    );
    expectError(elsewhere, 401, 'application_not_resolved');
    const allowed = await browser(app, from, 'POST', '/v1/auth/token/refresh', { refresh_token });
    expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(from);
  });

  it('an origin allowed by another application only is refused', async () => {
    const mine = origin('mine');
    const theirs = origin('theirs');
    const app = await suite.server.createApp({ allowed_origins: [mine] });
    await suite.server.createApp({ allowed_origins: [theirs] });
    const refused = await start(app, theirs);
    expectError(refused, 403, 'origin_not_allowed');
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('Origin: null is never allowed', async () => {
    const app = await suite.server.createApp({ allowed_origins: [origin('real')] });
    const refused = await start(app, 'null');
    expectError(refused, 403, 'origin_not_allowed');
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('origins compare exactly: scheme, host and port', async () => {
    const host = `exact-${Date.now().toString(36)}.example.com`;
    const app = await suite.server.createApp({ allowed_origins: [`https://${host}`, `http://localhost:3000`] });
    expect((await start(app, `https://${host}`)).status).toBe(200);
    expect((await start(app, 'http://localhost:3000')).status).toBe(200);
    for (const near of [
      `http://${host}`,
      `https://${host}:8443`,
      `https://${host}:443/`,
      `https://${host}/`,
      `https://sub.${host}`,
      `https://${host}.evil.com`,
      `https://evil${host}`,
      'http://localhost:3001',
      'http://localhost',
      'https://localhost:3000',
      'http://127.0.0.1:3000',
    ]) {
      const refused = await start(app, near);
      expectError(refused, 403, 'origin_not_allowed', near);
      expect(refused.headers.get('access-control-allow-origin'), near).toBeNull();
    }
  });

  it('a request without Origin (not a browser) is not subject to CORS', async () => {
    const app = await suite.server.createApp({ allowed_origins: [origin('some')] });
    const res = await start(app, undefined);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const bare = await suite.server.createApp();
    expect((await start(bare, undefined)).status).toBe(200);
  });

  it('the service’s own origin (the hosted page) is allowed', async () => {
    const app = await suite.server.createApp({ allowed_origins: [origin('app')] });
    const res = await start(app, OWN_ORIGIN);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expectAllowed(res, OWN_ORIGIN);
    const bare = await suite.server.createApp();
    const verify = await browser(bare, OWN_ORIGIN, 'POST', '/v1/auth/magic-link/verify', { token: `ml_${'x'.repeat(43)}` });
    expectError(verify, 401, 'invalid_verification');
    expectAllowed(verify, OWN_ORIGIN);
  });

  it('the tRPC transport gets the same treatment', async () => {
    const from = origin('trpc');
    const app = await suite.server.createApp({ allowed_origins: [from] });
    const call = (callOrigin: string | undefined) =>
      rawRequest(suite.server.url, 'POST', '/trpc/auth.magicLink.start', {
        body: { email: uniqueEmail('trpc') },
        headers: { 'x-application-id': app.id, origin: callOrigin },
      });
    const ok = await call(from);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.result.data).toEqual({ verification_id: expect.any(String), poll_secret: expect.any(String) });
    expectAllowed(ok, from);

    const refused = await call(origin('evil'));
    expect(refused.status).toBe(403);
    expect(refused.body.error.data.code).toBe('origin_not_allowed');
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('preflight', () => {
  it('an origin allowed by some application: 204 with allow-origin, methods and headers', async () => {
    const from = origin('preflight');
    await suite.server.createApp({ allowed_origins: [from] });
    for (const path of ['/v1/auth/magic-link/start', '/v1/auth/me', '/v1/auth/consent/accept']) {
      const res = await preflight(path, from);
      expect(res.status, path).toBe(204);
      expectAllowed(res, from);
      expect(res.headers.get('access-control-allow-methods')?.toUpperCase(), path).toContain('POST');
      const allowed = res.headers
        .get('access-control-allow-headers')
        ?.split(',')
        .map((h) => h.trim().toLowerCase());
      expect(allowed, path).toEqual(expect.arrayContaining(['authorization', 'content-type', 'x-application-id']));
    }
    expect(
      (await preflight('/v1/auth/me', from, 'authorization')).headers.get('access-control-allow-methods')?.toUpperCase(),
    ).toContain('GET');
  });

  // The SDK's tRPC transport sends content-type and x-application-id, so every browser call through it preflights.
  it('a preflight of the tRPC transport’s end-user procedures is approved too', async () => {
    const from = origin('trpc-preflight');
    await suite.server.createApp({ allowed_origins: [from] });
    const res = await preflight('/trpc/auth.magicLink.start', from);
    expect(res.status, JSON.stringify(res.body)).toBe(204);
    expectAllowed(res, from);
    const allowed = res.headers
      .get('access-control-allow-headers')
      ?.split(',')
      .map((h) => h.trim().toLowerCase());
    expect(allowed).toEqual(expect.arrayContaining(['authorization', 'content-type', 'x-application-id']));
  });

  it('the service’s own origin passes the preflight', async () => {
    const res = await preflight('/v1/auth/magic-link/verify', OWN_ORIGIN);
    expect(res.status).toBe(204);
    expectAllowed(res, OWN_ORIGIN);
  });

  it('an unknown origin, a near miss or null is refused without allow-origin', async () => {
    const from = origin('known');
    await suite.server.createApp({ allowed_origins: [from] });
    for (const bad of [origin('unknown'), `${from}/`, from.replace('https://', 'http://'), `${from}:8443`, 'null']) {
      const res = await preflight('/v1/auth/magic-link/start', bad);
      expect(res.status, bad).toBe(403);
      expect(res.body.error.code, bad).toBe('origin_not_allowed');
      expect(res.headers.get('access-control-allow-origin'), bad).toBeNull();
      expect(corsHeaders(res), bad).toEqual([]);
    }
  });

  it('a management route gets no preflight approval', async () => {
    const from = origin('manager');
    await suite.server.createApp({ allowed_origins: [from] });
    for (const path of ['/v1/users', '/v1/api-keys', '/v1/applications']) {
      const res = await preflight(path, from);
      expect(res.status, path).toBeGreaterThanOrEqual(400);
      expectNoCors(res);
    }
  });
});

describe('management (secret key) routes', () => {
  it('carry no CORS headers, whatever the Origin, and answer as they would without one', async () => {
    const from = origin('dashboard');
    const app = await suite.server.createApp({ allowed_origins: [from] });
    expect((await app.rest('POST', '/v1/users', { primary_email: uniqueEmail('listed') })).status).toBe(201);
    const plain = await app.rest('GET', '/v1/users');
    expect(plain.status).toBe(200);
    for (const o of [from, origin('evil'), 'null', OWN_ORIGIN]) {
      const res = await app.rest('GET', '/v1/users', undefined, { origin: o });
      expect(res.status, o).toBe(200);
      expectNoCors(res);
      expect(res.body.data, o).toEqual(plain.body.data);
      expect([...res.headers.keys()].sort(), o).toEqual([...plain.headers.keys()].sort());
    }
    const created = await app.rest('POST', '/v1/users', { primary_email: uniqueEmail('posted') }, { origin: from });
    expect(created.status).toBe(201);
    expectNoCors(created);
  });
});

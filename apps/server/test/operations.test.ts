import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { rawRequest, startServer, type TestServer } from './helpers/server.ts';
import { endUser, signIn } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

/** Prometheus text: `name{labels} value` lines, with the labels parsed. */
function scrape(text: string) {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const match = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line)!;
      const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

describe('GET /metrics', () => {
  it('scrapes: requests by route pattern and status, latency, mail outcomes, outbox backlog, process metrics', async () => {
    const app = await suite.server.createApp();
    const user = (await app.rest('POST', '/v1/users', { primary_email: uniqueEmail() })).body.data;
    await app.rest('GET', `/v1/users/${user.id}`);
    await app.rest('GET', '/v1/users/00000000-0000-7000-8000-000000000000');
    await signIn(suite.server, suite.smtp, app, uniqueEmail('metrics'));
    const res = await fetch(`${suite.server.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const samples = scrape(await res.text());
    const count = (route: string, status: string) =>
      samples.find((s) => s.name === 'gatehouse_http_requests_total' && s.labels.route === route && s.labels.status === status)
        ?.value ?? 0;
    expect(count('/v1/users/{id}', '200')).toBeGreaterThanOrEqual(1);
    expect(count('/v1/users/{id}', '404')).toBeGreaterThanOrEqual(1);
    expect(count('/v1/users', '201')).toBeGreaterThanOrEqual(1);
    // Never a raw path with an id as a label.
    expect(samples.some((s) => s.labels.route?.includes(user.id))).toBe(false);
    expect(
      samples.some((s) => s.name === 'gatehouse_http_request_duration_seconds_bucket' && s.labels.route === '/v1/users'),
    ).toBe(true);
    expect(
      samples.find((s) => s.name === 'gatehouse_mail_messages_total' && s.labels.outcome === 'sent')?.value,
    ).toBeGreaterThanOrEqual(1);
    expect(samples.find((s) => s.name === 'gatehouse_mail_outbox_queued')).toBeDefined();
    expect(samples.find((s) => s.name === 'gatehouse_process_cpu_seconds_total')).toBeDefined();
    const pool = samples.find((s) => s.name === 'gatehouse_db_pool_connections' && s.labels.state === 'total');
    // The pool exists on PostgreSQL only (the embedded database is one in-process connection).
    if (inject('databaseUrl')) expect(pool?.value).toBeGreaterThan(0);
    else expect(pool).toBeUndefined();
  });

  it('counts rate-limit refusals by limit', async () => {
    const app = await suite.server.createApp({
      settings: { rate_limits: { magic_link_per_email: 1, magic_link_per_address: 100, window_s: 60 } },
    });
    const email = uniqueEmail('limited');
    await endUser(app, 'POST', '/v1/auth/magic-link/start', { email });
    expect((await endUser(app, 'POST', '/v1/auth/magic-link/start', { email })).status).toBe(429);
    const samples = scrape(await (await fetch(`${suite.server.url}/metrics`)).text());
    expect(
      samples.find((s) => s.name === 'gatehouse_rate_limit_hits_total' && s.labels.limit === 'magic_link_email')?.value,
    ).toBeGreaterThanOrEqual(1);
  });

  describe('with GATEHOUSE_METRICS_TOKEN', () => {
    let server: TestServer;
    const token = 'metrics-token-0123456789abcdef';
    beforeAll(async () => {
      server = await startServer({ metricsToken: token });
    });
    afterAll(() => server.close());

    it('refuses a scrape without the token or with another one', async () => {
      expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
      expect((await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(
        401,
      );
      const ok = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('gatehouse_http_requests_total');
    });
  });
});

describe('OIDC discovery and the JWKS for generic JWT middleware', () => {
  it('an application discovery document leads a standard verifier to the keys, with no custom header', async () => {
    const app = await suite.server.createApp();
    const doc = await rawRequest(suite.server.url, 'GET', `/v1/applications/${app.id}/.well-known/openid-configuration`);
    expect(doc.status).toBe(200);
    expect(doc.body).toEqual({
      issuer: 'http://gatehouse.test',
      jwks_uri: `http://gatehouse.test/v1/applications/${app.id}/jwks.json`,
      subject_types_supported: ['public'],
      access_token_signing_alg_values_supported: ['EdDSA'],
      audience: app.id,
    });
    const { tokens } = await signIn(suite.server, suite.smtp, app, uniqueEmail('jwks'));
    // jose's remote key set, as express-jwt / fastify-jwt setups use it: the JWKS URL (served here by the test server).
    const keys = createRemoteJWKSet(new URL(doc.body.jwks_uri.replace('http://gatehouse.test', suite.server.url)));
    const { payload } = await jwtVerify(tokens.access_token, keys, { issuer: doc.body.issuer, audience: doc.body.audience });
    expect(payload.aud).toBe(app.id);
    const missing = await rawRequest(
      suite.server.url,
      'GET',
      '/v1/applications/00000000-0000-7000-8000-000000000000/.well-known/openid-configuration',
    );
    expect(missing.status).toBe(404);
  });
});

describe('RateLimit headers (IETF draft) on rate-limited routes', () => {
  it('magic-link start answers the tightest limit; its 429 says 0 remaining and when to retry', async () => {
    const app = await suite.server.createApp({
      settings: { rate_limits: { magic_link_per_email: 2, magic_link_per_address: 100, window_s: 60 } },
    });
    const email = uniqueEmail('headers');
    const first = await endUser(app, 'POST', '/v1/auth/magic-link/start', { email });
    expect(first.headers.get('ratelimit-limit')).toBe('2');
    expect(first.headers.get('ratelimit-remaining')).toBe('1');
    expect(Number(first.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
    expect(Number(first.headers.get('ratelimit-reset'))).toBeLessThanOrEqual(60);
    await endUser(app, 'POST', '/v1/auth/magic-link/start', { email });
    const refused = await endUser(app, 'POST', '/v1/auth/magic-link/start', { email });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    expect(refused.headers.get('retry-after')).toBe(refused.headers.get('ratelimit-reset'));
    const plain = await app.rest('GET', '/v1/users');
    expect(plain.headers.get('ratelimit-limit')).toBeNull();
  });
});

import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { consoleReturn } from '../src/console/index.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { type HostedBrowser as Browser, HostedBrowser, type HostedPage } from './helpers/hosted.ts';
import { enrolTotp, totpCode } from './helpers/mfa.ts';
import { expectError, ok, rawRequest, sql, startServer, type TestApp, type TestServer } from './helpers/server.ts';
import { endUser, requestMagicLink } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * The console's sign-in (apps/server/src/console): an operator signs in on the console application's hosted pages
 * through its OpenID provider and comes back to the console with that application's browser session, for which
 * `POST /console/session` answers a short-lived access token the API accepts as the operator's.
 */
const suite = serverSuite();
const BASE = 'http://gatehouse.test';

async function consoleId(server: TestServer): Promise<string> {
  const [row] = await sql(server, "select id from applications where reserved = 'console'");
  return row.id;
}

/** The console application as a browser on the service's own origin calls it (the end-user routes only). */
const consoleTestApp = (id: string) =>
  ({
    id,
    rest: (method: string, path: string, body?: unknown, headers?: Record<string, string | undefined>) =>
      rawRequest(suite.server.url, method, path, { body, headers: { 'x-application-id': id, origin: BASE, ...headers } }),
  }) as unknown as TestApp; // the end-user calls of TestApp are all these tests use

/** Adds an operator with the operator token; answers the one-time link's path on the server. */
async function addOperator(email: string, role = 'owner', applicationId: string | null = null) {
  const added = await ok(
    rawRequest(suite.server.url, 'POST', '/v1/operators', {
      body: { email, role, application_id: applicationId },
      headers: { authorization: `Bearer ${suite.server.operatorToken}` },
    }),
    201,
  );
  const link = new URL(added.sign_in_link.url);
  return { ...added.operator, path: link.pathname + link.search };
}

/** Follows redirects from `page`, answering the last page and the path of every hop. */
async function follow(browser: Browser, page: HostedPage): Promise<{ page: HostedPage; paths: string[] }> {
  const paths: string[] = [];
  let current = page;
  for (let hops = 0; current.location && hops < 12; hops++) {
    const next = new URL(current.location, BASE);
    paths.push(next.pathname);
    current = await browser.get(next.pathname + next.search);
  }
  return { page: current, paths };
}

/** `POST /console/session` from the console's page (its origin, JSON), in `browser`'s cookies. */
function session(browser: Browser, init: { origin?: string; type?: string; path?: string } = {}) {
  return rawRequest(suite.server.url, 'POST', init.path ?? '/console/session', {
    body: {},
    headers: {
      origin: init.origin ?? BASE,
      ...(init.type ? { 'content-type': init.type } : {}),
      cookie: [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
    },
  });
}

/** Opens an operator's one-time link and confirms it: the browser ends on the console, signed in. */
async function signInWithLink(browser: Browser, path: string) {
  const landing = await browser.get(path);
  expect(landing.status, landing.html).toBe(200);
  const confirmed = await browser.submit(landing, '/console/sign-in');
  expect(confirmed.status).toBe(303);
  return follow(browser, confirmed);
}

describe('console sign-in', () => {
  it('an operator’s one-time link: confirmed on a page (opening it spends nothing), then the provider, then the console', async () => {
    const email = uniqueEmail('operator');
    const added = await addOperator(email);
    const browser = new HostedBrowser(suite.server);
    expectError(await session(browser), 401, 'invalid_credentials');

    // Opening the link twice spends nothing: a mail scanner that follows it signs nobody in.
    const first = await browser.get(added.path);
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('no-store');
    expect(first.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const { page, paths } = await signInWithLink(browser, added.path);
    // The link's session, then the provider (which adopts it: no page, no consent for the console), then the console.
    const id = await consoleId(suite.server);
    expect(paths).toEqual([
      '/console/sign-in',
      `/oauth2/${id}/auth`,
      `/a/${id}/sign-in`,
      expect.stringMatching(new RegExp(`^/oauth2/${id}/auth/`)),
      '/console/callback',
      '/console/',
    ]);
    expect([200, 503]).toContain(page.status);

    const answered = await ok(session(browser));
    expect(answered).toMatchObject({
      aal: 1,
      operator: { id: added.id, email, roles: [{ application_id: null, role: 'owner' }] },
    });
    expect(Date.parse(answered.expires_at)).toBeGreaterThan(Date.now());
    const claims = decodeJwt(answered.access_token);
    expect(claims.aud).toBe(id);
    // The access token is the operator's console credential: an operator route answers it.
    const other = await suite.server.createApp();
    const apps = await ok(
      rawRequest(suite.server.url, 'GET', '/v1/applications?limit=100', {
        headers: { authorization: `Bearer ${answered.access_token}` },
      }),
    );
    expect(apps.applications.map((a: { id: string }) => a.id)).toContain(other.id);
    // The applications it may open: every one (the console excepted) for an instance-wide role.
    const again = await ok(session(browser));
    expect(again.applications).toContainEqual({
      id: other.id,
      name: other.application.name,
      environment: expect.any(String),
      role: 'owner',
    });
    expect(again.applications.map((a: { id: string }) => a.id)).not.toContain(id);

    // The link is spent: confirming it again signs nobody in.
    const stranger = new HostedBrowser(suite.server);
    const replay = await stranger.submit(await stranger.get(added.path), '/console/sign-in');
    expect(replay.status).toBe(401);
    expectError(await session(stranger), 401, 'invalid_credentials');
  });

  it('an operator with a role for one application sees that one only, with that role', async () => {
    const mine = await suite.server.createApp();
    const theirs = await suite.server.createApp();
    const added = await addOperator(uniqueEmail('viewer'), 'viewer', mine.id);
    const browser = new HostedBrowser(suite.server);
    await signInWithLink(browser, added.path);
    const answered = await ok(session(browser));
    expect(answered.applications).toEqual([
      { id: mine.id, name: mine.application.name, environment: expect.any(String), role: 'viewer' },
    ]);
    const headers = { authorization: `Bearer ${answered.access_token}` };
    expect(
      (await rawRequest(suite.server.url, 'GET', '/v1/users', { headers: { ...headers, 'x-application-id': mine.id } })).status,
    ).toBe(200);
    expectError(
      await rawRequest(suite.server.url, 'GET', '/v1/users', { headers: { ...headers, 'x-application-id': theirs.id } }),
      404,
      'not_found',
    );
    expectError(
      await rawRequest(suite.server.url, 'POST', '/v1/users', {
        body: { primary_email: uniqueEmail('u') },
        headers: { ...headers, 'x-application-id': mine.id },
      }),
      403,
      'insufficient_scope',
    );
  });

  it('a step-up (`aal=2`) asks the hosted pages for the second factor only, and the console session is then at aal 2', async () => {
    const added = await addOperator(uniqueEmail('stepper'));
    const browser = new HostedBrowser(suite.server);
    await signInWithLink(browser, added.path);
    const before = await ok(session(browser));
    expect(before.aal).toBe(1);
    const id = await consoleId(suite.server);
    const consoleApp = consoleTestApp(id);
    const { secret } = await enrolTotp(consoleApp, before.access_token);
    await sql(suite.server, 'update mfa_factors set last_used_step = null where user_id = ?', [added.user_id]);

    const started = await browser.get(`/console/sign-in?aal=2&return=${encodeURIComponent('/console/users?q=a')}`);
    expect(started.status).toBe(303);
    expect(new URL(started.location ?? '', BASE).searchParams.get('acr_values')).toBe('urn:gatehouse:aal2');
    const { page: asked } = await follow(browser, started);
    expect(asked.status).toBe(200);
    const verified = await browser.submit(asked, `/a/${id}/mfa`, { code: totpCode(secret) });
    const { paths } = await follow(browser, verified);
    expect(paths.at(-2)).toBe('/console/callback');
    expect(paths.at(-1)).toBe('/console/users');
    const after = await ok(session(browser));
    expect(after.aal).toBe(2);
    // The raised session writes: the console's credential at aal 2.
    const other = await suite.server.createApp();
    const created = await rawRequest(suite.server.url, 'POST', '/v1/users', {
      body: { primary_email: uniqueEmail('made') },
      headers: { authorization: `Bearer ${after.access_token}`, 'x-application-id': other.id },
    });
    expect(created.status).toBe(201);
    // A token issued before the step-up keeps what it said: it still reads, and still may not write.
    const earlier = { authorization: `Bearer ${before.access_token}`, 'x-application-id': other.id };
    expect((await rawRequest(suite.server.url, 'GET', '/v1/users', { headers: earlier })).status).toBe(200);
    expectError(
      await rawRequest(suite.server.url, 'POST', '/v1/users', { body: { primary_email: uniqueEmail('no') }, headers: earlier }),
      403,
      'step_up_required',
    );
  });

  it('sign-out ends the console session: its access token and the cookie stop working', async () => {
    const added = await addOperator(uniqueEmail('leaver'));
    const browser = new HostedBrowser(suite.server);
    await signInWithLink(browser, added.path);
    const { access_token } = await ok(session(browser));
    const cookies = new Map(browser.cookies);
    expect((await session(browser, { path: '/console/sign-out' })).status).toBe(204);
    expectError(await session(browser), 401, 'invalid_credentials');
    // The old cookie, kept by an attacker, is dead too; so is the access token.
    expectError(await session(new HostedBrowser(suite.server, {}, cookies)), 401, 'invalid_credentials');
    expectError(
      await rawRequest(suite.server.url, 'GET', '/v1/applications', { headers: { authorization: `Bearer ${access_token}` } }),
      401,
      'invalid_token',
    );
  });

  it('refuses what is not the console’s own page: another origin, a form post, a missing origin; a removed operator', async () => {
    const added = await addOperator(uniqueEmail('removed'));
    const browser = new HostedBrowser(suite.server);
    await signInWithLink(browser, added.path);
    expectError(await session(browser, { origin: 'https://evil.example' }), 403, 'origin_not_allowed');
    expectError(await session(browser, { origin: 'null' }), 403, 'origin_not_allowed');
    expectError(await session(browser, { type: 'application/x-www-form-urlencoded' }), 403, 'origin_not_allowed');
    expectError(await session(browser, { origin: 'https://evil.example', path: '/console/sign-out' }), 403, 'origin_not_allowed');
    expect((await ok(session(browser))).operator.id).toBe(added.id);

    // Removed, the person is no operator: the session answers nothing.
    expect(
      (
        await rawRequest(suite.server.url, 'DELETE', `/v1/operators/${added.id}`, {
          headers: { authorization: `Bearer ${suite.server.operatorToken}` },
        })
      ).status,
    ).toBe(200);
    expectError(await session(browser), 401, 'invalid_credentials');
    // Nor may they sign in to the console again: their user is still there (the audit log names it), refused.
    const consoleApp = consoleTestApp(await consoleId(suite.server));
    const { token } = await requestMagicLink(suite.smtp, consoleApp, added.email);
    expectError(await endUser(consoleApp, 'POST', '/v1/auth/magic-link/verify', { token }), 403, 'access_denied');
  });

  it('the callback takes only this browser’s flow: a forged or replayed state, or a stolen code, is refused', async () => {
    const added = await addOperator(uniqueEmail('flow'));
    const browser = new HostedBrowser(suite.server);
    await signInWithLink(browser, added.path);
    // A callback with no flow of this browser's (a login CSRF: an attacker's code pushed into a victim's browser).
    const victim = new HostedBrowser(suite.server);
    expect((await victim.get('/console/callback?code=abc&state=def')).status).toBe(400);
    // A flow of this browser's, answered with another state.
    const started = await browser.get('/console/sign-in');
    expect(started.status).toBe(303);
    expect((await browser.get('/console/callback?code=abc&state=forged')).status).toBe(400);
    // The flow is spent by a callback: the real one, replayed, is refused.
    const fresh = await browser.get('/console/sign-in');
    const hops = await follow(browser, fresh);
    expect(hops.paths.at(-1)).toBe('/console/');
    const state = new URL(fresh.location ?? '', BASE).searchParams.get('state');
    expect((await browser.get(`/console/callback?code=abc&state=${state}`)).status).toBe(400);
  });

  it('goes back only to a console path: no open redirect', () => {
    expect(consoleReturn('/console/users?q=a')).toBe('/console/users?q=a');
    expect(consoleReturn('/console')).toBe('/console');
    for (const bad of [
      'https://evil.example/',
      '//evil.example',
      '/console//evil.example',
      '/consoleevil',
      '/console/../a/x',
      '/console\\x',
      '/a/b',
      42,
      undefined,
    ]) {
      expect(consoleReturn(bad)).toBe('/console/');
    }
  });

  it('serves the page’s files with a CSP of its own files only; unknown files are 404', async () => {
    const index = await fetch(`${suite.server.url}/console/users`);
    await index.arrayBuffer();
    const csp = index.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
    expect(index.headers.get('x-frame-options')).toBe('DENY');
    const missing = await fetch(`${suite.server.url}/console/assets/nothing-here.js`);
    await missing.arrayBuffer();
    expect([404, 503]).toContain(missing.status);
    const bare = await fetch(`${suite.server.url}/console`, { redirect: 'manual' });
    expect(bare.status).toBe(308);
    expect(bare.headers.get('location')).toBe('/console/');
  });

  it('the set-up link the start prints makes the first operator (an owner), once: concurrent set-ups, one wins', async () => {
    const fresh = await startServer();
    try {
      const link = fresh.server.setupLink;
      if (!link) throw new Error('a new server prints a set-up link');
      const path = new URL(link).pathname + new URL(link).search;
      const at = (server: TestServer) => new HostedBrowser(server);
      // A forged token, and no token: refused.
      expect((await at(fresh).get('/console/setup?token=cs_9999999999.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).status).toBe(
        410,
      );
      expect((await at(fresh).get('/console/setup')).status).toBe(410);

      const [a, b] = [at(fresh), at(fresh)];
      const [formA, formB] = [await a.get(path), await b.get(path)];
      expect(formA.status).toBe(200);
      expect(formA.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      // A form without this browser's CSRF token changes nothing.
      expect(
        (await at(fresh).post('/console/setup', { token: new URL(link).searchParams.get('token') ?? '', email: 'x@example.com' }))
          .status,
      ).toBe(403);
      expect((await a.submit(formA, '/console/setup', { email: 'not an email' })).status).toBe(422);
      const [answerA, answerB] = await Promise.all([
        a.submit(formA, '/console/setup', { email: 'first@example.com' }),
        b.submit(formB, '/console/setup', { email: 'second@example.com' }),
      ]);
      expect([answerA.status, answerB.status].sort()).toEqual([303, 410]);
      const winner = answerA.status === 303 ? a : b;
      const { paths } = await follow(winner, answerA.status === 303 ? answerA : answerB);
      expect(paths.at(-1)).toBe('/console/');
      const signedIn = await ok(
        rawRequest(fresh.url, 'POST', '/console/session', {
          body: {},
          headers: { origin: BASE, cookie: [...winner.cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
        }),
      );
      expect(signedIn.operator).toMatchObject({
        email: answerA.status === 303 ? 'first@example.com' : 'second@example.com',
        roles: [{ application_id: null, role: 'owner' }],
      });
      const operators = await ok(
        rawRequest(fresh.url, 'GET', '/v1/operators', { headers: { authorization: `Bearer ${fresh.operatorToken}` } }),
      );
      expect(operators.total).toBe(1);
      // The link is dead now.
      expect((await at(fresh).get(path)).status).toBe(410);
    } finally {
      await fresh.close();
    }
  });
});

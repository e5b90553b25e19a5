import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { browserSessionCookie } from '@gatehouse/api';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Browser, hasChromium, launchChromium } from './helpers/browser.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { HttpBrowser, type Person, signInOnHostedPagesIn, signInThroughProvider } from './helpers/hosted.ts';
import { createClient, oauthApp, storedTokens } from './helpers/oauth2.ts';
import { freePort } from './helpers/ports.ts';
import { ok, startServer, type TestApp, type TestServer } from './helpers/server.ts';
import type { SmtpSink } from './helpers/sign-in.ts';
import { startSmtpSink } from './helpers/smtp.ts';
import { authHandler, gatehouseAuth } from './recipes/authjs.ts';
import { createApp as openidClientApp } from './recipes/openid-client.ts';
import { createApp as passportApp } from './recipes/passport.ts';

/**
 * The recipes of docs/add-sign-in.md, run as written (docs.test.ts checks that the guide shows these very files): each
 * relying party uses its own OpenID Connect library and no Gatehouse code, signs a person in through the application's
 * provider, reads `sub`, `email` and the organization claims, and refreshes its access token once it has expired. The
 * server's base URL is its real address, so the apps need no name mapping; the person's browser is `HttpBrowser` (or
 * Chromium for the SPA), driven by `signInThroughProvider`.
 */
let smtp: SmtpSink;
let server: TestServer;
let base: string;

beforeAll(async () => {
  smtp = await startSmtpSink();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = await startServer({ smtpUrl: smtp.url, port, baseUrl: base });
});

afterAll(async () => {
  await server?.close();
  await smtp?.close();
});

/** An application, a person who works in one of its organizations, and a client registered for `redirectUri`. */
async function setUp(redirectUri: string, type: 'confidential' | 'public' = 'confidential') {
  // No login_url: the provider's login is the application's hosted sign-in page.
  const app = await oauthApp(server, { login_url: null });
  const email = uniqueEmail('recipe');
  const user = await ok(app.rest('POST', '/v1/users', { primary_email: email }), 201);
  const acme = await ok(app.rest('POST', '/v1/organizations', { name: 'Acme' }), 201);
  await ok(app.rest('POST', `/v1/organizations/${acme.id}/members`, { user_id: user.id, role: 'admin' }), 201);
  const client = await createClient(app, {
    name: 'The recipe app',
    type,
    redirect_uris: [redirectUri],
    scopes: ['openid', 'email', 'organization', 'offline_access'],
  });
  const person: Person = { server, smtp, app, email, organization: acme.id };
  return { app, user, acme, client, person, issuer: `${base}/oauth2/${app.id}` };
}

/**
 * Runs `step` as if `minutes` had passed (the access tokens last 10); the provider, in this process, sees the same
 * clock, so what it issues then is consistent with it.
 */
async function minutesLater<T>(minutes: number, step: () => Promise<T>): Promise<T> {
  vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + minutes * 60_000 });
  try {
    return await step();
  } finally {
    vi.useRealTimers();
  }
}

/** The access and refresh tokens the provider stored for the application: one refresh spent means one refresh. */
async function refreshes(app: TestApp) {
  const rows: Array<{ kind: string; consumed: boolean }> = await storedTokens(server, app);
  return rows.filter((r) => r.kind === 'RefreshToken' && r.consumed).length;
}

describe('recipe: a Node server with openid-client', () => {
  it('signs in, reads sub, email and the organization, and refreshes', async () => {
    const port = await freePort();
    const appUrl = `http://127.0.0.1:${port}`;
    const { app, user, acme, client, person, issuer } = await setUp(`${appUrl}/callback`);
    const rp = await openidClientApp({ issuer, clientId: client.id, clientSecret: client.client_secret!, appUrl });
    await new Promise<void>((resolve) => rp.listen(port, '127.0.0.1', resolve));
    try {
      const browser = new HttpBrowser();
      const login = await browser.request(`${appUrl}/login`);
      expect(login.status).toBe(302);
      const landed = await signInThroughProvider(person, browser, login.headers.get('location')!);
      expect(landed.url.href).toBe(`${appUrl}/me`);
      const me = await landed.response.json();
      expect(me.user).toEqual({ sub: user.id, email: person.email, org: acme.id, org_role: 'admin' });
      // The person signed in on the hosted pages (their browser session is the provider's login).
      expect(browser.cookies(base).has(browserSessionCookie(app.id))).toBe(true);

      expect(await refreshes(app)).toBe(0);
      const later = await minutesLater(11, async () => (await browser.request(`${appUrl}/me`)).json());
      expect(later.user).toEqual(me.user);
      expect(Date.parse(later.expires_at)).toBeGreaterThan(Date.parse(me.expires_at));
      expect(await refreshes(app)).toBe(1);
      // The rotated refresh token was kept: the next expiry refreshes again.
      await minutesLater(22, async () => expect((await browser.request(`${appUrl}/me`)).status).toBe(200));
      expect(await refreshes(app)).toBe(2);
    } finally {
      rp.closeAllConnections();
      await new Promise((resolve) => rp.close(resolve));
    }
  });
});

describe('recipe: Auth.js (@auth/core) with its OpenID Connect provider', () => {
  it('signs in, reads sub, email and the organization, and refreshes', async () => {
    // Auth.js answers Web requests; the person's browser hands it this origin's requests.
    const appUrl = `http://127.0.0.1:${await freePort()}`;
    const { app, user, acme, client, person, issuer } = await setUp(`${appUrl}/auth/callback/gatehouse`);
    const config = gatehouseAuth({
      issuer,
      clientId: client.id,
      clientSecret: client.client_secret!,
      secret: randomBytes(32).toString('base64url'),
    });
    const browser = new HttpBrowser().serve(appUrl, authHandler(config));
    const { csrfToken } = await (await browser.request(`${appUrl}/auth/csrf`)).json();
    const signIn = await browser.request(`${appUrl}/auth/signin/gatehouse`, {
      method: 'POST',
      body: new URLSearchParams({ csrfToken, callbackUrl: `${appUrl}/auth/session` }),
    });
    expect(signIn.status).toBe(302);
    const landed = await signInThroughProvider(person, browser, signIn.headers.get('location')!);
    expect(landed.url.href).toBe(`${appUrl}/auth/session`);
    const session = await landed.response.json();
    expect(session).toMatchObject({ user: { id: user.id, email: person.email }, org: acme.id, org_role: 'admin' });
    expect(session.error).toBeUndefined();
    expect(browser.cookies(base).has(browserSessionCookie(app.id))).toBe(true);

    expect(await refreshes(app)).toBe(0);
    const later = await minutesLater(11, async () => (await browser.request(`${appUrl}/auth/session`)).json());
    expect(later).toMatchObject({ user: { id: user.id, email: person.email }, org: acme.id, org_role: 'admin' });
    expect(later.error).toBeUndefined();
    expect(await refreshes(app)).toBe(1);
    // The rotated refresh token was kept in the session cookie: the next expiry refreshes again.
    const again = await minutesLater(22, async () => (await browser.request(`${appUrl}/auth/session`)).json());
    expect(again.error).toBeUndefined();
    expect(await refreshes(app)).toBe(2);
  });
});

describe('recipe: Express with passport-openidconnect', () => {
  it('signs in, reads sub, email and the organization, and refreshes', async () => {
    const port = await freePort();
    const appUrl = `http://127.0.0.1:${port}`;
    const { app, user, acme, client, person, issuer } = await setUp(`${appUrl}/callback`);
    const express = await passportApp({
      issuer,
      clientId: client.id,
      clientSecret: client.client_secret!,
      appUrl,
      sessionSecret: randomBytes(32).toString('base64url'),
    });
    const rp = express.listen(port, '127.0.0.1');
    await new Promise((resolve) => rp.once('listening', resolve));
    try {
      const browser = new HttpBrowser();
      const login = await browser.request(`${appUrl}/login`);
      expect(login.status).toBe(302);
      const authorization = new URL(login.headers.get('location')!);
      expect(authorization.searchParams.get('code_challenge_method')).toBe('S256');
      const landed = await signInThroughProvider(person, browser, authorization.href);
      expect(landed.url.href).toBe(`${appUrl}/me`);
      const me = await landed.response.json();
      expect(me.user).toEqual({ sub: user.id, email: person.email, org: acme.id, org_role: 'admin' });
      // The person signed in on the hosted pages (their browser session is the provider's login).
      expect(browser.cookies(base).has(browserSessionCookie(app.id))).toBe(true);

      expect(await refreshes(app)).toBe(0);
      const later = await minutesLater(11, async () => (await browser.request(`${appUrl}/me`)).json());
      expect(later.user).toEqual(me.user);
      expect(Date.parse(later.expires_at)).toBeGreaterThan(Date.parse(me.expires_at));
      expect(await refreshes(app)).toBe(1);
      // The rotated refresh token was kept: the next expiry refreshes again.
      await minutesLater(22, async () => expect((await browser.request(`${appUrl}/me`)).status).toBe(200));
      expect(await refreshes(app)).toBe(2);
    } finally {
      rp.closeAllConnections();
      await new Promise((resolve) => rp.close(resolve));
    }
  });
});

if (!hasChromium) console.warn('add-sign-in: /usr/bin/chromium not found, the SPA recipe is skipped.');

describe.skipIf(!hasChromium)('recipe: a browser SPA with oidc-client-ts, in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium('MAP gatehouse.test 127.0.0.1');
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** The SPA as it ships: the recipe bundled for the browser, started by its page with its settings. */
  async function serveSpa(port: number, settings: { issuer: string; clientId: string; appUrl: string }) {
    const { outputFiles } = await build({
      stdin: { contents: "export { startSpa } from './recipes/spa.ts';", resolveDir: import.meta.dirname },
      bundle: true,
      write: false,
      format: 'iife',
      globalName: 'Spa',
      platform: 'browser',
      target: 'chrome120',
      logLevel: 'silent',
    });
    const script = outputFiles[0]!.contents;
    const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>SPA</title></head>
<body><main id="root"></main><script src="/app.js"></script>
<script>Spa.startSpa(${JSON.stringify(settings)}, document.getElementById('root'));</script></body></html>`;
    const spa = createServer((req, res) => {
      if (req.url === '/app.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
      else res.writeHead(200, { 'content-type': 'text/html' }).end(html);
    });
    await new Promise<void>((resolve) => spa.listen(port, '127.0.0.1', resolve));
    return spa;
  }

  it('signs in, reads sub, email and the organization, and refreshes', async () => {
    const port = await freePort();
    const appUrl = `http://127.0.0.1:${port}`;
    const { app, user, acme, client, person, issuer } = await setUp(`${appUrl}/callback`, 'public');
    expect(client.client_secret).toBeNull();
    const spa = await serveSpa(port, { issuer, clientId: client.id, appUrl });
    const page = await browser.context.newPage();
    try {
      await page.goto(appUrl);
      await page.click('#sign-in');
      await signInOnHostedPagesIn(page, person);
      const shown = async () => JSON.parse((await page.locator('#signed-in').textContent()) ?? '');
      const me = await shown();
      expect(page.url()).toBe(`${appUrl}/`);
      expect(me.user).toEqual({ sub: user.id, email: person.email, org: acme.id, org_role: 'admin' });

      expect(await refreshes(app)).toBe(0);
      // Eleven minutes later, in the browser: the page renews the expired access token when it loads.
      await page.clock.install({ time: new Date(Date.now() + 11 * 60_000) });
      await page.reload();
      const later = await shown();
      expect(later.user).toEqual(me.user);
      expect(later.expires_at).toBeGreaterThan(me.expires_at);
      expect(await refreshes(app)).toBe(1);
    } finally {
      await page.close();
      spa.closeAllConnections();
      await new Promise((resolve) => spa.close(resolve));
    }
  });
});

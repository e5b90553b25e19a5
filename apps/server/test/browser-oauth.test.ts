import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, hasChromium, launchChromium, sdkBundle } from './helpers/browser.ts';
import { putProvider } from './helpers/oauth.ts';
import { startOidcProvider, type TestOidcProvider } from './helpers/oauth-idp.ts';
import { browserRun } from './helpers/runs.ts';
import { ok, startServer, type TestApp, type TestServer } from './helpers/server.ts';

/**
 * Social sign-in clicked through in Debian's Chromium with the SDK's browser client as an app ships it: the app's
 * button calls `oauth.signIn('oidc')`, the browser goes to a real OpenID Connect server (panva's oidc-provider, its
 * development login and consent pages), comes back through Gatehouse's redirect URI (`gatehouse.test`, the server's
 * configured base URL, mapped by Chromium's resolver rules) to the app's callback page, whose `oauth.handleCallback()`
 * finishes the sign-in.
 */
if (!hasChromium) console.warn('browser-oauth: /usr/bin/chromium not found, the real-browser OAuth test is skipped.');

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>App</title>
<script src="/gatehouse-sdk.js"></script>
<button id="google-like">Continue with the company IdP</button>
<pre id="result"></pre>
<script>
  const config = JSON.parse(sessionStorage.getItem('config') || 'null') || Object.fromEntries(new URLSearchParams(location.search));
  sessionStorage.setItem('config', JSON.stringify(config));
  const auth = Gatehouse.createGatehouseClient({ baseUrl: config.api, applicationId: config.app });
  const show = (value) => { document.getElementById('result').textContent = JSON.stringify(value); };
  document.getElementById('google-like').addEventListener('click', () => {
    auth.oauth.signIn('oidc', { redirectUri: location.origin + '/callback' }).catch((error) => show({ error: String(error) }));
  });
  if (location.pathname === '/callback') {
    auth.oauth
      .handleCallback()
      .then(async (result) => show({ result, me: await auth.me() }))
      .catch((error) => show({ error: error.code ?? String(error) }));
  }
</script>`;

describe.runIf(browserRun)('social sign-in in Chromium through the SDK', () => {
  let server: TestServer;
  let idp: TestOidcProvider;
  let pages: Server;
  let origin: string;
  let app: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    idp = await startOidcProvider({ redirectUris: ['http://gatehouse.test/v1/auth/oauth/redirect'] });
    idp.accounts.set('ada', { email: 'ada@example.com', email_verified: true, name: 'Ada Lovelace' });
    server = await startServer({ oauth: { allowInsecureIssuers: true } });
    const sdk = await sdkBundle();
    pages = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://localhost').pathname;
      if (path === '/gatehouse-sdk.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(sdk);
      else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    });
    await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
    origin = `http://localhost:${(pages.address() as AddressInfo).port}`;
    app = await server.createApp({ name: 'OAuth browser app', allowed_origins: [origin] });
    await ok(
      putProvider(app, 'oidc', { issuer: idp.issuer, client_id: idp.clientId, client_secret: idp.clientSecret, enabled: true }),
    );
    browser = await launchChromium(`MAP gatehouse.test:80 ${new URL(server.url).host}`);
  });

  afterAll(async () => {
    await browser?.close();
    if (pages) {
      pages.closeAllConnections();
      await new Promise<void>((resolve) => pages.close(() => resolve()));
    }
    await server?.close();
    await idp?.close();
  });

  it('signIn → provider login and consent → Gatehouse redirect → handleCallback ends in tokens and me()', async () => {
    const { page } = browser;
    await page.goto(`${origin}/?${new URLSearchParams({ api: server.url, app: app.id })}`);
    await page.click('#google-like');
    // oidc-provider's development login page, then its consent page.
    await page.waitForURL((url) => url.origin === idp.issuer);
    await page.fill('input[name="login"]', 'ada');
    await page.fill('input[name="password"]', 'any');
    await page.click('button[type="submit"]');
    await page.click('button[type="submit"]:has-text("Continue")');
    await page.waitForURL((url) => url.origin === origin && url.pathname === '/callback');
    await page.waitForFunction(() => document.getElementById('result')?.textContent !== '');
    const answer = JSON.parse((await page.textContent('#result')) ?? 'null');
    expect(answer.error, JSON.stringify(answer)).toBeUndefined();
    expect(answer.result.status).toBe('complete');
    expect(answer.result.user).toMatchObject({ primary_email: 'ada@example.com', email_verified: true });
    expect(answer.me.id).toBe(answer.result.user.id);
    // The callback URL carried the code and state; the SDK refuses to spend them twice.
    await page.reload();
    await page.waitForFunction(() => document.getElementById('result')?.textContent !== '');
    const again = JSON.parse((await page.textContent('#result')) ?? 'null');
    expect(again.error, JSON.stringify(again)).toBeTruthy();
  });
});

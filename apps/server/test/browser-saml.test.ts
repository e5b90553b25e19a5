import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, hasChromium, launchChromium } from './helpers/browser.ts';
import { browserRun } from './helpers/runs.ts';
import { createTestIdp, type TestIdp } from './helpers/saml-idp.ts';
import { ok, startServer, type TestApp, type TestServer } from './helpers/server.ts';

/**
 * SAML sign-in clicked through in Debian's Chromium: the app's page calls `sso/start`, the browser goes to the IdP
 * (samlify behind a small HTTP server), the IdP's page posts the response to our ACS, the ACS redirects to the app's
 * callback page, which calls `sso/complete`. Host names are mapped by Chromium's resolver rules: `gatehouse.test` is
 * the server (its configured base URL, so the ACS URL in the assertion is the one the browser posts to) and
 * `idp.test` the IdP (plain http on loopback: the server runs with GATEHOUSE_ALLOW_INSECURE_SAML).
 */
if (!hasChromium) console.warn('browser-saml: /usr/bin/chromium not found, the real-browser SAML test is skipped.');

const APP_PAGE = `<!doctype html>
<meta charset="utf-8">
<title>App</title>
<form id="start"><input name="email" id="email"><button id="sso">Sign in with SSO</button></form>
<pre id="result"></pre>
<script>
  const config = JSON.parse(sessionStorage.getItem('config') || 'null') || Object.fromEntries(new URLSearchParams(location.search));
  sessionStorage.setItem('config', JSON.stringify(config));
  async function call(path, body) {
    const res = await fetch(config.api + path, {
      method: 'POST',
      headers: { 'x-application-id': config.app, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return res.json();
  }
  document.getElementById('start').addEventListener('submit', async (event) => {
    event.preventDefault();
    const started = await call('/v1/auth/sso/start', { email: document.getElementById('email').value, redirect_uri: location.origin + '/callback' });
    if (!started.success) { document.getElementById('result').textContent = JSON.stringify(started); return; }
    location.assign(started.data.redirect_url);
  });
  const code = new URLSearchParams(location.search).get('code');
  if (location.pathname === '/callback' && code) {
    call('/v1/auth/sso/complete', { code }).then((answer) => { document.getElementById('result').textContent = JSON.stringify(answer); });
  }
</script>`;

const escapeHtml = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

describe.runIf(browserRun)('SAML sign-in in Chromium', () => {
  let server: TestServer;
  let appPages: Server;
  let idpServer: Server;
  let idp: TestIdp;
  let origin: string;
  let app: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    server = await startServer({ allowInsecureSaml: true });
    appPages = createServer((_req, res) => void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(APP_PAGE));
    await new Promise<void>((resolve) => appPages.listen(0, '127.0.0.1', resolve));
    origin = `http://localhost:${(appPages.address() as AddressInfo).port}`;

    idp = await createTestIdp({ entityId: 'http://idp.test/metadata', ssoUrl: 'http://idp.test/sso' });
    let spMetadata = '';
    // The IdP's sign-in page: the person is already signed in at their IdP; a click posts the assertion to the SP.
    idpServer = createServer((req, res) => {
      void (async () => {
        const requestUrl = new URL(req.url ?? '/', 'http://idp.test');
        const form = await idp.respond(spMetadata, requestUrl.toString(), { email: 'ada@acme.test' });
        const inputs = Object.entries(form)
          .filter(([name]) => name !== 'acs')
          .map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value as string)}">`)
          .join('');
        res
          .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
          .end(
            `<!doctype html><form method="post" action="${escapeHtml(form.acs)}">${inputs}<button id="continue">Continue to the app</button></form>`,
          );
      })().catch((error: Error) => res.writeHead(500).end(error.message));
    });
    await new Promise<void>((resolve) => idpServer.listen(0, '127.0.0.1', resolve));

    app = await server.createApp({ name: 'SAML browser app', allowed_origins: [origin] });
    const connection = await ok(
      app.rest('POST', '/v1/saml/connections', {
        name: 'Acme',
        idp_entity_id: idp.entityId,
        idp_sso_url: idp.ssoUrl,
        idp_certificate: idp.keys.certificate,
        email_domain: 'acme.test',
      }),
      201,
    );
    spMetadata = await (await fetch(`${server.url}/v1/saml/metadata/${connection.id}`)).text();

    browser = await launchChromium(
      `MAP gatehouse.test:80 ${new URL(server.url).host}, MAP idp.test:80 127.0.0.1:${(idpServer.address() as AddressInfo).port}`,
    );
  });

  afterAll(async () => {
    await browser?.close();
    for (const s of [appPages, idpServer]) {
      if (!s) continue;
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
    await server?.close();
  });

  it('start → IdP → ACS → complete ends in tokens for the IdP’s user', async () => {
    const { page } = browser;
    await page.goto(`${origin}/?${new URLSearchParams({ api: server.url, app: app.id })}`);
    await page.fill('#email', 'ada@acme.test');
    await page.click('#sso');
    await page.waitForURL(/^http:\/\/idp\.test\/sso\?SAMLRequest=/);
    await page.click('#continue');
    await page.waitForURL(new RegExp(`^${origin}/callback\\?code=`));
    await page.waitForFunction(() => document.getElementById('result')?.textContent !== '');
    const answer = JSON.parse((await page.textContent('#result')) ?? 'null');
    expect(answer.success, JSON.stringify(answer)).toBe(true);
    expect(answer.data.status).toBe('complete');
    expect(answer.data.user.primary_email).toBe('ada@acme.test');
    expect(answer.data.tokens.access_token.split('.')).toHaveLength(3);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, hasChromium, launchChromium } from './helpers/browser.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { createClient, oauthApp, oidc, type RegisteredClient, relyingParty, WEB_CALLBACK } from './helpers/oauth2.ts';
import { ok, startServer, type TestApp, type TestServer, UUID } from './helpers/server.ts';
import { endUser, type SmtpSink } from './helpers/sign-in.ts';
import { linkIn, startSmtpSink } from './helpers/smtp.ts';

/**
 * The OAuth provider's hosted interaction page (an application without `settings.oauth2.login_url`) clicked through in
 * Debian's Chromium: a third-party app sends the browser to the application's issuer, the page names the client and
 * the scopes, signs the user in with a magic link confirmed on another device (the page polls), and Allow or Deny
 * sends the browser back to the app, which exchanges the code. The server's base URL `gatehouse.test` is mapped by
 * Chromium's resolver rules; the third party's callback is answered by the test (Playwright's routing).
 */
if (!hasChromium) console.warn('browser-oauth2-hosted: /usr/bin/chromium not found, the real-browser test is skipped.');

describe.skipIf(!hasChromium)('the hosted OAuth interaction page in Chromium', () => {
  let smtp: SmtpSink;
  let server: TestServer;
  let app: TestApp;
  let client: RegisteredClient;
  let config: oidc.Configuration;
  let browser: Browser;

  beforeAll(async () => {
    smtp = await startSmtpSink();
    server = await startServer({ smtpUrl: smtp.url });
    app = await oauthApp(server, { login_url: null });
    client = await createClient(app);
    config = await relyingParty(server, app, client);
    browser = await launchChromium(`MAP gatehouse.test ${new URL(server.url).host}`);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await smtp?.close();
  });

  /** The third party's authorization request; the page signs `email` in; resolves with where the browser was sent. */
  async function throughThePage(email: string, button: '#allow' | '#deny') {
    // A browser that has not signed in at the provider yet (its session would skip the page).
    await browser.context.clearCookies();
    const page = await browser.context.newPage();
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const authorization = oidc.buildAuthorizationUrl(config, {
      redirect_uri: WEB_CALLBACK,
      scope: 'openid email read:docs',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const back = new Promise<URL>((resolve) => {
      void page.route(`${WEB_CALLBACK}**`, (route) => {
        resolve(new URL(route.request().url()));
        return route.fulfill({ contentType: 'text/plain', body: 'the third-party app' });
      });
    });
    await page.goto(authorization.href);
    await page.waitForURL((url) => url.pathname.startsWith(`/oauth2/${app.id}/interaction/`));
    await page.waitForSelector('#email-form:not([hidden])');
    expect(await page.textContent('#title')).toBe('Third-party app wants to sign you in');
    expect(await page.locator('#scopes li').allTextContents()).toContain('Read your documents');
    await page.fill('#email', email);
    await page.click('#email-form button');
    const token = linkIn(await smtp.next(email)).searchParams.get('token')!;
    // The link opened on another device: the page's poll then collects the session.
    await ok(endUser(app, 'POST', '/v1/auth/magic-link/confirm', { token }));
    await page.waitForSelector('#consent:not([hidden])');
    await page.click(button);
    const callback = await back;
    await page.close();
    return { callback, verifier, state };
  }

  it('Allow: the app exchanges the code for tokens of the user who signed in on the page, with the approved scopes', async () => {
    const email = uniqueEmail('hosted');
    const { callback, verifier, state } = await throughThePage(email, '#allow');
    expect(callback.searchParams.get('code')).toBeTruthy();
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.scope?.split(' ').sort()).toEqual(['email', 'openid', 'read:docs']);
    const sub = tokens.claims()!.sub;
    expect(sub).toMatch(UUID);
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, sub);
    expect(userinfo.email).toBe(email);
    // The grant is the user's, listed by S6.
    const user = (await ok(app.rest('GET', `/v1/users/${sub}`))) as { primary_email: string };
    expect(user.primary_email).toBe(email);
    const grants = await ok(app.rest('GET', `/v1/users/${sub}/grants`));
    expect(JSON.stringify(grants)).toContain(client.id);
  });

  it('Deny: the browser goes back to the app with access_denied and no code', async () => {
    const { callback, state } = await throughThePage(uniqueEmail('hosted-deny'), '#deny');
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('state')).toBe(state);
    expect(callback.searchParams.get('code')).toBeNull();
  });
});

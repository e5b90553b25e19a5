import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, hasChromium, launchChromium } from './helpers/browser.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { createClient, oauthApp, oidc, type RegisteredClient, relyingParty, WEB_CALLBACK } from './helpers/oauth2.ts';
import { browserRun } from './helpers/runs.ts';
import { ok, startServer, type TestApp, type TestServer, UUID } from './helpers/server.ts';
import { endUser, type SmtpSink } from './helpers/sign-in.ts';
import { linkIn, startSmtpSink } from './helpers/smtp.ts';

/**
 * The application's OpenID provider with the hosted sign-in page as its login, clicked through in Debian's Chromium:
 * a third-party app sends the browser to the issuer, the hosted page signs the person in with a magic link confirmed
 * on another device (the waiting page collects it), Allow sends the browser back with a code; a second client of the
 * same application is then only asked for its consent (single sign-on); RP-initiated logout ends the hosted session.
 * The server's base URL `gatehouse.test` is mapped by Chromium's resolver rules; the third party's callbacks are
 * answered by the test (Playwright's routing).
 */
if (!hasChromium) console.warn('browser-oauth2-hosted: /usr/bin/chromium not found, the real-browser test is skipped.');

const SIGNED_OUT = 'https://thirdparty.example.test/signed-out';

describe.runIf(browserRun)('the hosted sign-in page as the OpenID provider login, in Chromium', () => {
  let smtp: SmtpSink;
  let server: TestServer;
  let app: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    smtp = await startSmtpSink();
    server = await startServer({ smtpUrl: smtp.url });
    app = await oauthApp(server, { login_url: null });
    browser = await launchChromium(`MAP gatehouse.test ${new URL(server.url).host}`);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await smtp?.close();
  });

  /** The third party's authorization request in the browser's tab; resolves with where the browser was sent back. */
  async function startAuthorization(config: oidc.Configuration) {
    const page = browser.page;
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
    return { back, verifier, state };
  }

  async function tokensOf(config: oidc.Configuration, started: Awaited<ReturnType<typeof startAuthorization>>) {
    const callback = await started.back;
    await browser.page.unroute(`${WEB_CALLBACK}**`);
    return oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: started.verifier, expectedState: started.state });
  }

  it('signs in on the page, allows, and a second client signs in with its consent only; logout ends the session', async () => {
    const page = browser.page;
    const client: RegisteredClient = await createClient(app, { post_logout_redirect_uris: [SIGNED_OUT] });
    const config = await relyingParty(server, app, client);
    const email = uniqueEmail('chromium-oidc');

    const first = await startAuthorization(config);
    await page.waitForURL((url) => url.pathname === `/a/${app.id}/sign-in` && url.searchParams.has('interaction'));
    await page.fill('#email', email);
    await page.click('button[type=submit]');
    // The link, opened on another device: the waiting page here collects the sign-in.
    const token = linkIn(await smtp.next(email)).searchParams.get('token')!;
    await ok(endUser(app, 'POST', '/v1/auth/magic-link/confirm', { token }));
    await page.waitForSelector('button[value=allow]');
    expect(await page.textContent('h1')).toBe('Third-party app wants to use your Test app account');
    expect(await page.locator('li').allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining('Read your documents')]),
    );
    await page.click('button[value=allow]');
    const tokens = await tokensOf(config, first);
    const claims = tokens.claims()!;
    expect(claims.sub).toMatch(UUID);
    expect(claims.acr).toBe('urn:gatehouse:aal1');
    expect(claims.amr).toEqual(['email']);
    expect((await oidc.fetchUserInfo(config, tokens.access_token, claims.sub)).email).toBe(email);
    const cookie = `gh_session_${app.id}`;
    expect((await browser.context.cookies()).find((c) => c.name === cookie)).toMatchObject({ httpOnly: true, sameSite: 'Lax' });

    // A second client of the application: no sign-in, only its consent.
    const other = await createClient(app, { name: 'Second app' });
    const otherConfig = await relyingParty(server, app, other);
    const second = await startAuthorization(otherConfig);
    await page.waitForSelector('button[value=allow]');
    expect(await page.textContent('h1')).toBe('Second app wants to use your Test app account');
    await page.click('button[value=allow]');
    expect((await tokensOf(otherConfig, second)).claims()!.sub).toBe(claims.sub);

    // RP-initiated logout: the provider asks, the person confirms; the hosted session ends with the provider's.
    const signedOut = new Promise<URL>((resolve) => {
      void page.route(`${SIGNED_OUT}**`, (route) => {
        resolve(new URL(route.request().url()));
        return route.fulfill({ contentType: 'text/plain', body: 'signed out' });
      });
    });
    await page.goto(
      oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: SIGNED_OUT, state: 'bye' })
        .href,
    );
    await page.click('button[value=yes]');
    expect((await signedOut).searchParams.get('state')).toBe('bye');
    await page.waitForURL((url) => url.href.startsWith(SIGNED_OUT));
    expect((await browser.context.cookies()).find((c) => c.name === cookie)).toBeUndefined();
    await page.goto(`http://gatehouse.test/a/${app.id}/account`);
    await page.waitForURL((url) => url.pathname === `/a/${app.id}/sign-in`);
  });
});

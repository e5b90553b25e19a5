import {
  ACR_AAL1,
  ACR_AAL2,
  type Application,
  applicationById,
  attachBrowserSession,
  browserSessionCookie,
  findBrowserSession,
  finishConsent,
  finishLogin,
  interactionFor,
} from '@gatehouse/api';
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { enrolTotp, totpCode } from './helpers/mfa.ts';
import {
  API_RESOURCE,
  BASE,
  Browser,
  createClient,
  issuerOf,
  oauthApp,
  oidc,
  type RegisteredClient,
  relyingParty,
  startAuthorization,
  WEB_CALLBACK,
} from './helpers/oauth2.ts';
import { ok, rawRequest, sql, type TestApp } from './helpers/server.ts';
import { beginSignIn, endUser, type SignInResult } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * The application's OpenID provider with the hosted sign-in page as its login (an application without
 * `settings.oauth2.login_url`): single sign-on across clients tied to the hosted browser session, `prompt`,
 * `max_age`, `acr_values`, the real `acr`/`amr`/`aal` in the tokens, RP-initiated logout, and the binding of an
 * interaction to the browser that started it. The page is played in process: it signs the person in through the API
 * (a magic link, and a TOTP code when asked), attaches a browser session (its cookie in the test's browser), and calls
 * the functions the hosted pages call (`interactionFor`, `finishLogin`, `finishConsent`) with the browser's cookies.
 */
const suite = serverSuite();

const services = () => suite.server.server.services;
const application = async (app: TestApp): Promise<Application> => {
  const found = await applicationById(services().orm.em.fork(), app.id);
  if (!found) throw new Error('no application');
  return found;
};
const cookieHeader = (browser: Browser) => [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
const signInPage = (app: TestApp) => `${BASE}/a/${app.id}/sign-in`;

/** The interaction uid of a redirect to the hosted sign-in page (and that it is that page, exactly). */
function hostedUid(app: TestApp, location: string): string {
  const url = new URL(location);
  expect(`${url.origin}${url.pathname}`).toBe(signInPage(app));
  return url.searchParams.get('interaction')!;
}

/** Time passes: the browser's session was signed in `interval` ago (the database clock judges it). */
async function signedInAgo(app: TestApp, browser: Browser, interval: string) {
  const session = await browserSession(app, browser);
  await sql(suite.server, `update sessions set created_at = now() - ?::interval where id = ?`, [interval, session!.id]);
}

/** The browser's live hosted session, as the page finds it from its cookie. */
async function browserSession(app: TestApp, browser: Browser) {
  const token = browser.cookies.get(browserSessionCookie(app.id));
  return token ? findBrowserSession(services().orm.em.fork(), await application(app), token) : undefined;
}

/**
 * What the sign-in page does when it signs someone in: the sign-in (a magic link; the TOTP code when asked), then a
 * browser session for it, replacing the one the browser had (revoked), in the browser's cookie.
 */
async function pageSignIn(app: TestApp, browser: Browser, email: string, totpSecret?: string) {
  const attempt = await beginSignIn(suite.server, suite.smtp, app, email);
  let result: SignInResult = attempt.result;
  if (result.status === 'mfa_required') {
    if (!totpSecret) throw new Error('a second factor was asked');
    // The next step's code: the current one was spent confirming the factor.
    result = await ok(
      endUser(app, 'POST', '/v1/auth/mfa/totp/verify', {
        pending_token: result.pending_token,
        code: totpCode(totpSecret, 30_000),
      }),
    );
  }
  if (result.status !== 'complete') throw new Error(`sign-in ended ${result.status}`);
  const name = browserSessionCookie(app.id);
  const token = await attachBrowserSession(
    services().orm.em.fork(),
    app.id,
    result.tokens.refresh_token,
    browser.cookies.get(name),
  );
  if (!token) throw new Error('no browser session');
  browser.cookies.set(name, token);
  return result;
}

const page = {
  async interaction(app: TestApp, browser: Browser, uid: string) {
    return interactionFor(services(), await application(app), uid, cookieHeader(browser), await browserSession(app, browser));
  },
  async finishLogin(app: TestApp, browser: Browser, uid: string) {
    const session = await browserSession(app, browser);
    if (!session) throw new Error('no browser session');
    return finishLogin(services(), await application(app), uid, cookieHeader(browser), session);
  },
  async finishConsent(app: TestApp, browser: Browser, uid: string, scopes?: string[]) {
    const session = await browserSession(app, browser);
    if (!session) throw new Error('no browser session');
    const interaction = await interactionFor(services(), await application(app), uid, cookieHeader(browser), session);
    const approve = scopes ?? interaction.scopes.map((s) => s.name);
    return finishConsent(services(), await application(app), uid, cookieHeader(browser), session, approve);
  },
};

interface Setup {
  app: TestApp;
  client: RegisteredClient;
  config: oidc.Configuration;
}

async function hostedApp(): Promise<Setup> {
  const app = await oauthApp(suite.server, { login_url: null });
  const client = await createClient(app, { post_logout_redirect_uris: ['https://thirdparty.example.test/signed-out'] });
  return { app, client, config: await relyingParty(suite.server, app, client) };
}

/**
 * One authorization through the hosted page, the browser as it is: the page signs in when asked (unless the
 * browser's session satisfies the request), consents when asked. Answers the callback and what the page saw.
 */
async function throughThePage(
  setup: Setup,
  browser: Browser,
  options: { email?: string; totpSecret?: string; parameters?: Record<string, string> } = {},
) {
  const { app, config } = setup;
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: WEB_CALLBACK,
    scope: 'openid email',
    state,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...options.parameters,
  });
  const seen: Array<{ prompt: string; reasons: string[]; session: string }> = [];
  let location = (await browser.follow(url.href)).location;
  for (let step = 0; step < 4 && location.startsWith(signInPage(app)); step++) {
    const uid = hostedUid(app, location);
    let interaction = await page.interaction(app, browser, uid);
    seen.push({ prompt: interaction.prompt, reasons: interaction.reasons, session: interaction.session });
    let next: string;
    if (interaction.prompt === 'consent') next = await page.finishConsent(app, browser, uid);
    else {
      if (interaction.session !== 'satisfies') {
        await pageSignIn(app, browser, options.email ?? uniqueEmail('hosted'), options.totpSecret);
        interaction = await page.interaction(app, browser, uid);
        expect(interaction.session).toBe('satisfies');
      }
      next = await page.finishLogin(app, browser, uid);
    }
    location = (await browser.follow(next)).location;
  }
  const callback = new URL(location);
  return { callback, seen, verifier, state };
}

async function exchange(setup: Setup, flow: Awaited<ReturnType<typeof throughThePage>>, resource?: string) {
  return oidc.authorizationCodeGrant(
    setup.config,
    flow.callback,
    { pkceCodeVerifier: flow.verifier, expectedState: flow.state },
    resource ? { resource } : undefined,
  );
}

describe('the OpenID provider with the hosted sign-in page', () => {
  it('sends an authorization request without a session to /a/{id}/sign-in; discovery advertises acr values and prompts', async () => {
    const setup = await hostedApp();
    const browser = new Browser(suite.server);
    const { first } = await startAuthorization(suite.server, setup.config, { prompt: null, scope: 'openid' }, browser);
    expect(first.response.status).toBe(303);
    const uid = hostedUid(setup.app, first.location);
    const interaction = await page.interaction(setup.app, browser, uid);
    expect(interaction).toMatchObject({
      uid,
      prompt: 'login',
      client: { id: setup.client.id, name: 'Third-party app', logo_url: null },
      scopes: [{ name: 'openid', description: expect.any(String) }],
      account_id: null,
      required_aal: 1,
      session: 'sign_in',
    });
    const discovery = await rawRequest(suite.server.url, 'GET', `/oauth2/${setup.app.id}/.well-known/openid-configuration`);
    expect(discovery.body.acr_values_supported).toEqual([ACR_AAL1, ACR_AAL2]);
    expect(discovery.body.end_session_endpoint).toBe(`${issuerOf(setup.app)}/session/end`);
    expect(discovery.body.claims_supported).toEqual(expect.arrayContaining(['acr', 'amr', 'auth_time']));
  });

  it('a second client signs in without a prompt: only its consent is asked, then nothing at all', async () => {
    const setup = await hostedApp();
    const browser = new Browser(suite.server);
    const email = uniqueEmail('sso');
    const first = await throughThePage(setup, browser, { email });
    expect(first.seen.map((s) => s.prompt)).toEqual(['login', 'consent']);
    expect(first.callback.href.startsWith(`${WEB_CALLBACK}?code=`)).toBe(true);
    const tokens = await exchange(setup, first);
    const claims = tokens.claims()!;
    // The real sign-in: a magic link, aal 1, when it happened.
    expect(claims.acr).toBe(ACR_AAL1);
    expect(claims.amr).toEqual(['email']);
    const session = await browserSession(setup.app, browser);
    expect(claims.auth_time).toBe(Math.floor(session!.authTime.getTime() / 1000));

    // Client B, same application, same browser: no sign-in, only B's consent.
    const other = await createClient(setup.app, { name: 'Second app' });
    const second = { ...setup, client: other, config: await relyingParty(suite.server, setup.app, other) };
    const flow = await throughThePage(second, browser, { email: uniqueEmail('never-used') });
    expect(flow.seen.map((s) => s.prompt)).toEqual(['consent']);
    const secondClaims = (await exchange(second, flow)).claims()!;
    expect(secondClaims.sub).toBe(claims.sub);
    expect(secondClaims.auth_time).toBe(claims.auth_time);
    // And once consented, no page at all.
    const again = await throughThePage(second, browser);
    expect(again.seen).toEqual([]);
    expect(again.callback.searchParams.get('code')).toBeTruthy();
  });

  it('a live browser session satisfies a provider that has none: the page finishes the login with no UI', async () => {
    const setup = await hostedApp();
    const browser = new Browser(suite.server);
    // Signed in on the hosted pages (say, the account page) before any client asked.
    await pageSignIn(setup.app, browser, uniqueEmail('account-page'));
    const flow = await throughThePage(setup, browser);
    expect(flow.seen).toEqual([
      { prompt: 'login', reasons: ['no_session'], session: 'satisfies' },
      { prompt: 'consent', reasons: expect.any(Array), session: 'satisfies' },
    ]);
    expect(flow.callback.searchParams.get('code')).toBeTruthy();
  });

  it('prompt=login forces the page: the old session does not satisfy it, a new sign-in does (and replaces it)', async () => {
    const setup = await hostedApp();
    const browser = new Browser(suite.server);
    const email = uniqueEmail('relogin');
    await throughThePage(setup, browser, { email });
    await signedInAgo(setup.app, browser, '1 minute');
    const before = await browserSession(setup.app, browser);
    const oldToken = browser.cookies.get(browserSessionCookie(setup.app.id))!;

    const { first } = await startAuthorization(suite.server, setup.config, { prompt: 'login', scope: 'openid email' }, browser);
    const uid = hostedUid(setup.app, first.location);
    const interaction = await page.interaction(setup.app, browser, uid);
    expect(interaction.prompt).toBe('login');
    expect(interaction.reasons).toContain('login_prompt');
    expect(interaction.session).toBe('sign_in');
    // The page cannot finish it with the old session.
    await expect(page.finishLogin(setup.app, browser, uid)).rejects.toMatchObject({ code: 'validation_failed' });

    await pageSignIn(setup.app, browser, email);
    expect((await page.interaction(setup.app, browser, uid)).session).toBe('satisfies');
    const back = await browser.follow(await page.finishLogin(setup.app, browser, uid));
    expect(back.location.startsWith(`${WEB_CALLBACK}?code=`)).toBe(true);
    // A new cookie names a new session; the old one is revoked.
    const after = await browserSession(setup.app, browser);
    expect(after!.id).not.toBe(before!.id);
    expect(await findBrowserSession(services().orm.em.fork(), await application(setup.app), oldToken)).toBeUndefined();
  });

  it('prompt=none: login_required without a session, or once the browser signed out; consent_required for a new client', async () => {
    const setup = await hostedApp();
    const none = { prompt: 'none', scope: 'openid email' };
    const fresh = await startAuthorization(suite.server, setup.config, none);
    const refused = new URL(fresh.first.location);
    expect(`${refused.origin}${refused.pathname}`).toBe(WEB_CALLBACK);
    expect(refused.searchParams.get('error')).toBe('login_required');

    const browser = new Browser(suite.server);
    await throughThePage(setup, browser);
    const silent = await startAuthorization(suite.server, setup.config, none, browser);
    expect(new URL(silent.first.location).searchParams.get('code')).toBeTruthy();

    const other = await createClient(setup.app, { name: 'Second app' });
    const otherConfig = await relyingParty(suite.server, setup.app, other);
    const unconsented = await startAuthorization(suite.server, otherConfig, none, browser);
    expect(new URL(unconsented.first.location).searchParams.get('error')).toBe('consent_required');

    // Signing out of the hosted pages (the session revoked) ends single sign-on: the provider's session no longer counts.
    const session = await browserSession(setup.app, browser);
    await ok(setup.app.rest('POST', `/v1/users/${session!.userId}/sessions/revoke`));
    const after = await startAuthorization(suite.server, setup.config, none, browser);
    expect(new URL(after.first.location).searchParams.get('error')).toBe('login_required');
    const { first } = await startAuthorization(suite.server, setup.config, { prompt: null, scope: 'openid email' }, browser);
    const interaction = await page.interaction(setup.app, browser, hostedUid(setup.app, first.location));
    expect(interaction.reasons).toContain('hosted_session');
    expect(interaction.session).toBe('sign_in');
  });

  it('max_age: a sign-in older than it sends the browser to the page, which signs in again', async () => {
    const setup = await hostedApp();
    const browser = new Browser(suite.server);
    const email = uniqueEmail('max-age');
    // The browser session is two hours old when the provider's login is finished with it.
    await pageSignIn(setup.app, browser, email);
    await signedInAgo(setup.app, browser, '2 hours');
    const first = await throughThePage(setup, browser);
    const oldAuthTime = (await exchange(setup, first)).claims()!.auth_time!;
    expect(Math.floor(Date.now() / 1000) - oldAuthTime).toBeGreaterThan(3600);

    const flow = await throughThePage(setup, browser, { email, parameters: { max_age: '3600' } });
    expect(flow.seen).toEqual([{ prompt: 'login', reasons: expect.arrayContaining(['max_age']), session: 'sign_in' }]);
    const claims = (await exchange(setup, flow)).claims()!;
    expect(claims.auth_time).toBeGreaterThan(oldAuthTime + 3600);
  });

  it('acr_values=urn:gatehouse:aal2 with an aal 1 session asks for the second factor; the tokens carry aal 2 and its amr', async () => {
    const setup = await hostedApp();
    const browser = new Browser(suite.server);
    const email = uniqueEmail('step-up');
    // Signed in by magic link before having a second factor: an aal 1 session; then a TOTP factor is enrolled.
    const signedIn = await pageSignIn(setup.app, browser, email);
    if (signedIn.status !== 'complete') throw new Error('not complete');
    const { secret } = await enrolTotp(setup.app, signedIn.tokens.access_token);
    // The security notice of the new factor.
    expect((await suite.smtp.next(email)).html).toContain('second factor');
    const plain = await throughThePage(setup, browser, { parameters: { resource: API_RESOURCE, scope: 'openid read:docs' } });
    const aal1 = await exchange(setup, plain, API_RESOURCE);
    expect(aal1.claims()).toMatchObject({ acr: ACR_AAL1, amr: ['email'] });
    expect(decodeJwt(aal1.access_token)).toMatchObject({ aal: 1, amr: ['email'] });
    await signedInAgo(setup.app, browser, '1 minute');
    const before = await browserSession(setup.app, browser);

    const flow = await throughThePage(setup, browser, {
      email,
      totpSecret: secret,
      parameters: { acr_values: ACR_AAL2, resource: API_RESOURCE, scope: 'openid read:docs' },
    });
    expect(flow.seen).toEqual([{ prompt: 'login', reasons: ['acr_aal2'], session: 'second_factor' }]);
    const tokens = await exchange(setup, flow, API_RESOURCE);
    expect(tokens.claims()).toMatchObject({ acr: ACR_AAL2, amr: ['email', 'otp', 'mfa'] });
    expect(decodeJwt(tokens.access_token)).toMatchObject({ aal: 2, amr: ['email', 'otp', 'mfa'], aud: API_RESOURCE });
    // The step-up made a new session and cookie at aal 2; the aal 1 session is revoked.
    const after = await browserSession(setup.app, browser);
    expect(after).toMatchObject({ aal: 2, amr: ['email', 'otp', 'mfa'] });
    expect(after!.id).not.toBe(before!.id);
    const [old] = await sql(suite.server, 'select revoked_at from sessions where id = ?', [before!.id]);
    expect(old.revoked_at).not.toBeNull();
    // Asked again, the aal 2 session satisfies it: no page.
    const again = await throughThePage(setup, browser, {
      parameters: { acr_values: ACR_AAL2, resource: API_RESOURCE, scope: 'openid read:docs' },
    });
    expect(again.seen).toEqual([]);
    // A refresh keeps the sign-in's assurance (plain OAuth: a refresh token without offline_access).
    const api = await throughThePage(setup, browser, { parameters: { resource: API_RESOURCE, scope: 'read:docs' } });
    const apiTokens = await exchange(setup, api, API_RESOURCE);
    const refreshed = await oidc.refreshTokenGrant(setup.config, apiTokens.refresh_token!, { resource: API_RESOURCE });
    expect(decodeJwt(refreshed.access_token)).toMatchObject({ aal: 2, amr: ['email', 'otp', 'mfa'] });
  });

  it('prompt=select_account shows the page, which continues with the signed-in account', async () => {
    const setup = await hostedApp();
    const browser = new Browser(suite.server);
    await throughThePage(setup, browser);
    const flow = await throughThePage(setup, browser, { parameters: { prompt: 'select_account' } });
    expect(flow.seen).toEqual([{ prompt: 'select_account', reasons: ['select_account_prompt'], session: 'satisfies' }]);
    expect(flow.callback.searchParams.get('code')).toBeTruthy();
  });

  it('login_hint, ui_locales and acr_values reach the page', async () => {
    const setup = await hostedApp();
    const browser = new Browser(suite.server);
    const url = oidc.buildAuthorizationUrl(setup.config, {
      redirect_uri: WEB_CALLBACK,
      scope: 'openid',
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
      login_hint: 'ada@example.test',
      ui_locales: 'fr en',
      acr_values: ACR_AAL2,
    });
    const { location } = await browser.follow(url.href);
    const interaction = await page.interaction(setup.app, browser, hostedUid(setup.app, location));
    expect(interaction).toMatchObject({
      login_hint: 'ada@example.test',
      ui_locales: ['fr', 'en'],
      acr_values: [ACR_AAL2],
      required_aal: 2,
    });
  });

  it('RP-initiated logout ends the hosted browser session too; post_logout_redirect_uri must be registered exactly', async () => {
    const setup = await hostedApp();
    const browser = new Browser(suite.server);
    const flow = await throughThePage(setup, browser);
    const tokens = await exchange(setup, flow);
    const token = browser.cookies.get(browserSessionCookie(setup.app.id))!;
    const end = (redirect: string) =>
      oidc.buildEndSessionUrl(setup.config, {
        id_token_hint: tokens.id_token!,
        post_logout_redirect_uri: redirect,
        state: 'bye',
      });

    for (const wrong of [
      'https://thirdparty.example.test/signed-out/',
      'https://thirdparty.example.test/signed-out?x=1',
      WEB_CALLBACK,
    ]) {
      const refused = await browser.get(end(wrong).href);
      expect(refused.status, wrong).toBe(400);
      expect(await refused.text()).toContain('invalid_request');
    }

    const confirm = await browser.get(end('https://thirdparty.example.test/signed-out').href);
    expect(confirm.status).toBe(200);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(await confirm.text())![1]!;
    const posted = await fetch(`${suite.server.url}/oauth2/${setup.app.id}/session/end/confirm`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader(browser) },
      body: new URLSearchParams({ xsrf, logout: 'yes' }),
    });
    expect(posted.status).toBe(303);
    expect(posted.headers.get('location')).toBe('https://thirdparty.example.test/signed-out?state=bye');
    const cleared = posted.headers.getSetCookie().find((c) => c.startsWith(`${browserSessionCookie(setup.app.id)}=`));
    expect(cleared).toMatch(/Max-Age=0/);
    expect(cleared).toMatch(/HttpOnly/);
    // The session is revoked: the cookie is worth nothing even if the browser kept it.
    expect(await findBrowserSession(services().orm.em.fork(), await application(setup.app), token)).toBeUndefined();
    // A new authorization asks to sign in again.
    const { first } = await startAuthorization(suite.server, setup.config, { prompt: null, scope: 'openid email' }, browser);
    expect((await page.interaction(setup.app, browser, hostedUid(setup.app, first.location))).prompt).toBe('login');
  });

  it('a stolen interaction uid cannot be read or finished from another browser (signed in or not)', async () => {
    const setup = await hostedApp();
    // The attacker starts an authorization in their browser and sends the victim the sign-in link with its uid.
    const attacker = new Browser(suite.server);
    const { first } = await startAuthorization(suite.server, setup.config, { prompt: null, scope: 'openid email' }, attacker);
    const uid = hostedUid(setup.app, first.location);
    // The victim is signed in on the hosted pages.
    const victim = new Browser(suite.server);
    await throughThePage(setup, victim);
    await expect(page.interaction(setup.app, victim, uid)).rejects.toMatchObject({ code: 'not_found' });
    await expect(page.finishLogin(setup.app, victim, uid)).rejects.toMatchObject({ code: 'not_found' });
    // With the uid's cookie forged onto the victim's session: the signature does not match.
    const forged = new Browser(suite.server);
    for (const [k, v] of victim.cookies) forged.cookies.set(k, v);
    forged.cookies.set('_interaction', uid);
    await expect(page.finishLogin(setup.app, forged, uid)).rejects.toMatchObject({ code: 'not_found' });
    // Nothing was recorded for the attacker's interaction: resuming it gets no code.
    const resumed = await attacker.follow(`${issuerOf(setup.app)}/auth/${uid}`);
    expect(resumed.location).not.toContain('code=');
  });

  it('redirect_uri must match exactly: a near miss is an error page, never a redirect', async () => {
    const setup = await hostedApp();
    for (const redirectUri of [`${WEB_CALLBACK}/`, `${WEB_CALLBACK}?next=1`, WEB_CALLBACK.toUpperCase()]) {
      const { first } = await startAuthorization(suite.server, setup.config, { redirectUri, prompt: null, scope: 'openid' });
      expect(first.location, redirectUri).toBe('');
      expect(first.response.status, redirectUri).toBe(400);
    }
  });
});

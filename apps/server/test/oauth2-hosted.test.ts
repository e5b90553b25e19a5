import { request as httpRequest } from 'node:http';
import { ACR_AAL1, ACR_AAL2, type Application, applicationById, browserSessionCookie, findBrowserSession } from '@gatehouse/api';
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { HostedBrowser, type HostedPage, hiddenFields } from './helpers/hosted.ts';
import { enrolTotp, totpCode } from './helpers/mfa.ts';
import {
  API_RESOURCE,
  BASE,
  createClient,
  issuerOf,
  oauthApp,
  oidc,
  type RegisteredClient,
  relyingParty,
  WEB_CALLBACK,
} from './helpers/oauth2.ts';
import { ok, rawRequest, sql, type TestApp } from './helpers/server.ts';
import { signIn } from './helpers/sign-in.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * The application's OpenID provider with the hosted sign-in page as its login (an application without
 * `settings.oauth2.login_url`), over plain HTTP as a browser uses them (helpers/hosted.ts): single sign-on across
 * clients tied to the hosted browser session, `prompt`, `max_age`, `login_hint`, `acr_values`, the real
 * `acr`/`amr`/`auth_time`/`aal` in the tokens, RP-initiated logout, and the binding of an interaction to the browser
 * that started it.
 */
const suite = serverSuite();

const services = () => suite.server.server.services;
const application = async (app: TestApp): Promise<Application> => {
  const found = await applicationById(services().orm.em.fork(), app.id);
  if (!found) throw new Error('no application');
  return found;
};
const signInPath = (app: TestApp) => `/a/${app.id}/sign-in`;

/** The interaction uid of a redirect to the hosted sign-in page (and that it is that page, exactly). */
function hostedUid(app: TestApp, location: string): string {
  const url = new URL(location, BASE);
  expect(`${url.origin}${url.pathname}`).toBe(`${BASE}${signInPath(app)}`);
  return url.searchParams.get('interaction')!;
}

/** The browser's live hosted session (what its cookie names), read in process. */
async function browserSession(app: TestApp, browser: HostedBrowser) {
  const token = browser.cookies.get(browserSessionCookie(app.id));
  return token ? findBrowserSession(services().orm.em.fork(), await application(app), token) : undefined;
}

/** Time passes: the browser's session was signed in `interval` ago (the database clock judges it). */
async function signedInAgo(app: TestApp, browser: HostedBrowser, interval: string) {
  const session = await browserSession(app, browser);
  await sql(suite.server, `update sessions set created_at = now() - ?::interval where id = ?`, [interval, session!.id]);
}

interface Setup {
  app: TestApp;
  client: RegisteredClient;
  config: oidc.Configuration;
}

const SIGNED_OUT = 'https://thirdparty.example.test/signed-out';

async function hostedApp(): Promise<Setup> {
  const app = await oauthApp(suite.server, { login_url: null });
  const client = await createClient(app, { post_logout_redirect_uris: [SIGNED_OUT] });
  return { app, client, config: await relyingParty(suite.server, app, client) };
}

async function secondClient(setup: Setup): Promise<Setup> {
  const client = await createClient(setup.app, { name: 'Second app' });
  return { ...setup, client, config: await relyingParty(suite.server, setup.app, client) };
}

/** What the browser was shown on the way: the hosted pages by kind. */
type Seen = 'sign_in' | 'second_factor' | 'authorize' | 'select_account';

async function authorizationUrl(setup: Setup, parameters: Record<string, string> = {}) {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(setup.config, {
    redirect_uri: WEB_CALLBACK,
    scope: 'openid email',
    state,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...parameters,
  });
  return { url: url.href, verifier, state };
}

/** Follows redirects from `page` until the client's callback (not fetched) or a page of ours that is not a redirect. */
async function until(browser: HostedBrowser, page: HostedPage): Promise<HostedPage | URL> {
  let current = page;
  for (let hops = 0; current.location; hops++) {
    if (hops > 10) throw new Error('too many redirects');
    const next = new URL(current.location, BASE);
    if (next.href.startsWith(WEB_CALLBACK)) return next;
    current = await browser.get(next.href);
  }
  return current;
}

/**
 * An authorization through the hosted pages, the browser as it is, a person who does what each page asks: signs in
 * with a magic link (`email`, else the page's prefilled `login_hint`) and a TOTP code, continues as themselves,
 * allows. Answers the callback and what the pages showed.
 */
async function authorize(
  setup: Setup,
  browser: HostedBrowser,
  options: { email?: string; totpSecret?: string; parameters?: Record<string, string> } = {},
) {
  const { app } = setup;
  const start = await authorizationUrl(setup, options.parameters);
  const seen: Seen[] = [];
  let at = await until(browser, await browser.get(start.url));
  for (let step = 0; !(at instanceof URL); step++) {
    if (step > 8) throw new Error(`stuck on ${at.status}: ${at.html}`);
    const page: HostedPage = at;
    expect(page.status, page.html).toBe(200);
    if (page.html.includes(`action="${signInPath(app)}/authorize"`)) {
      seen.push('authorize');
      const scopes = Object.fromEntries([...page.html.matchAll(/name="(scope:[^"]+)"/g)].map((m) => [m[1]!, 'on']));
      at = await until(browser, await browser.submit(page, `${signInPath(app)}/authorize`, { decision: 'allow', ...scopes }));
    } else if (page.html.includes(`action="${signInPath(app)}/continue"`)) {
      seen.push('select_account');
      at = await until(browser, await browser.submit(page, `${signInPath(app)}/continue`));
    } else if (page.html.includes(`action="/a/${app.id}/mfa"`)) {
      seen.push('second_factor');
      if (!options.totpSecret) throw new Error('a second factor was asked');
      // The next step's code: the current one was spent confirming the factor.
      at = await until(browser, await browser.submit(page, `/a/${app.id}/mfa`, { code: totpCode(options.totpSecret, 30_000) }));
    } else if (page.html.includes(`action="${signInPath(app)}"`)) {
      seen.push('sign_in');
      const prefilled = /name="email"[^>]*value="([^"]*)"/.exec(page.html)?.[1];
      const email = options.email ?? (prefilled || uniqueEmail('hosted'));
      const started = await browser.submit(page, signInPath(app), { email });
      expect(started.status, started.html).toBe(303);
      const link = linkIn(await suite.smtp.next(email));
      const landing = await browser.get(link.pathname + link.search);
      at = await until(browser, await browser.submit(landing, `/a/${app.id}/magic-link`));
    } else if (page.html.includes('/session/end/confirm')) {
      // The provider's own form (posted by its script in a browser): signing in as another account ends the provider's
      // session of the previous one, then the login resumes.
      const action = /<form method="post" action="([^"]+)"/.exec(page.html)![1]!;
      const fields = Object.fromEntries(
        [...page.html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/>/g)].map((m) => [m[1]!, m[2]!]),
      );
      at = await until(browser, await browser.post(action, fields));
    } else throw new Error(`an unexpected page: ${page.html}`);
  }
  return { callback: at, seen, verifier: start.verifier, state: start.state };
}

async function exchange(setup: Setup, flow: Awaited<ReturnType<typeof authorize>>, resource?: string) {
  return oidc.authorizationCodeGrant(
    setup.config,
    flow.callback,
    { pkceCodeVerifier: flow.verifier, expectedState: flow.state },
    resource ? { resource } : undefined,
  );
}

const emailOf = async (setup: Setup, userId: string): Promise<string> =>
  (await ok(setup.app.rest('GET', `/v1/users/${userId}`))).primary_email;

/** Signs `email` in on the hosted pages themselves (no client asking): the browser lands on the account page. */
async function signInOnPages(app: TestApp, browser: HostedBrowser, email: string) {
  const form = await browser.get(signInPath(app));
  await browser.submit(form, signInPath(app), { email });
  const link = linkIn(await suite.smtp.next(email));
  const landing = await browser.get(link.pathname + link.search);
  const account = await browser.submit(landing, `/a/${app.id}/magic-link`);
  expect(account.location).toBe(`/a/${app.id}/account`);
}

/** The first answer of the provider to an authorization request in this browser: where it sends it. */
async function firstStop(setup: Setup, browser: HostedBrowser, parameters: Record<string, string> = {}) {
  const { url } = await authorizationUrl(setup, parameters);
  const answer = await browser.get(url);
  expect(answer.status, answer.html).toBe(303);
  return new URL(answer.location!, BASE);
}

describe('the OpenID provider with the hosted sign-in page', () => {
  it('sends an authorization request without a session to /a/{id}/sign-in; discovery advertises acr values and logout', async () => {
    const setup = await hostedApp();
    const browser = new HostedBrowser(suite.server);
    const stop = await firstStop(setup, browser, { login_hint: 'ada@example.test', ui_locales: 'fr' });
    hostedUid(setup.app, stop.href);
    const page = await browser.get(stop.href);
    expect(page.status).toBe(200);
    // The sign-in form, in the language the client asked for, the email prefilled from login_hint.
    expect(page.html).toContain('<html lang="fr">');
    expect(page.html).toMatch(/name="email"[^>]*value="ada@example.test"/);
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const discovery = await rawRequest(suite.server.url, 'GET', `/oauth2/${setup.app.id}/.well-known/openid-configuration`);
    expect(discovery.body.acr_values_supported).toEqual([ACR_AAL1, ACR_AAL2]);
    expect(discovery.body.end_session_endpoint).toBe(`${issuerOf(setup.app)}/session/end`);
    expect(discovery.body.claims_supported).toEqual(expect.arrayContaining(['acr', 'amr', 'auth_time']));
  });

  it('a second client signs in without a prompt: only its consent is asked, then nothing at all', async () => {
    const setup = await hostedApp();
    const browser = new HostedBrowser(suite.server);
    const first = await authorize(setup, browser, { email: uniqueEmail('sso') });
    expect(first.seen).toEqual(['sign_in', 'authorize']);
    expect(first.callback.href.startsWith(`${WEB_CALLBACK}?code=`)).toBe(true);
    const claims = (await exchange(setup, first)).claims()!;
    // The real sign-in: a magic link, aal 1, when it happened.
    expect(claims.acr).toBe(ACR_AAL1);
    expect(claims.amr).toEqual(['email']);
    const session = await browserSession(setup.app, browser);
    expect(claims.auth_time).toBe(Math.floor(session!.authTime.getTime() / 1000));

    // Client B, same application, same browser: no sign-in, only B's consent; the same person.
    const second = await secondClient(setup);
    const flow = await authorize(second, browser);
    expect(flow.seen).toEqual(['authorize']);
    const secondClaims = (await exchange(second, flow)).claims()!;
    expect(secondClaims.sub).toBe(claims.sub);
    expect(secondClaims.auth_time).toBe(claims.auth_time);
    // Once consented, no page at all.
    const again = await authorize(second, browser);
    expect(again.seen).toEqual([]);
    expect(again.callback.searchParams.get('code')).toBeTruthy();
  });

  it('a browser signed in on the hosted pages is not asked to sign in by a client (the page finishes the login)', async () => {
    const setup = await hostedApp();
    const browser = new HostedBrowser(suite.server);
    // Signed in on the hosted pages (the account page) before any client asked.
    await signInOnPages(setup.app, browser, uniqueEmail('account-page'));
    const flow = await authorize(setup, browser);
    expect(flow.seen).toEqual(['authorize']);
  });

  it('prompt=login forces the sign-in form: the old session does not satisfy it, a new sign-in does and replaces it', async () => {
    const setup = await hostedApp();
    const browser = new HostedBrowser(suite.server);
    const email = uniqueEmail('relogin');
    await authorize(setup, browser, { email });
    await signedInAgo(setup.app, browser, '1 minute');
    const before = await browserSession(setup.app, browser);
    const oldToken = browser.cookies.get(browserSessionCookie(setup.app.id))!;

    const flow = await authorize(setup, browser, { email, parameters: { prompt: 'login' } });
    expect(flow.seen).toEqual(['sign_in']);
    const claims = (await exchange(setup, flow)).claims()!;
    // A new cookie names a new session; the old one is revoked.
    const after = await browserSession(setup.app, browser);
    expect(after!.id).not.toBe(before!.id);
    expect(claims.auth_time).toBe(Math.floor(after!.authTime.getTime() / 1000));
    expect(await findBrowserSession(services().orm.em.fork(), await application(setup.app), oldToken)).toBeUndefined();
  });

  it('prompt=none: login_required without a session or once the session is revoked; consent_required for a new client', async () => {
    const setup = await hostedApp();
    const none = { prompt: 'none' };
    const refused = await firstStop(setup, new HostedBrowser(suite.server), none);
    expect(`${refused.origin}${refused.pathname}`).toBe(WEB_CALLBACK);
    expect(refused.searchParams.get('error')).toBe('login_required');

    const browser = new HostedBrowser(suite.server);
    await authorize(setup, browser);
    expect((await firstStop(setup, browser, none)).searchParams.get('code')).toBeTruthy();
    const second = await secondClient(setup);
    expect((await firstStop(second, browser, none)).searchParams.get('error')).toBe('consent_required');

    // The session revoked (support signs the user out everywhere): single sign-on ends with it.
    const session = await browserSession(setup.app, browser);
    await ok(setup.app.rest('POST', `/v1/users/${session!.userId}/sessions/revoke`));
    expect((await firstStop(setup, browser, none)).searchParams.get('error')).toBe('login_required');
    const again = await authorize(setup, browser, { email: await emailOf(setup, session!.userId) });
    expect(again.seen).toEqual(['sign_in']);
  });

  it('prompt=none answers a code for a browser signed in only on the hosted pages (no provider session yet)', async () => {
    const setup = await hostedApp();
    const email = uniqueEmail('pages-only');
    // The person consented to the client once, in another browser.
    const first = await authorize(setup, new HostedBrowser(suite.server), { email });
    const sub = (await exchange(setup, first)).claims()!.sub;

    // This browser signed in on the hosted pages themselves: it has the hosted session's cookie and nothing of the provider's.
    const browser = new HostedBrowser(suite.server);
    await signInOnPages(setup.app, browser, email);
    expect([...browser.cookies.keys()].filter((name) => name.startsWith('_session'))).toEqual([]);
    const flow = await authorizationUrl(setup, { prompt: 'none' });
    const answer = await browser.get(flow.url);
    expect(answer.status, answer.html).toBe(303);
    const callback = new URL(answer.location!, BASE);
    expect(callback.searchParams.get('error')).toBeNull();
    const claims = (await exchange(setup, { callback, seen: [], verifier: flow.verifier, state: flow.state })).claims()!;
    // The hosted session's sign-in: its account, time, level and methods.
    const session = await browserSession(setup.app, browser);
    expect(claims.sub).toBe(sub);
    expect(claims.auth_time).toBe(Math.floor(session!.authTime.getTime() / 1000));
    expect(claims.acr).toBe(ACR_AAL1);
    expect(claims.amr).toEqual(['email']);
    // The provider's session now exists for this browser: the next request is single sign-on as usual.
    expect([...browser.cookies.keys()].some((name) => name.startsWith('_session'))).toBe(true);
    expect((await firstStop(setup, browser, { prompt: 'none' })).searchParams.get('code')).toBeTruthy();
  });

  it('a returning browser\u2019s authorization does not rewrite an unchanged provider session; a change is written', async () => {
    const setup = await hostedApp();
    const browser = new HostedBrowser(suite.server);
    await authorize(setup, browser, { email: uniqueEmail('unchanged') });
    const stored = async () =>
      (
        await sql<{ payload: { authorizations: Record<string, unknown> }; expires_at: Date }>(
          suite.server,
          `select payload, expires_at from oauth2_artifacts where application_id = ? and kind = 'Session'
            order by created_at desc limit 1`,
          [setup.app.id],
        )
      )[0]!;
    const before = await stored();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await firstStop(setup, browser, { prompt: 'none' })).searchParams.get('code')).toBeTruthy();
    // Single sign-on answered; the session row is as it was (its expiry not slid by the second since).
    const after = await stored();
    expect(after.payload).toEqual(before.payload);
    expect(new Date(after.expires_at).getTime()).toBe(new Date(before.expires_at).getTime());
    // A second client's consent changes the session (its authorization for that client): written.
    const second = await secondClient(setup);
    await authorize(second, browser);
    const changed = await stored();
    expect(Object.keys(changed.payload.authorizations)).toEqual(expect.arrayContaining([setup.client.id, second.client.id]));
    // Expired past the slide (a day), an unchanged session is written again with its new expiry.
    await sql(
      suite.server,
      `update oauth2_artifacts set payload = jsonb_set(payload, '{exp}', to_jsonb((payload->>'exp')::bigint - 2 * 86400))
        where application_id = ? and kind = 'Session'`,
      [setup.app.id],
    );
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await firstStop(setup, browser, { prompt: 'none' })).searchParams.get('code')).toBeTruthy();
    expect(new Date((await stored()).expires_at).getTime()).toBeGreaterThan(new Date(changed.expires_at).getTime());
  });

  it('an authorization request reads the hosted session with the application: its idle timeout (the application\u2019s, or the default) holds, its use is recorded, an idle one is not revived', async () => {
    const setup = await hostedApp();
    const browser = new HostedBrowser(suite.server);
    await authorize(setup, browser, { email: uniqueEmail('idle') });
    const { id } = (await browserSession(setup.app, browser))!;
    const idleFor = (interval: string) =>
      sql(suite.server, 'update sessions set last_active_at = now() - ?::interval where id = ?', [interval, id]);
    const idleMs = async () =>
      Date.now() -
      new Date(
        (await sql<{ at: Date }>(suite.server, 'select last_active_at as at from sessions where id = ?', [id]))[0]!.at,
      ).getTime();
    const settings = (change: string, parameters: unknown[] = []) =>
      sql(suite.server, `update applications set settings = ${change}, updated_at = now() where id = ?`, [
        ...parameters,
        setup.app.id,
      ]);
    const none = async () => {
      const stop = await firstStop(setup, browser, { prompt: 'none' });
      return stop.searchParams.get('code') ? 'code' : stop.searchParams.get('error');
    };
    const MINUTE = 60_000;
    const DAY_MS = 86_400_000;

    // The stored settings leave the session's timeouts out: the default idle timeout, 30 days.
    await settings(`settings - 'session'`);
    await idleFor('29 days');
    expect(await none()).toBe('code');
    expect(await idleMs()).toBeLessThan(MINUTE);
    await idleFor('31 days');
    expect(await none()).toBe('login_required');
    expect(await idleMs()).toBeGreaterThan(30 * DAY_MS);

    // The application's own idle timeout: 5 minutes.
    await settings(`jsonb_set(settings, '{session}', ?::jsonb)`, [
      JSON.stringify({ access_token_ttl_s: 300, idle_timeout_s: 300, absolute_timeout_s: 3600 }),
    ]);
    await idleFor('4 minutes');
    expect(await none()).toBe('code');
    expect(await idleMs()).toBeLessThan(MINUTE);
    await idleFor('6 minutes');
    expect(await none()).toBe('login_required');
    expect(await idleMs()).toBeGreaterThan(5 * MINUTE);
    // Used within the last 30 seconds: not written again.
    await idleFor('20 seconds');
    expect(await none()).toBe('code');
    expect(await idleMs()).toBeGreaterThan(15_000);

    // An application with a login page of its own never consults the hosted session: not touched.
    await settings(`jsonb_set(settings, '{oauth2,login_url}', to_jsonb(?::text))`, ['https://app.example.test/login']);
    await idleFor('2 minutes');
    await firstStop(setup, browser, { prompt: 'none' });
    expect(await idleMs()).toBeGreaterThan(MINUTE);
  });

  it('prompt=none with only a hosted session still applies every check: consent, max_age, acr_values, a ban, a revocation', async () => {
    const setup = await hostedApp();
    const none = { prompt: 'none' };
    const email = uniqueEmail('pages-checks');
    await authorize(setup, new HostedBrowser(suite.server), { email });
    const pagesOnly = async () => {
      const browser = new HostedBrowser(suite.server);
      await signInOnPages(setup.app, browser, email);
      return browser;
    };
    const error = async (browser: HostedBrowser, parameters: Record<string, string>, client = setup) =>
      (await firstStop(client, browser, { ...none, ...parameters })).searchParams.get('error');

    // A client the person never consented to: consent_required, not a code.
    expect(await error(await pagesOnly(), {}, await secondClient(setup))).toBe('consent_required');
    // A second factor asked for, an aal 1 session: login_required.
    expect(await error(await pagesOnly(), { acr_values: ACR_AAL2 })).toBe('login_required');
    // A sign-in older than max_age: login_required.
    const old = await pagesOnly();
    await signedInAgo(setup.app, old, '10 minutes');
    expect(await error(old, { max_age: '60' })).toBe('login_required');
    // A revoked hosted session: login_required, and no provider session is made from it.
    const revoked = await pagesOnly();
    const session = await browserSession(setup.app, revoked);
    await ok(setup.app.rest('POST', `/v1/users/${session!.userId}/sessions/revoke`));
    expect(await error(revoked, {})).toBe('login_required');
    // A banned person's hosted session signs no one in.
    const banned = await pagesOnly();
    await ok(setup.app.rest('PATCH', `/v1/users/${session!.userId}`, { status: 'banned' }));
    expect(await error(banned, {})).toBe('login_required');
    // A forged cookie is no session at all.
    const forged = new HostedBrowser(suite.server);
    forged.cookies.set(browserSessionCookie(setup.app.id), 'bs_forged');
    expect(await error(forged, {})).toBe('login_required');
  });

  it('signing out on the hosted pages ends single sign-on too; then another account can sign in', async () => {
    const setup = await hostedApp();
    const browser = new HostedBrowser(suite.server);
    const first = await authorize(setup, browser);
    const firstSub = (await exchange(setup, first)).claims()!.sub;
    const account = await browser.get(`/a/${setup.app.id}/account`);
    expect((await browser.submit(account, `/a/${setup.app.id}/sign-out`)).status).toBe(200);
    // Another person on this browser: the provider ends the first one's session on the way, not the new hosted one.
    const other = await authorize(setup, browser, { email: uniqueEmail('next-person') });
    expect(other.seen).toEqual(['sign_in', 'authorize']);
    const claims = (await exchange(setup, other)).claims()!;
    expect(claims.sub).not.toBe(firstSub);
    expect((await browserSession(setup.app, browser))!.userId).toBe(claims.sub);
    expect((await authorize(setup, browser)).seen).toEqual([]);
  });

  it('max_age: a sign-in older than it sends the browser to the sign-in form', async () => {
    const setup = await hostedApp();
    const browser = new HostedBrowser(suite.server);
    const email = uniqueEmail('max-age');
    // Signed in two hours ago (on the hosted pages); a client's first login takes that time as the sign-in's.
    await signInOnPages(setup.app, browser, email);
    await signedInAgo(setup.app, browser, '2 hours');
    const first = await authorize(setup, browser);
    expect(first.seen).toEqual(['authorize']);
    const old = (await exchange(setup, first)).claims()!.auth_time!;
    expect(Math.floor(Date.now() / 1000) - old).toBeGreaterThan(3600);
    const flow = await authorize(setup, browser, { email, parameters: { max_age: '3600' } });
    expect(flow.seen).toEqual(['sign_in']);
    const claims = (await exchange(setup, flow)).claims()!;
    expect(Math.floor(Date.now() / 1000) - claims.auth_time!).toBeLessThan(3600);
    // A larger max_age is satisfied by the new session: no page.
    expect((await authorize(setup, browser, { parameters: { max_age: '86400' } })).seen).toEqual([]);
  });

  it('acr_values=urn:gatehouse:aal2 with an aal 1 session asks for the second factor; the tokens carry aal 2 and its amr', async () => {
    const setup = await hostedApp();
    const browser = new HostedBrowser(suite.server);
    const email = uniqueEmail('step-up');
    // Signed in by magic link before having a second factor (an aal 1 session); then a TOTP factor is enrolled.
    const api = { resource: API_RESOURCE, scope: 'openid read:docs' };
    const plain = await authorize(setup, browser, { email, parameters: api });
    const aal1 = await exchange(setup, plain, API_RESOURCE);
    expect(aal1.claims()).toMatchObject({ acr: ACR_AAL1, amr: ['email'] });
    expect(decodeJwt(aal1.access_token)).toMatchObject({ aal: 1, amr: ['email'] });
    const signedIn = await signIn(suite.server, suite.smtp, setup.app, email);
    const { secret } = await enrolTotp(setup.app, signedIn.tokens.access_token);
    // The security notice of the new factor.
    expect((await suite.smtp.next(email)).html).toContain('second factor');
    await signedInAgo(setup.app, browser, '1 minute');
    const before = await browserSession(setup.app, browser);
    const cookieBefore = browser.cookies.get(browserSessionCookie(setup.app.id));

    const flow = await authorize(setup, browser, { email, totpSecret: secret, parameters: { ...api, acr_values: ACR_AAL2 } });
    // The second factor alone (a step-up of this session): no sign-in page, no link mailed.
    expect(flow.seen).toEqual(['second_factor']);
    const tokens = await exchange(setup, flow, API_RESOURCE);
    expect(tokens.claims()).toMatchObject({ acr: ACR_AAL2, amr: ['email', 'otp', 'mfa'] });
    expect(decodeJwt(tokens.access_token)).toMatchObject({ aal: 2, amr: ['email', 'otp', 'mfa'], aud: API_RESOURCE });
    // The step-up raised this session to aal 2 and rotated its cookie: the same session, live.
    const after = await browserSession(setup.app, browser);
    expect(after).toMatchObject({ aal: 2, amr: ['email', 'otp', 'mfa'] });
    expect(after!.id).toBe(before!.id);
    expect(browser.cookies.get(browserSessionCookie(setup.app.id))).not.toBe(cookieBefore);
    const [same] = await sql(suite.server, 'select revoked_at from sessions where id = ?', [before!.id]);
    expect(same.revoked_at).toBeNull();
    // Asked again, the aal 2 session satisfies it: no page.
    expect((await authorize(setup, browser, { parameters: { ...api, acr_values: ACR_AAL2 } })).seen).toEqual([]);
    // A refresh keeps the sign-in's assurance (plain OAuth: a refresh token without offline_access).
    const oauth = await authorize(setup, browser, { parameters: { resource: API_RESOURCE, scope: 'read:docs' } });
    const oauthTokens = await exchange(setup, oauth, API_RESOURCE);
    const refreshed = await oidc.refreshTokenGrant(setup.config, oauthTokens.refresh_token!, { resource: API_RESOURCE });
    expect(decodeJwt(refreshed.access_token)).toMatchObject({ aal: 2, amr: ['email', 'otp', 'mfa'] });
  });

  it('prompt=select_account offers the signed-in account, or another one', async () => {
    const setup = await hostedApp();
    const browser = new HostedBrowser(suite.server);
    const first = await authorize(setup, browser);
    const sub = (await exchange(setup, first)).claims()!.sub;
    const same = await authorize(setup, browser, { parameters: { prompt: 'select_account' } });
    expect(same.seen).toEqual(['select_account']);
    expect((await exchange(setup, same)).claims()!.sub).toBe(sub);

    // "Use another account": the sign-in form, then the choice shows the new account.
    const stop = await firstStop(setup, browser, { prompt: 'select_account' });
    const uid = hostedUid(setup.app, stop.href);
    const chooser = await browser.get(stop.href);
    expect(chooser.html).toContain(`interaction=${uid}&amp;another=1`);
    const other = uniqueEmail('other-account');
    const form = await browser.get(`${signInPath(setup.app)}?interaction=${uid}&another=1`);
    await browser.submit(form, signInPath(setup.app), { email: other });
    const link = linkIn(await suite.smtp.next(other));
    const landing = await browser.get(link.pathname + link.search);
    const back = await browser.follow(await browser.submit(landing, `/a/${setup.app.id}/magic-link`));
    expect(back.html).toContain(other);
  });

  it('Deny sends the client access_denied', async () => {
    const setup = await hostedApp();
    const browser = new HostedBrowser(suite.server);
    await authorize(setup, browser);
    const second = await secondClient(setup);
    const page = await browser.get((await firstStop(second, browser)).href);
    const denied = await browser.post(`${signInPath(setup.app)}/authorize`, {
      ...hiddenFields(page.html, `${signInPath(setup.app)}/authorize`),
      decision: 'deny',
    });
    const callback = await until(browser, denied);
    expect(callback instanceof URL && callback.searchParams.get('error')).toBe('access_denied');
  });

  it('a consent page whose person is no longer signed in on this browser says to start again', async () => {
    const setup = await hostedApp();
    const browser = new HostedBrowser(suite.server);
    await authorize(setup, browser);
    const second = await secondClient(setup);
    const consent = (await firstStop(second, browser)).href;
    expect((await browser.get(consent)).html).toContain(`action="${signInPath(setup.app)}/authorize"`);
    const session = await browserSession(setup.app, browser);
    await ok(setup.app.rest('POST', `/v1/users/${session!.userId}/sessions/revoke`));
    const gone = await browser.get(consent);
    expect(gone.status).toBe(400);
    expect(gone.html).not.toContain('/authorize"');
  });

  it('RP-initiated logout ends the hosted browser session too; post_logout_redirect_uri must be registered exactly', async () => {
    const setup = await hostedApp();
    const browser = new HostedBrowser(suite.server);
    const tokens = await exchange(setup, await authorize(setup, browser));
    const token = browser.cookies.get(browserSessionCookie(setup.app.id))!;
    const end = (redirect: string) =>
      oidc.buildEndSessionUrl(setup.config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: redirect, state: 'bye' })
        .href;

    for (const wrong of [`${SIGNED_OUT}/`, `${SIGNED_OUT}?x=1`, WEB_CALLBACK]) {
      const refused = await browser.get(end(wrong));
      expect(refused.status, wrong).toBe(400);
      expect(refused.html).toContain('invalid_request');
    }

    const confirm = await browser.get(end(SIGNED_OUT));
    expect(confirm.status).toBe(200);
    // The provider's own page: the application's name, nothing loaded from elsewhere, no framing.
    expect(confirm.html).toContain('Sign out of Test app?');
    expect(confirm.html).not.toContain('googleapis');
    expect(confirm.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm.html)![1]!;
    const posted = await browser.post(`/oauth2/${setup.app.id}/session/end/confirm`, { xsrf, logout: 'yes' });
    expect(posted.status).toBe(303);
    expect(posted.location).toBe(`${SIGNED_OUT}?state=bye`);
    const cleared = posted.headers.getSetCookie().find((c) => c.startsWith(`${browserSessionCookie(setup.app.id)}=`));
    expect(cleared).toMatch(/Max-Age=0/);
    expect(cleared).toMatch(/Path=\//);
    expect(browser.cookies.has(browserSessionCookie(setup.app.id))).toBe(false);
    // The session is revoked: the cookie is worth nothing even if a browser kept it.
    expect(await findBrowserSession(services().orm.em.fork(), await application(setup.app), token)).toBeUndefined();
    // The account page and a new authorization ask to sign in again (and to consent: logout revoked the grant).
    expect((await browser.get(`/a/${setup.app.id}/account`)).location).toBe(signInPath(setup.app));
    expect((await authorize(setup, browser)).seen).toEqual(['sign_in', 'authorize']);
  });

  it('a stolen interaction uid cannot be shown or finished in another browser (signed in or not)', async () => {
    const setup = await hostedApp();
    // The attacker starts an authorization in their browser and sends the victim the sign-in link with its uid.
    const attacker = new HostedBrowser(suite.server);
    const stop = await firstStop(setup, attacker);
    const uid = hostedUid(setup.app, stop.href);
    // The victim is signed in on the hosted pages, and has consented to this client.
    const victim = new HostedBrowser(suite.server);
    await authorize(setup, victim);
    const opened = await victim.get(stop.href);
    expect(opened.status).toBe(400);
    expect(opened.html).toContain('another browser');
    expect(opened.location).toBeUndefined();
    // Forged posts of the victim's browser (its own CSRF token) finish nothing either.
    const csrf = hiddenFields((await victim.get(`/a/${setup.app.id}/account`)).html, `/a/${setup.app.id}/sign-out`).csrf!;
    for (const action of ['continue', 'authorize']) {
      const forged = await victim.post(`${signInPath(setup.app)}/${action}`, { csrf, interaction: uid, decision: 'allow' });
      expect(forged.status, action).toBe(400);
    }
    // With the uid planted as the victim's interaction cookie: its signature does not match.
    victim.cookies.set('_interaction', uid);
    expect((await victim.get(stop.href)).status).toBe(400);
    // Nothing was recorded for the attacker's interaction: resuming it gets no code.
    const resumed = await attacker.get(`${issuerOf(setup.app)}/auth/${uid}`);
    expect(resumed.location ?? '').not.toContain('code=');
  });

  it('redirect_uri must match exactly: a near miss is an error page, never a redirect', async () => {
    const setup = await hostedApp();
    for (const redirectUri of [`${WEB_CALLBACK}/`, `${WEB_CALLBACK}?next=1`, WEB_CALLBACK.toUpperCase()]) {
      const { url } = await authorizationUrl(setup, { redirect_uri: redirectUri });
      const answer = await new HostedBrowser(suite.server).get(url);
      expect(answer.status, redirectUri).toBe(400);
      expect(answer.location, redirectUri).toBeUndefined();
      expect(answer.html).toContain('This sign-in cannot continue');
      expect(answer.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    }
  });
});

describe('on a verified custom domain', () => {
  /** `fetch` as the relying party's library calls it: a URL on `domain` reaches the server with that Host. */
  const domainFetch =
    (domain: string): typeof fetch =>
    async (input, init) => {
      const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      const body = init?.body === undefined || init.body === null ? undefined : String(init.body);
      const headers = Object.fromEntries(new Headers(init?.headers).entries());
      return new Promise<Response>((resolve, reject) => {
        const outgoing = httpRequest(
          new URL(url.pathname + url.search, suite.server.url),
          {
            method: init?.method ?? 'GET',
            headers: {
              ...headers,
              host: url.host === domain ? domain : url.host,
              ...(body ? { 'content-length': Buffer.byteLength(body) } : {}),
            },
          },
          async (incoming) => {
            const chunks: Buffer[] = [];
            for await (const chunk of incoming) chunks.push(chunk as Buffer);
            const answer = new Headers();
            for (const [name, value] of Object.entries(incoming.headers)) {
              for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) answer.append(name, one);
            }
            resolve(
              new Response(chunks.length ? Buffer.concat(chunks) : null, { status: incoming.statusCode ?? 0, headers: answer }),
            );
          },
        );
        outgoing.on('error', reject);
        outgoing.end(body);
      });
    };

  async function domainSetup() {
    const domain = `login-${Date.now().toString(36)}.acme-notes.com`;
    const app = await oauthApp(suite.server, { login_url: null });
    const added = await ok(app.rest('POST', `/v1/applications/${app.id}/domains`, { domain }));
    await sql(suite.server, "update custom_domains set status = 'verified' where id = ?", [added.id]);
    const client = await createClient(app);
    const config = await oidc.discovery(
      new URL(`http://${domain}`),
      client.id,
      { id_token_signed_response_alg: 'EdDSA' },
      oidc.ClientSecretBasic(client.client_secret!),
      {
        execute: [oidc.allowInsecureRequests],
        [oidc.customFetch]: domainFetch(domain) as never,
      },
    );
    return { domain, app, client, config };
  }

  it('the provider answers at the domain’s root with the domain as its issuer; its login is the domain’s sign-in page', async () => {
    const { domain, app, config } = await domainSetup();
    const metadata = config.serverMetadata();
    expect(metadata.issuer).toBe(`http://${domain}`);
    expect(metadata.authorization_endpoint).toBe(`http://${domain}/auth`);
    expect(metadata.token_endpoint).toBe(`http://${domain}/token`);
    expect(metadata.jwks_uri).toBe(`http://${domain}/jwks`);
    // RFC 8414's name for the same document, at the root.
    const rfc8414 = await domainFetch(domain)(`http://${domain}/.well-known/oauth-authorization-server`);
    expect((await rfc8414.json()).issuer).toBe(`http://${domain}`);
    // The service's own issuer for the application is unchanged.
    expect((await (await fetch(`${suite.server.url}/oauth2/${app.id}/.well-known/openid-configuration`)).json()).issuer).toBe(
      issuerOf(app),
    );

    // A person signs in on the domain: the request goes to the domain's own sign-in page, and the code comes back.
    const browser = new HostedBrowser(suite.server, { host: domain });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const start = oidc.buildAuthorizationUrl(config, {
      redirect_uri: WEB_CALLBACK,
      scope: 'openid email',
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    expect(start.origin).toBe(`http://${domain}`);
    const stop = await browser.get(start.pathname + start.search);
    expect(stop.status).toBe(303);
    const login = new URL(stop.location ?? '', `http://${domain}`);
    expect(`${login.origin}${login.pathname}`).toBe(`http://${domain}/sign-in`);
    const form = await browser.get(login.pathname + login.search);
    expect(form.status, form.html).toBe(200);
    const email = uniqueEmail('domain-oidc');
    const started = await browser.submit(form, '/sign-in', { email });
    expect(started.location).toBe('/sign-in/wait');
    // The link confirms on the service's own host; the domain's waiting page collects the sign-in and goes on.
    const link = linkIn(await suite.smtp.next(email));
    const other = new HostedBrowser(suite.server);
    await other.submit(await other.get(link.pathname + link.search), `/a/${app.id}/magic-link`);
    let at = await browser.get('/sign-in/wait');
    let callback: URL | undefined;
    for (let hops = 0; hops < 10 && !callback; hops++) {
      if (at.location) {
        const next = new URL(at.location, `http://${domain}`);
        if (next.href.startsWith(WEB_CALLBACK)) callback = next;
        else at = await browser.get(next.pathname + next.search);
      } else if (at.html.includes('action="/sign-in/authorize"')) {
        const scopes = Object.fromEntries([...at.html.matchAll(/name="(scope:[^"]+)"/g)].map((m) => [m[1]!, 'on']));
        at = await browser.submit(at, '/sign-in/authorize', { decision: 'allow', ...scopes });
      } else throw new Error(`an unexpected page: ${at.status} ${at.html}`);
    }
    if (!callback) throw new Error('no callback');
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    const claims = tokens.claims();
    expect(claims?.iss).toBe(`http://${domain}`);
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, claims!.sub);
    expect(userinfo.email).toBe(email);
  });

  it('a pending domain and the service’s own host have no provider at the root', async () => {
    const domain = `pending-${Date.now().toString(36)}.acme-notes.com`;
    const app = await oauthApp(suite.server, { login_url: null });
    await ok(app.rest('POST', `/v1/applications/${app.id}/domains`, { domain }));
    for (const host of [domain, 'gatehouse.test']) {
      const answer = await domainFetch(host)(`http://${host}/.well-known/openid-configuration`);
      expect(answer.status, host).toBe(404);
    }
  });
});

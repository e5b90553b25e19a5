import { gzipSync } from 'node:zlib';
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { describe, expect, it } from 'vitest';
import { SoftwareAuthenticator } from './helpers/authenticator.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { HostedBrowser, type HostedPage, hiddenFields, signInOnHostedPages } from './helpers/hosted.ts';
import { ok, sql, type TestApp } from './helpers/server.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * Passkeys on the hosted pages over plain HTTP, with a software authenticator playing the browser: the sign-in page's
 * passkey (options route + the submitted assertion), the passkey as a second factor, adding and removing one on the
 * account page — and the attacks: a post without this browser's CSRF token, a replayed assertion, a state taken
 * from another browser, `settings.sign_in.passkeys: false`. (Chromium runs the real ceremonies in
 * browser-hosted-passkeys.test.ts.)
 */
const suite = serverSuite();
/** The hosted pages' origin (the test server's base URL): the application allows it, so it is the relying party. */
const ORIGIN = 'http://gatehouse.test';

const passkeyApp = (settings: Record<string, unknown> = {}) =>
  suite.server.createApp({ name: 'Passkey Notes', allowed_origins: [ORIGIN], settings });

interface Ceremony<T> {
  options: T;
  state: string;
  binding: string;
}

/** The script's options request: the passkey form's fields (CSRF token, pending token) to `…/options`. */
async function options<T>(
  browser: HostedBrowser,
  page: HostedPage,
  route: string,
): Promise<{ answer: HostedPage; ceremony: Ceremony<T> }> {
  const { state: _s, binding: _b, credential: _c, ...fields } = hiddenFields(page.html, route);
  const answer = await browser.post(`${route}/options`, fields);
  return { answer, ceremony: answer.status === 200 ? JSON.parse(answer.html) : undefined };
}

/** What the script submits after the ceremony: the form's fields, the state, its binding and the credential. */
const finish = (browser: HostedBrowser, page: HostedPage, route: string, ceremony: Ceremony<unknown>, credential: unknown) =>
  browser.submit(page, route, { state: ceremony.state, binding: ceremony.binding, credential: JSON.stringify(credential) });

/** Signs `email` in by magic link on the hosted pages and adds a passkey on the account page. */
async function withPasskey(app: TestApp, email: string, authenticator = new SoftwareAuthenticator()) {
  const browser = new HostedBrowser(suite.server);
  const account = await browser.follow(await signInOnHostedPages(browser, suite.smtp, app, email));
  expect(account.status).toBe(200);
  expect(account.html).toContain('You have no passkey yet.');
  const route = `/a/${app.id}/passkeys/register`;
  const { answer, ceremony } = await options<PublicKeyCredentialCreationOptionsJSON>(browser, account, route);
  expect(answer.status, answer.html).toBe(200);
  expect(ceremony.options.rp).toEqual({ id: 'gatehouse.test', name: 'Passkey Notes' });
  const credential = await authenticator.create(ceremony.options, ORIGIN);
  const added = await finish(browser, account, route, ceremony, credential);
  expect(added.status).toBe(303);
  expect(added.location).toBe(`/a/${app.id}/account?passkeys=added`);
  await suite.smtp.next(email); // the "passkey added" notice
  return { browser, authenticator, credential };
}

/** A fresh browser's passkey sign-in: the page, the options, the authenticator's assertion. */
async function passkeyAssertion(app: TestApp, authenticator: SoftwareAuthenticator, browser = new HostedBrowser(suite.server)) {
  const page = await browser.get(`/a/${app.id}/sign-in`);
  const route = `/a/${app.id}/passkeys/sign-in`;
  const { answer, ceremony } = await options<PublicKeyCredentialRequestOptionsJSON>(browser, page, route);
  expect(answer.status, answer.html).toBe(200);
  const credential = await authenticator.get(ceremony.options, ORIGIN);
  return { browser, page, route, ceremony, credential };
}

describe('passkeys on the hosted sign-in page', () => {
  it('the page carries the passkey box hidden (shown by its script), the scripts by nonce, ≤ 50 kB gzip of script and style', async () => {
    const app = await passkeyApp();
    const browser = new HostedBrowser(suite.server);
    const page = await browser.get(`/a/${app.id}/sign-in`);
    expect(page.status).toBe(200);
    // The email form works alone; the passkey box is hidden until the script shows it.
    expect(page.html).toContain('autocomplete="username webauthn"');
    expect(page.html).toMatch(/<div id="passkey" hidden data-ceremony="sign-in"/);
    expect(page.html).toContain('Sign in with a passkey');
    const csp = page.headers.get('content-security-policy') ?? '';
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    expect(csp).not.toContain("'self' 'nonce"); // no script file: everything inline with the nonce
    const scripts = [...page.html.matchAll(/<script nonce="([^"]+)">([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBe(2);
    for (const [, n] of scripts) expect(n).toBe(nonce);
    expect(page.html.match(/<script/g)?.length).toBe(2);
    const styles = [...page.html.matchAll(/<style nonce="[^"]+">([\s\S]*?)<\/style>/g)].map((m) => m[1]);
    const code = scripts.map((m) => m[2]).join('') + styles.join('');
    const gzipped = gzipSync(code).length;
    console.info(`hosted sign-in page: script and style ${code.length} bytes, ${gzipped} bytes gzip`);
    expect(gzipped).toBeLessThanOrEqual(50 * 1024);
  });

  it('signs in with a passkey: options, assertion, the browser session; the same assertion replayed is refused', async () => {
    const app = await passkeyApp();
    const email = uniqueEmail('hosted-passkey');
    const { authenticator } = await withPasskey(app, email);

    const { browser, page, route, ceremony, credential } = await passkeyAssertion(app, authenticator);
    const signedIn = await finish(browser, page, route, ceremony, credential);
    expect(signedIn.status, signedIn.html).toBe(303);
    expect(signedIn.location).toBe(`/a/${app.id}/account`);
    expect(browser.cookies.get(`gh_session_${app.id}`)).toBeTruthy();
    const account = await browser.follow(signedIn);
    expect(account.html).toContain(`Signed in as ${email}`);

    // Replayed (a second post of the same state and assertion, in the same browser): the state is spent.
    const replay = new HostedBrowser(suite.server);
    for (const [k, v] of browser.cookies) if (k !== `gh_session_${app.id}`) replay.cookies.set(k, v);
    const replayed = await finish(replay, page, route, ceremony, credential);
    expect(replayed.status).toBe(401);
    expect(replayed.html).toContain('This passkey was not accepted');
    expect(replay.cookies.get(`gh_session_${app.id}`)).toBeUndefined();
  });

  it('the options and sign-in routes refuse a missing or another browser’s CSRF token (403)', async () => {
    const app = await passkeyApp();
    const { authenticator } = await withPasskey(app, uniqueEmail('hosted-passkey-csrf'));
    const { browser, route, ceremony, credential } = await passkeyAssertion(app, authenticator);
    const attacker = new HostedBrowser(suite.server);
    const attackerCsrf = hiddenFields((await attacker.get(`/a/${app.id}/sign-in`)).html, `/a/${app.id}/sign-in`).csrf!;
    const fields = { state: ceremony.state, binding: ceremony.binding, credential: JSON.stringify(credential) };
    for (const csrf of [undefined, attackerCsrf]) {
      const withCsrf: Record<string, string> = csrf ? { csrf } : {};
      expect((await browser.post(`${route}/options`, withCsrf)).status).toBe(403);
      const refused = await browser.post(route, { ...fields, ...withCsrf });
      expect(refused.status).toBe(403);
      expect(browser.cookies.get(`gh_session_${app.id}`)).toBeUndefined();
    }
  });

  it('a state (with its binding) taken from another browser is refused there, and stays good in its own', async () => {
    const app = await passkeyApp();
    const { authenticator } = await withPasskey(app, uniqueEmail('hosted-passkey-state'));
    const { browser, page, route, ceremony, credential } = await passkeyAssertion(app, authenticator);
    const thief = new HostedBrowser(suite.server);
    const thiefPage = await thief.get(`/a/${app.id}/sign-in`);
    const stolen = await finish(thief, thiefPage, route, ceremony, credential);
    expect(stolen.status).toBe(403);
    expect(thief.cookies.get(`gh_session_${app.id}`)).toBeUndefined();
    // Without a binding, or with the state of another ceremony's binding: refused too.
    const other = await passkeyAssertion(app, authenticator, thief);
    const mixed = await finish(thief, thiefPage, route, { ...ceremony, binding: other.ceremony.binding }, credential);
    expect(mixed.status).toBe(403);
    // The browser that started the ceremony still signs in with it (nothing was spent by the refusals).
    const signedIn = await finish(browser, page, route, ceremony, credential);
    expect(signedIn.status, signedIn.html).toBe(303);
  });

  it('`sign_in.passkeys: false`: no passkey on the sign-in page, no Add on the account page, the routes are 404', async () => {
    const app = await passkeyApp({ sign_in: { magic_link: true, passkeys: false } });
    const browser = new HostedBrowser(suite.server);
    const page = await browser.get(`/a/${app.id}/sign-in`);
    expect(page.html).not.toContain('id="passkey"');
    expect(page.html).not.toContain('<script');
    const { csrf } = hiddenFields(page.html, `/a/${app.id}/sign-in`);
    for (const path of ['sign-in/options', 'sign-in', 'register/options', 'register']) {
      expect((await browser.post(`/a/${app.id}/passkeys/${path}`, { csrf: csrf! })).status, path).toBe(404);
    }
    const account = await browser.follow(await signInOnHostedPages(browser, suite.smtp, app, uniqueEmail('hosted-nopasskey')));
    expect(account.html).toContain('Passkeys');
    expect(account.html).not.toContain('Add a passkey');
  });

  it('an application whose relying party does not include the pages’ origin shows no passkey (the ceremony could not work)', async () => {
    const app = await suite.server.createApp({ name: 'Elsewhere', allowed_origins: ['https://app.example.com'] });
    const page = await new HostedBrowser(suite.server).get(`/a/${app.id}/sign-in`);
    expect(page.status).toBe(200);
    expect(page.html).not.toContain('id="passkey"');
  });
});

describe('the passkey as a second factor on the hosted pages', () => {
  it('a magic link stops at the second factor; the passkey completes it', async () => {
    const app = await passkeyApp();
    const email = uniqueEmail('hosted-passkey-mfa');
    const { authenticator } = await withPasskey(app, email);
    const browser = new HostedBrowser(suite.server);
    const mfa = await signInOnHostedPages(browser, suite.smtp, app, email);
    expect(mfa.status).toBe(200);
    expect(mfa.html).toContain('Use your passkey');
    const route = `/a/${app.id}/passkeys/mfa`;
    const fields = hiddenFields(mfa.html, route);
    expect(fields.methods).toBe('passkey');
    const { answer, ceremony } = await options<PublicKeyCredentialRequestOptionsJSON>(browser, mfa, route);
    expect(answer.status, answer.html).toBe(200);
    const credential = await authenticator.get(ceremony.options, ORIGIN);
    // Another browser cannot finish it with this state.
    const thief = new HostedBrowser(suite.server);
    const thiefCsrf = hiddenFields((await thief.get(`/a/${app.id}/sign-in`)).html, `/a/${app.id}/sign-in`).csrf!;
    const stolen = await thief.post(route, {
      ...fields,
      csrf: thiefCsrf,
      state: ceremony.state,
      binding: ceremony.binding,
      credential: JSON.stringify(credential),
    });
    expect(stolen.status).toBe(403);
    const done = await finish(browser, mfa, route, ceremony, credential);
    expect(done.status, done.html).toBe(303);
    expect((await browser.follow(done)).html).toContain(`Signed in as ${email}`);
    // The options route without a CSRF token, or with another browser's: 403.
    expect((await thief.post(`${route}/options`, { pending_token: fields.pending_token! })).status).toBe(403);
    expect((await thief.post(`${route}/options`, { pending_token: fields.pending_token!, csrf: fields.csrf! })).status).toBe(403);
  });
});

describe('passkeys on the hosted account page', () => {
  it('lists the passkey; removing it needs aal 2 (a magic-link session is offered the step-up); at aal 2 it goes', async () => {
    const app = await passkeyApp();
    const email = uniqueEmail('hosted-passkey-remove');
    const { browser, authenticator } = await withPasskey(app, email);
    const account = await browser.get(`/a/${app.id}/account?passkeys=added`);
    expect(account.html).toContain('Passkey added.');
    const removeFields = hiddenFields(account.html, `/a/${app.id}/passkeys/remove`);
    expect(removeFields.id).toMatch(/^[0-9a-f-]{36}$/);
    // This session signed in with a magic link (aal 1): the API asks for a step up.
    const refused = await browser.submit(account, `/a/${app.id}/passkeys/remove`);
    expect(refused.location).toBe(`/a/${app.id}/account?passkeys=step_up`);
    const told = await browser.follow(refused);
    expect(told.html).toContain('To remove a passkey, verify with your second factor first.');
    expect(told.html).toContain(`action="/a/${app.id}/account/verify"`);

    // Signed in with the passkey (aal 2) in another browser: Remove works; the sign-in page no longer accepts it.
    const { browser: strong, page, route, ceremony, credential } = await passkeyAssertion(app, authenticator);
    const strongAccount = await strong.follow(await finish(strong, page, route, ceremony, credential));
    const removed = await strong.submit(strongAccount, `/a/${app.id}/passkeys/remove`);
    expect(removed.location).toBe(`/a/${app.id}/account?passkeys=removed`);
    expect((await strong.follow(removed)).html).toContain('You have no passkey yet.');
    expect((await suite.smtp.next(email)).subject).toMatch(/^A passkey was removed/);
    const again = await passkeyAssertion(app, authenticator);
    expect((await finish(again.browser, again.page, again.route, again.ceremony, again.credential)).status).toBe(401);
  });

  it('Verify with your second factor: the passkey alone raises this session, and Remove then works here', async () => {
    const app = await passkeyApp();
    const email = uniqueEmail('hosted-passkey-step-up');
    const { browser, authenticator } = await withPasskey(app, email);
    const account = await browser.get(`/a/${app.id}/account`);
    const refused = await browser.submit(account, `/a/${app.id}/passkeys/remove`);
    const told = await browser.follow(refused);
    expect(told.html).toContain(`action="/a/${app.id}/account/verify"`);
    // The step-up in this browser with the passkey alone: the same session, raised; Remove then works here.
    const [before] = await sql(
      suite.server,
      'select id, aal from sessions where revoked_at is null and user_id = (select id from users where primary_email = ?)',
      [email],
    );
    expect(before.aal).toBe(1);
    const mfa = await browser.submit(told, `/a/${app.id}/account/verify`);
    expect(mfa.status, mfa.html).toBe(200);
    const mfaRoute = `/a/${app.id}/passkeys/mfa`;
    const stepUp = await options<PublicKeyCredentialRequestOptionsJSON>(browser, mfa, mfaRoute);
    expect(stepUp.answer.status, stepUp.answer.html).toBe(200);
    const asserted = await authenticator.get(stepUp.ceremony.options, ORIGIN);
    const raised = await finish(browser, mfa, mfaRoute, stepUp.ceremony, asserted);
    expect(raised.location).toBe(`/a/${app.id}/account`);
    expect(await sql(suite.server, 'select id, aal from sessions where id = ?', [before.id])).toEqual([
      { id: before.id, aal: 2 },
    ]);
    const raisedAccount = await browser.follow(raised);
    expect(raisedAccount.html).not.toContain('Verify with your second factor');
    const removedHere = await browser.submit(raisedAccount, `/a/${app.id}/passkeys/remove`);
    expect(removedHere.location).toBe(`/a/${app.id}/account?passkeys=removed`);
    expect((await suite.smtp.next(email)).subject).toMatch(/^A passkey was removed/);
  });

  it('adding a passkey needs a session, this browser’s CSRF token, and a state bound to this browser', async () => {
    const app = await passkeyApp();
    const browser = new HostedBrowser(suite.server);
    const page = await browser.get(`/a/${app.id}/sign-in`);
    const { csrf } = hiddenFields(page.html, `/a/${app.id}/sign-in`);
    expect((await browser.post(`/a/${app.id}/passkeys/register/options`, { csrf: csrf! })).status).toBe(401);
    expect((await browser.post(`/a/${app.id}/passkeys/register/options`, {})).status).toBe(403);

    const account = await browser.follow(await signInOnHostedPages(browser, suite.smtp, app, uniqueEmail('hosted-add')));
    const route = `/a/${app.id}/passkeys/register`;
    const { ceremony } = await options<PublicKeyCredentialCreationOptionsJSON>(browser, account, route);
    const credential = await new SoftwareAuthenticator().create(ceremony.options, ORIGIN);
    const forged = await finish(browser, account, route, { ...ceremony, binding: 'x' }, credential);
    expect(forged.location).toBe(`/a/${app.id}/account?passkeys=failed`);
    expect((await browser.get(`/a/${app.id}/account`)).html).toContain('You have no passkey yet.');
    const added = await finish(browser, account, route, ceremony, credential);
    expect(added.location).toBe(`/a/${app.id}/account?passkeys=added`);
    expect((await browser.follow(added)).html.match(/action="[^"]+\/passkeys\/remove"/g)).toHaveLength(1);
  });
});

describe('passkeys at the root of a verified custom domain', () => {
  it('the domain is the relying party’s origin: add a passkey there and sign in with it, posts naming the domain as Origin', async () => {
    const domain = `login-${Date.now().toString(36)}.passkey-notes.com`;
    const origin = `http://${domain}`; // the test server's base URL is http: so is the domain's origin
    const app = await suite.server.createApp({ name: 'Domain passkeys', allowed_origins: [origin] });
    const added = await ok(app.rest('POST', `/v1/applications/${app.id}/domains`, { domain }));
    await sql(suite.server, 'update custom_domains set status = ? where id = ?', ['verified', added.id]);
    const headers = { host: domain, origin };

    // Signed in on the domain (the magic link confirmed on the service's host, collected by the domain's page).
    const browser = new HostedBrowser(suite.server, headers);
    const form = await browser.get('/sign-in');
    expect(form.html).toContain('data-options="/passkeys/sign-in/options"');
    const email = uniqueEmail('hosted-domain-passkey');
    await browser.submit(form, '/sign-in', { email });
    const link = linkIn(await suite.smtp.next(email));
    const other = new HostedBrowser(suite.server);
    await other.submit(await other.get(link.pathname + link.search), `/a/${app.id}/magic-link`);
    const account = await browser.follow(await browser.get('/sign-in/wait'));
    expect(account.html).toContain(`Signed in as ${email}`);

    const authenticator = new SoftwareAuthenticator();
    const registration = await options<PublicKeyCredentialCreationOptionsJSON>(browser, account, '/passkeys/register');
    expect(registration.ceremony.options.rp.id).toBe(domain);
    const credential = await authenticator.create(registration.ceremony.options, origin);
    const done = await finish(browser, account, '/passkeys/register', registration.ceremony, credential);
    expect(done.location).toBe('/account?passkeys=added');
    await suite.smtp.next(email);

    const fresh = new HostedBrowser(suite.server, headers);
    const page = await fresh.get('/sign-in');
    const { ceremony } = await options<PublicKeyCredentialRequestOptionsJSON>(fresh, page, '/passkeys/sign-in');
    const signedIn = await finish(fresh, page, '/passkeys/sign-in', ceremony, await authenticator.get(ceremony.options, origin));
    expect(signedIn.location).toBe('/account');
    expect((await fresh.follow(signedIn)).html).toContain(`Signed in as ${email}`);
    // Another site's post to the domain is still refused.
    const evil = new HostedBrowser(suite.server, { host: domain, origin: 'https://evil.example' });
    for (const [k, v] of fresh.cookies) evil.cookies.set(k, v);
    const { csrf } = hiddenFields(page.html, '/passkeys/sign-in');
    expect((await evil.post('/passkeys/sign-in/options', { csrf: csrf! })).status).toBe(403);
    expect((await fresh.post('/passkeys/sign-in/options', { csrf: csrf! })).status).toBe(200);
  });
});

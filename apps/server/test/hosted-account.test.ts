import { describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { HostedBrowser, type HostedPage, hiddenFields, signInOnHostedPages } from './helpers/hosted.ts';
import { totpCode } from './helpers/mfa.ts';
import { authorize, createClient, oauthApp, oidc, relyingParty, WEB_CALLBACK } from './helpers/oauth2.ts';
import { sql, type TestApp } from './helpers/server.ts';
import { signIn } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * The hosted account page `/a/{id}/account` over plain HTTP: each action is a form post with this browser's CSRF token
 * (a post without it is 403 and changes nothing), answered by a 303 back to the page with its outcome shown once. It
 * acts through the API as the signed-in person, so another person's session, identity or grant is not found and
 * stays as it was; what needs a session at aal 2 says so and offers the way to one. And the enrolment an application
 * that requires a second factor makes before anything else.
 */
const suite = serverSuite();

const sessionCookie = (app: TestApp) => `gh_session_${app.id}`;

/** A browser signed in as `email` on the application's hosted pages, on its account page. */
async function signedIn(app: TestApp, email: string): Promise<{ browser: HostedBrowser; account: HostedPage }> {
  const browser = new HostedBrowser(suite.server, { 'user-agent': `Browser of ${email}` });
  const done = await signInOnHostedPages(browser, suite.smtp, app, email);
  expect(done.location, done.html).toBe(`/a/${app.id}/account`);
  const account = await browser.get(`/a/${app.id}/account`);
  expect(account.status).toBe(200);
  return { browser, account };
}

/** Posts the account page's form for `action`, expects the 303 back, and answers the page it leads to. */
async function act(
  browser: HostedBrowser,
  app: TestApp,
  page: HostedPage,
  action: string,
  fields: Record<string, string> = {},
  to = `/a/${app.id}/account`,
): Promise<HostedPage> {
  const answer = await browser.submit(page, `/a/${app.id}${action}`, fields);
  expect(answer.status, answer.html).toBe(303);
  expect(answer.location).toBe(to);
  return browser.get(answer.location!);
}

async function userId(email: string): Promise<string> {
  const [user] = await sql(suite.server, 'select id from users where primary_email = ?', [email]);
  return user.id;
}

async function sessionsOf(email: string): Promise<Array<{ id: string; aal: number; revoked: boolean }>> {
  return sql(
    suite.server,
    `select s.id, s.aal, s.revoked_at is not null as revoked from sessions s join users u on u.id = s.user_id
      where u.primary_email = ? order by s.created_at`,
    [email],
  );
}

async function factorsOf(email: string): Promise<Array<{ kind: string; confirmed: boolean }>> {
  return sql(
    suite.server,
    `select f.kind, f.confirmed_at is not null as confirmed from mfa_factors f join users u on u.id = f.user_id
      where u.primary_email = ? order by f.created_at`,
    [email],
  );
}

/** A forged post (no CSRF token, or another browser's) is 403 and nothing else. */
async function expectForgedRefused(browser: HostedBrowser, app: TestApp, action: string, fields: Record<string, string>) {
  const forged = await browser.post(`/a/${app.id}${action}`, fields);
  expect(forged.status).toBe(403);
  expect(forged.html).toContain('This form has expired');
  const other = new HostedBrowser(suite.server);
  const otherCsrf = hiddenFields((await other.get(`/a/${app.id}/sign-in`)).html, `/a/${app.id}/sign-in`).csrf!;
  expect((await browser.post(`/a/${app.id}${action}`, { ...fields, csrf: otherCsrf })).status).toBe(403);
}

/** Enrols an authenticator app on the account page; answers its seed. */
async function enrolOnPage(browser: HostedBrowser, app: TestApp, account: HostedPage): Promise<string> {
  const enrolment = await act(browser, app, account, '/account/totp/enroll', {}, `/a/${app.id}/account/totp`);
  const secret = (/<code class="secret">([A-Z2-7 ]+)<\/code>/.exec(enrolment.html)?.[1] ?? '').replace(/ /g, '');
  expect(secret).toMatch(/^[A-Z2-7]{32}$/);
  const done = await act(browser, app, enrolment, '/account/totp/confirm', { code: totpCode(secret) });
  expect(done.html).toContain('Your authenticator app is set up.');
  return secret;
}

describe('the account page', () => {
  it('shows the profile and saves the name; the outcome is shown once; a forged post changes nothing', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('account-profile');
    const { browser, account } = await signedIn(app, email);
    expect(account.html).toContain(`Signed in as ${email}`);
    // Same-origin referrers only: under no-referrer, browsers would send `Origin: null` with the pages' own posts.
    expect(account.headers.get('referrer-policy')).toBe('same-origin');
    for (const heading of [
      'Profile',
      'Where you are signed in',
      'Authenticator app',
      'Backup codes',
      'Linked accounts',
      'Apps you authorized',
    ]) {
      expect(account.html).toContain(`>${heading}</h2>`);
    }
    await expectForgedRefused(browser, app, '/account/profile', { name: 'Mallory' });
    const saved = await act(browser, app, account, '/account/profile', { name: '  Ada <Lovelace>  ' });
    expect(saved.html).toContain('role="status">Your profile is saved.');
    expect(saved.html).toContain('value="Ada &lt;Lovelace&gt;"');
    const [user] = await sql(suite.server, 'select profile from users where primary_email = ?', [email]);
    expect(user.profile).toEqual({ name: 'Ada <Lovelace>' });
    // Shown once: the next view has no message.
    expect((await browser.get(`/a/${app.id}/account`)).html).not.toContain('Your profile is saved.');
    // Too long a name is refused with a message, and nothing changes.
    const refused = await act(browser, app, saved, '/account/profile', { name: 'x'.repeat(201) });
    expect(refused.html).toContain('role="alert">Check what you entered and try again.');
    const [after] = await sql(suite.server, 'select profile from users where primary_email = ?', [email]);
    expect(after.profile).toEqual({ name: 'Ada <Lovelace>' });
  });

  it('the outcome comes only from the sealed flow cookie: nothing in the URL becomes a message', async () => {
    const app = await suite.server.createApp();
    const { browser } = await signedIn(app, uniqueEmail('account-flash'));
    const page = await browser.get(`/a/${app.id}/account?flash=account.done.profile_saved&message=Hacked`);
    expect(page.html).not.toContain('Your profile is saved.');
    expect(page.html).not.toContain('Hacked');
    // A tampered flow cookie is no flow at all.
    browser.cookies.set(`gh_flow_${app.id}`, 'tampered');
    expect((await browser.get(`/a/${app.id}/account`)).status).toBe(200);
  });

  it('a browser without a session goes to the sign-in page, and its posts do nothing', async () => {
    const app = await suite.server.createApp();
    const browser = new HostedBrowser(suite.server);
    expect((await browser.get(`/a/${app.id}/account`)).location).toBe(`/a/${app.id}/sign-in`);
    expect((await browser.get(`/a/${app.id}/account/totp`)).location).toBe(`/a/${app.id}/sign-in`);
    const form = await browser.get(`/a/${app.id}/sign-in`);
    const { csrf } = hiddenFields(form.html, `/a/${app.id}/sign-in`);
    const answer = await browser.post(`/a/${app.id}/account/profile`, { csrf: csrf!, name: 'x' });
    expect(answer.location).toBe(`/a/${app.id}/sign-in`);
  });
});

describe('sessions on the account page', () => {
  it('lists them with this one marked; revokes another; another person’s session id is refused and stays live', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('account-sessions');
    const { browser: laptop } = await signedIn(app, email);
    const { browser: phone } = await signedIn(app, email);
    const otherEmail = uniqueEmail('account-sessions-other');
    await signedIn(app, otherEmail);
    const [theirs] = await sessionsOf(otherEmail);

    const account = await laptop.get(`/a/${app.id}/account`);
    expect(account.html).toContain('This browser');
    expect(account.html.match(/Browser of /g)).toHaveLength(2);
    const [laptopSession, phoneSession] = await sessionsOf(email);
    // One revoke form: for the other session, never this one.
    expect(hiddenFields(account.html, `/a/${app.id}/account/sessions/revoke`).id).toBe(phoneSession!.id);

    await expectForgedRefused(laptop, app, '/account/sessions/revoke', { id: phoneSession!.id });
    const refused = await act(laptop, app, account, '/account/sessions/revoke', { id: theirs!.id });
    expect(refused.html).toContain('That item does not exist any more.');
    const garbage = await act(laptop, app, account, '/account/sessions/revoke', { id: 'not-an-id' });
    expect(garbage.html).toContain('Check what you entered and try again.');
    expect(await sessionsOf(otherEmail)).toEqual([expect.objectContaining({ revoked: false })]);
    expect(await sessionsOf(email)).toEqual([
      expect.objectContaining({ revoked: false }),
      expect.objectContaining({ revoked: false }),
    ]);

    const revoked = await act(laptop, app, account, '/account/sessions/revoke', { id: phoneSession!.id });
    expect(revoked.html).toContain('That session is signed out.');
    expect(await sessionsOf(email)).toEqual([
      expect.objectContaining({ id: laptopSession!.id, revoked: false }),
      expect.objectContaining({ id: phoneSession!.id, revoked: true }),
    ]);
    expect((await phone.get(`/a/${app.id}/account`)).location).toBe(`/a/${app.id}/sign-in`);
  });
});

describe('the authenticator app and backup codes', () => {
  it('enrols with a QR code and the key as text; a wrong code is refused; the right one confirms', async () => {
    const app = await suite.server.createApp({ name: 'Acme' });
    const email = uniqueEmail('account-totp');
    const { browser, account } = await signedIn(app, email);
    await expectForgedRefused(browser, app, '/account/totp/enroll', {});
    expect(await factorsOf(email)).toEqual([]);

    const enrolment = await act(browser, app, account, '/account/totp/enroll', {}, `/a/${app.id}/account/totp`);
    expect(enrolment.html).toMatch(/<svg class="qr" [^>]*role="img" aria-label="QR code that adds Acme to an authenticator app"/);
    expect(enrolment.html).toMatch(/<path d="(M\d+,\d+h1v1h-1z)+" fill="#000"\/>/);
    const secret = (/<code class="secret">([A-Z2-7 ]+)<\/code>/.exec(enrolment.html)?.[1] ?? '').replace(/ /g, '');
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    // The seed is in the page and in the sealed flow cookie only: no cookie carries it readably.
    expect([...browser.cookies.values()].join(' ')).not.toContain(secret);
    expect(await factorsOf(email)).toEqual([{ kind: 'totp', confirmed: false }]);

    await expectForgedRefused(browser, app, '/account/totp/confirm', { code: totpCode(secret) });
    const wrongCode = totpCode(secret) === '000000' ? '111111' : '000000';
    const wrong = await act(browser, app, enrolment, '/account/totp/confirm', { code: wrongCode }, `/a/${app.id}/account/totp`);
    expect(wrong.html).toContain('role="alert">That code is not right. Try again.');
    // The same seed is still shown: the person scanned it already.
    expect(wrong.html).toContain('<code class="secret">');
    expect((/<code class="secret">([A-Z2-7 ]+)<\/code>/.exec(wrong.html)?.[1] ?? '').replace(/ /g, '')).toBe(secret);
    expect(await factorsOf(email)).toEqual([{ kind: 'totp', confirmed: false }]);

    const done = await act(browser, app, wrong, '/account/totp/confirm', { code: totpCode(secret) });
    expect(done.html).toContain('Your authenticator app is set up.');
    expect(done.html).toContain('Remove the authenticator app');
    expect(await factorsOf(email)).toEqual([{ kind: 'totp', confirmed: true }]);
    // The enrolment page no longer shows the seed.
    expect((await browser.get(`/a/${app.id}/account/totp`)).html).not.toContain(secret.slice(0, 4));
  });

  it('at aal 1 with a factor: removing it and new backup codes need a step-up; verifying with the factor allows both', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('account-step-up');
    const { browser, account } = await signedIn(app, email);
    const secret = await enrolOnPage(browser, app, account);
    await suite.smtp.next(email); // the notice that a second factor was added
    const page = await browser.get(`/a/${app.id}/account`);
    // This session is at aal 1 and the person has a factor: the page offers the step-up.
    expect(page.html).toContain('Verify with your second factor');

    const totpId = hiddenFields(page.html, `/a/${app.id}/account/totp/remove`).id!;
    const removal = await act(browser, app, page, '/account/totp/remove', { id: totpId });
    expect(removal.html).toContain('This change needs a check of your second factor');
    expect(removal.html).toContain(`action="/a/${app.id}/account/verify"`);
    const codes = await act(browser, app, page, '/account/backup-codes');
    expect(codes.html).toContain('This change needs a check of your second factor');
    expect(await factorsOf(email)).toEqual([{ kind: 'totp', confirmed: true }]);

    // The step-up: the second factor alone (no new sign-in, no mail); it raises this session, whose cookie is rotated.
    await expectForgedRefused(browser, app, '/account/verify', {});
    const before = await sessionsOf(email);
    const cookieBefore = browser.cookies.get(sessionCookie(app));
    const mfa = await browser.submit(removal, `/a/${app.id}/account/verify`);
    expect(mfa.status, mfa.html).toBe(200);
    expect(mfa.html).toContain('Two-step verification');
    // A wrong code: the page says so, nothing is raised.
    const wrong = totpCode(secret, 30_000) === '000000' ? '111111' : '000000';
    const refused = await browser.submit(mfa, `/a/${app.id}/mfa`, { code: wrong });
    expect(refused.status).toBe(401);
    expect((await sessionsOf(email))[0]!.aal).toBe(1);
    const verified = await browser.submit(refused, `/a/${app.id}/mfa`, { code: totpCode(secret, 30_000) });
    expect(verified.location).toBe(`/a/${app.id}/account`);
    // The same session, now at aal 2; the browser's cookie is a new one, and the old one names no session.
    expect(await sessionsOf(email)).toEqual([{ id: before[0]!.id, aal: 2, revoked: false }]);
    const cookieAfter = browser.cookies.get(sessionCookie(app));
    expect(cookieAfter).toBeDefined();
    expect(cookieAfter).not.toBe(cookieBefore);
    const stale = new HostedBrowser(suite.server);
    stale.cookies.set(sessionCookie(app), cookieBefore!);
    expect((await stale.get(`/a/${app.id}/account`)).location).toBe(`/a/${app.id}/sign-in`);

    const aal2 = await browser.get(`/a/${app.id}/account`);
    expect(aal2.html).not.toContain('Verify with your second factor');
    await expectForgedRefused(browser, app, '/account/backup-codes', {});
    const shown = await browser.submit(aal2, `/a/${app.id}/account/backup-codes`);
    expect(shown.status).toBe(200);
    expect(shown.html).toContain('they are shown only this once');
    expect(shown.html.match(/<li><code>[0-9a-z]{5}-[0-9a-z]{5}<\/code><\/li>/g)).toHaveLength(10);
    expect(await factorsOf(email)).toEqual([
      { kind: 'totp', confirmed: true },
      { kind: 'backup_code', confirmed: true },
    ]);
    const again = await browser.get(`/a/${app.id}/account`);
    expect(again.html).toContain('Generate a new set');

    await expectForgedRefused(browser, app, '/account/totp/remove', { id: totpId });
    expect(await factorsOf(email)).toHaveLength(2);
    const removed = await act(browser, app, again, '/account/totp/remove', { id: totpId });
    expect(removed.html).toContain('The authenticator app is removed.');
    expect(await factorsOf(email)).toEqual([{ kind: 'backup_code', confirmed: true }]);
  });

  it('another person’s factor id is not found, and their factor stays', async () => {
    const app = await suite.server.createApp();
    const victimEmail = uniqueEmail('account-factor-victim');
    const victim = await signedIn(app, victimEmail);
    await enrolOnPage(victim.browser, app, victim.account);
    const [factor] = await sql(
      suite.server,
      'select f.id from mfa_factors f join users u on u.id = f.user_id where u.primary_email = ?',
      [victimEmail],
    );
    const { browser, account } = await signedIn(app, uniqueEmail('account-factor-attacker'));
    // The attacker has no factor, so no removal form: a post of their own with their CSRF token.
    const { csrf } = hiddenFields(account.html, `/a/${app.id}/account/profile`);
    const answer = await browser.post(`/a/${app.id}/account/totp/remove`, { csrf: csrf!, id: factor.id });
    expect(answer.location).toBe(`/a/${app.id}/account`);
    const refused = await browser.get(answer.location!);
    expect(refused.html).toContain('That item does not exist any more.');
    expect(await factorsOf(victimEmail)).toEqual([{ kind: 'totp', confirmed: true }]);
  });
});

describe('linked accounts and authorized apps', () => {
  const linkIdentity = async (app: TestApp, email: string, id: string, name: string) =>
    sql(
      suite.server,
      `insert into identities (id, application_id, user_id, kind, subject, name, created_at)
        values (?, ?, ?, 'oauth', ?, ?, now())`,
      [id, app.id, await userId(email), `github:${id}`, name],
    );
  const identityCount = async (id: string) =>
    (await sql(suite.server, 'select count(*)::int as count from identities where id = ?', [id]))[0].count;

  it('lists linked accounts and unlinks one; another person’s is refused and stays; with a factor at aal 1, a step-up', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('account-identities');
    const otherEmail = uniqueEmail('account-identities-other');
    const { browser } = await signedIn(app, email);
    await signedIn(app, otherEmail);
    const mine = '01890000-0000-7000-8000-0000000a1d01';
    const theirs = '01890000-0000-7000-8000-0000000a1d02';
    await linkIdentity(app, email, mine, 'ada-gh');
    await linkIdentity(app, otherEmail, theirs, 'mallory-gh');

    const account = await browser.get(`/a/${app.id}/account`);
    expect(account.html).toContain('<strong>ada-gh (github)</strong>');
    expect(account.html).not.toContain('mallory-gh');
    await expectForgedRefused(browser, app, '/account/identities/unlink', { id: mine });
    const refused = await act(browser, app, account, '/account/identities/unlink', { id: theirs });
    expect(refused.html).toContain('That item does not exist any more.');
    expect(await identityCount(theirs)).toBe(1);
    expect(await identityCount(mine)).toBe(1);

    const unlinked = await act(browser, app, account, '/account/identities/unlink', { id: mine });
    expect(unlinked.html).toContain('The account is unlinked.');
    expect(await identityCount(mine)).toBe(0);
    expect(unlinked.html).toContain('No linked accounts.');

    // With a second factor and a session at aal 1, unlinking needs the step-up.
    const second = '01890000-0000-7000-8000-0000000a1d03';
    await linkIdentity(app, email, second, 'ada-gh-2');
    await enrolOnPage(browser, app, await browser.get(`/a/${app.id}/account`));
    const stepUp = await act(browser, app, await browser.get(`/a/${app.id}/account`), '/account/identities/unlink', {
      id: second,
    });
    expect(stepUp.html).toContain('This change needs a check of your second factor');
    expect(await identityCount(second)).toBe(1);
  });

  it('lists the apps the person authorized by name and revokes one; another person’s grant is refused and stays', async () => {
    const app = await oauthApp(suite.server);
    const client = await createClient(app, { name: 'Notes <Pro>' });
    const config = await relyingParty(suite.server, app, client);
    const email = uniqueEmail('account-grants');
    const otherEmail = uniqueEmail('account-grants-other');
    await authorize(suite.server, suite.smtp, app, config, {
      accessToken: (await signIn(suite.server, suite.smtp, app, email)).tokens.access_token,
    });
    await authorize(suite.server, suite.smtp, app, config, {
      accessToken: (await signIn(suite.server, suite.smtp, app, otherEmail)).tokens.access_token,
    });
    const grantOf = async (address: string) =>
      sql(suite.server, `select g.id from oauth2_grants g join users u on u.id = g.user_id where u.primary_email = ?`, [
        address,
      ]) as Promise<Array<{ id: string }>>;
    const [mine] = await grantOf(email);
    const [theirs] = await grantOf(otherEmail);
    expect(mine).toBeTruthy();
    expect(theirs).toBeTruthy();

    const { browser, account } = await signedIn(app, email);
    expect(account.html).toContain('<strong>Notes &lt;Pro&gt;</strong>');
    expect(account.html).toContain('Revoke access of Notes &lt;Pro&gt;');
    expect(hiddenFields(account.html, `/a/${app.id}/account/grants/revoke`).id).toBe(mine!.id);
    await expectForgedRefused(browser, app, '/account/grants/revoke', { id: mine!.id });
    const refused = await act(browser, app, account, '/account/grants/revoke', { id: theirs!.id });
    expect(refused.html).toContain('That item does not exist any more.');
    expect(await grantOf(otherEmail)).toHaveLength(1);
    expect(await grantOf(email)).toHaveLength(1);

    const revoked = await act(browser, app, account, '/account/grants/revoke', { id: mine!.id });
    expect(revoked.html).toContain('The app no longer has access.');
    expect(await grantOf(email)).toEqual([]);
    expect(revoked.html).toContain('No apps.');
  });
});

describe("enrolment when the application requires a second factor (settings.mfa: 'required')", () => {
  it('the sign-in lands on the enrolment page; the account page refuses everything else until enrolled', async () => {
    const app = await suite.server.createApp({ settings: { mfa: 'required' } });
    const email = uniqueEmail('account-required');
    const browser = new HostedBrowser(suite.server);
    const landed = await signInOnHostedPages(browser, suite.smtp, app, email);
    expect(landed.location).toBe(`/a/${app.id}/account/totp`);
    expect(browser.cookies.get(sessionCookie(app))).toMatch(/^bs_/);
    const enrolment = await browser.get(landed.location!);
    expect(enrolment.html).toContain('requires two-step verification');
    expect(enrolment.html).toContain('<svg class="qr"');
    const secret = (/<code class="secret">([A-Z2-7 ]+)<\/code>/.exec(enrolment.html)?.[1] ?? '').replace(/ /g, '');

    // The account page and its actions send the person back to enrol.
    expect((await browser.get(`/a/${app.id}/account`)).location).toBe(`/a/${app.id}/account/totp`);
    const refused = await browser.submit(enrolment, `/a/${app.id}/account/totp/confirm`, { code: 'x' });
    expect(refused.location).toBe(`/a/${app.id}/account/totp`);
    const { csrf } = hiddenFields(enrolment.html, `/a/${app.id}/account/totp/confirm`);
    const profile = await browser.post(`/a/${app.id}/account/profile`, { csrf: csrf!, name: 'Early' });
    expect(profile.location).toBe(`/a/${app.id}/account/totp`);
    const backup = await browser.post(`/a/${app.id}/account/backup-codes`, { csrf: csrf! });
    expect(backup.location).toBe(`/a/${app.id}/account/totp`);
    const page = await browser.get(`/a/${app.id}/account/totp`);
    expect(page.html).toContain('Set up two-step verification first.');
    const [user] = await sql(suite.server, 'select profile from users where primary_email = ?', [email]);
    expect(user.profile).toEqual({});
    expect(await factorsOf(email)).toEqual([{ kind: 'totp', confirmed: false }]);

    const done = await act(browser, app, page, '/account/totp/confirm', { code: totpCode(secret) });
    expect(done.html).toContain('Your authenticator app is set up.');
    expect(done.html).toContain(`Signed in as ${email}`);
    const [session] = await sql(
      suite.server,
      `select s.mfa_enrollment_required from sessions s join users u on u.id = s.user_id where u.primary_email = ?`,
      [email],
    );
    expect(session.mfa_enrollment_required).toBe(false);
  });

  it('after the enrolment, the sign-in continues with the OAuth interaction that asked for it', async () => {
    const app = await suite.server.createApp({ settings: { mfa: 'required' } });
    const email = uniqueEmail('account-required-interaction');
    const browser = new HostedBrowser(suite.server);
    // A client's authorization request, from this browser (an interaction belongs to the browser that started it).
    const config = await relyingParty(suite.server, app, await createClient(app, { scopes: ['openid'] }));
    const started = await browser.get(
      oidc.buildAuthorizationUrl(config, {
        redirect_uri: WEB_CALLBACK,
        scope: 'openid',
        code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
        code_challenge_method: 'S256',
      }).href,
    );
    const uid = new URL(started.location ?? '').searchParams.get('interaction') ?? '';
    const landed = await signInOnHostedPages(browser, suite.smtp, app, email, `?interaction=${uid}`);
    expect(landed.location).toBe(`/a/${app.id}/account/totp`);
    const enrolment = await browser.get(landed.location!);
    const secret = (/<code class="secret">([A-Z2-7 ]+)<\/code>/.exec(enrolment.html)?.[1] ?? '').replace(/ /g, '');
    const done = await browser.submit(enrolment, `/a/${app.id}/account/totp/confirm`, { code: totpCode(secret) });
    expect(done.status).toBe(303);
    expect(done.location).toBe(`/a/${app.id}/sign-in?interaction=${uid}`);
    expect(await factorsOf(email)).toEqual([{ kind: 'totp', confirmed: true }]);
  });
});

import { describe, expect, it } from 'vitest';
import { createUser, uniqueEmail } from './helpers/fixtures.ts';
import { HostedBrowser, hiddenFields, signInOnHostedPages } from './helpers/hosted.ts';
import { enrolTotp, mfaRequired, totpCode } from './helpers/mfa.ts';
import { createClient, oauthApp, oidc, relyingParty, WEB_CALLBACK } from './helpers/oauth2.ts';
import { ok, sql, type TestApp } from './helpers/server.ts';
import { endUser, signIn } from './helpers/sign-in.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * The hosted pages under `/a/{application_id}/` (CONTRACT §9) over plain HTTP, as a browser uses them: server-rendered
 * forms with a CSRF token, the magic link on the same device and on another, a second factor, consent documents, the
 * browser session cookie and sign-out — and the attacks on them: forged posts (login CSRF), a planted session cookie
 * (fixation), markup in names.
 */
const suite = serverSuite();

const cookieLine = (headers: Headers, name: string) => headers.getSetCookie().find((line) => line.startsWith(`${name}=`));
const sessionCookie = (app: TestApp) => `gh_session_${app.id}`;

async function liveSessions(app: TestApp, email: string): Promise<Array<{ id: string; aal: number; revoked: boolean }>> {
  return sql(
    suite.server,
    `select s.id, s.aal, s.revoked_at is not null as revoked from sessions s join users u on u.id = s.user_id
      where s.application_id = ? and u.primary_email = ? order by s.created_at`,
    [app.id, email],
  );
}

describe('the hosted sign-in page', () => {
  it('is HTML with a nonce CSP, no framing, no caching, and a CSRF token in its form', async () => {
    const app = await suite.server.createApp({ name: 'Acme Notes' });
    const browser = new HostedBrowser(suite.server);
    const page = await browser.get(`/a/${app.id}/sign-in`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'none'");
    const nonce = /style-src 'nonce-([^']+)'/.exec(csp)?.[1];
    expect(nonce).toBeTruthy();
    expect(page.html).toContain(`<style nonce="${nonce}">`);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.html).toContain('<title>Sign in to Acme Notes &middot; Acme Notes</title>');
    expect(hiddenFields(page.html, `/a/${app.id}/sign-in`).csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(cookieLine(page.headers, 'gh_csrf')).toMatch(/HttpOnly/i);
    // A second visit keeps the browser's CSRF cookie and its token.
    const again = await browser.get(`/a/${app.id}/sign-in`);
    expect(cookieLine(again.headers, 'gh_csrf')).toBeUndefined();
    expect(hiddenFields(again.html, `/a/${app.id}/sign-in`).csrf).toBe(hiddenFields(page.html, `/a/${app.id}/sign-in`).csrf);
  });

  it('an unknown application is a 404 page with the request id and nothing else', async () => {
    const browser = new HostedBrowser(suite.server, { 'x-request-id': 'req-hosted-404' });
    for (const id of ['00000000-0000-7000-8000-000000000000', 'not-an-id']) {
      const page = await browser.get(`/a/${id}/sign-in`);
      expect(page.status).toBe(404);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.html).toContain('req-hosted-404');
      expect(page.html).toContain('This page does not exist.');
    }
  });

  it('speaks the language ui_locales or Accept-Language asks for (English otherwise)', async () => {
    const app = await suite.server.createApp({ name: 'Acme' });
    const french = await new HostedBrowser(suite.server, { 'accept-language': 'de-DE, fr-CA;q=0.8, en;q=0.5' }).get(
      `/a/${app.id}/sign-in`,
    );
    expect(french.html).toContain('<html lang="fr">');
    expect(french.html).toContain('Se connecter à Acme');
    const asked = await new HostedBrowser(suite.server, { 'accept-language': 'en' }).get(`/a/${app.id}/sign-in?ui_locales=fr`);
    expect(asked.html).toContain('Se connecter à Acme');
    const unknown = await new HostedBrowser(suite.server, { 'accept-language': 'xx' }).get(`/a/${app.id}/sign-in`);
    expect(unknown.html).toContain('<html lang="en">');
  });

  it('shows names and branding as text: markup in them is escaped', async () => {
    const app = await suite.server.createApp({ name: '<script>alert(1)</script>' });
    await ok(
      app.rest('PATCH', `/v1/applications/${app.id}`, {
        settings: {
          branding: { display_name: 'Acme "<b>"', primary_color: '#AA0000', theme: 'dark', support_email: 'help@acme.test' },
        },
      }),
    );
    const page = await new HostedBrowser(suite.server).get(`/a/${app.id}/sign-in`);
    expect(page.html).not.toContain('<script>alert(1)</script>');
    expect(page.html).not.toContain('<b>');
    expect(page.html).toContain('Acme &quot;&lt;b&gt;&quot;');
    expect(page.html).toContain('--primary: #aa0000');
    expect(page.html).toContain('href="mailto:help@acme.test"');
  });
});

/** Every route of the hosted pages, as the server registered it (fastify's route tree, `/a/:applicationId/…`). */
function hostedRoutes(): Array<{ path: string; methods: string[] }> {
  const routes: Array<{ path: string; methods: string[] }> = [];
  const stack: string[] = [];
  for (const line of suite.server.server.app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)[├└]── (\S+) \(([A-Z, ]+)\)/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    stack.length = depth;
    stack.push(match[2]!);
    const path = stack.join('');
    if (path.startsWith('/a/:applicationId/')) routes.push({ path, methods: match[3]!.split(', ') });
  }
  return routes;
}

describe('every hosted route', () => {
  it('a form post without this browser’s CSRF token is 403, whatever the route (none is forgotten)', async () => {
    const app = await suite.server.createApp();
    const browser = new HostedBrowser(suite.server);
    await browser.get(`/a/${app.id}/sign-in`); // this browser has its CSRF cookie: only the token is missing
    const posts = hostedRoutes().filter((r) => r.methods.includes('POST'));
    expect(posts.length).toBeGreaterThan(20);
    for (const { path } of posts) {
      const answer = await browser.post(path.replace(':applicationId', app.id), { email: uniqueEmail('forged') });
      expect(answer.status, path).toBe(403);
    }
    const [{ count }] = await sql(suite.server, 'select count(*)::int as count from magic_links where application_id = ?', [
      app.id,
    ]);
    expect(count).toBe(0);
  });

  it('every page answers a CSP with a nonce and frame-ancestors none (the logo, an image, has its own)', async () => {
    const app = await suite.server.createApp();
    const browser = new HostedBrowser(suite.server);
    const pages = hostedRoutes().filter((r) => r.methods.includes('GET') && !r.path.endsWith('/logo'));
    expect(pages.length).toBeGreaterThan(8);
    for (const { path } of pages) {
      const answer = await browser.get(path.replace(':applicationId', app.id));
      const csp = answer.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).toMatch(/script-src 'nonce-[^']+'/);
      expect(answer.headers.get('x-frame-options'), path).toBe('DENY');
    }
  });
});

describe('signing in with a magic link', () => {
  it('on the same device: the link’s button signs this browser in, with an HttpOnly session cookie', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('hosted-same');
    const browser = new HostedBrowser(suite.server);
    const signedIn = await signInOnHostedPages(browser, suite.smtp, app, email);
    expect(signedIn.status).toBe(303);
    expect(signedIn.location).toBe(`/a/${app.id}/account`);
    const cookie = cookieLine(signedIn.headers, sessionCookie(app)) ?? '';
    expect(cookie).toMatch(/^gh_session_[^=]+=bs_[A-Za-z0-9]{43};/);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Path=\//);
    // The base URL is http in the tests: Secure is set only for https deployments.
    expect(cookie).not.toMatch(/Secure/i);
    const account = await browser.get(signedIn.location!);
    expect(account.status).toBe(200);
    expect(account.html).toContain(`Signed in as ${email}`);
    // The sign-in page of a signed-in browser goes to the account page.
    expect((await browser.get(`/a/${app.id}/sign-in`)).location).toBe(`/a/${app.id}/account`);
    const [session] = await liveSessions(app, email);
    expect(session).toMatchObject({ aal: 1, revoked: false });
  });

  it('opening the link consumes nothing (mail scanners follow links); only its button does', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('hosted-scanner');
    const browser = new HostedBrowser(suite.server);
    const form = await browser.get(`/a/${app.id}/sign-in`);
    await browser.submit(form, `/a/${app.id}/sign-in`, { email });
    const link = linkIn(await suite.smtp.next(email));
    const scanner = new HostedBrowser(suite.server);
    for (let i = 0; i < 3; i++) expect((await scanner.get(link.pathname + link.search)).status).toBe(200);
    const landing = await browser.get(link.pathname + link.search);
    const signedIn = await browser.submit(landing, `/a/${app.id}/magic-link`);
    expect(signedIn.location).toBe(`/a/${app.id}/account`);
  });

  it('on another device: that device confirms and stays signed out; the asking browser’s waiting page signs it in', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('hosted-cross');
    const laptop = new HostedBrowser(suite.server);
    const form = await laptop.get(`/a/${app.id}/sign-in`);
    const started = await laptop.submit(form, `/a/${app.id}/sign-in`, { email });
    expect(started.location).toBe(`/a/${app.id}/sign-in/wait`);
    const waiting = await laptop.get(started.location!);
    expect(waiting.status).toBe(200);
    expect(waiting.html).toContain('setTimeout(() => location.reload(), 3000);');
    expect(waiting.html).toContain('<noscript><meta http-equiv="refresh" content="3"></noscript>');
    expect(waiting.html).toContain(email);

    const phone = new HostedBrowser(suite.server);
    const link = linkIn(await suite.smtp.next(email));
    const landing = await phone.get(link.pathname + link.search);
    const confirmed = await phone.submit(landing, `/a/${app.id}/magic-link`);
    expect(confirmed.status).toBe(200);
    expect(confirmed.html).toContain('Go back to the device where you asked for the link');
    expect(phone.cookies.has(sessionCookie(app))).toBe(false);

    const collected = await laptop.get(`/a/${app.id}/sign-in/wait`);
    expect(collected.location).toBe(`/a/${app.id}/account`);
    expect(laptop.cookies.get(sessionCookie(app))).toMatch(/^bs_/);
    expect((await laptop.get(`/a/${app.id}/account`)).html).toContain(`Signed in as ${email}`);
    // The link is spent: pressing its button again is an error page that shows the request id.
    const reused = await phone.submit(landing, `/a/${app.id}/magic-link`);
    expect(reused.status).toBe(401);
    expect(reused.html).toMatch(/Request ID: [0-9a-f-]{36}/);
  });
});

describe('forged posts and planted cookies', () => {
  it('a post without this browser’s CSRF token is 403 and does nothing (no magic link is sent)', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('hosted-csrf');
    const victim = new HostedBrowser(suite.server);
    const page = await victim.get(`/a/${app.id}/sign-in`);
    const { csrf } = hiddenFields(page.html, `/a/${app.id}/sign-in`);
    const attacker = new HostedBrowser(suite.server);
    const attackerPage = await attacker.get(`/a/${app.id}/sign-in`);
    const attackerCsrf = hiddenFields(attackerPage.html, `/a/${app.id}/sign-in`).csrf!;
    const otherApp = await suite.server.createApp();
    const otherCsrf = hiddenFields((await victim.get(`/a/${otherApp.id}/sign-in`)).html, `/a/${otherApp.id}/sign-in`).csrf!;

    const forged = [
      await victim.post(`/a/${app.id}/sign-in`, { email }),
      await victim.post(`/a/${app.id}/sign-in`, { email, csrf: attackerCsrf }),
      await victim.post(`/a/${app.id}/sign-in`, { email, csrf: otherCsrf }),
      await new HostedBrowser(suite.server, { origin: 'https://evil.example' }).post(`/a/${app.id}/sign-in`, {
        email,
        csrf: csrf!,
      }),
    ];
    for (const answer of forged) {
      expect(answer.status).toBe(403);
      expect(answer.html).toContain('This form has expired');
    }
    // With the victim's cookie but from another origin.
    const crossOrigin = new HostedBrowser(suite.server, { origin: 'https://evil.example' });
    for (const [k, v] of victim.cookies) crossOrigin.cookies.set(k, v);
    expect((await crossOrigin.post(`/a/${app.id}/sign-in`, { email, csrf: csrf! })).status).toBe(403);
    const [{ count }] = await sql(suite.server, 'select count(*)::int as count from magic_links where application_id = ?', [
      app.id,
    ]);
    expect(count).toBe(0);
  });

  it('login CSRF: an attacker cannot confirm their own link in the victim’s browser', async () => {
    const app = await suite.server.createApp();
    const attackerEmail = uniqueEmail('hosted-attacker');
    const attacker = new HostedBrowser(suite.server);
    const form = await attacker.get(`/a/${app.id}/sign-in`);
    await attacker.submit(form, `/a/${app.id}/sign-in`, { email: attackerEmail });
    const token = linkIn(await suite.smtp.next(attackerEmail)).searchParams.get('token')!;
    const attackerCsrf = hiddenFields(form.html, `/a/${app.id}/sign-in`).csrf!;
    // The victim's browser is made to post the attacker's link with the attacker's token.
    const victim = new HostedBrowser(suite.server);
    await victim.get(`/a/${app.id}/sign-in`);
    const forged = await victim.post(`/a/${app.id}/magic-link`, { token, csrf: attackerCsrf });
    expect(forged.status).toBe(403);
    expect(victim.cookies.has(sessionCookie(app))).toBe(false);
  });

  it('session fixation: a planted session cookie is replaced at sign-in and its session ended', async () => {
    const app = await oauthApp(suite.server, { login_url: null });
    const attackerEmail = uniqueEmail('hosted-fixer');
    const attacker = new HostedBrowser(suite.server);
    await signInOnHostedPages(attacker, suite.smtp, app, attackerEmail);
    const planted = attacker.cookies.get(sessionCookie(app))!;
    const victim = new HostedBrowser(suite.server);
    victim.cookies.set(sessionCookie(app), planted);
    const victimEmail = uniqueEmail('hosted-victim');
    // A browser with a session cookie signs in again: the sign-in page of an OpenID client's prompt=login.
    const config = await relyingParty(suite.server, app, await createClient(app));
    const authorization = oidc.buildAuthorizationUrl(config, {
      redirect_uri: WEB_CALLBACK,
      scope: 'openid',
      prompt: 'login',
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
    });
    const form = await victim.follow(await victim.get(authorization.href));
    await victim.submit(form, `/a/${app.id}/sign-in`, { email: victimEmail });
    const link = linkIn(await suite.smtp.next(victimEmail));
    await victim.submit(await victim.get(link.pathname + link.search), `/a/${app.id}/magic-link`);
    expect(victim.cookies.get(sessionCookie(app))).not.toBe(planted);
    expect(await liveSessions(app, attackerEmail)).toEqual([expect.objectContaining({ revoked: true })]);
    expect((await attacker.get(`/a/${app.id}/account`)).location).toBe(`/a/${app.id}/sign-in`);
  });
});

describe('second factors, consent documents and sign-out', () => {
  it('asks a user with TOTP for a code: a wrong one is refused on the page, the right one signs in at aal 2', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('hosted-totp');
    const { tokens } = await signIn(suite.server, suite.smtp, app, email);
    const { secret } = await enrolTotp(app, tokens.access_token);
    await suite.smtp.next(email); // the notice that a second factor was added
    const browser = new HostedBrowser(suite.server);
    const mfa = await signInOnHostedPages(browser, suite.smtp, app, email);
    expect(mfa.status).toBe(200);
    expect(mfa.html).toContain('Two-step verification');
    expect(mfa.html).toContain('autocomplete="one-time-code"');
    const wrong = await browser.submit(mfa, `/a/${app.id}/mfa`, { code: '000000' === totpCode(secret) ? '111111' : '000000' });
    expect(wrong.status).toBe(401);
    expect(wrong.html).toContain('That code is not right');
    expect(browser.cookies.has(sessionCookie(app))).toBe(false);
    // The next step's code: the enrolment spent this step's (a code works once).
    const right = await browser.submit(wrong, `/a/${app.id}/mfa`, { code: totpCode(secret, 30_000) });
    expect(right.location).toBe(`/a/${app.id}/account`);
    const sessions = await liveSessions(app, email);
    expect(sessions.at(-1)).toMatchObject({ aal: 2, revoked: false });
  });

  it('a backup code works as the second factor too', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('hosted-backup');
    const { tokens } = await signIn(suite.server, suite.smtp, app, email);
    const { secret } = await enrolTotp(app, tokens.access_token);
    await suite.smtp.next(email); // the notice that a second factor was added
    // Backup codes are made at aal 2: a sign-in with the TOTP factor first.
    const pending = await mfaRequired(suite, app, email, ['totp']);
    const aal2 = await ok(
      endUser(app, 'POST', '/v1/auth/mfa/totp/verify', { pending_token: pending, code: totpCode(secret, 30_000) }),
    );
    const { codes } = await ok(endUser(app, 'POST', '/v1/auth/mfa/backup-codes', undefined, aal2.tokens.access_token), 201);
    await suite.smtp.next(email); // the notice that backup codes were added
    const browser = new HostedBrowser(suite.server);
    const mfa = await signInOnHostedPages(browser, suite.smtp, app, email);
    const done = await browser.submit(mfa, `/a/${app.id}/mfa`, { method: 'backup_code', code: codes[0] });
    expect(done.location).toBe(`/a/${app.id}/account`);
  });

  it('consent documents are shown as links and accepted with the button', async () => {
    const app = await suite.server.createApp({
      settings: { consent_documents: [{ doc_type: 'terms', url: 'https://acme.test/terms', version: '2' }] },
    });
    const email = uniqueEmail('hosted-consent');
    const browser = new HostedBrowser(suite.server);
    const consent = await signInOnHostedPages(browser, suite.smtp, app, email);
    expect(consent.status).toBe(200);
    expect(consent.html).toContain('href="https://acme.test/terms"');
    const done = await browser.submit(consent, `/a/${app.id}/consent`);
    expect(done.location).toBe(`/a/${app.id}/account`);
    const [{ count }] = await sql(
      suite.server,
      `select count(*)::int as count from consents c join users u on u.id = c.user_id where u.primary_email = ?`,
      [email],
    );
    expect(count).toBe(1);
  });

  it('sign-out ends the session at once and clears the cookie; a forged sign-out does nothing', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('hosted-out');
    const browser = new HostedBrowser(suite.server);
    await signInOnHostedPages(browser, suite.smtp, app, email);
    const account = await browser.get(`/a/${app.id}/account`);
    expect((await browser.post(`/a/${app.id}/sign-out`, {})).status).toBe(403);
    expect(await liveSessions(app, email)).toEqual([expect.objectContaining({ revoked: false })]);
    const out = await browser.submit(account, `/a/${app.id}/sign-out`);
    expect(out.status).toBe(200);
    expect(out.html).toContain('You are signed out');
    expect(browser.cookies.has(sessionCookie(app))).toBe(false);
    expect(await liveSessions(app, email)).toEqual([expect.objectContaining({ revoked: true })]);
  });

  it('a session revoked through the API ends the browser session too', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('hosted-revoked');
    const browser = new HostedBrowser(suite.server);
    await signInOnHostedPages(browser, suite.smtp, app, email);
    const [user] = await sql(suite.server, 'select id from users where primary_email = ?', [email]);
    await ok(app.rest('POST', `/v1/users/${user.id}/sessions/revoke`));
    expect((await browser.get(`/a/${app.id}/account`)).location).toBe(`/a/${app.id}/sign-in`);
  });

  it('a user the API created signs in on the hosted pages like any other', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('hosted-created');
    await createUser(app, { primary_email: email });
    const browser = new HostedBrowser(suite.server);
    expect((await signInOnHostedPages(browser, suite.smtp, app, email)).location).toBe(`/a/${app.id}/account`);
  });
});

describe('at the root of a verified custom domain', () => {
  /** An application with `domain` verified (the DNS check is the custom-domain tests' business: marked here). */
  async function withDomain(domain: string, status = 'verified') {
    const app = await suite.server.createApp({ name: 'Domain app' });
    const added = await ok(app.rest('POST', `/v1/applications/${app.id}/domains`, { domain }));
    await sql(suite.server, 'update custom_domains set status = ? where id = ?', [status, added.id]);
    return app;
  }

  it('serves the same pages with root paths, and signs in there', async () => {
    const domain = `login-${Date.now().toString(36)}.acme-notes.com`;
    const app = await withDomain(domain);
    const browser = new HostedBrowser(suite.server, { host: domain });
    const form = await browser.get('/sign-in');
    expect(form.status).toBe(200);
    expect(form.html).toContain('Sign in to Domain app');
    const email = uniqueEmail('hosted-domain');
    const started = await browser.submit(form, '/sign-in', { email });
    expect(started.location).toBe('/sign-in/wait');
    // The link opens on the service's own host: it confirms, and the domain's waiting page collects the sign-in.
    const link = linkIn(await suite.smtp.next(email));
    expect(link.pathname).toBe(`/a/${app.id}/magic-link`);
    const other = new HostedBrowser(suite.server);
    await other.submit(await other.get(link.pathname + link.search), `/a/${app.id}/magic-link`);
    const collected = await browser.get('/sign-in/wait');
    expect(collected.location).toBe('/account');
    expect((await browser.get('/account')).html).toContain(`Signed in as ${email}`);
  });

  it('a pending domain, the service’s own host and unknown hosts have no root pages', async () => {
    const pending = `pending-${Date.now().toString(36)}.acme-notes.com`;
    await withDomain(pending, 'pending_verification');
    for (const host of [pending, 'gatehouse.test', 'unknown.example.com', 'not a host']) {
      const page = await new HostedBrowser(suite.server, { host }).get('/sign-in');
      expect(page.status, host).toBe(404);
    }
  });
});

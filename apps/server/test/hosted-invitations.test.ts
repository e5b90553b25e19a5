import { beforeAll, describe, expect, it } from 'vitest';
import { createOrg, uniqueEmail } from './helpers/fixtures.ts';
import { HostedBrowser, signInOnHostedPages } from './helpers/hosted.ts';
import { ok, sql, type TestApp } from './helpers/server.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * The hosted invitation page `/a/{id}/invitations/{token}` over HTTP: what it shows to nobody, to the invited address
 * and to someone else; opening it consumes nothing; each path ends in an accepted invitation; forged and stale posts.
 */
const suite = serverSuite();
const BASE = 'http://gatehouse.test';

let app: TestApp;

beforeAll(async () => {
  app = await suite.server.createApp({ name: 'Hosted Invites', allowed_origins: ['https://app.example.com'] });
});

/** An invitation to a new organization, and the path of its mailed link on the server. */
async function invitation(on: TestApp, email: string, body: Record<string, unknown> = {}) {
  const org = await createOrg(on, { name: 'Acme <Research>' });
  const created = await ok(on.rest('POST', `/v1/organizations/${org.id}/invitations`, { email, ...body }), 201);
  const link = linkIn(await suite.smtp.next(email));
  expect(link.origin).toBe(BASE);
  return { org, created, path: link.pathname };
}

const statusOf = async (on: TestApp, orgId: string) =>
  (await ok(on.rest('GET', `/v1/organizations/${orgId}/invitations`))).invitations[0].status as string;

/** The magic link mailed to `email`, opened and confirmed in `browser`; answers the page the sign-in ends on. */
async function confirmMailedLink(browser: HostedBrowser, on: TestApp, email: string) {
  const link = linkIn(await suite.smtp.next(email));
  const landing = await browser.get(link.pathname + link.search);
  return browser.follow(await browser.submit(landing, `/a/${on.id}/magic-link`));
}

describe('the hosted invitation page', () => {
  it('signed out: shows the organization and role, consumes nothing, signs in as the invited address and accepts', async () => {
    const email = uniqueEmail('page');
    const { org, path } = await invitation(app, email, { role: 'admin', redirect_url: 'https://app.example.com/welcome' });
    const browser = new HostedBrowser(suite.server);
    const base = `/a/${app.id}`;
    const shown = await browser.get(path);
    expect(shown.status).toBe(200);
    expect(shown.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(shown.headers.get('cache-control')).toBe('no-store');
    expect(shown.html).toContain('Join Acme &lt;Research&gt;');
    expect(shown.html).toContain(`Hosted Invites invites ${email} to join Acme &lt;Research&gt; as administrator.`);
    expect(shown.html).toContain(`action="${base}/invitations/sign-in"`);
    expect(shown.html).not.toContain(`action="${base}/invitations/accept"`);
    // Opening the page (twice, as a mail scanner would) consumed nothing.
    expect((await browser.get(path)).status).toBe(200);
    expect(await statusOf(app, org.id)).toBe('pending');

    const started = await browser.submit(shown, `${base}/invitations/sign-in`);
    expect(started.status).toBe(303);
    expect(started.location).toBe(`${base}/sign-in/wait`);
    const back = await confirmMailedLink(browser, app, email);
    // The sign-in comes back to the invitation page, which now offers the Accept button.
    expect(back.status).toBe(200);
    expect(back.html).toContain(`action="${base}/invitations/accept"`);
    expect(back.html).toContain(`You are signed in as ${email}.`);
    expect(await statusOf(app, org.id)).toBe('pending');

    const accepted = await browser.submit(back, `${base}/invitations/accept`);
    expect(accepted.status).toBe(303);
    expect(accepted.location).toBe('https://app.example.com/welcome');
    expect(await statusOf(app, org.id)).toBe('accepted');
    const members = await ok(app.rest('GET', `/v1/organizations/${org.id}/members`));
    expect(members.members).toEqual([expect.objectContaining({ email, role: 'admin', source: 'invitation' })]);

    // The link is spent: the page says so, and a second post is refused.
    const spent = await browser.get(path);
    expect(spent.status).toBe(401);
    expect(spent.html).toContain('This invitation is invalid, has expired, was revoked or was already used.');
    const again = await browser.submit(back, `${base}/invitations/accept`);
    expect(again.status).toBe(401);
  });

  it('signed in as someone else: says so, signs out and signs in as the invited address; then to the account page', async () => {
    const email = uniqueEmail('invited');
    const other = uniqueEmail('other');
    const { org, path } = await invitation(app, email);
    const browser = new HostedBrowser(suite.server);
    const base = `/a/${app.id}`;
    await browser.follow(await signInOnHostedPages(browser, suite.smtp, app, other));
    const shown = await browser.get(path);
    expect(shown.status).toBe(200);
    expect(shown.html).toContain(`You are signed in as ${other}, but this invitation is for ${email}.`);
    expect(shown.html).not.toContain(`action="${base}/invitations/accept"`);
    const switched = await browser.submit(shown, `${base}/invitations/switch`);
    expect(switched.status).toBe(303);
    expect(switched.location).toBe(`${base}/sign-in/wait`);
    expect(await statusOf(app, org.id)).toBe('pending');
    // The other person's session ended: the account page now asks to sign in.
    expect((await browser.get(`${base}/account`)).location).toContain(`${base}/sign-in`);
    const back = await confirmMailedLink(browser, app, email);
    expect(back.html).toContain(`You are signed in as ${email}.`);
    const accepted = await browser.submit(back, `${base}/invitations/accept`);
    expect(accepted.location).toBe(`${base}/account`);
    expect(await statusOf(app, org.id)).toBe('accepted');
  });

  it('the API refuses a mismatched account at accept: 403 page, invitation still pending', async () => {
    const email = uniqueEmail('mismatch');
    const { org, path } = await invitation(app, email);
    const browser = new HostedBrowser(suite.server);
    const base = `/a/${app.id}`;
    await browser.follow(await signInOnHostedPages(browser, suite.smtp, app, uniqueEmail('intruder')));
    const shown = await browser.get(path);
    const csrf = /name="csrf" value="([^"]+)"/.exec(shown.html)?.[1] ?? '';
    const forced = await browser.post(`${base}/invitations/accept`, {
      csrf,
      token: decodeURIComponent(path.split('/').pop() ?? ''),
    });
    expect(forced.status).toBe(403);
    expect(forced.html).toContain('This invitation is for another email address.');
    expect(await statusOf(app, org.id)).toBe('pending');
  });

  it('with sign-up closed, the invited address creates its account from the page', async () => {
    const closed = await suite.server.createApp({ settings: { sign_up: 'closed' } });
    const email = uniqueEmail('newcomer');
    const { org, path } = await invitation(closed, email);
    const browser = new HostedBrowser(suite.server);
    const base = `/a/${closed.id}`;
    const shown = await browser.get(path);
    await browser.submit(shown, `${base}/invitations/sign-in`);
    const back = await confirmMailedLink(browser, closed, email);
    const accepted = await browser.submit(back, `${base}/invitations/accept`);
    expect(accepted.location).toBe(`${base}/account`);
    expect(await statusOf(closed, org.id)).toBe('accepted');
    const users = await ok(closed.rest('GET', `/v1/users?search=${encodeURIComponent(email)}`));
    expect(users.users).toEqual([expect.objectContaining({ primary_email: email, email_verified: true })]);
  });

  it('the sign-in page as the other way in comes back to the invitation too (email prefilled)', async () => {
    const email = uniqueEmail('other-way');
    const { path } = await invitation(app, email);
    const browser = new HostedBrowser(suite.server);
    const base = `/a/${app.id}`;
    const shown = await browser.get(path);
    const signInHref = `${base}/sign-in?login_hint=${encodeURIComponent(email)}`;
    expect(shown.html).toContain(`href="${signInHref.replace(/&/g, '&amp;')}"`);
    const form = await browser.get(signInHref);
    expect(form.html).toContain(`value="${email}"`);
    await browser.submit(form, `${base}/sign-in`, { email });
    const back = await confirmMailedLink(browser, app, email);
    expect(back.html).toContain(`action="${base}/invitations/accept"`);
  });

  it('unknown, revoked and other applications’ tokens show the error page (401); French when asked', async () => {
    const email = uniqueEmail('revoked');
    const { org, created, path } = await invitation(app, email);
    await ok(app.rest('POST', `/v1/organizations/${org.id}/invitations/${created.id}/revoke`));
    const browser = new HostedBrowser(suite.server);
    for (const target of [path, `/a/${app.id}/invitations/inv_unknown`]) {
      const page = await browser.get(target);
      expect(page.status, target).toBe(401);
      expect(page.html).toContain('This invitation is invalid');
    }
    const other = await suite.server.createApp();
    const otherInvite = await invitation(other, uniqueEmail('foreign'));
    expect((await browser.get(otherInvite.path.replace(other.id, app.id))).status).toBe(401);

    const french = new HostedBrowser(suite.server, { 'accept-language': 'fr' });
    const fresh = await invitation(app, uniqueEmail('fr'), { role: 'member' });
    const page = await french.get(fresh.path);
    expect(page.html).toContain('<html lang="fr">');
    expect(page.html).toContain('Rejoindre Acme &lt;Research&gt;');
    expect(page.html).toContain('en tant que membre');
  });

  it('every form refuses a post without this browser’s CSRF token (403) and accepts nothing', async () => {
    const email = uniqueEmail('csrf');
    const { org, path } = await invitation(app, email);
    const browser = new HostedBrowser(suite.server);
    const base = `/a/${app.id}`;
    await browser.follow(await signInOnHostedPages(browser, suite.smtp, app, email));
    const shown = await browser.get(path);
    const token = decodeURIComponent(path.split('/').pop() ?? '');
    for (const action of ['accept', 'sign-in', 'switch']) {
      expect((await browser.post(`${base}/invitations/${action}`, { token })).status, action).toBe(403);
      expect((await browser.post(`${base}/invitations/${action}`, { token, csrf: 'forged' })).status, action).toBe(403);
    }
    // Another browser's token does not work in this one.
    const attacker = new HostedBrowser(suite.server);
    const theirs = /name="csrf" value="([^"]+)"/.exec((await attacker.get(`${base}/sign-in`)).html)?.[1] ?? '';
    expect((await browser.post(`${base}/invitations/accept`, { token, csrf: theirs })).status).toBe(403);
    expect(await statusOf(app, org.id)).toBe('pending');
    // The genuine form still works.
    expect((await browser.submit(shown, `${base}/invitations/accept`)).location).toBe(`${base}/account`);
  });

  it('answers at the root of the application’s verified custom domain too, and accepts there', async () => {
    const domain = `login-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}.acme-notes.com`;
    const added = await ok(app.rest('POST', `/v1/applications/${app.id}/domains`, { domain }));
    await sql(suite.server, 'update custom_domains set status = ? where id = ?', ['verified', added.id]);
    const email = uniqueEmail('domain');
    const { org, path } = await invitation(app, email);
    const rootPath = path.replace(`/a/${app.id}`, '');
    const own = new HostedBrowser(suite.server, { host: domain });
    const page = await own.get(rootPath);
    expect(page.status).toBe(200);
    expect(page.html).toContain('action="/invitations/sign-in"');
    await own.submit(page, '/invitations/sign-in');
    // The link opens on the service's own host (another browser here): it confirms, and the domain's waiting page
    // collects the sign-in, then goes back to the invitation.
    const link = linkIn(await suite.smtp.next(email));
    const phone = new HostedBrowser(suite.server);
    await phone.submit(await phone.get(link.pathname + link.search), `/a/${app.id}/magic-link`);
    const collected = await own.get('/sign-in/wait');
    expect(collected.location).toBe(rootPath);
    const back = await own.get(rootPath);
    expect(back.html).toContain('action="/invitations/accept"');
    const accepted = await own.submit(back, '/invitations/accept');
    expect(accepted.location).toBe('/account');
    expect(await statusOf(app, org.id)).toBe('accepted');
  });
});

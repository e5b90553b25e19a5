import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addVirtualAuthenticator, type Browser, hasChromium, launchChromium } from './helpers/browser.ts';
import { addOperator, CONSOLE_ORIGIN, checkConsolePage, signInWithLink, watchConsolePage } from './helpers/console.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { startReceiver } from './helpers/receiver.ts';
import { browserRun } from './helpers/runs.ts';
import { rawRequest, sql, startServer, type TestServer } from './helpers/server.ts';
import type { SmtpSink } from './helpers/sign-in.ts';
import { startSmtpSink } from './helpers/smtp.ts';

/**
 * The console (apps/console) in Debian's Chromium against the real server: an operator added with the operator token
 * opens their one-time link and is in the console; adds a passkey on the console application's account page; a first
 * write asks "Confirm it's you", and the step-up with the passkey comes back to the page at aal 2; they create an
 * application and an API key (the secret shown once, and it works), a user, ban and unban them, an organization
 * with the user as a member, a webhook endpoint whose failed test delivery they retry, save the settings.
 * A viewer of that application is refused a write by the server, and the page says so with the request id. Signed
 * out, the owner signs in again with the passkey alone (autofill on the hosted sign-in page) and is at aal 2 at once. Every
 * console page visited passes axe-core's WCAG 2.1 A and AA rules, in light and dark, and breaks no CSP rule; screenshots
 * go to apps/server/test-artifacts/console/. `http://localhost` (a secure context for WebAuthn and the clipboard) is
 * mapped to the test server by Chromium's resolver rules.
 *
 * The page must be built (`npm install` builds it, through the root `prepare`); a checkout without apps/console/dist
 * gets it built here first.
 */
if (!hasChromium) console.warn('browser-console: /usr/bin/chromium not found, the real-browser test is skipped.');

const ROOT = join(import.meta.dirname, '..', '..', '..');

describe.runIf(browserRun)('the console in Chromium: sign-in, step-up, applications, keys, users; roles; WCAG 2.1 AA', () => {
  let smtp: SmtpSink;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let server: TestServer;
  let owner: Browser;
  let viewer: Browser | undefined;
  let consoleAppId: string;
  // The tests below are one operator's session, in order: each goes on from where the one before it left the page.
  let page: Browser['page'];
  let ownerErrors: string[];
  let viewerErrors: string[] = [];
  let cdp: Awaited<ReturnType<Browser['context']['newCDPSession']>>;
  let authenticatorId: string;
  let appId: string;
  let userId: string;
  let asKey: Record<string, string>;

  beforeAll(async () => {
    if (!existsSync(join(ROOT, 'apps/console/dist/index.html'))) {
      execFileSync('npm', ['run', 'build', '--silent', '-w', '@gatehouse/console'], { cwd: ROOT, stdio: 'inherit' });
    }
    smtp = await startSmtpSink();
    receiver = await startReceiver();
    // A receiver on this machine (development applications may use http and loopback when allowed); one retry.
    server = await startServer({
      baseUrl: CONSOLE_ORIGIN,
      smtpUrl: smtp.url,
      webhooks: { allowInsecure: true, retryScheduleS: [0.2], timeoutMs: 2000 },
    });
    const [row] = await sql(server, "select id from applications where reserved = 'console'");
    consoleAppId = row.id;
    owner = await launchChromium(`MAP localhost:80 ${new URL(server.url).host}`);
    await owner.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: CONSOLE_ORIGIN });
  });

  afterAll(async () => {
    await viewer?.close();
    await owner?.close();
    await server?.close();
    await smtp?.close();
    await receiver?.close();
  });

  it('an owner signs in with their one-time link; a first write asks to confirm, done with a new passkey', async () => {
    page = owner.page;
    ownerErrors = watchConsolePage(page, { requests: false });
    const email = uniqueEmail('console-owner');
    await signInWithLink(page, (await addOperator(server, email, 'owner', null)).link);
    await page.getByText(email).waitFor();
    await page.getByText('No application yet').waitFor();
    await checkConsolePage(page, '1-applications-empty');

    // A first write at aal 1: the server answers step_up_required, the console asks to confirm.
    await page.getByLabel('Name', { exact: true }).fill('Acme Notes');
    await page.getByRole('button', { name: 'Create the application' }).click();
    const dialog = page.getByRole('alertdialog', { name: "Confirm it's you" });
    await dialog.waitFor();
    await dialog.getByText('This change needs your passkey or authenticator app.').waitFor();
    await page.getByText('step_up_required').waitFor();
    await checkConsolePage(page, '2-step-up');
    // By keyboard: the dialog takes the focus (on its action), and Escape closes it.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Confirm with a passkey or app');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });

    // A passkey on the console application's account page (the hosted pages, signed in by the same sign-in).
    cdp = await owner.context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    authenticatorId = await addVirtualAuthenticator(cdp);
    await page.goto(`${CONSOLE_ORIGIN}/a/${consoleAppId}/account`);
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByText('Passkey added.').waitFor();

    // The step-up: the dialog's button, the passkey as the second factor, and back on the same console page.
    await page.goto(`${CONSOLE_ORIGIN}/console/apps`);
    await page.getByLabel('Name', { exact: true }).fill('Acme Notes');
    await page.getByRole('button', { name: 'Create the application' }).click();
    await dialog.getByRole('button', { name: 'Confirm with a passkey or app' }).click();
    await page.getByRole('button', { name: 'Use your passkey' }).click();
    await page.getByText('second factor confirmed').waitFor();
    expect(new URL(page.url()).pathname).toBe('/console/apps');
  });

  it('creates an application (its first key shown once) and a user, bans and unbans them; the tabs follow the URL', async () => {
    // Now the write goes through: the application, and its first secret key shown once.
    await page.getByLabel('Name', { exact: true }).fill('Acme Notes');
    await page.getByRole('button', { name: 'Create the application' }).click();
    await page.getByText('Its first secret key is shown once: copy it now.').waitFor();
    const firstSecret = (await page.locator('.secret code').textContent()) ?? '';
    expect(firstSecret).toMatch(/^sk_test_/);
    await page.getByRole('row', { name: /Acme Notes/ }).waitFor();
    await checkConsolePage(page, '3-applications');
    const [created] = await sql(server, "select id from applications where name = 'Acme Notes'");
    appId = created.id;

    // Users: the empty state, then a user created from the page, banned and unbanned.
    // An application opens on its dashboard (browser-console-pages.test.ts reads it with traffic).
    await page.getByRole('link', { name: 'Acme Notes', exact: true }).first().click();
    await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/console/apps/${appId}/dashboard`);
    await page.getByRole('link', { name: 'Users', exact: true }).click();
    await page.getByRole('heading', { name: 'Users', level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/console/apps/${appId}/users`);
    await page.getByText('No user yet').waitFor();
    await checkConsolePage(page, '4-users-empty');
    await page.getByLabel('Email', { exact: true }).fill('ada@example.com');
    await page.getByRole('button', { name: 'Create the user' }).click();
    await page.getByRole('heading', { name: 'ada@example.com', level: 1 }).waitFor();
    userId = new URL(page.url()).pathname.split('/').at(-1) ?? '';
    await checkConsolePage(page, '5-user');
    await page.getByRole('button', { name: 'Ban', exact: true }).click();
    await page.getByText('Banned: their sessions were ended.').waitFor();
    asKey = { authorization: `Bearer ${firstSecret}`, 'x-application-id': appId };
    expect((await rawRequest(server.url, 'GET', `/v1/users/${userId}`, { headers: asKey })).body.data.status).toBe('banned');
    await page.getByRole('button', { name: 'Unban' }).click();
    await page.getByText('Active again.').waitFor();
    expect((await rawRequest(server.url, 'GET', `/v1/users/${userId}`, { headers: asKey })).body.data.status).toBe('active');
    // The tab is in the URL: a link opens the same tab.
    await page.getByRole('tab', { name: 'Passkeys and factors' }).click();
    await page.getByText('No passkey or second factor').waitFor();
    expect(new URL(page.url()).searchParams.get('tab')).toBe('factors');
    await checkConsolePage(page, '6-user-factors');
    await page.reload();
    await page.getByText('No passkey or second factor').waitFor();
    // The tabs by keyboard: arrows move between them, and the URL follows.
    await page.getByRole('tab', { name: 'Passkeys and factors' }).focus();
    await page.keyboard.press('ArrowLeft');
    await page.getByText('No organization').waitFor();
    expect(new URL(page.url()).searchParams.get('tab')).toBe('organizations');
    await checkConsolePage(page, '6-user-organizations');
    await page.keyboard.press('ArrowLeft');
    await page.getByRole('button', { name: 'Sign out everywhere' }).waitFor();
    expect(new URL(page.url()).searchParams.get('tab')).toBe('sessions');
    // The user was never signed in (and was banned since): no live session to list.
    await page.getByText('No live session').waitFor();
    await page.getByRole('button', { name: 'Sign out everywhere' }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Sign out everywhere' }).click();
    await page.getByText('0 sessions ended.').waitFor();

    // The list: the search is in the URL.
    await page.goto(`${CONSOLE_ORIGIN}/console/apps/${appId}/users?q=ada`);
    await page.getByRole('link', { name: 'ada@example.com' }).waitFor();
    await page.getByText('1–1 of 1').waitFor();
    await checkConsolePage(page, '7-users');
  });

  it('an organization with the user as an admin; a webhook endpoint whose failed test delivery is retried', async () => {
    // Organizations: the empty state, one created, the user added as an admin.
    await page.getByRole('link', { name: 'Organizations' }).click();
    await page.getByRole('heading', { name: 'Organizations', level: 1 }).waitFor();
    await page.getByText('No organization yet').waitFor();
    await checkConsolePage(page, '8-organizations-empty');
    await page.getByLabel('Name', { exact: true }).fill('Acme Inc.');
    await page.getByRole('button', { name: 'Create the organization' }).click();
    await page.getByRole('heading', { name: 'Acme Inc.', level: 1 }).waitFor();
    await page.getByText('No member yet').waitFor();
    await page.getByLabel('User id').fill(userId);
    await page.getByLabel('Role', { exact: true }).fill('admin');
    await page.getByRole('button', { name: 'Add the member' }).click();
    await page.getByRole('row', { name: /ada@example\.com.*admin/ }).waitFor();
    await checkConsolePage(page, '9-organization');
    const orgId = new URL(page.url()).pathname.split('/').at(-1);
    const members = await rawRequest(server.url, 'GET', `/v1/organizations/${orgId}/members`, { headers: asKey });
    expect(members.body.data.members).toMatchObject([{ user_id: userId, role: 'admin' }]);

    // Webhooks: an endpoint (its secret once), a test event that fails twice, its attempts, a retry that succeeds.
    receiver.script('/hooks', { status: 500, body: 'down for maintenance' }, { status: 500, body: 'still down' });
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    await page.getByText('No webhook endpoint').waitFor();
    await page.getByLabel('Address').fill(`${receiver.url}/hooks`);
    await page.getByRole('button', { name: 'Add the endpoint' }).click();
    await page.getByText('Copy its signing secret now').waitFor();
    expect(await page.locator('.secret code').textContent()).toMatch(/^whsec_/);
    await checkConsolePage(page, '10-webhooks');
    await page.getByRole('button', { name: `Send a test event to ${receiver.url}/hooks` }).click();
    await page.getByRole('link', { name: 'See its deliveries' }).click();
    await page.waitForURL(/endpoint=/);
    await page.getByRole('row', { name: /failed/ }).waitFor();
    await page
      .getByRole('row', { name: /failed/ })
      .getByRole('link', { name: /Attempts of the webhook\.test delivery/ })
      .click();
    expect(new URL(page.url()).searchParams.get('delivery')).toMatch(/^[0-9a-f-]{36}$/);
    const attempts = page.getByRole('table', { name: 'Attempts, oldest first' });
    await attempts.getByText('still down').waitFor();
    await attempts.getByText('down for maintenance').waitFor();
    await checkConsolePage(page, '11-webhook-delivery');
    await page.getByRole('button', { name: 'Retry the webhook.test delivery' }).click();
    await page.getByRole('row', { name: /succeeded/ }).waitFor();
    await receiver.until('/hooks', 3);
  });

  it('an API key made with two scopes: shown once, copied, works, revoked; the MFA policy saved', async () => {
    // API keys: create one with two scopes; the secret is shown once and works; then revoke it.
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('backend');
    // React Aria's inputs are visually hidden inside their labels: a person clicks the label.
    await page.getByText('users:read', { exact: true }).click();
    await page.getByText('users:write', { exact: true }).click();
    expect(await page.getByRole('checkbox', { name: 'users:read', exact: true }).isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Create the key' }).click();
    await page.getByText('Copy its secret now: it is never shown again.', { exact: false }).waitFor();
    const secret = (await page.locator('.secret code').textContent()) ?? '';
    expect(secret).toMatch(/^sk_test_/);
    await page.getByRole('button', { name: 'Copy the secret key' }).click();
    await page.getByText('Copied').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    const withKey = { authorization: `Bearer ${secret}`, 'x-application-id': appId };
    expect((await rawRequest(server.url, 'GET', '/v1/users', { headers: withKey })).status).toBe(200);
    await page.getByRole('row', { name: /backend/ }).waitFor();
    await checkConsolePage(page, '12-api-keys');
    await page.reload();
    await page.getByRole('row', { name: /backend/ }).waitFor();
    expect(await page.getByText(secret).count()).toBe(0);
    await page.getByRole('button', { name: 'Revoke the key backend' }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Revoke the key' }).click();
    await page.getByRole('row', { name: /backend.*revoked/ }).waitFor();
    expect((await rawRequest(server.url, 'GET', '/v1/users', { headers: withKey })).status).toBe(401);

    // Settings: the MFA policy saved, as the API then says.
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('button', { name: 'Save the settings' }).waitFor();
    await page.getByText('Required for every user').click();
    expect(await page.getByRole('radio', { name: 'Required for every user' }).isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Save the settings' }).click();
    await page.getByText('Saved.').waitFor();
    expect((await rawRequest(server.url, 'GET', `/v1/applications/${appId}`, { headers: asKey })).body.data.settings.mfa).toBe(
      'required',
    );
    await checkConsolePage(page, '13-settings');
  });

  it('a viewer sees the application, and the server refuses their write: the page says so with the request id', async () => {
    // A viewer of this application, in a browser of their own: they see it, and the server refuses their write.
    viewer = await launchChromium(`MAP localhost:80 ${new URL(server.url).host}`);
    const seen = viewer.page;
    viewerErrors = watchConsolePage(seen, { requests: false });
    await signInWithLink(seen, (await addOperator(server, uniqueEmail('console-viewer'), 'viewer', appId)).link);
    await seen.getByRole('row', { name: /Acme Notes.*viewer/ }).waitFor();
    await seen.goto(`${CONSOLE_ORIGIN}/console/apps/${appId}/users`);
    await seen.getByRole('link', { name: 'ada@example.com' }).waitFor();
    await seen.getByLabel('Email', { exact: true }).fill('grace@example.com');
    await seen.getByRole('button', { name: 'Create the user' }).click();
    const refused = seen.getByRole('alert').filter({ hasText: 'The user was not created' });
    await refused.waitFor();
    await refused.getByText('insufficient_scope').waitFor();
    await refused.getByText('HTTP 403').waitFor();
    await refused.getByText(/request id/).waitFor();
    await checkConsolePage(seen, '14-viewer-refused');
    expect((await rawRequest(server.url, 'GET', '/v1/users?search=grace', { headers: asKey })).body.data.total).toBe(0);

    // An application the viewer has no role in: "not found", as the API says.
    await seen.goto(`${CONSOLE_ORIGIN}/console/apps/00000000-0000-7000-8000-000000000000/users`);
    await seen.getByRole('heading', { name: 'Application not found' }).waitFor();
  });

  it('signed out, the owner signs in again with the passkey alone, at aal 2 at once; no page logged an error', async () => {
    // Signing out ends the console session: the page goes to the sign-in. (Without the authenticator: the hosted
    // sign-in page would otherwise sign the owner straight back in with their passkey, by autofill.)
    const {
      credentials: [passkey, ...others],
    } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(others).toEqual([]);
    if (!passkey) throw new Error('the authenticator holds no passkey');
    await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((url) => !url.pathname.startsWith('/console'));
    const after = await page.evaluate(() =>
      fetch('/console/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).then(
        (r) => r.status,
      ),
    );
    expect(after).toBe(401);

    // A fresh sign-in with the passkey alone (the same one, back in an authenticator): the console sends the browser
    // to the hosted sign-in page, whose autofill signs the owner in, and back to the console at aal 2 (a passkey with
    // user verification is two factors in one): a write goes through with no step-up.
    const again = await addVirtualAuthenticator(cdp);
    await cdp.send('WebAuthn.addCredential', { authenticatorId: again, credential: passkey });
    await page.goto(`${CONSOLE_ORIGIN}/console/apps`);
    await page.getByRole('heading', { name: 'Applications', level: 1 }).waitFor();
    const signedIn = await page.evaluate(() =>
      fetch('/console/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).then(
        async (r) => ({ status: r.status, body: (await r.json()) as { data: { aal: number } } }),
      ),
    );
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.data.aal).toBe(2);
    await page.getByLabel('Name', { exact: true }).fill('Acme Passkey Notes');
    await page.getByRole('button', { name: 'Create the application' }).click();
    await page.getByRole('row', { name: /Acme Passkey Notes/ }).waitFor();
    expect(await page.getByRole('alertdialog', { name: "Confirm it's you" }).count()).toBe(0);

    expect([...ownerErrors, ...viewerErrors]).toEqual([]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, hasChromium, launchChromium } from './helpers/browser.ts';
import {
  addOperator,
  CONSOLE_ORIGIN,
  checkConsolePage,
  signInWithLink,
  stepUpWithTotp,
  watchConsolePage,
} from './helpers/console.ts';
import { type LocalDns, startLocalDns } from './helpers/dns.ts';
import { createUser, uniqueEmail } from './helpers/fixtures.ts';
import { browserRun } from './helpers/runs.ts';
import { ok, rawRequest, startServer, type TestApp, type TestServer } from './helpers/server.ts';
import type { SmtpSink } from './helpers/sign-in.ts';
import { startSmtpSink } from './helpers/smtp.ts';

/**
 * The console's platform pages in Debian's Chromium, served by the server at /console with its CSP: an owner signs in,
 * steps up, adds a custom domain and sees the DNS records to publish (and verifies it against a local DNS server),
 * edits a template and sees the server's preview change, sends a test mail that reaches an SMTP sink, adds a host
 * group, a host and a rule that the access check then honours, rotates the signing key (the JWKS has the new key), and
 * sets the branding (colour, theme, an uploaded logo). axe-core checks each page (WCAG 2.1 A/AA) in light and dark.
 */
if (!hasChromium) console.warn('browser-console-platform: /usr/bin/chromium not found, the real-browser test is skipped.');

const CNAME_TARGET = 'edge.gatehouse-test.dev';
/** A real 1×1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');

describe.runIf(browserRun)('the console’s domains, templates, host access, signing keys and branding in Chromium', () => {
  let server: TestServer;
  let smtp: SmtpSink;
  let dns: LocalDns;
  let app: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    smtp = await startSmtpSink();
    dns = await startLocalDns();
    server = await startServer({
      baseUrl: CONSOLE_ORIGIN,
      smtpUrl: smtp.url,
      dnsServers: [dns.address],
      cnameTarget: CNAME_TARGET,
    });
    app = await server.createApp({ name: 'Console Platform' });
    browser = await launchChromium(`MAP localhost:80 ${new URL(server.url).host}`);
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: CONSOLE_ORIGIN });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await dns?.close();
    await smtp?.close();
  });

  const jwks = async () =>
    (await rawRequest(server.url, 'GET', `/v1/applications/${app.id}/jwks.json`)).body as { keys: Array<{ kid: string }> };

  it('an owner sets up domains, templates, host access, signing keys and branding', async () => {
    const operator = await addOperator(server, uniqueEmail('platform-operator'), 'owner', null);
    const page = await browser.context.newPage();
    const errors = watchConsolePage(page);
    const nav = (name: string) => page.getByRole('navigation', { name: 'Application' }).getByRole('link', { name });
    try {
      await signInWithLink(page, operator.link);
      await stepUpWithTotp(server, page, operator.userId, `/console/apps/${app.id}/domains`);

      // Custom domains: none yet (the CLI and curl shown); add one; its two records, each with a copy button.
      await page.getByRole('heading', { level: 1, name: 'Custom domains' }).waitFor();
      await page.getByText('No custom domain').waitFor();
      const domain = `console-${Date.now().toString(36)}.gatehouse-test.dev`;
      await page.getByLabel('Domain', { exact: true }).fill(domain);
      await page.getByRole('button', { name: 'Add the domain' }).click();
      await page.waitForURL(/domain=/);
      const records = page.getByRole('table', { name: `DNS records to create for ${domain}` });
      const txt = records.getByRole('row', { name: /^TXT/ });
      await txt.waitFor();
      expect(await txt.textContent()).toContain(`_gatehouse-challenge.${domain}`);
      const txtValue = (await txt.locator('code').nth(1).textContent()) ?? '';
      expect(txtValue).toMatch(/^gatehouse-domain-verification=[A-Za-z0-9]{43}$/);
      expect(await records.getByRole('row', { name: /^CNAME/ }).textContent()).toContain(CNAME_TARGET);
      await page.getByRole('button', { name: "Copy the TXT record's value" }).click();
      await page.getByText('Copied').waitFor();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(txtValue);
      // Not published yet: "verify now" says why; published: verified.
      await page.getByRole('button', { name: `Verify ${domain} now` }).click();
      await page.getByText(`${domain} is not verified yet: no TXT record found yet.`).waitFor();
      dns.zone[`_gatehouse-challenge.${domain}`] = { txt: [txtValue] };
      await page.getByRole('button', { name: `Verify ${domain} now` }).click();
      await page.getByText(`${domain} is verified.`).waitFor();
      await page
        .getByRole('row', { name: new RegExp(domain) })
        .getByText('verified', { exact: true })
        .waitFor();
      await checkConsolePage(page, 'platform-domains');

      // Templates: the catalog; the magic link in the editor with the server's preview, which follows the draft.
      await nav('Templates').click();
      await page.getByRole('heading', { level: 1, name: 'Message templates' }).waitFor();
      await page.getByRole('link', { name: 'Edit Magic link' }).click();
      await page.waitForURL(/key=magic_link/);
      const previewSubject = page.locator('.preview-subject .rendered');
      await expect.poll(() => previewSubject.textContent()).toBe('Your sign-in link for Console Platform');
      await page.getByLabel('Subject', { exact: true }).fill('Sign in to {{app_name}} now, {{email}}');
      await expect.poll(() => previewSubject.textContent()).toBe('Sign in to Console Platform now, ada@example.com');
      await page.getByLabel('Body (HTML)').fill('<p>Hello from {{app_name}}: <a href="{{link}}">sign in</a></p>');
      await expect
        .poll(() => page.locator('.preview-text .rendered').textContent())
        .toMatch(/^Hello from Console Platform: sign in: https:\/\//);
      await page.getByRole('button', { name: 'Save the template' }).click();
      await page.getByText('Saved.', { exact: true }).waitFor();
      await page.getByText(/^Customized, last saved/).waitFor();
      // A test send of the saved template reaches the mailbox.
      const address = uniqueEmail('template-test');
      await page.getByLabel('Send a test to').fill(address);
      await page.getByRole('button', { name: 'Send a test' }).click();
      await page.getByText(`Test sent to ${address}.`).waitFor();
      const mail = await smtp.next(address);
      expect(mail.subject).toBe(`Sign in to Console Platform now, ${address}`);
      expect(mail.html).toContain('Hello from Console Platform');
      await checkConsolePage(page, 'platform-templates');
      // Reset to the default, after a confirmation.
      await page.getByRole('button', { name: 'Reset to default' }).click();
      await page.getByRole('alertdialog').getByRole('button', { name: 'Reset the template' }).click();
      await page.getByText('The default template.').waitFor();
      await expect.poll(() => previewSubject.textContent()).toBe('Your sign-in link for Console Platform');

      // Host access: a group, a host in it, and a rule allowing a user on that host, which the access check honours.
      const user = await createUser(app, { primary_email: uniqueEmail('host-user') });
      await nav('Host access').click();
      await page.getByRole('heading', { level: 1, name: 'Host access' }).waitFor();
      await page.getByText('No access rule').waitFor();
      await page.getByLabel('Group name').fill('production');
      await page.getByRole('button', { name: 'Add the group' }).click();
      await page
        .getByRole('table', { name: 'Host groups, newest first' })
        .getByRole('row', { name: /production/ })
        .waitFor();
      await page.getByLabel('Host name').fill('web-1');
      await page.getByRole('button', { name: /In the group \(optional\)/ }).click();
      await page.getByRole('option', { name: 'production' }).click();
      await page.getByRole('button', { name: 'Add the host' }).click();
      const hostRow = page.getByRole('table', { name: 'Hosts, newest first' }).getByRole('row', { name: /web-1/ });
      await hostRow.waitFor();
      expect(await hostRow.textContent()).toContain('production');
      await page.getByText('A user', { exact: true }).click();
      await page.getByLabel('User id').fill(user.id);
      await page.getByText('One host', { exact: true }).click();
      await page.getByRole('button', { name: /Host$/ }).click();
      await page.getByRole('option', { name: 'web-1' }).click();
      await page.getByRole('button', { name: 'Add the rule' }).click();
      const ruleRow = page.getByRole('table', { name: 'Access rules, newest first' }).getByRole('row', { name: /allow/ });
      await ruleRow.waitFor();
      expect(await ruleRow.textContent()).toContain(user.id);
      const [host] = await ok(app.rest('GET', '/v1/os/hosts'));
      expect(await ok(app.rest('POST', '/v1/os/access-check', { user_id: user.id, host_id: host.id }))).toMatchObject({
        allowed: true,
      });
      await checkConsolePage(page, 'platform-access');

      // Signing keys: the published key; rotate after a confirmation; the JWKS then leads with the new key.
      const [before] = (await jwks()).keys;
      await nav('Signing keys').click();
      await page.getByRole('heading', { level: 1, name: 'Signing keys' }).waitFor();
      await page.getByRole('row', { name: new RegExp(`${before?.kid}.*signing new tokens`) }).waitFor();
      await page.getByRole('button', { name: 'Rotate the signing key' }).click();
      await page.getByRole('alertdialog').getByRole('button', { name: 'Rotate the key' }).click();
      await page.getByText(/^New key .* is in use/).waitFor();
      const after = (await jwks()).keys.map((k) => k.kid);
      expect(after).toHaveLength(2);
      expect(after[0]).not.toBe(before?.kid);
      expect(after[1]).toBe(before?.kid);
      expect(await page.locator('.notice.success code').textContent()).toBe(after[0]);
      await page.getByRole('row', { name: new RegExp(`${after[0]}.*signing new tokens`) }).waitFor();
      await page.getByRole('row', { name: new RegExp(`${before?.kid}.*retired, still published`) }).waitFor();
      await checkConsolePage(page, 'platform-signing-keys');

      // Branding: a colour and the dark theme, saved; a logo uploaded and previewed.
      await nav('Settings').click();
      await page.getByRole('heading', { level: 2, name: 'Branding' }).waitFor();
      await page.getByLabel('Display name').fill('Platform Shop');
      await page.getByLabel('Primary colour').fill('#0F7B6C');
      await page.getByText('Always dark').click();
      await page.getByLabel('Support address').fill('help@example.com');
      await page.getByRole('button', { name: 'Save the branding' }).click();
      await page.getByText('Branding saved.').waitFor();
      const { settings } = await ok(app.rest('GET', `/v1/applications/${app.id}`));
      expect(settings.branding).toMatchObject({
        display_name: 'Platform Shop',
        primary_color: '#0f7b6c',
        theme: 'dark',
        support_email: 'help@example.com',
      });
      await page.getByText('Primary colour #0f7b6c').waitFor();
      await page.locator('input[type="file"]').setInputFiles({ name: 'logo.png', mimeType: 'image/png', buffer: PNG });
      const logo = page.getByRole('img', { name: 'Logo of Platform Shop' });
      await logo.waitFor();
      await expect.poll(() => logo.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(1);
      const uploaded = (await ok(app.rest('GET', `/v1/applications/${app.id}`))).settings.branding.logo_url;
      expect(uploaded).toMatch(new RegExp(`^${CONSOLE_ORIGIN}/a/${app.id}/logo\\?v=`));
      expect(await logo.getAttribute('src')).toBe(uploaded);
      await checkConsolePage(page, 'platform-branding');
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});

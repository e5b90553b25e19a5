import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, hasChromium, launchChromium, screenshot } from './helpers/browser.ts';
import { type LocalDns, startLocalDns } from './helpers/dns.ts';
import { createOrg } from './helpers/fixtures.ts';
import { browserRun } from './helpers/runs.ts';
import { createTestIdp, type TestIdp } from './helpers/saml-idp.ts';
import { ok, startServer, type TestApp, type TestServer } from './helpers/server.ts';

/**
 * The admin portal in Debian's Chromium, as a customer's IT administrator uses it: the app's link opens the portal,
 * they pick their IdP, read the steps and copy our values, upload the IdP's metadata file (a real samlify IdP), run
 * the connection test through the IdP's page and back, and enable the connection; they create a SCIM directory and
 * copy its token; they add a domain, copy its TXT
 * record, verify it against a local DNS server and set its policies; they read, filter and export the audit log. Every page is checked by axe-core
 * (WCAG 2.1 A and AA, no violation) on a light and a dark theme, with screenshots under test-artifacts/.
 * `localhost` (the server's base URL, a secure context for the clipboard) and `idp.test` are mapped by Chromium's
 * resolver rules.
 */
if (!hasChromium) console.warn('browser-portal: /usr/bin/chromium not found, the real-browser test is skipped.');

const BASE = 'http://localhost';
const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
const axeSource = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const escapeHtml = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

interface Violation {
  id: string;
  help: string;
  nodes: Array<{ target: unknown; failureSummary?: string }>;
}

describe.runIf(browserRun)('the admin portal in Chromium: SAML set-up and test; WCAG 2.1 AA (axe-core), screenshots', () => {
  let server: TestServer;
  let browser: Browser;
  let idp: TestIdp;
  let idpServer: Server;
  let tmp: string;
  let dns: LocalDns;
  /** The connection the IdP answers for (its SP metadata is read when a request arrives). */
  let connectionId = '';

  beforeAll(async () => {
    dns = await startLocalDns();
    server = await startServer({ baseUrl: BASE, allowInsecureSaml: true, dnsServers: [dns.address] });
    tmp = await mkdtemp(join(tmpdir(), 'gatehouse-portal-'));
    idp = await createTestIdp({ entityId: 'http://idp.test/metadata', ssoUrl: 'http://idp.test/sso' });
    // The IdP's page: the administrator is signed in at their IdP; a click posts the signed assertion to our ACS.
    idpServer = createServer((req, res) => {
      void (async () => {
        const spMetadata = await (await fetch(`${server.url}/v1/saml/metadata/${connectionId}`)).text();
        const form = await idp.respond(spMetadata, new URL(req.url ?? '/', 'http://idp.test').toString(), {
          email: 'it.admin@acme.test',
        });
        const inputs = Object.entries(form)
          .filter(([name]) => name !== 'acs')
          .map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value as string)}">`)
          .join('');
        res
          .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
          .end(
            `<!doctype html><html lang="en"><title>IdP</title><form method="post" action="${escapeHtml(form.acs)}">${inputs}<button id="continue">Continue</button></form></html>`,
          );
      })().catch((error: Error) => res.writeHead(500).end(error.message));
    });
    await new Promise<void>((resolve) => idpServer.listen(0, '127.0.0.1', resolve));
    browser = await launchChromium(
      `MAP localhost:80 ${new URL(server.url).host}, MAP idp.test:80 127.0.0.1:${(idpServer.address() as AddressInfo).port}`,
    );
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE });
  });

  afterAll(async () => {
    await browser?.close();
    idpServer?.closeAllConnections();
    await new Promise<void>((resolve) => (idpServer ? idpServer.close(() => resolve()) : resolve()));
    await server?.close();
    await dns?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  /** axe-core on the page as it is (WCAG 2.1 A/AA rules only), and a full-page screenshot. */
  async function check(page: Page, name: string, theme: string) {
    await page.waitForLoadState('load');
    expect(await page.getAttribute('html', 'lang')).toBe('en');
    await screenshot(page, `portal-${name}-en-${theme}`);
    // Evaluated through the DevTools protocol: the page's CSP (nonces only) does not apply to it.
    await page.evaluate(await axeSource);
    const { violations, passes } = await page.evaluate(async (tags) => {
      // axe-core's global, installed by its source just above.
      const axe = (
        window as unknown as {
          axe: { run: (context: Document, options: object) => Promise<{ violations: Violation[]; passes: unknown[] }> };
        }
      ).axe;
      const result = await axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] });
      return {
        passes: result.passes.length,
        violations: result.violations.map((v) => ({
          id: v.id,
          help: v.help,
          nodes: v.nodes.map((n) => ({ target: n.target, failureSummary: n.failureSummary })),
        })),
      };
    }, WCAG_TAGS);
    expect(passes).toBeGreaterThan(5);
    expect(violations, `${name} (${theme}): ${JSON.stringify(violations, null, 2)}`).toEqual([]);
  }

  async function portalApp(theme: 'light' | 'dark'): Promise<{ app: TestApp; orgId: string }> {
    const app = await server.createApp({ name: 'Acme Notes', allowed_origins: ['https://app.example.com'] });
    await ok(
      app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { branding: { theme, support_email: 'help@acme.test' } } }),
    );
    const org = await createOrg(app, { name: 'Globex Corporation' });
    return { app, orgId: org.id };
  }

  for (const theme of ['light', 'dark'] as const) {
    it(`${theme} theme: link → pick Okta → copy → upload metadata → test through the IdP → enable`, async () => {
      const { app, orgId } = await portalApp(theme);
      const { url } = await ok(
        app.rest('POST', `/v1/organizations/${orgId}/portal-links`, {
          intent: 'sso',
          return_url: 'https://app.example.com/settings',
        }),
        201,
      );
      await browser.context.clearCookies();
      await browser.context.setExtraHTTPHeaders({ 'accept-language': 'en' });
      const page = await browser.context.newPage();
      await page.emulateMedia({ colorScheme: theme });

      await page.goto(url);
      expect(new URL(page.url()).pathname).toBe('/portal/sso');
      expect(await page.textContent('h1')).toBe('Single sign-on (SAML)');
      await check(page, 'sso', theme);

      await page.click('#idp-okta');
      await page.waitForURL(/\/portal\/sso\/connections\/[0-9a-f-]{36}$/);
      connectionId = new URL(page.url()).pathname.split('/').pop() ?? '';
      const record = await ok(app.rest('GET', `/v1/saml/connections/${connectionId}`));
      expect(await page.textContent('#acs-url')).toBe(record.acs_url);
      expect(await page.textContent('#entity-id')).toBe(record.metadata_url);
      expect(await page.textContent('body')).toContain('Okta Admin Console');
      await check(page, 'connection-draft', theme);
      // Copy: the value lands on the clipboard, the button says so.
      await page.click('button[data-copy="acs-url"]');
      await expect.poll(() => page.textContent('button[data-copy="acs-url"]')).toBe('Copied');
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(record.acs_url);

      // The IdP's metadata file, uploaded.
      const file = join(tmp, `idp-metadata-${theme}.xml`);
      await writeFile(file, idp.metadataXml);
      await page.setInputFiles('#metadata-file', file);
      await expect.poll(() => page.inputValue('#metadata_xml')).toContain('EntityDescriptor');
      await page.click('#save-metadata');
      await page.waitForURL(/\?done=metadata$/);
      expect(await page.textContent('.notice')).toContain('The metadata was saved');
      expect(await page.textContent('body')).toMatch(/Certificate expires on/);
      await check(page, 'connection-configured', theme);

      // The connection test: through the IdP's page and back to the portal.
      await page.click('#test-connection');
      await page.waitForURL(/^http:\/\/idp\.test\/sso\?SAMLRequest=/);
      await page.click('#continue');
      await page.waitForURL(/\/portal\/sso\/test\?hop=/);
      expect(await page.textContent('h1')).toBe('The connection works');
      expect(await page.textContent('#attributes')).toContain('it.admin@acme.test');
      await check(page, 'test-passed', theme);

      await page.click('text=Back to the connection');
      await page.click('#enable');
      await page.waitForURL(/\?done=enabled$/);
      expect((await ok(app.rest('GET', `/v1/saml/connections/${connectionId}`))).enabled).toBe(true);
      await check(page, 'connection-enabled', theme);

      // Done: back to the app (its page is not served here: the navigation's target is what counts).
      const [request] = await Promise.all([
        page.waitForRequest((r) => r.url().startsWith('https://app.example.com/')),
        page.click('text=Done — back to the app'),
      ]);
      expect(request.url()).toBe('https://app.example.com/settings');

      // The rest in a new tab: the failed navigation to the app's page (not served here) could interrupt this one's.
      const next = await browser.context.newPage();
      await next.emulateMedia({ colorScheme: theme });
      await page.close();
      // The link again: used. Another intent's section, and a page of an ended session.
      await next.goto(url);
      await check(next, 'link-used', theme);
      const directory = await ok(app.rest('POST', `/v1/organizations/${orgId}/portal-links`, { intent: 'directory' }), 201);
      await next.goto(directory.url);
      expect(new URL(next.url()).pathname).toBe('/portal/directory');
      await check(next, 'directory', theme);
      // A directory: its SCIM base URL and its token (shown once), copied.
      await next.fill('#name', 'Okta production');
      await next.selectOption('#provider', 'okta');
      await next.click('#create-directory');
      // The token is the answer to the form's post (never in an address).
      await next.waitForURL(/\/portal\/directory\/create$/);
      const [made] = await ok(app.rest('GET', `/v1/organizations/${orgId}/directories`));
      expect(await next.textContent('#scim-base-url')).toBe(made.scim_base_url);
      expect(await next.textContent('#scim-token')).toMatch(/^scim_/);
      await next.click('button[data-copy="scim-token"]');
      await expect.poll(() => next.textContent('button[data-copy="scim-token"]')).toBe('Copied');
      expect(await next.evaluate(() => navigator.clipboard.readText())).toBe(await next.textContent('#scim-token'));
      await check(next, 'directory-created', theme);
      await next.close();
    });
  }
  for (const theme of ['light', 'dark'] as const) {
    it(`${theme} theme: domains — add, copy the TXT record, verify against the DNS server, set policies; then the audit log`, async () => {
      const { app, orgId } = await portalApp(theme);
      const { url } = await ok(app.rest('POST', `/v1/organizations/${orgId}/portal-links`, { intent: 'domains' }), 201);
      await browser.context.clearCookies();
      await browser.context.setExtraHTTPHeaders({ 'accept-language': 'en' });
      const page = await browser.context.newPage();
      await page.emulateMedia({ colorScheme: theme });

      await page.goto(url);
      expect(new URL(page.url()).pathname).toBe('/portal/domains');
      expect(await page.textContent('h1')).toBe('Domains');
      await check(page, 'domains', theme);

      const name = `globex-${theme}-${Date.now().toString(36)}.gatehouse-test.dev`;
      await page.fill('#domain', name);
      await page.click('#add-domain');
      await page.waitForURL(/\/portal\/domains\/[0-9a-f-]{36}\?done=added$/);
      const [record] = await ok(app.rest('GET', `/v1/organizations/${orgId}/domains`));
      expect(await page.textContent('#record-name')).toBe(record.verification.name);
      expect(await page.textContent('#record-value')).toBe(record.verification.value);
      await check(page, 'domain-pending', theme);
      await page.click('button[data-copy="record-value"]');
      await expect.poll(() => page.textContent('button[data-copy="record-value"]')).toBe('Copied');
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(record.verification.value);

      // Verified before the record is published: not yet. Then published at the DNS server: verified.
      await page.click('#verify');
      await page.waitForLoadState('load');
      expect(await page.textContent('[role=alert]')).toContain('The record was not found yet');
      await check(page, 'domain-not-found-yet', theme);
      dns.zone[record.verification.name] = { txt: [record.verification.value] };
      await page.click('#verify');
      await page.waitForURL(/\?done=verified$/);
      expect((await ok(app.rest('GET', `/v1/organizations/${orgId}/domains`)))[0].status).toBe('verified');
      await check(page, 'domain-verified', theme);
      await page.selectOption('#join_policy', 'automatic');
      await page.click('#save-policies');
      await page.waitForURL(/\?done=policies$/);
      expect((await ok(app.rest('GET', `/v1/organizations/${orgId}/domains`)))[0].join_policy).toBe('automatic');

      // The audit log, in a session of its own: the portal's changes, filtered, and exported.
      const audit = await ok(app.rest('POST', `/v1/organizations/${orgId}/portal-links`, { intent: 'audit_log' }), 201);
      await page.goto(audit.url);
      expect(new URL(page.url()).pathname).toBe('/portal/audit-log');
      expect(await page.textContent('#entries')).toContain('organization_domain.verified');
      await check(page, 'audit-log', theme);
      await page.selectOption('#action', 'organization_domain.*');
      await page.click('#filter');
      await page.waitForURL(/action=organization_domain/);
      const shown = await page.textContent('#entries');
      expect(shown).toContain('portal');
      expect(shown).not.toContain('organization.created');
      await check(page, 'audit-log-filtered', theme);
      // The export link: a download of the organization's entries under the filter.
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-csv')]);
      expect(download.suggestedFilename()).toBe('audit-log.csv');
      const csv = await readFile(await download.path(), 'utf8');
      expect(csv).toContain('organization_domain.updated');
      expect(csv).not.toContain('organization.created');
      await page.close();
    });
  }
});

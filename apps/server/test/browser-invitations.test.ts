import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, hasChromium, launchChromium, screenshot } from './helpers/browser.ts';
import { createOrg, uniqueEmail } from './helpers/fixtures.ts';
import { browserRun } from './helpers/runs.ts';
import { ok, startServer, type TestApp, type TestServer } from './helpers/server.ts';
import type { SmtpSink } from './helpers/sign-in.ts';
import { linkIn, startSmtpSink } from './helpers/smtp.ts';

/**
 * An invitation's whole path in Debian's Chromium: the mail (from the SMTP sink), its link, the page signed out, the
 * sign-in as the invited address (its magic link from the SMTP sink too), back on the page to accept, the account page;
 * then the page as someone else, and a spent link. Every page checked by axe-core (WCAG 2.1 A/AA, no violation), in
 * English and French, with a screenshot of each under test-artifacts/.
 */
if (!hasChromium) console.warn('browser-invitations: /usr/bin/chromium not found, the real-browser test is skipped.');

const BASE = 'http://localhost';
const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
const axeSource = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface Violation {
  id: string;
  help: string;
  nodes: Array<{ target: unknown; failureSummary?: string }>;
}

describe.runIf(browserRun)('the invitation path in Chromium (axe-core, screenshots)', () => {
  let smtp: SmtpSink;
  let server: TestServer;
  let browser: Browser;
  let app: TestApp;

  beforeAll(async () => {
    smtp = await startSmtpSink();
    server = await startServer({ smtpUrl: smtp.url, baseUrl: BASE });
    app = await server.createApp({ name: 'Acme Notes', allowed_origins: [BASE] });
    browser = await launchChromium(`MAP localhost:80 ${new URL(server.url).host}`);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await smtp?.close();
  });

  async function check(page: Page, name: string, locale: string) {
    await page.waitForLoadState('load');
    // The waiting page reloads itself every few seconds: its timer is cleared so the check sees one page.
    await page.evaluate(() => {
      const last = window.setTimeout(() => undefined, 0);
      for (let id = 0; id <= last; id++) window.clearTimeout(id);
    });
    expect(await page.getAttribute('html', 'lang')).toBe(locale);
    await screenshot(page, `invitation-${name}-${locale}`);
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
        violations: result.violations.map((v) => ({ id: v.id, help: v.help, nodes: v.nodes.map((n) => n.target) })),
      };
    }, WCAG_TAGS);
    expect(passes).toBeGreaterThan(5);
    expect(violations, `${name} (${locale}): ${JSON.stringify(violations, null, 2)}`).toEqual([]);
  }

  /** Invites `email` to a new organization; answers the organization and the mailed link. */
  async function invite(email: string, role = 'member') {
    const org = await createOrg(app, { name: 'Acme Research' });
    await ok(app.rest('POST', `/v1/organizations/${org.id}/invitations`, { email, role }), 201);
    const mail = await smtp.next(email);
    expect(mail.subject).toBe('You are invited to join Acme Research on Acme Notes');
    return { org, link: linkIn(mail) };
  }

  for (const locale of ['en', 'fr'] as const) {
    it(`${locale === 'en' ? 'English' : 'French'}: mail → page → sign in → accept → account; someone else; a spent link`, async () => {
      const base = `${BASE}/a/${app.id}`;
      await browser.context.clearCookies();
      await browser.context.setExtraHTTPHeaders({ 'accept-language': locale });
      const page = await browser.context.newPage();
      const email = uniqueEmail(`browser-${locale}`);
      const { org, link } = await invite(email, 'admin');
      expect(link.href).toMatch(new RegExp(`^${base}/invitations/inv_`));

      // Signed out: the organization, the role, and the way in as the invited address.
      await page.goto(link.href);
      await page.waitForSelector('form[action$="/invitations/sign-in"]');
      expect(await page.textContent('h1')).toBe(locale === 'en' ? 'Join Acme Research' : 'Rejoindre Acme Research');
      expect(await page.textContent('main')).toContain(email);
      await check(page, 'signed-out', locale);
      await page.click('form[action$="/invitations/sign-in"] button');
      await page.waitForURL(`${base}/sign-in/wait`);

      // The magic link from the mail, opened in this browser: the sign-in comes back to the invitation.
      const magic = linkIn(await smtp.next(email));
      await page.goto(magic.href);
      await page.click('form[action$="/magic-link"] button');
      await page.waitForURL(link.href);
      await page.waitForSelector('form[action$="/invitations/accept"]');
      await check(page, 'accept', locale);
      await page.click('form[action$="/invitations/accept"] button');
      await page.waitForURL(`${base}/account`);
      const members = await ok(app.rest('GET', `/v1/organizations/${org.id}/members`));
      expect(members.members).toEqual([expect.objectContaining({ email, role: 'admin', source: 'invitation' })]);

      // Someone else's invitation opened while signed in: said so, with the way to switch.
      const other = await invite(uniqueEmail(`browser-other-${locale}`));
      await page.goto(other.link.href);
      await page.waitForSelector('form[action$="/invitations/switch"]');
      await check(page, 'other-account', locale);

      // The spent link.
      const spent = await page.goto(link.href);
      expect(spent?.status()).toBe(401);
      await page.waitForSelector('p.error[role="alert"]');
      await check(page, 'spent', locale);
      await page.close();
    });
  }
});

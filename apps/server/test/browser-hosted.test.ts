import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, hasChromium, launchChromium, screenshot } from './helpers/browser.ts';
import { createOrg, uniqueEmail } from './helpers/fixtures.ts';
import { enrolTotp, totpCode } from './helpers/mfa.ts';
import { browserRun } from './helpers/runs.ts';
import { ok, startServer, type TestApp, type TestServer } from './helpers/server.ts';
import { endUser, type SmtpSink, signIn } from './helpers/sign-in.ts';
import { linkIn, startSmtpSink } from './helpers/smtp.ts';

/**
 * Every hosted page in Debian's Chromium, in English and French, on a light and a dark theme, checked by axe-core
 * against the WCAG 2.1 A and AA rules (no violation allowed), with a screenshot of each kept under test-artifacts/
 * (gitignored): sign-up, sign-in, the waiting page, the magic link's landing, "confirmed elsewhere", the second
 * factor, consent documents, the account page, the authenticator app's enrolment, backup codes, the organization
 * picker, sign-out, an error and 404.
 * The server's base URL `localhost` is mapped to the test server by Chromium's resolver rules.
 */
if (!hasChromium) console.warn('browser-hosted: /usr/bin/chromium not found, the real-browser test is skipped.');

/** localhost: a secure context, so the pages' passkey parts (WebAuthn) show and are checked too. */
const BASE = 'http://localhost';
const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
const axeSource = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface Violation {
  id: string;
  help: string;
  nodes: Array<{ target: unknown; failureSummary?: string }>;
}

describe.runIf(browserRun)('every hosted page in Chromium: WCAG 2.1 AA (axe-core), screenshots', () => {
  let smtp: SmtpSink;
  let server: TestServer;
  let browser: Browser;
  const apps: Record<'light' | 'dark', TestApp> = {} as never;
  /** Per theme, per language: a person with an authenticator app (its seed). */
  const people = new Map<string, { email: string; secret: string }>();

  beforeAll(async () => {
    smtp = await startSmtpSink();
    server = await startServer({ smtpUrl: smtp.url, baseUrl: BASE });
    for (const theme of ['light', 'dark'] as const) {
      // The pages' origin allowed: passkeys are offered (sign-in, second factor, the account page's section).
      const app = await server.createApp({ name: 'Acme Notes', allowed_origins: [BASE] });
      apps[theme] = app;
      for (const locale of ['en', 'fr']) {
        const email = uniqueEmail(`a11y-${theme}-${locale}`);
        const { tokens, user } = await signIn(server, smtp, app, email);
        const { secret } = await enrolTotp(app, tokens.access_token);
        // A member of two organizations: the organization picker has a choice to show.
        for (const name of ['Acme Research', 'Acme Sales']) {
          const org = await createOrg(app, { name });
          await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id }), 201);
        }
        await smtp.next(email); // the notice that a second factor was added
        people.set(`${theme}/${locale}`, { email, secret });
      }
      // Consent documents after the enrolments (the API sign-ins above would stop at them).
      await ok(
        app.rest('PATCH', `/v1/applications/${app.id}`, {
          settings: {
            branding: { theme, support_email: 'help@acme.test' },
            consent_documents: [{ doc_type: 'terms', url: 'https://acme.test/terms', version: '1' }],
          },
        }),
      );
    }
    browser = await launchChromium(`MAP localhost:80 ${new URL(server.url).host}`);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await smtp?.close();
  });

  /** axe-core on the page as it is (WCAG 2.1 A/AA rules only), and a full-page screenshot. */
  async function check(page: Page, name: string, locale: string, theme: string) {
    await page.waitForLoadState('load');
    // The waiting page reloads itself every few seconds: its timer is cleared so the check sees one page.
    await page.evaluate(() => {
      const last = window.setTimeout(() => undefined, 0);
      for (let id = 0; id <= last; id++) window.clearTimeout(id);
    });
    expect(await page.getAttribute('html', 'lang')).toBe(locale);
    await screenshot(page, `hosted-${name}-${locale}-${theme}`);
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
    // axe ran its rules here (color-contrast, labels, lang, names…): some passed.
    expect(passes).toBeGreaterThan(5);
    expect(violations, `${name} (${locale}, ${theme}): ${JSON.stringify(violations, null, 2)}`).toEqual([]);
  }

  for (const theme of ['light', 'dark'] as const) {
    for (const locale of ['en', 'fr'] as const) {
      it(`${theme} theme, ${locale === 'en' ? 'English' : 'French'}`, async () => {
        const app = apps[theme];
        const person = people.get(`${theme}/${locale}`)!;
        const base = `${BASE}/a/${app.id}`;
        await browser.context.clearCookies();
        await browser.context.setExtraHTTPHeaders({ 'accept-language': locale });
        const page = await browser.context.newPage();
        // Pages without an application's theme (404) follow the system's: the same as the application's here.
        await page.emulateMedia({ colorScheme: theme });

        // The sign-up page (sign-up is open by default), the sign-in page, then the page that waits for the link.
        await page.goto(`${base}/sign-up`);
        await page.waitForSelector('form[action$="/sign-up"]');
        await check(page, 'sign-up', locale, theme);
        await page.goto(`${base}/sign-in`);
        await check(page, 'sign-in', locale, theme);
        await page.fill('#email', person.email);
        await page.click('form[action$="/sign-in"] button');
        await page.waitForURL(`${base}/sign-in/wait`);
        await check(page, 'check-email', locale, theme);
        const link = linkIn(await smtp.next(person.email));

        // Another person's link opened here: its landing page, and "confirmed: go back to the other device".
        const otherEmail = uniqueEmail(`a11y-other-${theme}-${locale}`);
        await ok(endUser(app, 'POST', '/v1/auth/magic-link/start', { email: otherEmail, redirect_url: `${base}/magic-link` }));
        const otherLink = linkIn(await smtp.next(otherEmail));
        await page.goto(`${base}/magic-link${otherLink.search}`);
        await check(page, 'magic-link', locale, theme);
        await page.click('form[action$="/magic-link"] button');
        await page.waitForSelector('p[role="status"]');
        await check(page, 'elsewhere', locale, theme);

        // This person's link: the consent documents, the second factor, the account page.
        await page.goto(`${base}/magic-link${link.search}`);
        await page.click('form[action$="/magic-link"] button');
        await page.waitForSelector('form[action$="/consent"]');
        await check(page, 'consent', locale, theme);
        await page.click('form[action$="/consent"] button');
        await page.waitForSelector('#code-totp');
        await check(page, 'mfa', locale, theme);
        await page.fill('#code-totp', totpCode(person.secret, 30_000));
        await page.click('form:has(#code-totp) button');
        await page.waitForURL(`${base}/account`);
        await check(page, 'account', locale, theme);

        // The authenticator app's enrolment (a replacement: this session is at aal 2), then backup codes.
        await page.click('form[action$="/account/totp/enroll"] button');
        await page.waitForURL(`${base}/account/totp`);
        await page.waitForSelector('svg.qr');
        await check(page, 'account-totp', locale, theme);
        await page.goto(`${base}/account`);
        await page.click('form[action$="/account/backup-codes"] button');
        await page.waitForSelector('ul.codes');
        await check(page, 'backup-codes', locale, theme);

        // The organization picker.
        await page.goto(`${base}/organization`);
        await page.waitForSelector('form[action$="/organization"]');
        await check(page, 'organization', locale, theme);

        // An action's outcome on the account page (here: the profile saved).
        await page.goto(`${base}/account`);
        await page.fill('#profile-name', 'Ada');
        await page.click('form[action$="/account/profile"] button');
        await page.waitForSelector('p.notice[role="status"]');
        await check(page, 'account-saved', locale, theme);

        // Sign-out.
        await page.click('form[action$="/sign-out"] button');
        await page.waitForSelector('a.button[href$="/sign-in"]');
        await check(page, 'sign-out', locale, theme);

        // An error (a link that is no link) and a page that does not exist.
        await page.goto(`${base}/magic-link?token=not-a-token`);
        await page.click('form[action$="/magic-link"] button');
        await page.waitForSelector('p.error[role="alert"]');
        await check(page, 'error', locale, theme);
        const missing = await page.goto(`${BASE}/a/00000000-0000-7000-8000-000000000000/sign-in`);
        expect(missing?.status()).toBe(404);
        await check(page, 'not-found', locale, theme);
        await page.close();
      });
    }
  }
});

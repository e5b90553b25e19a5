import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import { screenshot } from './browser.ts';
import { enrolTotp, totpCode } from './mfa.ts';
import { ok, rawRequest, sql, type TestApp, type TestServer } from './server.ts';

/**
 * What the console's browser tests share: axe-core on a page in light and dark with its screenshots, an operator added
 * with the operator token and signed in with their one-time link, and the step-up to aal 2 with an authenticator app.
 * The server must run with `baseUrl: 'http://localhost'` and Chromium map `localhost:80` to it (a secure context for
 * WebAuthn and the clipboard).
 */
export const CONSOLE_ORIGIN = 'http://localhost';

const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
const axeSource = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface Violation {
  id: string;
  help: string;
  nodes: Array<{ target: unknown; failureSummary?: string }>;
}

/**
 * axe-core (WCAG 2.1 A/AA rules only) on the page as it is, in the light and the dark scheme, with a screenshot of each
 * kept as a test artifact (`console/<name>-<scheme>.png`).
 */
export async function checkConsolePage(page: Page, name: string): Promise<void> {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await screenshot(page, `console/${name}-${scheme}`);
    // Evaluated through the DevTools protocol: the console's CSP (its own files only) does not apply to it, as an
    // injected <script> (page.addScriptTag) would be refused by it.
    await page.evaluate(await axeSource);
    const { violations, passes } = await page.evaluate(async (tags) => {
      // axe-core's global, installed by its source just above.
      const axe = (
        window as unknown as {
          axe: { run: (context: Document, options: object) => Promise<{ violations: Violation[]; passes: unknown[] }> };
        }
      ).axe;
      const result = await axe.run(document, { runOnly: { type: 'tag', values: tags } });
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
    expect(violations, `${name} (${scheme}): ${JSON.stringify(violations, null, 2)}`).toEqual([]);
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

/**
 * What the browser reports as wrong on a page, collected into the array answered: a refused style or script (the
 * CSP), an uncaught error, a failed request (the browser's own favicon.ico aside: the console has none). A test
 * that expects a refusal (a 403) collects with `requests: false`.
 */
export function watchConsolePage(page: Page, { requests = true } = {}): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(error.message));
  if (requests) {
    page.on('response', (response) => {
      if (response.status() >= 400 && new URL(response.url()).pathname !== '/favicon.ico')
        errors.push(`${response.status()} ${response.url()}`);
    });
  }
  return errors;
}

/** Adds an operator with the operator token; answers them and their one-time sign-in link. */
export async function addOperator(
  server: TestServer,
  email: string,
  role: 'owner' | 'admin' | 'support' | 'viewer',
  applicationId: string | null,
): Promise<{ userId: string; link: string }> {
  const added = await ok(
    rawRequest(server.url, 'POST', '/v1/operators', {
      body: { email, role, application_id: applicationId },
      headers: { authorization: `Bearer ${server.operatorToken}` },
    }),
    201,
  );
  expect(added.sign_in_link.url).toMatch(/^http:\/\/localhost\/console\/sign-in\?token=ml_/);
  return { userId: added.operator.user_id, link: added.sign_in_link.url };
}

/** Opens an operator's one-time link and confirms it: the console's applications page, signed in at aal 1. */
export async function signInWithLink(page: Page, link: string): Promise<void> {
  await page.goto(link);
  await page.getByRole('button', { name: 'Yes, sign me in' }).click();
  await page.getByRole('heading', { name: 'Applications', level: 1 }).waitFor();
  expect(new URL(page.url()).pathname).toBe('/console/apps');
}

/**
 * Enrols an authenticator app on the signed-in operator's console account (through the console application's API,
 * with the page's own session) and steps up with it: the browser ends on `returnPath` at aal 2, where writes go
 * through. Answers the app's secret.
 */
export async function stepUpWithTotp(server: TestServer, page: Page, userId: string, returnPath: string): Promise<string> {
  const { access_token: token } = await page.evaluate(async () => {
    const response = await fetch('/console/session', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    return ((await response.json()) as { data: { access_token: string } }).data;
  });
  const [consoleApplication] = await sql(server, "select id from applications where reserved = 'console'");
  // Only `rest` of a TestApp is used by enrolTotp: the console application has no secret key to build one from.
  const consoleApp = {
    id: consoleApplication.id,
    rest: (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
      rawRequest(server.url, method, path, {
        body,
        headers: { 'x-application-id': consoleApplication.id, origin: CONSOLE_ORIGIN, ...headers },
      }),
  } as unknown as TestApp;
  const { secret } = await enrolTotp(consoleApp, token);
  // The enrolment spent this step's code: the step-up's code may be the same one.
  await sql(server, 'update mfa_factors set last_used_step = null where user_id = ?', [userId]);
  await page.goto(`${CONSOLE_ORIGIN}/console/sign-in?aal=2&return=${encodeURIComponent(returnPath)}`);
  await page.locator('#code-totp').fill(totpCode(secret));
  await page.getByRole('button', { name: 'Verify' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}${returnPath}`);
  return secret;
}

import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, hasChromium, launchChromium } from './helpers/browser.ts';
import { createUser, uniqueEmail } from './helpers/fixtures.ts';
import { enrolTotp, totpCode } from './helpers/mfa.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';
import { ok, rawRequest, sql, startServer, type TestApp, type TestServer } from './helpers/server.ts';

/**
 * The console's dashboard, events and webhooks pages in Debian's Chromium, served by the server at /console with its
 * CSP: an operator signs in with the one-time link, opens the dashboard of an application with seeded sign-ins (the
 * charts and their tables), the events (a filter, one entry's JSON), and — after a step-up with an authenticator app —
 * the webhooks page (adds an endpoint, sends a test event, sees its delivery and the attempt). axe-core checks each page
 * (WCAG 2.1 A/AA) in the light and the dark scheme; screenshots go to apps/server/test/artifacts/console/.
 */
if (!hasChromium) console.warn('browser-console-pages: /usr/bin/chromium not found, the real-browser test is skipped.');

const ORIGIN = 'http://localhost';
const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
const axeSource = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const ARTIFACTS = join(import.meta.dirname, 'artifacts', 'console');

interface Violation {
  id: string;
  help: string;
  nodes: Array<{ target: unknown; failureSummary?: string }>;
}

/** axe-core (WCAG 2.1 A/AA rules) on the page as it is, in the light and the dark scheme; a screenshot of each. */
async function check(page: Page, name: string) {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${scheme}.png`), fullPage: true });
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

describe.skipIf(!hasChromium)('the console’s dashboard, events and webhooks pages in Chromium', () => {
  let server: TestServer;
  let receiver: Receiver;
  let app: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    receiver = await startReceiver();
    server = await startServer({
      baseUrl: ORIGIN,
      webhooks: { allowInsecure: true, retryScheduleS: [0.2, 0.2, 0.2], timeoutMs: 2000 },
    });
    app = await server.createApp({ name: 'Console Notes' });
    browser = await launchChromium(`MAP localhost:80 ${new URL(server.url).host}`);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await receiver?.close();
  });

  /** Sessions opened `daysAgo` days ago by `userId`, with the first factor `amr` (as the service writes them). */
  const session = (userId: string, daysAgo: number, amr: string[]) =>
    sql(
      server,
      `insert into sessions (id, application_id, user_id, aal, amr, refresh_token_hash, mfa_enrollment_required, ip,
                             created_at, last_active_at, expires_at)
       values (gen_random_uuid(), ?, ?, 1, ?::jsonb, md5(random()::text) || md5(random()::text), false, '127.0.0.1',
               now() - ?::interval, now() - ?::interval, now() + interval '90 days')`,
      [app.id, userId, JSON.stringify(amr), `${daysAgo} days`, `${daysAgo} days`],
    );

  it('an operator signs in, reads the dashboard and the events, steps up and sets up a webhook that delivers', async () => {
    // Some traffic: users (their user.created events), sign-ins by three methods over the last days, a refused one.
    const users: string[] = [];
    for (let i = 0; i < 4; i++) users.push((await createUser(app, { primary_email: uniqueEmail(`dash${i}`) })).id);
    for (const [i, userId] of users.entries()) {
      await session(userId, 0, ['email']);
      await session(userId, i + 1, i % 2 ? ['pop'] : ['fed']);
    }
    await sql(
      server,
      `insert into events (id, application_id, type, data, created_at, actor_type, actor_id)
       values (gen_random_uuid(), ?, 'access.denied', '{}', now(), 'system', 'gatehouse')`,
      [app.id],
    );

    // The operator (an instance owner) and their one-time link: confirmed on its page, it opens the console.
    const email = uniqueEmail('console-operator');
    const added = await ok(
      rawRequest(server.url, 'POST', '/v1/operators', {
        body: { email, role: 'owner', application_id: null },
        headers: { authorization: `Bearer ${server.operatorToken}` },
      }),
      201,
    );
    const link = new URL(added.sign_in_link.url);
    expect(link.origin).toBe(ORIGIN);
    const page = await browser.context.newPage();
    // What the browser reports as wrong: a refused style or script (the CSP), a script error, a failed request (the
    // browser's own favicon.ico aside: the console has none).
    const errors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) errors.push(message.text());
    });
    page.on('response', (response) => {
      if (response.status() >= 400 && new URL(response.url()).pathname !== '/favicon.ico')
        errors.push(`${response.status()} ${response.url()}`);
    });
    try {
      await page.goto(link.toString());
      await page.getByRole('button', { name: 'Yes, sign me in' }).click();
      await page.waitForURL(/\/console\/apps/);

      // The application's landing page is its dashboard: headline figures, five charts, each with its table.
      await page.goto(`${ORIGIN}/console/apps/${app.id}`);
      await page.waitForURL(`${ORIGIN}/console/apps/${app.id}/dashboard`);
      await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
      const signIns = page.getByRole('figure', { name: /Sign-ins per day, by method/ });
      await signIns.waitFor();
      await expect.poll(() => page.locator('figure.chart .recharts-wrapper').count()).toBe(5);
      expect(await page.locator('figure.chart .recharts-bar-rectangle').count()).toBeGreaterThan(0);
      await expect.poll(() => signIns.textContent()).toContain('8 sign-ins');
      const today = new Date().toISOString().slice(0, 10);
      // The numbers are in a table for screen readers; "Show as table" shows it in place of the chart.
      const todayRow = signIns.getByRole('row', { name: new RegExp(`^${today}`) });
      expect(await todayRow.textContent()).toBe(`${today}40004`);
      await signIns.getByRole('button', { name: 'Show as table' }).click();
      await todayRow.waitFor({ state: 'visible' });
      expect(await signIns.locator('.recharts-wrapper').count()).toBe(0);
      await expect
        .poll(() => page.getByRole('figure', { name: /Failed sign-ins/ }).textContent())
        .toContain('1 refused sign-ins');
      await check(page, 'dashboard');
      // The period is in the URL.
      await page.getByText('Last 7 days').click();
      await page.waitForURL(/days=7/);
      await expect.poll(() => page.locator('figure.chart table').first().locator('tbody tr').count()).toBe(7);

      // The events: newest first; a filter by type goes to the URL; one entry opens to its JSON.
      await page.getByRole('navigation', { name: 'Application' }).getByRole('link', { name: 'Events' }).click();
      await page.getByRole('heading', { level: 1, name: 'Events' }).waitFor();
      await page.getByRole('row', { name: /access\.denied/ }).waitFor();
      await page.getByLabel('Event type').fill('user.created');
      await page.getByRole('button', { name: 'Apply the filters' }).click();
      await page.waitForURL(/action=user\.created/);
      await expect.poll(() => page.locator('table.events tbody tr').count()).toBe(4);
      await page
        .getByRole('button', { name: /^Show JSON of user\.created/ })
        .first()
        .click();
      const json = page.locator('tr.event-json pre');
      await json.waitFor();
      expect(JSON.parse((await json.textContent()) ?? '')).toMatchObject({ action: 'user.created', actor: { type: 'api_key' } });
      await page.getByText('Live: show new events as they happen').click();
      await page.waitForURL(/live=true/);
      await page.getByText('Live: checking for new events every 5 seconds.').waitFor();
      await check(page, 'events');

      // Writes need the second factor: an authenticator app on the operator's console account, then the step-up.
      const { access_token: token } = await page.evaluate(async () => {
        const response = await fetch('/console/session', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        });
        return ((await response.json()) as { data: { access_token: string } }).data;
      });
      const [consoleApplication] = await sql(server, "select id from applications where reserved = 'console'");
      const consoleApp = {
        id: consoleApplication.id,
        rest: (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
          rawRequest(server.url, method, path, {
            body,
            headers: { 'x-application-id': consoleApplication.id, origin: ORIGIN, ...headers },
          }),
      } as unknown as TestApp;
      const { secret } = await enrolTotp(consoleApp, token);
      // The enrolment spent this step's code: the step-up's code may be the same one.
      await sql(server, 'update mfa_factors set last_used_step = null where user_id = ?', [added.operator.user_id]);
      await page.goto(`${ORIGIN}/console/sign-in?aal=2&return=${encodeURIComponent(`/console/apps/${app.id}/webhooks`)}`);
      await page.locator('#code-totp').fill(totpCode(secret));
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.waitForURL(`${ORIGIN}/console/apps/${app.id}/webhooks`);
      await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
      await page.getByText('No webhook endpoint').waitFor();

      // An endpoint: its secret shown once; a test event; its delivery and the attempt's answer.
      const url = `${receiver.url}/hooks/console`;
      await page.getByLabel('Address').fill(url);
      await page.getByLabel('Event types').fill('user.created');
      await page.getByRole('button', { name: 'Add the endpoint' }).click();
      await page.getByText('Copy its signing secret now').waitFor();
      expect(await page.locator('.secret code').textContent()).toMatch(/^whsec_/);
      await page.getByRole('button', { name: `Send a test event to ${url}` }).click();
      await page.getByRole('link', { name: 'See its deliveries' }).click();
      await page.waitForURL(/endpoint=/);
      const delivery = page.getByRole('row', { name: /webhook\.test/ });
      await delivery.getByText('succeeded').waitFor();
      expect(receiver.received.filter((r) => r.path === '/hooks/console')).toHaveLength(1);
      await delivery.getByRole('link', { name: /Attempts of the webhook\.test delivery/ }).click();
      await page.waitForURL(/delivery=/);
      const attempt = page.getByRole('table', { name: 'Attempts, oldest first' }).getByRole('row').nth(1);
      await attempt.waitFor();
      expect(await attempt.textContent()).toMatch(/200\d+ msok/);
      await check(page, 'webhooks');
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});

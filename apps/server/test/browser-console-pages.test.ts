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
import { createUser, uniqueEmail } from './helpers/fixtures.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';
import { browserRun } from './helpers/runs.ts';
import { sql, startServer, type TestApp, type TestServer } from './helpers/server.ts';

/**
 * The console's dashboard, events and webhooks pages in Debian's Chromium, served by the server at /console with its
 * CSP: an operator signs in with the one-time link, opens the dashboard of an application with seeded sign-ins (the
 * charts and their tables), the events (a filter, one entry's JSON), and — after a step-up with an authenticator app —
 * the webhooks page (adds an endpoint, sends a test event, sees its delivery and the attempt). axe-core checks each page
 * (WCAG 2.1 A/AA) in the light and the dark scheme; screenshots go to apps/server/test-artifacts/console/.
 */
if (!hasChromium) console.warn('browser-console-pages: /usr/bin/chromium not found, the real-browser test is skipped.');

describe.runIf(browserRun)('the console’s dashboard, events and webhooks pages in Chromium', () => {
  let server: TestServer;
  let receiver: Receiver;
  let app: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    receiver = await startReceiver();
    server = await startServer({
      baseUrl: CONSOLE_ORIGIN,
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
    const operator = await addOperator(server, uniqueEmail('console-operator'), 'owner', null);
    const page = await browser.context.newPage();
    const errors = watchConsolePage(page);
    try {
      await signInWithLink(page, operator.link);

      // The application's landing page is its dashboard: headline figures, five charts, each with its table.
      await page.goto(`${CONSOLE_ORIGIN}/console/apps/${app.id}`);
      await page.waitForURL(`${CONSOLE_ORIGIN}/console/apps/${app.id}/dashboard`);
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
      await checkConsolePage(page, 'dashboard');
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
      await checkConsolePage(page, 'events');

      // Writes need the second factor: an authenticator app on the operator's console account, then the step-up.
      await stepUpWithTotp(server, page, operator.userId, `/console/apps/${app.id}/webhooks`);
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
      await checkConsolePage(page, 'webhooks');
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});

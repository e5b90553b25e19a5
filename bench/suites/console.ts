/**
 * console: the console's users page in Debian's Chromium at BENCH_CONSOLE_USERS users (100 000) on PostgreSQL — how long
 * from the page's data arriving (the `users.list` answer's last byte, the browser's resource timing) to its first page
 * of users on screen (the rows in the DOM, then two animation frames: painted). Opened BENCH_CONSOLE_RUNS times afresh
 * (a full load of /console/apps/{id}/users), then as many pages on with "Next page".
 */
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { config, log } from '../harness/env.ts';
import { api, startGatehouse } from '../harness/gatehouse.ts';
import { scratchDatabase } from '../harness/postgres.ts';
import { limitTarget, num, type SuiteResult } from '../harness/report.ts';

const CHROMIUM = '/usr/bin/chromium';
const USERS = config.consoleUsers;
const RUNS = config.consoleRuns;
const BUDGET_MS = 300;
const ORIGIN = 'http://localhost';

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
};

declare global {
  interface Window {
    /** The pager's status text the page should show next ("26–50 of …"), and when it was painted. */
    __expect?: string;
    __paintedAt?: number;
  }
}

export async function consoleSuite(): Promise<SuiteResult> {
  if (!existsSync(CHROMIUM)) throw new Error(`the console suite drives ${CHROMIUM} (Debian's chromium package)`);
  const db = await scratchDatabase();
  const { server, app, env } = await startGatehouse('Gatehouse', db.url, { env: { GATEHOUSE_BASE_URL: ORIGIN } });

  const started = performance.now();
  await db.client.query(
    `insert into users (id, application_id, primary_email, email_normalized, email_verified, status, profile, created_at, updated_at)
     select gen_random_uuid(), $1::uuid, e, e, i % 3 = 0, case when i % 50 = 0 then 'banned' else 'active' end, '{}', t, t
       from (select 'person-' || i || '@bench.example.com' as e, now() - i * interval '1 minute' as t, i
               from generate_series(1, $2) i) s`,
    [app.id, USERS],
  );
  await db.client.query('vacuum (analyze) users');
  log(`seeded ${num(USERS)} users in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  // An instance owner, signed in with their one-time link (reads need no second factor).
  const operator = await api(
    server.url,
    'POST',
    '/v1/operators',
    { authorization: `Bearer ${env.GATEHOUSE_OPERATOR_TOKEN}` },
    { email: 'operator@bench.example.com', role: 'owner', application_id: null },
    201,
  );
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [`--host-resolver-rules=MAP localhost:80 ${new URL(server.url).host}`],
  });
  const firstLoads: number[] = [];
  const nextPages: number[] = [];
  try {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(operator.sign_in_link.url);
    await page.getByRole('button', { name: 'Yes, sign me in' }).click();
    await page.getByRole('heading', { name: 'Applications', level: 1 }).waitFor();
    // Painted: the pager says what the page expects, then two animation frames (the first runs before that paint).
    await page.addInitScript(() => {
      window.__expect = '1–25 of';
      new MutationObserver(() => {
        const status = document.querySelector('nav.pager [role=status]')?.textContent ?? '';
        if (window.__expect && status.startsWith(window.__expect) && window.__paintedAt === undefined) {
          window.__paintedAt = -1;
          requestAnimationFrame(() => requestAnimationFrame(() => (window.__paintedAt = performance.now())));
        }
      }).observe(document, { subtree: true, childList: true, characterData: true });
    });
    /** From the last `users.list` answer's end to the paint, in this page's clock (ms). */
    const measure = async (): Promise<number> => {
      await page.waitForFunction(() => (window.__paintedAt ?? -1) > 0, undefined, { timeout: 60_000 });
      return page.evaluate(() => {
        const answers = performance
          .getEntriesByType('resource')
          .filter((e) => e.name.includes('/trpc/users.list')) as PerformanceResourceTiming[];
        const last = answers.at(-1);
        if (!last || window.__paintedAt === undefined) throw new Error('no users.list answer');
        return window.__paintedAt - last.responseEnd;
      });
    };
    for (let run = 0; run < RUNS + 2; run++) {
      // A fresh load: the page, its chunks, the session, then the users.
      await page.goto(`${ORIGIN}/console/apps/${app.id}/users`);
      const first = await measure();
      // The next page: the same page, one more answer.
      await page.evaluate(() => {
        window.__expect = '26–50 of';
        window.__paintedAt = undefined;
      });
      await page.getByRole('link', { name: 'Next page' }).click();
      const next = await measure();
      // Two warm-up runs (compile caches, the server's first answers) are not counted.
      if (run >= 2) {
        firstLoads.push(first);
        nextPages.push(next);
      }
    }
  } finally {
    await browser.close();
  }
  await server.stop();

  const firstP95 = percentile(firstLoads, 95);
  const nextP95 = percentile(nextPages, 95);
  const row = (name: string, values: number[]) =>
    `| ${name} | ${values.length} | ${num(percentile(values, 50), 1)} | ${num(percentile(values, 95), 1)} | ${num(Math.max(...values), 1)} |`;
  return {
    title: `Console: the users page at ${num(USERS)} users`,
    software: [db.version, `Chromium (${CHROMIUM})`],
    targets: [
      limitTarget(
        `Users page: first page painted after its data arrived, p95 (${num(USERS)} users, fresh load)`,
        firstP95,
        'ms',
        BUDGET_MS,
      ),
    ],
    method: [
      `Gatehouse: the server as \`npm start\` runs it (bundled, \`apps/server/start.js\`) on a scratch PostgreSQL ` +
        `database, its base URL \`${ORIGIN}\` (Chromium maps it to the server's port); ${num(USERS)} users of one ` +
        'application seeded in SQL, then VACUUM (ANALYZE). An instance owner signs in with their one-time link.',
      `The console's built page (apps/console/dist) in Debian's Chromium, headless, one tab. ${RUNS} fresh loads of ` +
        '`/console/apps/{id}/users` (after two uncounted), each followed by "Next page". Measured in the page: from the ' +
        'end of the `users.list` answer (resource timing `responseEnd`) to the first page on screen — the pager showing ' +
        'the expected range (a MutationObserver), then two animation frames, so the frame with the rows has been painted.',
    ],
    measurements: [],
    details: [
      [
        '| users page | runs | p50 ms | p95 ms | max ms |',
        '|---|---|---|---|---|',
        row('fresh load', firstLoads),
        row('next page', nextPages),
      ].join('\n'),
    ],
    notes: [
      `From the data to the painted page: p95 ${num(firstP95, 1)} ms on a fresh load (the table's first render, with ` +
        `the page's chunks already run), ${num(nextP95, 1)} ms for the next page (a re-render of the same table).`,
    ],
  };
}

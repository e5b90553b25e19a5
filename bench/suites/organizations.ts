/**
 * organizations: `GET /v1/organizations?search=` at BENCH_ORGANIZATIONS organizations, Gatehouse against a minimal
 * fastify + pg server with the best hand-written query (bench/minimal/organizations.ts) on the same table; the same
 * minimal server without the `total` and with an estimated one (what `total` costs); `POST /v1/users` beside it; and the
 * same Gatehouse loads on embedded PGlite.
 */
import { join } from 'node:path';
import { config, log, tempDir } from '../harness/env.ts';
import { api, startGatehouse } from '../harness/gatehouse.ts';
import { load, type Measurement, type Scenario } from '../harness/load.ts';
import { scratchDatabase } from '../harness/postgres.ts';
import { startServer } from '../harness/processes.ts';
import { cpuMs, num, ratioTarget, type SuiteResult } from '../harness/report.ts';

const PREFIXES =
  'Acme Apex Blue Bright Cedar Clear Copper Crimson Delta Eagle Emerald Evergreen Falcon Granite Harbor Horizon Iron Juniper Lunar Maple Meridian Nimbus Northwind Oakridge Orbit Pacific Pinnacle Quantum Riverside Summit Silverline Stellar Tidal Vertex Willow Zenith'.split(
    ' ',
  );
const SECTORS =
  'Analytics Bakery Capital Clinic Consulting Dynamics Energy Foods Freight Games Health Insurance Labs Logistics Media Motors Networks Partners Pharma Robotics Software Studios Systems Ventures'.split(
    ' ',
  );
const SUFFIXES = 'Inc LLC GmbH Ltd SA Group Co BV'.split(' ');
/** Matches the `Harbor …` names (1 in 36) and their slugs only. */
const SEARCH = 'harbor';
const expectedMatches = (count: number) => Math.floor((count - 1 - PREFIXES.indexOf('Harbor')) / PREFIXES.length) + 1;
/** The minimal server's estimated count: the planner's estimate above this many matches, the exact count below. */
const THRESHOLD = 1000;

/** `count` organizations one minute apart (`Harbor Logistics GmbH`, slug `harbor-logistics-gmbh-1234`); one statement. */
function seedSql(applicationId: string, count: number): string {
  if (!/^[0-9a-f-]{36}$/.test(applicationId)) throw new Error(`not a UUID: ${applicationId}`);
  const words = (list: string[]) => `array[${list.map((w) => `'${w}'`).join(',')}]`;
  const p = PREFIXES.length;
  return `insert into organizations (id, application_id, name, slug, created_at, updated_at)
    select gen_random_uuid(), '${applicationId}', s.name, lower(replace(s.name, ' ', '-')) || '-' || s.i, s.at, s.at from (
      select i, (${words(PREFIXES)})[1 + i % ${p}] || ' ' || (${words(SECTORS)})[1 + (i / ${p}) % ${SECTORS.length}] || ' ' ||
             (${words(SUFFIXES)})[1 + (i / ${p * SECTORS.length}) % ${SUFFIXES.length}] as name,
             now() - (${count - 1} - i) * interval '1 minute' as at
        from generate_series(0, ${count - 1}) as i) s`;
}

const search = (headers: Record<string, string>, count?: string): Scenario => ({
  method: 'GET',
  path: `/v1/organizations?search=${SEARCH}${count ? `&count=${count}` : ''}`,
  headers,
});

let sent = 0;
const createUsers = (headers: Record<string, string>): Scenario => ({
  method: 'POST',
  path: '/v1/users',
  headers,
  request: () => ({
    body: JSON.stringify({ primary_email: `user-${process.pid}-${++sent}@bench.example.com`, profile: { source: 'bench' } }),
  }),
  expect: 201,
});

/** The search's page and total through a server's API; the seeded rows must be what it finds. */
async function checkedPage(url: string, headers: Record<string, string>): Promise<string[]> {
  const page = await api(url, 'GET', `/v1/organizations?search=${SEARCH}`, headers);
  if (page.total !== expectedMatches(config.organizations) || page.organizations.length !== 25) {
    throw new Error(
      `search=${SEARCH} found ${page.total} (page of ${page.organizations.length}), expected ${expectedMatches(config.organizations)}`,
    );
  }
  return page.organizations.map((o: { id: string }) => o.id);
}

async function onPostgres() {
  const db = await scratchDatabase();
  const { server, app } = await startGatehouse('Gatehouse', db.url);
  const started = performance.now();
  await db.client.query(seedSql(app.id, config.organizations));
  await db.client.query('analyze organizations');
  log(`seeded ${num(config.organizations)} organizations in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const gatehousePage = await checkedPage(server.url, app.sk);
  const users = await load(server, createUsers(app.sk), db);
  const counted = await api(server.url, 'GET', '/v1/users?limit=1', app.sk);
  if (counted.total < users.expected) throw new Error(`${counted.total} users stored for ${users.expected} 201s`);
  const gatehouse = await load(server, search(app.sk), db);
  await server.stop();

  const minimal = await startServer(
    'minimal',
    { DATABASE_URL: db.url, MINIMAL_SECRET_KEY: app.secretKey, MINIMAL_COUNT_THRESHOLD: String(THRESHOLD) },
    'bench/minimal/organizations.ts',
  );
  if ((await checkedPage(minimal.url, app.sk)).join() !== gatehousePage.join())
    throw new Error('the minimal server answered another page');
  const exact = await load(minimal, search(app.sk), db);
  const none = await load(minimal, search(app.sk, 'none'), db);
  const estimated = await api(minimal.url, 'GET', `/v1/organizations?search=${SEARCH}&count=estimate`, app.sk);
  const estimate = await load(minimal, search(app.sk, 'estimate'), db);
  await minimal.stop();

  // The two parts of the answer alone, as the minimal server runs them (EXPLAIN ANALYZE, warm: the third run).
  const filter = `o.application_id = '${app.id}' and (o.name ilike '%${SEARCH}%' or o.slug ilike '%${SEARCH}%')`;
  const explainMs = async (sql: string) => {
    let plan = '';
    for (let i = 0; i < 3; i++) plan = (await db.client.query(`explain (analyze, format json) ${sql}`)).rows[0]['QUERY PLAN'][0];
    return { ms: (plan as any)['Execution Time'] as number, top: (plan as any).Plan['Node Type'] as string };
  };
  const pageSql = `select o.id from organizations o where ${filter} order by o.created_at desc, o.id desc limit 25`;
  const plans = {
    page: await explainMs(pageSql),
    count: await explainMs(`select count(*) from organizations o where ${filter}`),
  };
  return {
    version: db.version,
    users,
    gatehouse,
    exact,
    none,
    estimate,
    estimated,
    plans,
  };
}

/** PGlite belongs to one process: a first start creates the database and the application, the seeding opens the
 * directory with the project's own `createOrm`, and the measured server is a second start on it. */
async function onPglite() {
  const dir = await tempDir('pglite');
  const first = await startGatehouse('Gatehouse (PGlite, first start)', { pgliteDir: dir });
  await first.server.stop();
  const { createOrm } = await import('@gatehouse/api');
  const orm = await createOrm({ kind: 'pglite', dataDir: join(dir, 'db') });
  try {
    await orm.em.getConnection().execute(seedSql(first.app.id, config.organizations), [], 'run');
    await orm.em.getConnection().execute('analyze organizations', [], 'run');
  } finally {
    await orm.close();
  }
  const server = await startServer('Gatehouse (PGlite)', first.env);
  await checkedPage(server.url, first.app.sk);
  const measurements = [await load(server, createUsers(first.app.sk)), await load(server, search(first.app.sk))];
  await server.stop();
  return measurements;
}

export async function organizationsSuite(): Promise<SuiteResult> {
  const pg = config.only !== 'pglite' ? await onPostgres() : undefined;
  const lite = config.only !== 'postgres' ? await onPglite() : undefined;
  const rows: Measurement[] = [];
  const name = `\`GET /v1/organizations?search=\` (${num(config.organizations)} organizations)`;
  const notes: string[] = [];
  const method = [
    `${num(config.organizations)} organizations of one application are bulk-inserted (one INSERT … SELECT generate_series, ` +
      `then ANALYZE), named from word lists (\`Harbor Logistics GmbH\`), so that \`search=${SEARCH}\` matches ` +
      `${num(expectedMatches(config.organizations))} of them. Both servers must answer that \`total\` and the same page of 25 ` +
      'before anything is measured.',
    'Gatehouse: the server as `npm start` runs it (bundled, `apps/server/start.js`) on a scratch PostgreSQL database (its pool of 20), an application created ' +
      'through the operator API, its secret key on every request. `POST /v1/users` sends a new address each time (201; ' +
      'the users are counted afterwards).',
    'minimal: `node bench/minimal/organizations.ts` (fastify + pg, pool of 20) on the same table and indexes (trigram GIN ' +
      'on name and slug): one statement per request, the page (with member counts) and the total as two scalar subqueries. ' +
      `\`count=none\` leaves the total out (what the total costs); \`count=estimate\` answers the planner\u2019s estimate ` +
      `of the matches (EXPLAIN of the count\u2019s filter, in a PL/pgSQL function) when it is above ${THRESHOLD}, and the ` +
      'exact count below it.',
  ];
  if (lite)
    method.push(
      'PGlite: the same Gatehouse loads on the embedded database (a data directory seeded with the project\u2019s `createOrm` between two starts).',
    );
  if (pg) {
    rows.push(pg.users, pg.gatehouse, pg.exact, pg.none, pg.estimate);
    const totalShare = 1 - pg.exact.requestsPerSecond / pg.none.requestsPerSecond;
    notes.push(
      `What \`total\` costs: the minimal server serves ${num(pg.none.requestsPerSecond)} req/s with the page alone and ` +
        `${num(pg.exact.requestsPerSecond)} req/s with the exact total (${num(totalShare * 100)} % of the throughput goes to ` +
        `the count; p99 ${num(pg.none.p99Ms)} → ${num(pg.exact.p99Ms)} ms). Alone, on the warm table, the page runs in ` +
        `${num(pg.plans.page.ms, 2)} ms (${pg.plans.page.top}), the exact count of ${num(expectedMatches(config.organizations))} ` +
        `matches in ${num(pg.plans.count.ms, 2)} ms (${pg.plans.count.top}).`,
      `Estimated beyond ${THRESHOLD}: ${num(pg.estimate.requestsPerSecond)} req/s, ` +
        `${(pg.estimate.requestsPerSecond / pg.exact.requestsPerSecond).toFixed(2)}× the exact total; the planner estimated ` +
        `${num(pg.estimated.total)} matches for ${num(expectedMatches(config.organizations))} (` +
        `${pg.estimated.total_estimated ? 'above the threshold: the estimate was answered' : 'below the threshold: the exact count ran'}). ` +
        (pg.estimate.requestsPerSecond > 1.3 * pg.exact.requestsPerSecond
          ? 'The exact count grows with the matches (every match is found and rechecked) while the page does not: for a ' +
            'search that matches many, an estimated `total` beyond a threshold (flagged as such) would be the better ' +
            'contract, at the price of a figure that can be far off (report only: the API is unchanged).'
          : 'The estimate buys little here: the exact `total` stays the better contract at this size (report only: the API is unchanged).'),
      `Gatehouse served ${num(pg.gatehouse.requestsPerSecond)} req/s at ${num(cpuMs(pg.gatehouse), 2)} ms of server CPU ` +
        `per search against the minimal server\u2019s ${num(cpuMs(pg.exact), 2)} ms; PostgreSQL CPU per request ` +
        `${num((pg.gatehouse.databaseCores * 1000) / pg.gatehouse.requestsPerSecond, 2)} against ` +
        `${num((pg.exact.databaseCores * 1000) / pg.exact.requestsPerSecond, 2)} ms (Gatehouse sends the page and the count ` +
        'as two statements, two round trips).',
    );
  }
  if (lite) {
    rows.push(...lite.map((m) => ({ ...m, server: 'Gatehouse (PGlite)' })));
    notes.push(
      'PGlite is one connection inside the server process: every statement is serialized on its thread. It is the zero-setup default, not the production database.',
    );
  }
  return {
    title: 'Organizations: searching organizations (and creating users) against a minimal server',
    software: pg ? [pg.version] : ['PGlite'],
    targets: pg
      ? [
          ratioTarget(`${name} throughput`, pg.gatehouse.requestsPerSecond, pg.exact.requestsPerSecond, 'req/s', '≥', 0.5),
          ratioTarget(`${name} p99 latency`, pg.gatehouse.p99Ms, pg.exact.p99Ms, 'ms', '≤', 3),
        ]
      : [],
    method,
    measurements: rows,
    details: [],
    notes,
  };
}

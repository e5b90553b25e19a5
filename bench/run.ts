/**
 * `npm run bench`: the load benchmark of the real server, on PostgreSQL (a scratch database, created and dropped) and
 * on embedded PGlite (a temporary data directory, deleted after). Writes bench/RESULTS.md. Never part of `npm test`.
 *
 * Knobs (environment): BENCH_DATABASE_URL (an existing database on the PostgreSQL server to administer from;
 * default postgres://postgres@127.0.0.1:5432/postgres), BENCH_DURATION (s, 10), BENCH_WARMUP (s, 3),
 * BENCH_CONNECTIONS (64), BENCH_ORGANIZATIONS (100000), BENCH_TIMEOUT (s per response, 30),
 * BENCH_ONLY (postgres | pglite).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { assertSuccessful, type LoadOptions, type Measurement, measure, type Scenario } from './load.ts';
import { type DatabaseRun, describeMachine, renderResults, type Settings } from './report.ts';
import { ANALYZE_SQL, expectedMatches, SEARCH_TERM, seedOrganizationsSql } from './seed.ts';
import { type BenchApplication, createApplication, ROOT, type ServerProcess, startServer } from './server.ts';

/** Read through a name, not `process.env.X`: these knobs belong to this script, not to any turbo task. */
const textEnv = (name: string): string | undefined => process.env[name] || undefined;

function intEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = textEnv(name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name} must be an integer in ${min}..${max}`);
  return value;
}

const config = {
  adminUrl: textEnv('BENCH_DATABASE_URL') ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  connections: intEnv('BENCH_CONNECTIONS', 64, 1, 1024),
  durationSeconds: intEnv('BENCH_DURATION', 10, 1, 120),
  warmupSeconds: intEnv('BENCH_WARMUP', 3, 0, 60),
  timeoutSeconds: intEnv('BENCH_TIMEOUT', 30, 1, 120),
  organizations: intEnv('BENCH_ORGANIZATIONS', 100_000, 100, 1_000_000),
  only: textEnv('BENCH_ONLY'),
};
if (config.only && config.only !== 'postgres' && config.only !== 'pglite') throw new Error('BENCH_ONLY is postgres or pglite');

/** Undo steps, run newest first, on success, failure and Ctrl-C alike. */
const cleanups: Array<{ what: string; run: () => Promise<unknown> }> = [];
async function cleanUp(): Promise<void> {
  while (cleanups.length) {
    const step = cleanups.pop()!;
    try {
      await step.run();
    } catch (error) {
      console.error(`cleanup (${step.what}) failed: ${(error as Error).message}`);
    }
  }
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: cleaning up…`);
    void cleanUp().finally(() => process.exit(130));
  });
}

const secrets = () => ({
  GATEHOUSE_OPERATOR_TOKEN: `op_bench_${randomBytes(24).toString('hex')}`,
  GATEHOUSE_MASTER_KEY: randomBytes(32).toString('base64'),
});

async function tempDir(kind: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `gatehouse-bench-${kind}-`));
  cleanups.push({ what: `remove ${dir}`, run: () => rm(dir, { recursive: true, force: true }) });
  return dir;
}

async function serve(label: string, env: Record<string, string>): Promise<ServerProcess> {
  const server = await startServer(label, env);
  cleanups.push({ what: `stop the ${label} server`, run: () => server.stop() });
  return server;
}

const elapsed = (since: number) => (performance.now() - since) / 1000;
const log = (message: string) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);

async function getJson(server: ServerProcess, app: BenchApplication, path: string): Promise<any> {
  const response = await fetch(`${server.url}${path}`, {
    headers: { authorization: `Bearer ${app.secretKey}`, 'x-application-id': app.id },
  });
  const body = (await response.json()) as { data?: unknown };
  if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}: ${JSON.stringify(body)}`);
  return body.data;
}

/** Both scenarios against a server that has the application and the seeded organizations. */
async function runScenarios(label: string, server: ServerProcess, app: BenchApplication) {
  const headers = { authorization: `Bearer ${app.secretKey}`, 'x-application-id': app.id };
  const options: LoadOptions = {
    url: server.url,
    connections: config.connections,
    warmupSeconds: config.warmupSeconds,
    durationSeconds: config.durationSeconds,
    timeoutSeconds: config.timeoutSeconds,
  };
  const runTag = randomBytes(4).toString('hex');
  let sent = 0;
  const scenarios: Scenario[] = [
    {
      name: 'POST /v1/users',
      method: 'POST',
      path: '/v1/users',
      headers,
      body: () => JSON.stringify({ primary_email: `user-${runTag}-${++sent}@bench.example.com`, profile: { source: 'bench' } }),
      expect: 201,
    },
    {
      name: `GET /v1/organizations?search=${SEARCH_TERM}`,
      method: 'GET',
      path: `/v1/organizations?search=${SEARCH_TERM}`,
      headers,
      expect: 200,
    },
  ];

  // The search must do the work it claims: the seeded rows are there and the term matches some, not all.
  const page = await getJson(server, app, scenarios[1]!.path);
  const searchTotal = Number(page.total);
  if (searchTotal !== expectedMatches(config.organizations) || page.organizations.length !== Math.min(25, searchTotal)) {
    throw new Error(
      `${label}: search=${SEARCH_TERM} found ${searchTotal} (page of ${page.organizations.length}), ` +
        `expected ${expectedMatches(config.organizations)} of ${config.organizations}`,
    );
  }

  const measurements: Measurement[] = [];
  for (const scenario of scenarios) {
    log(
      `${label}: ${scenario.name} — ${config.warmupSeconds} s warm-up + ${config.durationSeconds} s at ${config.connections} connections`,
    );
    const m = await measure(scenario, options);
    log(
      `${label}: ${scenario.name}: ${m.requestsPerSecond.toFixed(1)} req/s, p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms, ` +
        `status ${JSON.stringify(m.statusCodes)}, errors ${m.errors}`,
    );
    assertSuccessful(label, scenario, m);
    measurements.push(m);
  }

  // The users really exist: at least every 201 of the measured run, at most every body sent (a few are cut at the end).
  const users = Number((await getJson(server, app, '/v1/users?limit=1')).total);
  const created = measurements[0]!.expected;
  if (users < created || users > sent) throw new Error(`${label}: ${users} users in the database, ${created} 201s, ${sent} sent`);
  return { measurements, searchTotal };
}

/** The two statements of the search, explained on the seeded data (PostgreSQL only: PGlite is the server's). */
async function explainSearch(client: Client, applicationId: string): Promise<string> {
  const filter = `o.application_id = '${applicationId}' and (o.name ilike '%${SEARCH_TERM}%' or o.slug ilike '%${SEARCH_TERM}%')`;
  const statements = [
    `select o.*, (select count(*) from organization_members m where m.organization_id = o.id) as member_count
       from organizations o where ${filter} order by o.created_at desc, o.id desc limit 25 offset 0`,
    `select count(*) as total from organizations o where ${filter}`,
  ];
  const plans: string[] = [];
  for (const sql of statements) {
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(`explain (analyze, costs off, buffers off) ${sql}`);
    plans.push(rows.map((r) => r['QUERY PLAN']).join('\n'));
  }
  return [
    '<details><summary>Plans of the two statements <code>listOrganizations</code> runs per search request (EXPLAIN ANALYZE, ' +
      'after the run)</summary>',
    '',
    '```text',
    '-- the page',
    plans[0],
    '',
    '-- the total',
    plans[1],
    '```',
    '',
    '</details>',
  ].join('\n');
}

async function benchPostgres(): Promise<DatabaseRun> {
  const admin = new Client({ connectionString: config.adminUrl });
  await admin.connect();
  cleanups.push({ what: 'close the admin connection', run: () => admin.end() });
  const { rows } = await admin.query<{ server_version: string }>('show server_version');
  const version = rows[0]?.server_version ?? 'unknown';
  const database = `gatehouse_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
  await admin.query(`create database ${database}`);
  cleanups.push({
    what: `drop database ${database}`,
    run: () => admin.query(`drop database if exists ${database} with (force)`),
  });
  const url = new URL(config.adminUrl);
  url.pathname = `/${database}`;
  log(`postgres: scratch database ${database} on PostgreSQL ${version}`);

  const dataDir = await tempDir('pg'); // secrets are given in the environment; nothing is generated here
  const env = { DATABASE_URL: url.toString(), GATEHOUSE_DATA_DIR: dataDir, ...secrets() };
  const server = await serve('postgres', env);
  const app = await createApplication(server.url, env.GATEHOUSE_OPERATOR_TOKEN);

  const seedStarted = performance.now();
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  cleanups.push({ what: 'close the seeding connection', run: () => client.end() });
  await client.query(seedOrganizationsSql(app.id, config.organizations));
  await client.query(ANALYZE_SQL);
  const seedSeconds = elapsed(seedStarted);
  log(`postgres: seeded ${config.organizations} organizations in ${seedSeconds.toFixed(1)} s`);

  const { measurements, searchTotal } = await runScenarios('postgres', server, app);
  const plans = await explainSearch(client, app.id);
  await server.stop();
  return {
    label: 'PostgreSQL',
    description: `PostgreSQL ${version} (scratch database on ${url.host}, the server's default pool of 20 connections)`,
    seedSeconds,
    searchTotal,
    measurements,
    serverWarnings: server.warnings(),
    notes: [plans],
  };
}

async function benchPglite(): Promise<DatabaseRun> {
  const dataDir = await tempDir('pglite');
  const env = { GATEHOUSE_DATA_DIR: dataDir, ...secrets() };
  // PGlite is single-process: the first server creates the database (initdb, migrations) and the application, then
  // stops so that the seeding script can open the same directory; the measured server is a second start on it.
  log('pglite: first start (initdb, migrations) to create the application');
  const first = await serve('pglite', env);
  const app = await createApplication(first.url, env.GATEHOUSE_OPERATOR_TOKEN);
  await first.stop();

  const seedStarted = performance.now();
  const seeder = spawn(process.execPath, ['bench/seed-pglite.ts', join(dataDir, 'db'), app.id, String(config.organizations)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  seeder.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  const [code] = (await once(seeder, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`bench/seed-pglite.ts exited with ${code}: ${out}`);
  const seeded = JSON.parse(out.trim().split('\n').pop() ?? '{}') as { inserted: number; version: string };
  if (seeded.inserted !== config.organizations) throw new Error(`pglite: seeded ${seeded.inserted} organizations`);
  const seedSeconds = elapsed(seedStarted);
  log(`pglite: seeded ${config.organizations} organizations in ${seedSeconds.toFixed(1)} s`);

  log('pglite: second start on the seeded directory');
  const server = await serve('pglite', env);
  const { measurements, searchTotal } = await runScenarios('pglite', server, app);
  await server.stop();
  const pglite = JSON.parse(await readFile(join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as {
    version: string;
  };
  return {
    label: 'PGlite',
    description: `PGlite ${pglite.version} (PostgreSQL ${seeded.version} in WASM, in the server process, one connection; data dir on local disk)`,
    seedSeconds,
    searchTotal,
    measurements,
    serverWarnings: first.warnings() + server.warnings(),
    notes: [],
  };
}

function interpret(runs: DatabaseRun[]): string[] {
  const by = (label: string) => runs.find((r) => r.label === label);
  const pg = by('PostgreSQL');
  const lite = by('PGlite');
  const lines: string[] = [];
  const rate = (run: DatabaseRun | undefined, i: number) => run?.measurements[i]?.requestsPerSecond ?? 0;
  if (pg && lite) {
    lines.push(
      `PostgreSQL served ${(rate(pg, 0) / rate(lite, 0)).toFixed(1)}× the user creations and ` +
        `${(rate(pg, 1) / rate(lite, 1)).toFixed(1)}× the searches of PGlite. PGlite is one connection inside the server ` +
        'process: every statement of every request is serialized (and its WASM runs on the server’s own event loop), ' +
        'so 64 connections only queue, and latency is roughly queue length × per-request database time.',
    );
  }
  lines.push(
    `The search is the expensive endpoint: \`name ilike '%…%' or slug ilike '%…%'\` cannot use a btree, so the \`count(*)\` ` +
      `for \`total\` reads every organization of the application (${config.organizations.toLocaleString('en-US')} rows) on ` +
      'every request, while the page itself stops after 25 matches on the (application_id, created_at, id) index. ' +
      'Its cost grows linearly with the number of organizations (see the plans above).',
    'Everything shares 2 CPUs: autocannon, the server’s single Node process and the database. The figures are a floor for ' +
      'this machine size, not a capacity plan; the server is CPU-bound here, so more cores or more server processes ' +
      '(behind a load balancer, on PostgreSQL) would scale it.',
  );
  return lines;
}

const started = performance.now();
try {
  const machine = describeMachine();
  const runs: DatabaseRun[] = [];
  if (config.only !== 'pglite') runs.push(await benchPostgres());
  await cleanUp();
  if (config.only !== 'postgres') runs.push(await benchPglite());
  await cleanUp();
  const autocannonVersion = (
    JSON.parse(await readFile(join(ROOT, 'node_modules/autocannon/package.json'), 'utf8')) as { version: string }
  ).version;
  const settings: Settings = {
    command: 'npm run bench',
    connections: config.connections,
    warmupSeconds: config.warmupSeconds,
    durationSeconds: config.durationSeconds,
    timeoutSeconds: config.timeoutSeconds,
    organizations: config.organizations,
    searchTerm: SEARCH_TERM,
    autocannon: autocannonVersion,
    totalSeconds: elapsed(started),
  };
  await writeFile(join(ROOT, 'bench/RESULTS.md'), renderResults(machine, settings, runs, interpret(runs)));
  log(`wrote bench/RESULTS.md (${Math.round(elapsed(started))} s in all)`);
} catch (error) {
  console.error(`\nBENCHMARK FAILED: ${(error as Error).message}`);
  await cleanUp();
  process.exit(1);
}

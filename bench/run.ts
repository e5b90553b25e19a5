/**
 * `npm run bench [-- organizations | sign-in | mfa]`: the load benchmark of the real server. Writes bench/RESULTS.md
 * (one section per suite; a run of some suites keeps the others' sections). Never part of `npm test`.
 * - organizations: creating users and searching organizations, on PostgreSQL (a scratch database, created and
 *   dropped) and on embedded PGlite (a temporary data directory, deleted after);
 * - sign-in (bench/sign-in.ts): `/v1/auth/me` and token refresh on PostgreSQL against a minimal server, and the SDK's
 *   verifyToken against a raw Ed25519 verification;
 * - mfa (bench/mfa.ts): a passkey MFA finish and a TOTP verify per request on PostgreSQL, against the raw ECDSA P-256
 *   and HMAC-SHA1 checks in the same run.
 *
 * Knobs (environment): BENCH_DATABASE_URL (an existing database on the PostgreSQL server to administer from;
 * default postgres://postgres@127.0.0.1:5432/postgres), BENCH_DURATION (s, 20), BENCH_WARMUP (s, 3),
 * BENCH_MAX_WARMUP (s, 60), BENCH_CONNECTIONS (64), BENCH_ORGANIZATIONS (100000), BENCH_TIMEOUT (s per response, 120),
 * BENCH_ONLY (postgres | pglite; organizations only), BENCH_PROFILE (auto | always | never; sign-in),
 * BENCH_PROFILE_DURATION (s, 10), BENCH_PROFILE_DIR (keep the .cpuprofile files there), BENCH_MFA_MAX_RATE (req/s the
 * mfa suite prepares for, 600).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { num } from './format.ts';
import { assertSuccessful, type LoadOptions, type Measurement, measure, type Scenario, unloaded } from './load.ts';
import { benchMfa } from './mfa.ts';
import {
  codeDigest,
  type DatabaseRun,
  describeMachine,
  loadAverage,
  renderMfa,
  renderOrganizations,
  renderResults,
  renderSignIn,
  revision,
  type Settings,
  SUITES,
  type SuiteClock,
  type SuiteName,
} from './report.ts';
import { benchSdk, renderSdk } from './sdk.ts';
import { ANALYZE_SQL, expectedMatches, SEARCH_TERM, seedOrganizationsSql } from './seed.ts';
import {
  activeStatements,
  type BenchApplication,
  createApplication,
  drain,
  machineCpuSeconds,
  ROOT,
  type ServerProcess,
  type StartOptions,
  scratchDatabase,
  startServer,
} from './server.ts';
import { benchSignIn } from './sign-in.ts';

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
  durationSeconds: intEnv('BENCH_DURATION', 20, 1, 120),
  warmupSeconds: intEnv('BENCH_WARMUP', 3, 0, 60),
  maxWarmupSeconds: intEnv('BENCH_MAX_WARMUP', 60, 1, 120),
  timeoutSeconds: intEnv('BENCH_TIMEOUT', 120, 1, 300),
  organizations: intEnv('BENCH_ORGANIZATIONS', 100_000, 100, 1_000_000),
  only: textEnv('BENCH_ONLY'),
  profile: textEnv('BENCH_PROFILE') ?? 'auto',
  profileSeconds: intEnv('BENCH_PROFILE_DURATION', 10, 1, 120),
  profileDir: textEnv('BENCH_PROFILE_DIR'),
  mfaMaxRate: intEnv('BENCH_MFA_MAX_RATE', 600, 10, 20_000),
};
if (config.only && config.only !== 'postgres' && config.only !== 'pglite') throw new Error('BENCH_ONLY is postgres or pglite');
if (config.profile !== 'auto' && config.profile !== 'always' && config.profile !== 'never') {
  throw new Error('BENCH_PROFILE is auto, always or never');
}

/** `npm run bench -- <suite>…` runs those suites; no argument, all of them. */
const requested = process.argv.slice(2);
for (const name of requested) {
  if (!(SUITES as readonly string[]).includes(name))
    throw new Error(`unknown suite ${name}: the suites are ${SUITES.join(', ')}`);
}
const suites = SUITES.filter((suite) => requested.length === 0 || requested.includes(suite));

/** Undo steps, run newest first, on success, failure and Ctrl-C alike. */
const cleanups: Array<{ what: string; run: () => Promise<unknown> }> = [];
const onCleanup = (what: string, run: () => Promise<unknown>) => void cleanups.push({ what, run });
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

async function serve(label: string, env: Record<string, string>, options?: StartOptions): Promise<ServerProcess> {
  const server = await startServer(label, env, options);
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
async function runScenarios(
  label: string,
  server: ServerProcess,
  app: BenchApplication,
  activeStatements?: () => Promise<number>,
) {
  const headers = { authorization: `Bearer ${app.secretKey}`, 'x-application-id': app.id };
  const options: LoadOptions = {
    url: server.url,
    connections: config.connections,
    warmupSeconds: config.warmupSeconds,
    maxWarmupSeconds: config.maxWarmupSeconds,
    durationSeconds: config.durationSeconds,
    timeoutSeconds: config.timeoutSeconds,
    serverCpuSeconds: server.cpuSeconds,
    machineCpuSeconds,
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
    log(`${label}: ${scenario.name} at ${config.connections} connections (warm-up, then ${config.durationSeconds} s measured)`);
    const m = await measure(scenario, options);
    log(
      `${label}: ${scenario.name}: ${m.requestsPerSecond.toFixed(1)} req/s, p50 ${m.p50Ms.toFixed(0)} ms, p99 ${m.p99Ms.toFixed(0)} ms ` +
        `(warm-up ${m.warmupSeconds.toFixed(1)} s), status ${JSON.stringify(m.statusCodes)}, errors ${m.errors}`,
    );
    assertSuccessful(label, scenario, m);
    await drain(server, activeStatements);
    m.unloadedMs = await unloaded(scenario, server.url);
    log(`${label}: ${scenario.name}: ${m.unloadedMs.toFixed(1)} ms with one client`);
    measurements.push(m);
    if (scenario.body) {
      // The users really exist: at least every 201 counted, at most every body sent (the last few were cut off).
      const users = Number((await getJson(server, app, '/v1/users?limit=1')).total);
      if (users < m.expected || users > sent) {
        throw new Error(`${label}: ${users} users in the database, ${m.expected} 201s in the window, ${sent} bodies sent`);
      }
    }
  }
  return { measurements, searchTotal };
}

interface SearchPlans {
  /** Markdown (a collapsed block) for RESULTS.md. */
  markdown: string;
  pageMs: number;
  totalMs: number;
  /** The `total` statement reads the whole table. */
  totalSeqScan: boolean;
}

/** The two statements of the search, explained on the seeded data (PostgreSQL only: PGlite belongs to the server). */
async function explainSearch(client: Client, applicationId: string): Promise<SearchPlans> {
  const filter = `o.application_id = '${applicationId}' and (o.name ilike '%${SEARCH_TERM}%' or o.slug ilike '%${SEARCH_TERM}%')`;
  const statements = [
    `select o.*, (select count(*) from organization_members m where m.organization_id = o.id) as member_count
       from organizations o where ${filter} order by o.created_at desc, o.id desc limit 25 offset 0`,
    `select count(*) as total from organizations o where ${filter}`,
  ];
  const plans: string[] = [];
  for (const sql of statements) {
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(`explain (analyze, costs off) ${sql}`);
    plans.push(rows.map((r) => r['QUERY PLAN']).join('\n'));
  }
  const executionMs = (plan = '') => Number(/Execution Time: ([\d.]+) ms/.exec(plan)?.[1] ?? Number.NaN);
  return {
    markdown: [
      '<details><summary>Plans of the two statements <code>listOrganizations</code> runs per search request ' +
        '(EXPLAIN ANALYZE after the run, the server stopped)</summary>',
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
    ].join('\n'),
    pageMs: executionMs(plans[0]),
    totalMs: executionMs(plans[1]),
    totalSeqScan: /Seq Scan on organizations/.test(plans[1] ?? ''),
  };
}

async function benchPostgres(): Promise<DatabaseRun & { plans: SearchPlans }> {
  const { name: database, url, version } = await scratchDatabase(config.adminUrl, onCleanup);
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

  const { measurements, searchTotal } = await runScenarios('postgres', server, app, () => activeStatements(client));
  await server.stop(60_000); // graceful: requests still in flight finish first
  const plans = await explainSearch(client, app.id);
  return {
    label: 'PostgreSQL',
    version: `PostgreSQL ${version}`,
    description: `a scratch database on ${url.host}, used through the server's default pool of 20 connections`,
    seedSeconds,
    searchTotal,
    measurements,
    serverWarnings: server.warnings(),
    notes: [plans.markdown],
    plans,
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
  await server.stop(60_000);
  const pglite = JSON.parse(await readFile(join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as {
    version: string;
  };
  return {
    label: 'PGlite',
    version: `PGlite ${pglite.version} (PostgreSQL ${seeded.version} compiled to WASM)`,
    description: 'embedded in the server process, one connection, data directory in a temporary directory on local disk',
    seedSeconds,
    searchTotal,
    measurements,
    serverWarnings: first.warnings() + server.warnings(),
    notes: [],
  };
}

function interpret(
  pg: (DatabaseRun & { plans: SearchPlans }) | undefined,
  lite: DatabaseRun | undefined,
  cores: number,
): string[] {
  const lines: string[] = [];
  const users = (run: DatabaseRun | undefined) => run?.measurements[0];
  const search = (run: DatabaseRun | undefined) => run?.measurements[1];
  const cpuPerRequest = (m: Measurement | undefined) => (m ? (m.serverCores * 1000) / m.requestsPerSecond : Number.NaN);
  const ratio = (a: number | undefined, b: number | undefined) => (a && b ? (a / b).toFixed(1) : '?');
  const pgUsers = users(pg);
  if (pgUsers) {
    const machineSaturated = pgUsers.machineCores >= 0.9 * cores;
    const serverSaturated = pgUsers.serverCores >= 0.9;
    const limit = machineSaturated
      ? `: the ${cores} cores were the limit, shared by the server, PostgreSQL and autocannon`
      : serverSaturated
        ? ': the single Node process was the limit'
        : ': neither was saturated, so requests also spent time waiting on PostgreSQL (round trips, commits)';
    lines.push(
      `Creating a user on PostgreSQL cost the server process about ${num(cpuPerRequest(pgUsers), 1)} ms of CPU ` +
        `(ORM unit of work, tRPC/OpenAPI adapter, pg protocol). Under load it used ${num(pgUsers.serverCores * 100)} % ` +
        `of a core, autocannon ${num(pgUsers.loadGeneratorCores * 100)} %, and the whole machine was ` +
        `${num(pgUsers.machineCores * 100)} % busy (of ${cores * 100} %)${limit}. ` +
        `p50 under load was ${num(pgUsers.p50Ms)} ms against ${num(pgUsers.unloadedMs, 1)} ms for one client: the ` +
        'difference is queueing.',
    );
  }
  if (pg && lite) {
    lines.push(
      `PostgreSQL served ${ratio(users(pg)?.requestsPerSecond, users(lite)?.requestsPerSecond)}× the user creations and ` +
        `${ratio(search(pg)?.requestsPerSecond, search(lite)?.requestsPerSecond)}× the searches of PGlite. PGlite is one ` +
        'connection inside the server process: every statement of every request is serialized, and the database work runs ' +
        `on the server's own thread (the PGlite server process used ${num((users(lite)?.serverCores ?? 0) * 100)} % of a core ` +
        `while creating users), so ${config.connections} connections only queue. It is the zero-setup default, not the ` +
        'production database.',
    );
  }
  // Little's law: with N connections always waiting, the mean latency is N ÷ throughput. A first-come-first-served
  // server gives every request about that wait; a p99 far above it means some requests are overtaken again and again.
  const uneven = [pg, lite].flatMap((run) =>
    (run?.measurements ?? [])
      .map((m) => ({ run, m, mean: (config.connections / m.requestsPerSecond) * 1000 }))
      .filter(({ m, mean }) => m.p99Ms > 3 * mean || (m.p99Ms > 1.5 * mean && m.p50Ms < 0.5 * mean)),
  );
  if (uneven.length) {
    lines.push(
      `Waiting is unevenly shared in ${uneven
        .map(
          ({ run, m, mean }) => `${run?.label} ${m.name} (p50 ${num(m.p50Ms)} ms, p99 ${num(m.p99Ms)} ms, mean ${num(mean)} ms)`,
        )
        .join(' and ')}: ` +
        `with ${config.connections} connections always waiting, a first-come-first-served server would give every request ` +
        'about the mean (connections ÷ throughput), so some requests are served ahead of others that wait many times longer.',
    );
  }
  const foreign = (lite?.measurements ?? [])
    .map((m) => ({ m, other: m.machineCores - m.serverCores - m.loadGeneratorCores }))
    .filter(({ other }) => other > 0.4); // below that, kernel time (loopback networking) and idle PostgreSQL explain it
  if (foreign.length) {
    lines.push(
      'Other work was running on the machine during the PGlite run (machine CPU minus server and autocannon: ' +
        `${foreign.map(({ m, other }) => `${num(other * 100)} % of a core during ${m.name}`).join(', ')}). ` +
        'PGlite uses one thread, so its figures suffer less from that than a saturated 2-core run would, but compare ' +
        'them with care.',
    );
  }
  if (pg?.plans.totalSeqScan) {
    lines.push(
      `Search is the slow endpoint, because of its \`total\`: \`name ilike '%…%' or slug ilike '%…%'\` cannot use a btree, ` +
        `so the \`count(*)\` is a sequential scan of all ${num(config.organizations)} organizations on every request ` +
        `(${num(pg.plans.totalMs)} ms in the plan above, against ${num(pg.plans.pageMs, 1)} ms for the page, which walks the ` +
        '(application_id, created_at, id) index and stops after 25 matches). Its cost grows linearly with the number of ' +
        'organizations; trigram (pg_trgm GIN) indexes on name and slug would turn the scan into index look-ups.',
    );
  } else if (pg) {
    lines.push(
      `The \`total\` of the search took ${num(pg.plans.totalMs, 1)} ms and the page ${num(pg.plans.pageMs, 1)} ms ` +
        'in the plans above (no sequential scan).',
    );
  }
  lines.push(
    `Everything shares ${cores} CPUs (autocannon, the server, the database): these figures are a floor for this machine size, ` +
      'not a capacity plan. Several server processes on one PostgreSQL (and the cores to run them) would raise the ' +
      'user-creation ceiling, not the search’s, whose cost is in the database.',
  );
  return lines;
}

/** The exact command: `npm run bench` with the suites named and whatever BENCH_* knobs were set (passwords masked). */
function commandLine(): string {
  const knobs = Object.keys(process.env)
    .filter((key) => key.startsWith('BENCH_'))
    .sort()
    .map((key) => `${key}=${(textEnv(key) ?? '').replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@')}`);
  return [...knobs, 'npm run bench', ...(requested.length ? ['--', ...requested] : [])].join(' ');
}

/** Runs one suite between two readings of the clock and the load average; its undo steps run when it ends. */
async function timed<T>(run: () => Promise<T>): Promise<{ result: T; clock: SuiteClock }> {
  const started = performance.now();
  const loadBefore = loadAverage();
  const code = { revision: revision(ROOT), digest: codeDigest(ROOT) };
  const result = await run();
  await cleanUp();
  const codeChanged = codeDigest(ROOT) !== code.digest;
  if (codeChanged) log('warning: the code outside bench/ changed while the suite ran; its figures may mix two versions');
  return {
    result,
    clock: {
      command: commandLine(),
      revision: code.revision,
      codeChanged,
      loadBefore,
      loadAfter: loadAverage(),
      totalSeconds: elapsed(started),
    },
  };
}

const started = performance.now();
try {
  log(`suites: ${suites.join(', ')}; load average ${loadAverage()}`);
  const cpuBefore = machineCpuSeconds();
  await new Promise((r) => setTimeout(r, 3000));
  const machine = describeMachine((machineCpuSeconds() - cpuBefore) / 3);
  if (machine.busyBefore > 0.2) {
    log(
      `warning: ${Math.round(machine.busyBefore * 100)} % CPU busy before the run — other work on this machine skews the figures`,
    );
  }
  const cores = Number(machine.nproc) || 2;
  const autocannonVersion = (
    JSON.parse(await readFile(join(ROOT, 'node_modules/autocannon/package.json'), 'utf8')) as { version: string }
  ).version;
  const settings: Settings = {
    connections: config.connections,
    warmupSeconds: config.warmupSeconds,
    maxWarmupSeconds: config.maxWarmupSeconds,
    durationSeconds: config.durationSeconds,
    timeoutSeconds: config.timeoutSeconds,
    organizations: config.organizations,
    searchTerm: SEARCH_TERM,
    autocannon: autocannonVersion,
  };
  const sections: Partial<Record<SuiteName, string>> = {};

  if (suites.includes('organizations')) {
    const { result, clock } = await timed(async () => {
      const pg = config.only !== 'pglite' ? await benchPostgres() : undefined;
      await cleanUp();
      const lite = config.only !== 'postgres' ? await benchPglite() : undefined;
      return { pg, lite };
    });
    const runs = [result.pg, result.lite].filter((run): run is DatabaseRun => run !== undefined);
    sections.organizations = renderOrganizations(machine, settings, clock, runs, interpret(result.pg, result.lite, cores));
  }

  if (suites.includes('sign-in')) {
    const { result, clock } = await timed(() =>
      benchSignIn(
        { ...config, profile: config.profile as 'auto' | 'always' | 'never' },
        { log, onCleanup, tempDir, serve, secrets },
        cores,
      ),
    );
    sections['sign-in'] = renderSignIn(machine, settings, clock, result);
    for (const t of result.targets)
      log(`target: ${t.name.replaceAll('`', '')}: ${t.ratio.toFixed(2)}× (${t.required}) ${t.pass ? 'PASS' : 'FAIL'}`);
  }

  if (suites.includes('mfa')) {
    const { result, clock } = await timed(() =>
      benchMfa(
        { ...config, maxRate: config.mfaMaxRate, profile: config.profile !== 'never' },
        { log, onCleanup, tempDir, serve, secrets },
        cores,
      ),
    );
    sections.mfa = renderMfa(machine, settings, clock, result);
  }

  if (suites.includes('sdk')) {
    const result = await benchSdk({ adminUrl: config.adminUrl }, { log, onCleanup, tempDir, serve, secrets });
    const when = new Date().toISOString().slice(0, 16).replace('T', ' ');
    sections.sdk = renderSdk(
      `Generated by \`npm run bench -- sdk\` (bench/run.ts) on ${when} UTC; code measured ${revision(ROOT)}; Node ${process.version}; load average ${loadAverage()}.`,
      result,
    );
    log(`target: SDK call vs bare fetch: ${result.ratio.toFixed(2)}× (≤ 1.2×) ${result.ratio <= 1.2 ? 'PASS' : 'FAIL'}`);
  }

  const path = join(ROOT, 'bench/RESULTS.md');
  const previous = await readFile(path, 'utf8').catch(() => undefined);
  await writeFile(path, renderResults(sections, previous));
  // Servers and scratch databases a suite left registered (the sdk suite's) go now, so the process can end.
  await cleanUp();
  log(`wrote bench/RESULTS.md (${Math.round(elapsed(started))} s in all; load average ${loadAverage()})`);
} catch (error) {
  console.error(`\nBENCHMARK FAILED: ${(error as Error).message}`);
  await cleanUp();
  process.exit(1);
}

/**
 * bench/RESULTS.md: one section per suite, each rewritten by the complete run that measured it (`npm run bench`
 * rewrites all; `npm run bench -- <suite>` only its own and keeps the others' as they were).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { num } from './format.ts';
import type { Measurement } from './load.ts';
import type { MfaRun } from './mfa.ts';
import type { ProfiledRun, SignInRun } from './sign-in.ts';

export const SUITES = ['organizations', 'sign-in', 'mfa', 'sdk'] as const;
export type SuiteName = (typeof SUITES)[number];

export interface Machine {
  nproc: string;
  /** Cores busy during the 3 s before the run (other work on the machine skews every figure). */
  busyBefore: number;
  memory: string;
  cpu: string;
  node: string;
}

export interface DatabaseRun {
  label: string;
  /** e.g. `PostgreSQL 15.20 (Debian 15.20-0+deb12u1)`. */
  version: string;
  /** How the server used it, e.g. `scratch database on 127.0.0.1:5432, the server's default pool of 20 connections`. */
  description: string;
  seedSeconds: number;
  /** What `GET /v1/organizations?search=…` reports as `total`. */
  searchTotal: number;
  measurements: Measurement[];
  /** Server log lines at warn or above during the run. */
  serverWarnings: number;
  /** Notes found while measuring (query plans and the like), printed as they are. */
  notes: string[];
}

/** The 1-, 5- and 15-minute load averages (/proc/loadavg), e.g. `0.42 / 1.10 / 2.03`. */
export function loadAverage(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').trim().split(/\s+/).slice(0, 3).join(' / ');
  } catch {
    return 'n/a';
  }
}

/** How busy the machine was around one suite, and which code it measured. */
export interface SuiteClock {
  /** The code when the suite started (see `revision`). */
  revision: string;
  /** The code outside bench/ changed on disk while the suite ran (see `codeDigest`). */
  codeChanged: boolean;
  /** The exact command line (BENCH_* knobs included). */
  command: string;
  /** Load averages when the suite started and when it ended. */
  loadBefore: string;
  loadAfter: string;
  totalSeconds: number;
}

export interface Settings {
  connections: number;
  warmupSeconds: number;
  maxWarmupSeconds: number;
  durationSeconds: number;
  timeoutSeconds: number;
  organizations: number;
  searchTerm: string;
  autocannon: string;
}

/** Read-only git queries (`--no-optional-locks`: not even the index's stat cache is written). */
export function revision(cwd: string): string {
  try {
    const git = (...args: string[]) => execFileSync('git', ['--no-optional-locks', ...args], { cwd, encoding: 'utf8' }).trim();
    const head = git('rev-parse', '--short', 'HEAD');
    const dirty = git('status', '--porcelain', '--', '.', ':(exclude)bench');
    return dirty ? `${head} plus uncommitted changes (${dirty.split('\n').length} files outside bench/)` : head;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

/**
 * A digest of the code outside bench/ as it is on disk: the content of every file git tracks or would track (not the
 * ignored ones), read-only. Compared before and after a suite, it shows whether someone changed the code meanwhile: a
 * server started before the change runs the old code, one started after it the new. (A commit of what was already on
 * disk changes nothing here.)
 */
export function codeDigest(cwd: string): string {
  try {
    const files = execFileSync(
      'git',
      ['--no-optional-locks', 'ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', '.', ':(exclude)bench'],
      { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    )
      .split('\0')
      .filter(Boolean)
      .sort();
    const hash = createHash('sha256');
    for (const file of new Set(files)) {
      hash.update(`${file}\0`);
      try {
        hash.update(readFileSync(join(cwd, file)));
      } catch {
        hash.update('(missing)'); // deleted in the work tree
      }
    }
    return hash.digest('hex');
  } catch {
    return 'unknown';
  }
}

export function describeMachine(busyBefore: number): Machine {
  let nproc = 'unknown';
  try {
    nproc = execFileSync('nproc', { encoding: 'utf8' }).trim();
  } catch {
    // not on this system
  }
  let cpu = 'unknown';
  try {
    cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? 'unknown';
  } catch {
    // not Linux
  }
  return {
    nproc,
    busyBefore,
    memory: `${(totalmem() / 1024 ** 3).toFixed(1)} GiB`,
    cpu,
    node: process.version,
  };
}

const percent = (cores: number) => (Number.isNaN(cores) ? 'n/a' : `${num(cores * 100)} %`);

const statusText = (m: Measurement) =>
  Object.entries(m.statusCodes)
    .map(([code, count]) => `${code}: ${num(count)}`)
    .join(', ') || 'none';

function table(run: DatabaseRun): string {
  const rows = run.measurements.map(
    (m) =>
      `| ${m.name} | ${num(m.unloadedMs, 1)} | ${num(m.requestsPerSecond, 1)} | ${num(m.p50Ms)} | ${num(m.p99Ms)} | ${num(m.maxMs)} | ` +
      `${num(m.requests)} in ${num(m.windowSeconds, 1)} s | ${statusText(m)} | ${num(m.non2xx)} | ${num(m.errors)} (${num(m.timeouts)}) | ` +
      `${num(m.warmupSeconds, 1)} | ${percent(m.serverCores)} | ${percent(m.loadGeneratorCores)} | ${percent(m.machineCores)} |`,
  );
  return [
    '| scenario | 1 client ms | req/s | p50 ms | p99 ms | max ms | responses | status codes | non-2xx | errors (timeouts) | warm-up s | server CPU | autocannon CPU | machine CPU |',
    '|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

/** The machine table of a suite's section; `databases` adds one row per database (label, version). */
export function machineTable(machine: Machine, clock: SuiteClock, databases: Array<[string, string]>): string {
  return [
    '| | |',
    '|---|---|',
    `| code measured | ${clock.revision}${
      clock.codeChanged
        ? ' — **the code outside bench/ changed while this suite ran**: servers started before and after the change ran different code'
        : ''
    } |`,
    `| CPUs (\`nproc\`) | ${machine.nproc} |`,
    `| CPU busy in the 3 s before the run | ${num(machine.busyBefore * 100)} % |`,
    `| load average (1 / 5 / 15 min) when the suite started | ${clock.loadBefore} |`,
    `| load average (1 / 5 / 15 min) when the suite ended | ${clock.loadAfter} |`,
    `| memory | ${machine.memory} |`,
    `| CPU model | ${machine.cpu} |`,
    `| Node | ${machine.node} |`,
    ...databases.map(([label, version]) => `| ${label} | ${version} |`),
  ].join('\n');
}

export const generatedLine = (clock: SuiteClock) =>
  `Generated by \`${clock.command}\` (bench/run.ts) on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; ` +
  `the suite took ${Math.round(clock.totalSeconds)} s.`;

/** The organizations suite's section of RESULTS.md. */
export function renderOrganizations(
  machine: Machine,
  settings: Settings,
  clock: SuiteClock,
  runs: DatabaseRun[],
  interpretation: string[],
): string {
  const sections = runs.map((run) =>
    [
      `#### ${run.label}`,
      '',
      `- ${run.version}: ${run.description}.`,
      `- Seeding ${num(settings.organizations)} organizations took ${run.seedSeconds.toFixed(1)} s; ` +
        `\`search=${settings.searchTerm}\` matches ${num(run.searchTotal)} of them.`,
      `- Server log lines at warn or above during the run: ${run.serverWarnings}.`,
      '',
      table(run),
      ...run.notes.flatMap((note) => ['', note]),
    ].join('\n'),
  );
  return [
    '## Organizations: creating users and searching organizations',
    '',
    generatedLine(clock),
    '',
    '### Machine',
    '',
    machineTable(
      machine,
      clock,
      runs.map((run) => [run.label, run.version]),
    ),
    '',
    '### Method',
    '',
    `- The real server (\`node apps/server/src/main.ts\`, \`GATEHOUSE_LOG_LEVEL=warn\`) runs as a child process on 127.0.0.1; ` +
      `one application is created through \`POST /v1/applications\` with the operator token, and every request uses its secret key.`,
    `- ${num(settings.organizations)} organizations are bulk-inserted into the database (INSERT … SELECT generate_series, then ANALYZE).`,
    `- Load: autocannon ${settings.autocannon}, ${settings.connections} connections (closed loop: each sends its next request ` +
      'when the previous one is answered), one continuous run per scenario. The warm-up is not counted; it lasts at least ' +
      `${settings.warmupSeconds} s and until ${settings.connections} responses have come back (every connection has gone round ` +
      `once, so the server's queue is in its steady state), at most ${settings.maxWarmupSeconds} s. Then a ` +
      `${settings.durationSeconds} s window counts the responses that arrive in it. A response slower than ` +
      `${settings.timeoutSeconds} s counts as a timeout (an error).`,
    '- autocannon runs in the benchmark process on the same machine, so it shares the CPUs with the server and the database.',
    '- `POST /v1/users`: a new email on every request, expecting 201 (and afterwards the users are counted through the API). ' +
      '`GET /v1/organizations?search=…`: the default page of 25 and its `total`, expecting 200.',
    '- req/s: responses in the window ÷ its length. p50/p99/max: latency of those responses. "1 client ms": median of 10 ' +
      'requests sent one at a time after the load, once the server has drained (warm, no queue). "server CPU": CPU time ' +
      'of the server process during the window ÷ its length (100 % = one core; with PGlite it includes the database, which ' +
      'runs inside that process); "autocannon CPU": the same for the benchmark process (the load generator); "machine CPU": ' +
      'for all processes (at most nproc × 100 %). A run fails (and writes nothing) when more than 0.1 % of ' +
      'its requests, warm-up included, fail or answer another status.',
    '',
    '### Results',
    '',
    sections.join('\n\n'),
    '',
    '### Interpretation',
    '',
    ...interpretation.map((line) => `- ${line}`),
  ].join('\n');
}

const begin = (suite: SuiteName) => `<!-- suite: ${suite} -->`;
const end = (suite: SuiteName) => `<!-- /suite: ${suite} -->`;

/**
 * The previous file's section of `suite`. A file written before there were sections (one suite, the organizations
 * one, with `##` headings) is taken as that suite's section, its headings one level down.
 */
function previousSection(previous: string, suite: SuiteName): string | undefined {
  const from = previous.indexOf(begin(suite));
  const to = previous.indexOf(end(suite));
  if (from >= 0 && to > from) return previous.slice(from + begin(suite).length, to).trim();
  if (suite === 'organizations' && !previous.includes('<!-- suite:') && previous.startsWith('# Load benchmark results')) {
    const body = previous.slice(previous.indexOf('\n') + 1).trim();
    return `## Organizations: creating users and searching organizations\n\n${body.replace(/^(#{2,5}) /gm, '#$1 ')}`;
  }
  return undefined;
}

/** The whole file: the sections given, and the other suites' sections from `previous` (the file as it was). */
export function renderResults(sections: Partial<Record<SuiteName, string>>, previous: string | undefined): string {
  const parts = SUITES.map((suite) => {
    const section =
      sections[suite] ??
      (previous ? previousSection(previous, suite) : undefined) ??
      `## ${suite}\n\nNot measured yet: run \`npm run bench -- ${suite}\`.`;
    return [begin(suite), section.trim(), end(suite)].join('\n');
  });
  return `${[
    '# Load benchmark results',
    '',
    'One section per suite. `npm run bench` rewrites all; `npm run bench -- <suite>` rewrites only its own and keeps the ' +
      'others as they were, so the sections may come from different runs (each says when and on what it ran). ' +
      'See README.md for what is measured and how.',
    '',
    parts.join('\n\n'),
  ].join('\n')}\n`;
}

/**
 * Load measurements with their CPU per request (server process and PostgreSQL backends); `columns` name the leading
 * cells of each row (server, scenario…).
 */
function loadTable(columns: string[], rows: Array<{ cells: string[]; m: Measurement }>): string {
  const lines = rows.map(
    ({ cells, m }) =>
      `| ${cells.join(' | ')} | ${num(m.unloadedMs, 1)} | ${num(m.requestsPerSecond, 1)} | ${num(m.p50Ms)} | ` +
      `${num(m.p99Ms)} | ${num(m.maxMs)} | ${num(m.requests)} in ${num(m.windowSeconds, 1)} s | ${statusText(m)} | ` +
      `${num(m.errors)} (${num(m.timeouts)}) | ${num(m.warmupSeconds, 1)} | ${percent(m.serverCores)} | ` +
      `${num((m.serverCores * 1000) / m.requestsPerSecond, 2)} | ${percent(m.databaseCores)} | ` +
      `${Number.isNaN(m.databaseCores) ? 'n/a' : num((m.databaseCores * 1000) / m.requestsPerSecond, 2)} | ` +
      `${percent(m.loadGeneratorCores)} | ${percent(m.machineCores)} |`,
  );
  return [
    `| ${columns.join(' | ')} | 1 client ms | req/s | p50 ms | p99 ms | max ms | responses | status codes | errors (timeouts) | warm-up s | server CPU | server CPU ms/request | PostgreSQL CPU | PostgreSQL CPU ms/request | autocannon CPU | machine CPU |`,
    `|${columns.map(() => '---|').join('')}---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|`,
    ...lines,
  ].join('\n');
}

const signInTable = (run: SignInRun): string =>
  loadTable(
    ['server', 'scenario'],
    run.servers.flatMap((server) => server.measurements.map((m) => ({ cells: [server.label, m.name], m }))),
  );

/**
 * Two profiled runs side by side: CPU ms per request by package, then the functions with the most self time in each
 * (`functions`: how many rows for the first and the second run).
 */
function profileComparison(runs: ProfiledRun[], functions: [number, number]): string[] {
  const [first, second] = runs as [ProfiledRun, ProfiledRun];
  const perRequest = (run: ProfiledRun, ms: number) => ms / Math.max(1, run.requests);
  const names = [
    ...new Set(runs.flatMap((run) => run.summary.packages.filter((p) => p.share >= 0.005 || p.ms >= 5).map((p) => p.name))),
  ];
  const find = (run: ProfiledRun, name: string) => run.summary.packages.find((p) => p.name === name);
  names.sort((a, b) => (find(first, b)?.ms ?? 0) - (find(first, a)?.ms ?? 0));
  const cell = (run: ProfiledRun, name: string) => {
    const p = find(run, name);
    return p ? `${num(perRequest(run, p.ms), 3)} | ${num(p.share * 100, 1)} %` : '– | –';
  };
  const packageRows = names.map((name) => `| ${name} | ${cell(first, name)} | ${cell(second, name)} |`);
  const total = (run: ProfiledRun) => `**${num(perRequest(run, run.summary.busyMs), 3)}** | 100 %`;
  const functionTable = (run: ProfiledRun, count: number) => [
    `Functions with the most self time in ${run.label} (package: the nearest package on the stack):`,
    '',
    '| function | where | package | ms/request | share |',
    '|---|---|---|---:|---:|',
    ...run.summary.functions
      .slice(0, count)
      .map(
        (f) =>
          `| \`${f.name.replaceAll('|', '\\|')}\` | ${f.where ? `\`${f.where}\`` : ''} | ${f.pkg} | ` +
          `${num(perRequest(run, f.ms), 3)} | ${num(f.share * 100, 1)} % |`,
      ),
  ];
  return [
    `| package (with the Node built-ins it calls) | ${first.label} ms/request | share | ${second.label} ms/request | share |`,
    '|---|---:|---:|---:|---:|',
    ...packageRows,
    `| **busy in all** | ${total(first)} | ${total(second)} |`,
    '',
    ...functionTable(first, functions[0]),
    '',
    ...functionTable(second, functions[1]),
  ];
}

/** How a profile is read (the packages, the functions, ms/request); `what` says which runs and why. */
const profileReading = (what: string, runs: ProfiledRun[]) =>
  `${what}; only the main thread\u2019s samples inside the window count. Packages: each sample is charged to the ` +
  'nearest package on the stack, so Node\u2019s own modules and native code count for the package that called them ' +
  '(the socket write of a response for fastify, of a query for pg; a node:crypto call for the library that made it; ' +
  'WebCrypto (`crypto.subtle`) runs its signature jobs on libuv\u2019s thread pool, which a profile of the main thread ' +
  'does not see). Functions: the function on top of the stack. ms/request = sampled time ÷ responses in the ' +
  'window. Samples are taken at fixed wall-clock intervals while the thread is not idle, so a call during which the ' +
  'thread was preempted (a socket write that wakes a PostgreSQL backend on the same core, say) counts that wait too; ' +
  'the totals are close to the CPU time per request measured above, single rows less so. The profiler slows the ' +
  `server down (${runs.map((r) => `${r.label} ${num(r.requestsPerSecond)} req/s`).join(', ')} under it).`;

function profileTables(profile: NonNullable<SignInRun['profile']>): string[] {
  return [
    profileReading(
      `Why: ${profile.reason}. Each server was started again with \`node --cpu-prof\` and loaded with \`GET /v1/auth/me\` ` +
        `as above (same connections, same tokens, a ${profile.seconds} s window)`,
      profile.runs,
    ),
    '',
    ...profileComparison(profile.runs, [20, 10]),
  ];
}

/** The sign-in suite's section of RESULTS.md. */
export function renderSignIn(machine: Machine, settings: Settings, clock: SuiteClock, run: SignInRun): string {
  const verdict = (pass: boolean) => (pass ? '**PASS**' : '**FAIL**');
  const v = run.verify;
  return [
    '## Sign-in: `/v1/auth/me` and token refresh against a minimal server, and `verifyToken`',
    '',
    generatedLine(clock),
    '',
    '### Machine',
    '',
    machineTable(machine, clock, [['PostgreSQL', run.version]]),
    '',
    '### Targets',
    '',
    '| target | Gatehouse | baseline | ratio | required | result |',
    '|---|---:|---:|---:|---|---|',
    ...run.targets.map(
      (t) => `| ${t.name} | ${t.gatehouse} | ${t.baseline} | ${num(t.ratio, 2)}× | ${t.required} | ${verdict(t.pass)} |`,
    ),
    '',
    '### Method',
    '',
    `- Both servers run as child processes on 127.0.0.1 against the same PostgreSQL scratch database, one after the ` +
      `other (never at the same time), with the same load: autocannon ${settings.autocannon}, ${settings.connections} ` +
      `connections, closed loop, a warm-up of at least ${settings.warmupSeconds} s and until ${settings.connections} responses ` +
      `have come back (at most ${settings.maxWarmupSeconds} s), then a ${settings.durationSeconds} s window. A response slower ` +
      `than ${settings.timeoutSeconds} s counts as a timeout.`,
    `- ${run.users} users sign in through Gatehouse's own API, as people would: \`POST /v1/auth/magic-link/start\`, the link ` +
      `from the message log (\`GET /v1/messages\` of a development application), \`POST /v1/auth/magic-link/verify\`; each ` +
      `gets a session. Connection i uses user i (the ${run.users}th is the single client after the load). The application ` +
      'allows sign-in links for all of them from one address and gives access tokens an hour, so that none expires during ' +
      'the suite.',
    '- `GET /v1/auth/me`: connection i sends user i\u2019s access token on every request, as a client does for the ' +
      'token\u2019s lifetime. A server that remembers tokens it verified checks each signature once; the minimal server ' +
      'checks it on every request (`jwtVerify` with its key), as the issue specifies it.',
    '- `POST /v1/auth/token/refresh`: connection i owns session i alone and always presents its current refresh token: ' +
      'the one the previous response gave it (autocannon keeps one state per connection, one request in flight each). A ' +
      'token presented twice would revoke the session (reuse detection) and fail the run; afterwards the revoked sessions ' +
      `are counted: ${run.revokedSessions}.`,
    '- The minimal server (bench/minimal-server.ts) has its own Ed25519 key; the benchmark signs it tokens with the same ' +
      'header (`alg` EdDSA, `kid`, `typ` at+jwt) and claims (`iss`, `aud`, `sub`, `sid`, `aal`, `org`, `org_role`, `iat`, ' +
      '`exp`) for the same users, and one opaque refresh token per session, stored as SHA-256 in `minimal_refresh`.',
    '- "server CPU": CPU time of the server process during the window ÷ its length (100 % = one core); ' +
      '"server CPU ms/request": that CPU time ÷ the responses in the window. "PostgreSQL CPU": the same for the ' +
      'PostgreSQL backends of the scratch database (from /proc; the shared WAL writer and checkpointer are not counted). ' +
      '"1 client ms": median of 10 requests sent one ' +
      'at a time after the load, once the server has drained. A run fails (and writes nothing) when more than 0.1 % of ' +
      'its requests fail or answer another status than 200.',
    '- `verifyToken` (bench/verify.ts, its own process, after the servers have stopped): a token the SDK verified ' +
      'before, against `crypto.verify` of the same token\u2019s Ed25519 signature with a KeyObject; best of three rounds ' +
      'each. The ratio judged is the slower of "the same string again" and "an equal string, as a new request\u2019s header ' +
      'would be" (whose hash V8 has not cached yet).',
    '',
    '### Results',
    '',
    `- ${run.version}: ${run.database}.`,
    ...run.servers.map((server) => `- ${server.label}: ${server.description}.`),
    `- ${run.users} sign-ins took ${run.signInSeconds.toFixed(1)} s. Server log lines at warn or above: ` +
      `${run.servers.map((s) => `${s.label} ${s.serverWarnings}`).join(', ')}.`,
    '',
    signInTable(run),
    '',
    '<details><summary>The statement each server sends per <code>GET /v1/auth/me</code> (the last query of its pool ' +
      'connections in <code>pg_stat_activity</code>), with EXPLAIN ANALYZE after its load</summary>',
    '',
    '```text',
    ...run.plans.flatMap((p, i) => [...(i ? [''] : []), `-- ${p.label}`, p.sql, '', p.plan]),
    '```',
    '',
    '</details>',
    '',
    '#### verifyToken',
    '',
    '| | ops/s | × raw |',
    '|---|---:|---:|',
    `| raw Ed25519 \`crypto.verify\` (KeyObject) | ${num(v.rawOpsPerSecond)} | 1× |`,
    `| \`verifyToken\`, the same string again | ${num(v.sameStringOpsPerSecond)} | ${num(v.sameStringOpsPerSecond / v.rawOpsPerSecond)}× |`,
    `| \`verifyToken\`, an equal string from a new request | ${num(v.newStringOpsPerSecond)} | ${num(v.newStringOpsPerSecond / v.rawOpsPerSecond)}× |`,
    '',
    `The first call, which fetches the JWKS from a local server and checks the signature, took ${num(v.firstMs, 1)} ms.`,
    ...(run.profile ? ['', '### Where the time goes (CPU profiles)', '', ...profileTables(run.profile)] : []),
    '',
    '### Interpretation',
    '',
    ...run.interpretation.map((line) => `- ${line}`),
  ].join('\n');
}

/** The mfa suite's section of RESULTS.md. */
export function renderMfa(machine: Machine, settings: Settings, clock: SuiteClock, run: MfaRun): string {
  const us = (opsPerSecond: number) => 1e6 / opsPerSecond;
  const c = run.crypto;
  const cpuMs = (m: Measurement) => (m.serverCores * 1000) / m.requestsPerSecond;
  const checks = [
    { s: run.passkey, raw: us(c.ecdsaRawOpsPerSecond), served: us(c.ecdsaLibraryOpsPerSecond), what: 'ECDSA P-256 verify' },
    { s: run.totp, raw: us(c.totpRawOpsPerSecond), served: us(c.totpServiceOpsPerSecond), what: 'HMAC-SHA1 (TOTP, window 1)' },
  ];
  const pct = (part: number, whole: number) => `${num((part / whole) * 100, 1)} %`;
  const traced = run.traces[0]?.requests ?? 0;
  const statementBlock = (t: MfaRun['traces'][number]) => [
    `<details><summary>The ${t.roundTrips} round trips of one <code>${t.scenario}</code> (traced, one client; ` +
      'the time is from the statement leaving the tracer to PostgreSQL\u2019s ReadyForQuery)</summary>',
    '',
    '```text',
    ...t.statements.map((line, i) => `${String(i + 1).padStart(2)}. ${line}`),
    '```',
    '',
    '</details>',
  ];
  const waitBlock = (label: string, w: MfaRun['passkey']['waits']) => [
    `<details><summary>${label}: what the PostgreSQL backends were doing during the window (<code>pg_stat_activity</code> ` +
      `every 100 ms, ${num(w.samples)} samples; on average ${num(w.busyBackends, 1)} backends were not idle)</summary>`,
    '',
    '| state, or what the backend waited for | mean backends |',
    '|---|---:|',
    ...w.kinds.map((k) => `| ${k.what} | ${num(k.backends, 2)} |`),
    '',
    'By statement (values the ORM inlines shown as … and N):',
    '',
    '| state | statement | mean backends |',
    '|---|---|---:|',
    ...w.rows.map((r) => `| ${r.what} | \`${r.statement.replaceAll('|', '\\|')}\` | ${num(r.backends, 2)} |`),
    '',
    '</details>',
  ];
  return [
    '## MFA: a passkey MFA finish and a TOTP verify per request, against the raw signature and code checks',
    '',
    generatedLine(clock),
    '',
    '### Machine',
    '',
    machineTable(machine, clock, [
      ['PostgreSQL', run.version],
      ['crypto', c.libraries],
    ]),
    '',
    '### Method',
    '',
    `- The real server runs as a child process on 127.0.0.1 against a PostgreSQL scratch database, with one ` +
      `\`development\` application whose \`allowed_origins\` is \`${run.origin}\` (the relying party). Load: autocannon ` +
      `${settings.autocannon}, ${settings.connections} connections, closed loop, a warm-up of at least ${settings.warmupSeconds} s ` +
      `and until ${settings.connections} responses have come back (at most ${settings.maxWarmupSeconds} s), then a ` +
      `${settings.durationSeconds} s window; after it, the drain and 10 requests from one client (the median is "1 client ms").`,
    `- Through the API first (not timed, ${num(run.setupSeconds, 1)} s): ${run.passkey.users + 1} users sign in by magic ` +
      'link and register a passkey (`register/start`, the tests\u2019 software authenticator\u2019s `create()` with a new ' +
      'P-256 key, `register/finish`); one of them signs in again all the way (magic link → `mfa_required` → ' +
      '`passkeys/mfa/start` → `get()` → `passkeys/mfa/finish` → `complete`, aal 2). One user enrolls TOTP ' +
      '(`totp/enroll`, `totp/confirm`) and signs in with it the same way (`totp/verify`).',
    '- What the load consumes is prepared before it (not timed): each request needs a pending sign-in of its own (a ' +
      '`pending_tokens` row at stage `mfa`, which only a first factor makes: a magic link per request would take a ' +
      'message and ~30 ms each) and, for a passkey, an `mfa/start` ceremony of its own (which the API allows 100 times ' +
      'per client address per 5 minutes). They are inserted with SQL as copies of what the server wrote for the sign-ins ' +
      'above (same stage, aal and first factor; the token\u2019s and state\u2019s SHA-256, a 32-byte challenge bound to ' +
      'the user and the pending sign-in, 10 and 5 minutes of life), with tokens and states as long as the server\u2019s.',
    `- \`POST /v1/auth/passkeys/mfa/finish\`: ${run.passkey.usersText}. Each user\u2019s assertions are signed before the ` +
      'load by its authenticator, in order (the counter grows by one each time), over the challenge of each prepared ' +
      'ceremony; with one request in flight per connection they reach the server in that order, as from one device. ' +
      `${num(run.passkey.prepared)} prepared (${num(run.passkey.prepareSeconds, 1)} s), ${num(run.passkey.used)} used by the load.`,
    `- \`POST /v1/auth/mfa/totp/verify\`: ${run.totp.usersText}. The users are copies of the enrolled one (its row, ` +
      'its factor\u2019s kind and name), each with a seed of its own sealed with the master key for its factor id as ' +
      '`enrollTotp` does, a confirmed factor and one pending sign-in; one of them first signs in through the API (magic ' +
      'link → `mfa_required` with `totp` → `totp/verify` → `complete`), so the copies are users the server recognizes. ' +
      'The code is computed when the request is sent. ' +
      `${num(run.totp.prepared)} prepared (${num(run.totp.prepareSeconds, 1)} s), ${num(run.totp.used)} used by the load.`,
    `- Every 200 must have made a session at aal 2: counted after each load (${num(run.passkey.sessions)} and ` +
      `${num(run.totp.sessions)}). A run fails (and writes nothing) when more than 0.1 % of the requests fail or answer ` +
      'another status than 200, or when the prepared requests run out (`BENCH_MFA_MAX_RATE`).',
    '- The checks alone (bench/mfa-crypto.ts, a process of its own after the server has stopped; best of three ' +
      'rounds): node:crypto `verify` of a real assertion (ECDSA P-256, SHA-256 over authenticatorData || ' +
      'SHA-256(clientDataJSON), the hash and concatenation included; KeyObject made once); the same assertion through ' +
      '@simplewebauthn/server\u2019s `verifyAuthenticationResponse` with the options the server passes; otpauth ' +
      '`TOTP.validate` with window 1 for the current step\u2019s code (one HMAC-SHA1); and that check as the service ' +
      'does it per request (unseal the seed with AES-256-GCM, decode it, build the TOTP, validate).',
    '- Where the time goes: after the loads the server is started again on the same database with `DATABASE_URL` ' +
      'pointing at a protocol tracer in the benchmark process (bench/pg-trace.ts), and each scenario is sent one request ' +
      `at a time (${run.traceWarmup} uncounted, then ${traced}): the round trips to PostgreSQL (to ReadyForQuery) per ` +
      'request, which pool sent them, and the time the request spent waiting on them. Under load, `pg_stat_activity` is ' +
      'sampled every 100 ms.',
    '',
    '### Results',
    '',
    `- ${run.version}: ${run.database}. The server: \`node apps/server/src/main.ts\` as in the code measured ` +
      '(fastify, tRPC + trpc-to-openapi, zod, MikroORM, a pg pool of 20, and rate-limiter-flexible\u2019s own pool of 4 ' +
      `for the rate limits). Server log lines at warn or above: ${run.serverWarnings}.`,
    '',
    loadTable(
      ['scenario'],
      [run.passkey, run.totp].map((s) => ({ cells: [s.measurement.name], m: s.measurement })),
    ),
    '',
    '#### The check in the request',
    '',
    '| scenario | 1 client ms | server CPU ms/request under load | the check | raw µs | as the server calls it µs | raw ÷ 1 client | raw ÷ server CPU | as called ÷ server CPU |',
    '|---|---:|---:|---|---:|---:|---:|---:|---:|',
    ...checks.map(
      ({ s, raw, served, what }) =>
        `| ${s.measurement.name} | ${num(s.measurement.unloadedMs, 1)} | ${num(cpuMs(s.measurement), 2)} | ${what} | ` +
        `${num(raw, 1)} | ${num(served, 1)} | ${pct(raw / 1000, s.measurement.unloadedMs)} | ` +
        `${pct(raw / 1000, cpuMs(s.measurement))} | ${pct(served / 1000, cpuMs(s.measurement))} |`,
    ),
    '',
    '| the check alone | µs/op | ops/s |',
    '|---|---:|---:|',
    `| ECDSA P-256 raw (node:crypto \`verify\`, KeyObject) | ${num(us(c.ecdsaRawOpsPerSecond), 1)} | ${num(c.ecdsaRawOpsPerSecond)} |`,
    `| the same assertion through \`verifyAuthenticationResponse\` | ${num(us(c.ecdsaLibraryOpsPerSecond), 1)} | ${num(c.ecdsaLibraryOpsPerSecond)} |`,
    `| TOTP raw (otpauth \`validate\`, window 1, current step) | ${num(us(c.totpRawOpsPerSecond), 1)} | ${num(c.totpRawOpsPerSecond)} |`,
    `| TOTP as the service checks it (unseal, build, validate) | ${num(us(c.totpServiceOpsPerSecond), 1)} | ${num(c.totpServiceOpsPerSecond)} |`,
    '',
    '#### Where the time goes',
    '',
    '| scenario (traced, one client) | latency ms | waiting on PostgreSQL ms | share | round trips | of which the rate limiter | transactions | commits | waiting on commits ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...run.traces.map(
      (t) =>
        `| ${t.scenario} | ${num(t.latencyMs, 1)} | ${num(t.databaseMs, 1)} | ${pct(t.databaseMs, t.latencyMs)} | ` +
        `${t.roundTrips} | ${t.rateLimitRoundTrips} | ${t.transactions} | ${t.commits} | ${num(t.commitMs, 1)} |`,
    ),
    '',
    `Medians of ${traced} requests (after ${run.traceWarmup} uncounted ones). "commits": round trips that commit — a ` +
      'transaction\u2019s COMMIT, or a write sent outside a transaction (PostgreSQL commits it on its own); with ' +
      `${run.durability} each waits for its WAL flush.`,
    '',
    ...run.traces.flatMap((t) => [...statementBlock(t), '']),
    ...waitBlock(run.passkey.measurement.name, run.passkey.waits),
    '',
    ...waitBlock(run.totp.measurement.name, run.totp.waits),
    ...(run.profile
      ? [
          '',
          '#### CPU profiles under load',
          '',
          profileReading(
            'After the loads, the server was started again with `node --cpu-prof` for each scenario and loaded as ' +
              `above (${settings.connections} connections, the next of the prepared requests, a ${run.profile.seconds} s window)`,
            run.profile.runs,
          ),
          '',
          ...profileComparison(run.profile.runs, [15, 15]),
        ]
      : []),
    '',
    '### Interpretation',
    '',
    ...run.interpretation.map((line) => `- ${line}`),
  ].join('\n');
}

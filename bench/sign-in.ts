/**
 * The sign-in suite (`npm run bench -- sign-in`), on PostgreSQL: `GET /v1/auth/me` and `POST /v1/auth/token/refresh`
 * of the real server against the benchmark's minimal server (bench/minimal-server.ts), in the same run, one server
 * after the other; the issue's targets; when a target fails, a CPU profile of both servers by package; and
 * verifyToken (@gatehouse/sdk) against a raw Ed25519 verification (bench/verify.ts, in a child process).
 */
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { decodeJwt, SignJWT } from 'jose';
import { Client } from 'pg';
import { num } from './format.ts';
import {
  assertSuccessful,
  type ConnectionState,
  type LoadOptions,
  type Measurement,
  measure,
  type Scenario,
  unloaded,
} from './load.ts';
import { type ProfileSummary, summarizeProfile } from './profile.ts';
import {
  activeStatements,
  type BenchApplication,
  createApplication,
  databaseCpu,
  drain,
  machineCpuSeconds,
  ROOT,
  runJsonScript,
  type ServerProcess,
  type StartOptions,
  scratchDatabase,
} from './server.ts';
import type { VerifyResult } from './verify.ts';

/** The load of every scenario (see load.ts). */
export interface LoadConfig {
  connections: number;
  warmupSeconds: number;
  maxWarmupSeconds: number;
  durationSeconds: number;
  timeoutSeconds: number;
}

export interface SignInConfig extends LoadConfig {
  adminUrl: string;
  /** `auto`: profile when a `/v1/auth/me` target fails; `always`; `never`. */
  profile: 'auto' | 'always' | 'never';
  /** Measured window of each profiled run, seconds. */
  profileSeconds: number;
  /** Where to keep the .cpuprofile files (for DevTools); by default a temporary directory, deleted after. */
  profileDir: string | undefined;
}

/** What run.ts lends the suite: logging, undo steps and server starts that are stopped on every way out. */
export interface Harness {
  log: (message: string) => void;
  onCleanup: (what: string, run: () => Promise<unknown>) => void;
  tempDir: (kind: string) => Promise<string>;
  serve: (label: string, env: Record<string, string>, options?: StartOptions) => Promise<ServerProcess>;
  secrets: () => { GATEHOUSE_OPERATOR_TOKEN: string; GATEHOUSE_MASTER_KEY: string };
}

export interface ServerRun {
  label: string;
  description: string;
  /** `GET /v1/auth/me`, then `POST /v1/auth/token/refresh`. */
  measurements: Measurement[];
  serverWarnings: number;
}

export interface Target {
  name: string;
  gatehouse: string;
  baseline: string;
  ratio: number;
  required: string;
  pass: boolean;
}

export interface ProfiledRun {
  label: string;
  /** Responses in the profiled window, to express CPU per request. */
  requests: number;
  requestsPerSecond: number;
  summary: ProfileSummary;
}

export interface SignInRun {
  version: string;
  database: string;
  users: number;
  signInSeconds: number;
  /** Sessions revoked by refresh-token reuse detection during the run (must be 0: no token was used twice). */
  revokedSessions: number;
  servers: ServerRun[];
  targets: Target[];
  verify: VerifyResult;
  profile?: { reason: string; seconds: number; runs: ProfiledRun[] };
  /** The statement each server ran per `/me`, explained (analyze) on the data of the run. */
  plans: ExplainedStatement[];
  interpretation: string[];
}

export interface ExplainedStatement {
  label: string;
  sql: string;
  plan: string;
  planningMs: number;
  executionMs: number;
}

/** The access tokens last for the whole suite (the cost of a check does not depend on the lifetime). */
const ACCESS_TOKEN_TTL_S = 3600;
/** One development application: its message log holds the links. Sign-in from one address needs a higher limit. */
const APPLICATION_SETTINGS = {
  session: { access_token_ttl_s: ACCESS_TOKEN_TTL_S },
  rate_limits: { magic_link_per_address: 100_000, magic_link_per_email: 10, window_s: 900 },
};
export const ME_THROUGHPUT_TARGET = 0.6;
export const ME_P99_TARGET = 3;

export interface SignedIn {
  email: string;
  userId: string;
  sessionId: string;
  accessToken: string;
  refreshToken: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One JSON request; the answer's status and parsed body (the text when it is not JSON). */
export async function call(url: string, method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { status: response.status, body: parsed };
}

/** The one-time token of a magic link in a message body (the text body, or HTML with escaped attribute values). */
function linkToken(body: string): string | undefined {
  const decoded = body
    .replace(/&#x([0-9a-f]+);/gi, (_m, hex: string) => String.fromCodePoint(Number.parseInt(hex, 16)))
    .replaceAll('&amp;', '&');
  return /[?&]token=(ml_[0-9A-Za-z]+)/.exec(decoded)?.[1];
}

/**
 * Signs each address in as a person would, by magic link: start (ES), the link from the message log (a development
 * application keeps links there when no SMTP server is configured), verify. Returns what each verify answered (`data`):
 * `complete` with tokens for a new user, `mfa_required` with a pending token for one with a second factor.
 */
export async function magicLinkSignIns(url: string, app: BenchApplication, emails: string[]): Promise<any[]> {
  const es = { 'x-application-id': app.id };
  const sk = { ...es, authorization: `Bearer ${app.secretKey}` };
  const count = emails.length;
  const previous = new Set<string>(); // links already in the log (an earlier sign-in of the same address)
  for (let offset = 0; ; offset += 100) {
    const page = await call(url, 'GET', `/v1/messages?limit=100&offset=${offset}`, sk);
    if (page.status !== 200) throw new Error(`GET /v1/messages answered ${page.status}: ${JSON.stringify(page.body)}`);
    const messages = page.body.data.messages as Array<{ body: string }>;
    for (const m of messages) {
      const token = linkToken(m.body);
      if (token) previous.add(token);
    }
    if (messages.length < 100) break;
  }
  for (const email of emails) {
    const started = await call(url, 'POST', '/v1/auth/magic-link/start', es, { email });
    if (started.status !== 200) throw new Error(`magic-link start answered ${started.status}: ${JSON.stringify(started.body)}`);
  }
  // Mail leaves after the answer: wait until the message log holds a new link for every address (at most 60 s).
  const tokens = new Map<string, string>();
  const deadline = Date.now() + 60_000;
  while (tokens.size < count) {
    if (Date.now() > deadline) throw new Error(`the message log holds ${tokens.size} of ${count} magic links after 60 s`);
    for (let offset = 0; ; offset += 100) {
      const page = await call(url, 'GET', `/v1/messages?limit=100&offset=${offset}`, sk);
      if (page.status !== 200) throw new Error(`GET /v1/messages answered ${page.status}: ${JSON.stringify(page.body)}`);
      const messages = page.body.data.messages as Array<{ to: string; template_key: string; body: string }>;
      for (const m of messages) {
        const token = m.template_key === 'magic_link' ? linkToken(m.body) : undefined;
        if (token && !previous.has(token)) tokens.set(m.to, token);
      }
      if (messages.length < 100) break;
    }
    if (tokens.size < count) await sleep(200);
  }
  const answers: any[] = [];
  for (const email of emails) {
    const verified = await call(url, 'POST', '/v1/auth/magic-link/verify', es, { token: tokens.get(email) });
    if (verified.status !== 200 || !verified.body?.data?.status) {
      throw new Error(`magic-link verify answered ${verified.status}: ${JSON.stringify(verified.body)}`);
    }
    answers.push(verified.body.data);
  }
  return answers;
}

/** Signs `count` new users in by magic link (`magicLinkSignIns`); each must complete with tokens. */
export async function signIn(url: string, app: BenchApplication, count: number, label = 'signin'): Promise<SignedIn[]> {
  const tag = randomBytes(4).toString('hex');
  const emails = Array.from({ length: count }, (_, i) => `${label}-${tag}-${i}@bench.example.com`);
  return (await magicLinkSignIns(url, app, emails)).map((data, i) => {
    if (data.status !== 'complete') throw new Error(`magic-link verify answered ${JSON.stringify(data)}`);
    return {
      email: emails[i]!,
      userId: data.user.id,
      sessionId: data.tokens.session_id,
      accessToken: data.tokens.access_token,
      refreshToken: data.tokens.refresh_token,
    };
  });
}

/** `GET /v1/auth/me`: connection i sends the access token of user i (the one client after the load, the next one). */
function meScenario(applicationId: string, accessTokens: string[]): Scenario {
  let next = 0;
  return {
    name: 'GET /v1/auth/me',
    method: 'GET',
    path: '/v1/auth/me',
    headers: { 'x-application-id': applicationId },
    expect: 200,
    connection: {
      request: (state: ConnectionState) => {
        state.token ??= accessTokens[next++ % accessTokens.length];
        return { headers: { authorization: `Bearer ${state.token}` } };
      },
    },
  };
}

/**
 * `POST /v1/auth/token/refresh`: connection i owns session i alone and always presents its current refresh token,
 * the one the previous response gave it. A token presented twice would be reuse, which revokes the session: the
 * run would then fail on 401s (and the revoked sessions are counted afterwards).
 */
function refreshScenario(applicationId: string, refreshTokens: string[]): Scenario {
  let next = 0;
  return {
    name: 'POST /v1/auth/token/refresh',
    method: 'POST',
    path: '/v1/auth/token/refresh',
    headers: { 'x-application-id': applicationId },
    expect: 200,
    connection: {
      request: (state: ConnectionState) => {
        if (state.token === undefined) {
          if (next >= refreshTokens.length) throw new Error('more connections than sessions');
          state.token = refreshTokens[next++];
        }
        return { body: JSON.stringify({ refresh_token: state.token }) };
      },
      response: (state: ConnectionState, status: number, body: string) => {
        if (status !== 200) return;
        try {
          const parsed = JSON.parse(body) as { data?: { refresh_token?: string }; refresh_token?: string };
          state.token = parsed.data?.refresh_token ?? parsed.refresh_token ?? state.token;
        } catch {
          // a body that is not JSON: the next request repeats the token and fails visibly
        }
      },
    },
  };
}

/**
 * One scenario on one server: the load (warm-up, window) with the PostgreSQL backends' CPU, the success check, the
 * drain, then the one-client latency.
 */
export async function runScenario(
  h: Harness,
  config: LoadConfig,
  label: string,
  server: ServerProcess,
  scenario: Scenario,
  client: Client,
  durationSeconds = config.durationSeconds,
): Promise<Measurement> {
  const database = databaseCpu(client);
  const options: LoadOptions = {
    url: server.url,
    connections: config.connections,
    warmupSeconds: config.warmupSeconds,
    maxWarmupSeconds: config.maxWarmupSeconds,
    durationSeconds,
    timeoutSeconds: config.timeoutSeconds,
    serverCpuSeconds: server.cpuSeconds,
    machineCpuSeconds,
    databaseCpuSeconds: database.seconds,
  };
  h.log(`${label}: ${scenario.name} at ${config.connections} connections (warm-up, then ${durationSeconds} s measured)`);
  // The server's pool opens its connections during the warm-up: keep learning which backends there are.
  let measuring = true;
  const watching = (async () => {
    while (measuring) {
      await database.refresh().catch(() => undefined);
      await sleep(500);
    }
  })();
  const m = await measure(scenario, options).finally(() => {
    measuring = false;
  });
  await watching;
  const cpuMs = (m.serverCores * 1000) / m.requestsPerSecond;
  const databaseMs = (m.databaseCores * 1000) / m.requestsPerSecond;
  h.log(
    `${label}: ${scenario.name}: ${m.requestsPerSecond.toFixed(1)} req/s, p50 ${m.p50Ms.toFixed(0)} ms, p99 ${m.p99Ms.toFixed(0)} ms, ` +
      `${cpuMs.toFixed(2)} ms server CPU/request, ${databaseMs.toFixed(2)} ms PostgreSQL CPU/request (warm-up ${m.warmupSeconds.toFixed(1)} s), status ${JSON.stringify(m.statusCodes)}, ` +
      `errors ${m.errors}`,
  );
  assertSuccessful(label, scenario, m);
  await drain(server, () => activeStatements(client));
  m.unloadedMs = await unloaded(scenario, server.url);
  h.log(`${label}: ${scenario.name}: ${m.unloadedMs.toFixed(1)} ms with one client`);
  return m;
}

/**
 * The statement a server ran last for `GET /v1/auth/me`, read from `pg_stat_activity` (which keeps each backend's last
 * query, so this is what the server really sends, not a copy), then explained with ANALYZE (the third run, warm).
 * Parameters (`$1`) are replaced by `parameter`, quoted.
 */
async function explainLast(client: Client, label: string, pattern: RegExp, parameter: string): Promise<ExplainedStatement> {
  try {
    return await explain(client, label, pattern, parameter);
  } catch (error) {
    // A plan is an aid to reading the figures, not a figure: its failure does not fail the run.
    return {
      label,
      sql: '',
      plan: `(not explained: ${(error as Error).message})`,
      planningMs: Number.NaN,
      executionMs: Number.NaN,
    };
  }
}

async function explain(client: Client, label: string, pattern: RegExp, parameter: string): Promise<ExplainedStatement> {
  const { rows } = await client.query<{ query: string }>(
    "select query from pg_stat_activity where datname = current_database() and backend_type = 'client backend' " +
      "and pid <> pg_backend_pid() and state = 'idle'",
  );
  const sql = rows.map((r) => r.query).find((q) => pattern.test(q));
  if (!sql) throw new Error(`${label}: no statement matching ${pattern} in pg_stat_activity`);
  const literal = sql.replace(/\$1\b/g, `'${parameter.replaceAll("'", "''")}'`);
  let plan = '';
  for (let i = 0; i < 3; i++) {
    const explained = await client.query<{ 'QUERY PLAN': string }>(`explain (analyze, costs off) ${literal}`);
    plan = explained.rows.map((r) => r['QUERY PLAN']).join('\n');
  }
  const ms = (name: string) => Number(new RegExp(`${name} Time: ([\\d.]+) ms`).exec(plan)?.[1] ?? Number.NaN);
  return { label, sql: sql.replace(/\s+/g, ' ').trim(), plan, planningMs: ms('Planning'), executionMs: ms('Execution') };
}

/** The main thread's profile that `--cpu-prof` wrote for `pid` (CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile). */
async function profileFile(dir: string, pid: number | undefined): Promise<string> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
  const main = files.find((f) => f.includes(`.${pid}.0.`)) ?? files[0];
  if (!main) throw new Error(`no CPU profile was written in ${dir}`);
  return join(dir, main);
}

/** What a profiled run needs of a suite's configuration. */
export type ProfileConfig = LoadConfig & Pick<SignInConfig, 'profileSeconds' | 'profileDir'>;

/** A short extra run of a scenario on a server started with `--cpu-prof`; the window's samples, summarized. */
export async function profiled(
  h: Harness,
  config: ProfileConfig,
  label: string,
  env: Record<string, string>,
  options: StartOptions,
  scenario: Scenario,
): Promise<ProfiledRun> {
  const dir = config.profileDir ? await mkdtemp(join(resolve(config.profileDir), `${label}-`)) : await h.tempDir('profile');
  const server = await h.serve(`${label} (profiled)`, env, { ...options, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`] });
  h.log(`${label} (profiled): ${scenario.name} (warm-up, then ${config.profileSeconds} s measured)`);
  const m = await measure(scenario, {
    url: server.url,
    connections: config.connections,
    warmupSeconds: config.warmupSeconds,
    maxWarmupSeconds: config.maxWarmupSeconds,
    durationSeconds: config.profileSeconds,
    timeoutSeconds: config.timeoutSeconds,
    serverCpuSeconds: server.cpuSeconds,
    machineCpuSeconds,
  });
  assertSuccessful(`${label} (profiled)`, scenario, m);
  // No drain (the profiler's own sampling keeps the process from looking idle): a graceful stop serves what is in
  // flight, and the profile is written when the process exits.
  await server.stop(60_000);
  // The window on the monotonic clock, which the profile's timestamps use too.
  const monotonicOffset = Number(process.hrtime.bigint()) / 1e6 - performance.now();
  const summary = summarizeProfile(
    await profileFile(dir, server.child.pid),
    ROOT,
    m.windowStart + monotonicOffset,
    m.windowEnd + monotonicOffset,
  );
  h.log(`${label} (profiled): ${m.requestsPerSecond.toFixed(1)} req/s under the profiler, ${summary.busyMs.toFixed(0)} ms busy`);
  return { label, requests: m.requests, requestsPerSecond: m.requestsPerSecond, summary };
}

const verifyBenchmark = () => runJsonScript<VerifyResult>('bench/verify.ts', ['--json']);

const ratioText = (ratio: number) => `${ratio.toFixed(2)}×`;

export async function benchSignIn(config: SignInConfig, h: Harness, cores: number): Promise<SignInRun> {
  const scratch = await scratchDatabase(config.adminUrl, h.onCleanup);
  const { url } = scratch;
  const version = `PostgreSQL ${scratch.version}`;
  h.log(`sign-in: scratch database ${scratch.name} on ${version}`);

  // The real server: an application, then one signed-in user (and session) per connection, plus one for the
  // single-client measurements after the load.
  // A fixed base URL (the tokens' `iss`): the default names the port, which changes when the server starts again.
  const env = {
    DATABASE_URL: url.toString(),
    GATEHOUSE_DATA_DIR: await h.tempDir('signin'),
    GATEHOUSE_BASE_URL: 'http://gatehouse.bench.test',
    ...h.secrets(),
  };
  const gatehouse = await h.serve('gatehouse', env);
  const app = await createApplication(gatehouse.url, env.GATEHOUSE_OPERATOR_TOKEN, APPLICATION_SETTINGS);
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  h.onCleanup('close the checking connection', () => client.end());

  const signInStarted = performance.now();
  const users = await signIn(gatehouse.url, app, config.connections + 1);
  const signInSeconds = (performance.now() - signInStarted) / 1000;
  h.log(`sign-in: ${users.length} users signed in by magic link in ${signInSeconds.toFixed(1)} s`);
  const me = await call(gatehouse.url, 'GET', '/v1/auth/me', {
    'x-application-id': app.id,
    authorization: `Bearer ${users[0]!.accessToken}`,
  });
  if (me.status !== 200 || me.body?.data?.id !== users[0]!.userId) throw new Error(`GET /v1/auth/me: ${JSON.stringify(me.body)}`);

  const meOfGatehouse = () =>
    meScenario(
      app.id,
      users.map((u) => u.accessToken),
    );
  const plans: ExplainedStatement[] = [];
  const gatehouseMe = await runScenario(h, config, 'gatehouse', gatehouse, meOfGatehouse(), client);
  plans.push(await explainLast(client, 'Gatehouse', /\bsessions\b/i, users[0]!.sessionId));
  const gatehouseRefresh = await runScenario(
    h,
    config,
    'gatehouse',
    gatehouse,
    refreshScenario(
      app.id,
      users.map((u) => u.refreshToken),
    ),
    client,
  );
  const gatehouseRun: ServerRun = {
    label: 'Gatehouse',
    description:
      '`node apps/server/src/main.ts` as it is in the code measured (fastify, tRPC + trpc-to-openapi, zod, MikroORM, pg ' +
      'pool of 20): `/me` through `authenticateSignedIn`, refresh through `refreshSession` (sessions.service.ts)',
    measurements: [gatehouseMe, gatehouseRefresh],
    serverWarnings: 0,
  };
  const revoked = await client.query<{ n: string }>(
    'select count(*) as n from sessions where application_id = $1 and revoked_at is not null',
    [app.id],
  );
  const revokedSessions = Number(revoked.rows[0]?.n ?? 0);
  if (revokedSessions > 0) throw new Error(`${revokedSessions} sessions were revoked: a refresh token was presented twice`);
  await gatehouse.stop(60_000);
  gatehouseRun.serverWarnings = gatehouse.warnings();

  // The minimal server: its own key, the same claims, the same users; its refresh table in the same database.
  const { privateKey } = generateKeyPairSync('ed25519');
  const claims = decodeJwt(users[0]!.accessToken);
  const minimalEnv = {
    DATABASE_URL: url.toString(),
    MINIMAL_PRIVATE_KEY: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    MINIMAL_KID: randomUUID(),
    MINIMAL_ISSUER: String(claims.iss),
    MINIMAL_AUDIENCE: app.id,
    MINIMAL_TTL_S: String(ACCESS_TOKEN_TTL_S),
  };
  await client.query(
    `create table minimal_refresh (
       session_id uuid primary key, user_id uuid not null references users (id), aal int not null,
       token_hash varchar(64) not null unique, last_active_at timestamptz not null, expires_at timestamptz not null,
       revoked_at timestamptz null)`,
  );
  const minimalSessions = users.map((u) => ({
    userId: u.userId,
    sessionId: randomUUID(),
    refreshToken: `rt_${randomBytes(32).toString('base64url')}`,
  }));
  await client.query(
    `insert into minimal_refresh (session_id, user_id, aal, token_hash, last_active_at, expires_at)
     select s, u, 1, encode(sha256(convert_to(t, 'UTF8')), 'hex'), now(), now() + interval '90 days'
       from unnest($1::uuid[], $2::uuid[], $3::text[]) as x (s, u, t)`,
    [minimalSessions.map((s) => s.sessionId), minimalSessions.map((s) => s.userId), minimalSessions.map((s) => s.refreshToken)],
  );
  const now = Math.floor(Date.now() / 1000);
  const minimalAccessTokens = await Promise.all(
    minimalSessions.map((s) =>
      new SignJWT({ sid: s.sessionId, aal: 1, org: null, org_role: null })
        .setProtectedHeader({ alg: 'EdDSA', kid: minimalEnv.MINIMAL_KID, typ: 'at+jwt' })
        .setIssuer(minimalEnv.MINIMAL_ISSUER)
        .setAudience(app.id)
        .setSubject(s.userId)
        .setIssuedAt(now)
        .setExpirationTime(now + ACCESS_TOKEN_TTL_S)
        .sign(privateKey),
    ),
  );
  const minimalOptions: StartOptions = { script: 'bench/minimal-server.ts', readyTimeoutMs: 30_000 };
  const minimal = await h.serve('minimal', minimalEnv, minimalOptions);
  const minimalMe = await call(minimal.url, 'GET', '/v1/auth/me', { authorization: `Bearer ${minimalAccessTokens[0]}` });
  if (minimalMe.status !== 200 || minimalMe.body?.id !== users[0]!.userId) {
    throw new Error(`minimal GET /v1/auth/me: ${minimalMe.status} ${JSON.stringify(minimalMe.body)}`);
  }
  const meOfMinimal = () => meScenario(app.id, minimalAccessTokens);
  const minimalMeRun = await runScenario(h, config, 'minimal', minimal, meOfMinimal(), client);
  plans.push(await explainLast(client, 'minimal', /\busers\b/i, users[0]!.userId));
  const minimalRefresh = await runScenario(
    h,
    config,
    'minimal',
    minimal,
    refreshScenario(
      app.id,
      minimalSessions.map((s) => s.refreshToken),
    ),
    client,
  );
  const minimalRun: ServerRun = {
    label: 'minimal',
    description:
      '`node bench/minimal-server.ts` (fastify + jose + pg, pool of 20): `/me` verifies the token with `jwtVerify` and a ' +
      'local key, then reads the user by id (one query); refresh finds the SHA-256 of the token in `minimal_refresh` and ' +
      'rotates it in one UPDATE … RETURNING (autocommit), then signs a new token',
    measurements: [minimalMeRun, minimalRefresh],
    serverWarnings: 0,
  };
  await minimal.stop(30_000);
  minimalRun.serverWarnings = minimal.warnings();

  // The issue's targets, for /v1/auth/me.
  const [gMe, gRefresh] = gatehouseRun.measurements as [Measurement, Measurement];
  const [bMe, bRefresh] = minimalRun.measurements as [Measurement, Measurement];
  const throughput = gMe.requestsPerSecond / bMe.requestsPerSecond;
  const p99 = gMe.p99Ms / bMe.p99Ms;
  const targets: Target[] = [
    {
      name: '`GET /v1/auth/me` throughput',
      gatehouse: `${num(gMe.requestsPerSecond, 1)} req/s`,
      baseline: `${num(bMe.requestsPerSecond, 1)} req/s`,
      ratio: throughput,
      required: `≥ ${ME_THROUGHPUT_TARGET}× the minimal server's`,
      pass: throughput >= ME_THROUGHPUT_TARGET,
    },
    {
      name: '`GET /v1/auth/me` p99 latency',
      gatehouse: `${num(gMe.p99Ms)} ms`,
      baseline: `${num(bMe.p99Ms)} ms`,
      ratio: p99,
      required: `≤ ${ME_P99_TARGET}× the minimal server's`,
      pass: p99 <= ME_P99_TARGET,
    },
  ];

  let profile: SignInRun['profile'];
  const failed = targets.filter((t) => !t.pass);
  if (config.profile === 'always' || (config.profile === 'auto' && failed.length)) {
    if (config.profileDir) await mkdir(resolve(config.profileDir), { recursive: true });
    const reason = failed.length
      ? `${failed.map((t) => t.name).join(' and ')} missed the target`
      : 'requested with BENCH_PROFILE=always';
    h.log(`sign-in: profiling both servers (${reason})`);
    // The same database, secrets and tokens: the sessions are still live and the access tokens still valid.
    const runs = [
      await profiled(h, config, 'Gatehouse', env, {}, meOfGatehouse()),
      await profiled(h, config, 'minimal', minimalEnv, minimalOptions, meOfMinimal()),
    ];
    profile = { reason, seconds: config.profileSeconds, runs };
  }

  h.log('sign-in: verifyToken against a raw Ed25519 verification (bench/verify.ts)');
  const verify = await verifyBenchmark();
  h.log(
    `sign-in: raw ${num(verify.rawOpsPerSecond)} ops/s, verifyToken ${num(verify.sameStringOpsPerSecond)} ops/s (same string), ` +
      `${num(verify.newStringOpsPerSecond)} ops/s (new string): ${verify.ratio.toFixed(0)}×`,
  );
  targets.push({
    name: '`verifyToken`, a token seen before, vs raw Ed25519 `crypto.verify`',
    gatehouse: `${num(Math.min(verify.sameStringOpsPerSecond, verify.newStringOpsPerSecond))} ops/s`,
    baseline: `${num(verify.rawOpsPerSecond)} ops/s`,
    ratio: verify.ratio,
    required: `≥ ${verify.target}×`,
    pass: verify.ratio >= verify.target,
  });

  return {
    version,
    database: `a scratch database on ${url.host}, shared by both servers (Gatehouse's tables, plus \`minimal_refresh\`)`,
    users: users.length,
    signInSeconds,
    revokedSessions,
    servers: [gatehouseRun, minimalRun],
    targets,
    verify,
    profile,
    plans,
    interpretation: interpret(config, cores, gMe, gRefresh, bMe, bRefresh, targets, profile, plans),
  };
}

export const cpuMsPerRequest = (m: Measurement) => (m.serverCores * 1000) / m.requestsPerSecond;

/** What limited a server under load: its one Node thread, the machine's cores, or neither (it waited on PostgreSQL). */
export const saturation = (m: Measurement, cores: number) =>
  m.serverCores >= 0.9
    ? `its process used ${num(m.serverCores * 100)} % of a core, so the single Node process was the limit`
    : m.machineCores >= 0.9 * cores
      ? `the machine was ${num(m.machineCores * 100)} % busy: the cores, shared with PostgreSQL and autocannon, were the limit`
      : `its process used ${num(m.serverCores * 100)} % of a core and the machine ${num(m.machineCores * 100)} % of ` +
        `${cores * 100} %: neither was saturated, so requests also waited on PostgreSQL (round trips, the pool of 20)`;

/** Packages whose code the minimal server runs as well (the rest is what Gatehouse adds). */
function sharedPackages(profile: NonNullable<SignInRun['profile']>): Set<string> {
  const minimal = profile.runs.find((r) => r.label === 'minimal');
  return new Set((minimal?.summary.packages ?? []).filter((p) => p.share >= 0.005).map((p) => p.name));
}

function interpret(
  config: SignInConfig,
  cores: number,
  gMe: Measurement,
  gRefresh: Measurement,
  bMe: Measurement,
  bRefresh: Measurement,
  targets: Target[],
  profile: SignInRun['profile'],
  plans: ExplainedStatement[],
): string[] {
  const lines: string[] = [];
  const [throughput, p99] = targets as [Target, Target];
  const limit = (m: Measurement) => saturation(m, cores);
  const databaseMs = (m: Measurement) => (m.databaseCores * 1000) / m.requestsPerSecond;
  lines.push(
    `\`/v1/auth/me\`: Gatehouse served ${num(gMe.requestsPerSecond)} req/s, ${ratioText(throughput.ratio)} the minimal ` +
      `server's ${num(bMe.requestsPerSecond)} (target ≥ ${ME_THROUGHPUT_TARGET}×: **${throughput.pass ? 'PASS' : 'FAIL'}**), ` +
      `with a p99 of ${num(gMe.p99Ms)} ms against ${num(bMe.p99Ms)} ms, ${ratioText(p99.ratio)} (target ≤ ${ME_P99_TARGET}×: ` +
      `**${p99.pass ? 'PASS' : 'FAIL'}**). Each request cost the Gatehouse process ${num(cpuMsPerRequest(gMe), 2)} ms of CPU ` +
      `against ${num(cpuMsPerRequest(bMe), 2)} ms for the minimal server (${ratioText(cpuMsPerRequest(gMe) / cpuMsPerRequest(bMe))}). ` +
      `Gatehouse: ${limit(gMe)}; minimal: ${limit(bMe)}.` +
      (Number.isNaN(gMe.databaseCores)
        ? ''
        : ` PostgreSQL spent ${num(databaseMs(gMe), 2)} ms of CPU per Gatehouse \`/me\` against ${num(databaseMs(bMe), 2)} ms ` +
          `for the minimal server\u2019s, on the same ${cores} cores (in the code measured, \`authenticateSignedIn\` reads ` +
          'session, user and application in one joined query; the minimal server reads one user row by primary key).') +
      (plans.length === 2 && plans.every((p) => !Number.isNaN(p.planningMs))
        ? ` Explained after the load, the statements planned in ${plans.map((p) => `${num(p.planningMs, 3)} ms`).join(' and ')} ` +
          `and ran in ${plans.map((p) => `${num(p.executionMs, 3)} ms`).join(' and ')} ` +
          `(${plans.map((p) => p.label).join(', ')}; the plans are below the results table).`
        : ''),
  );
  lines.push(
    `Refresh: Gatehouse ${num(gRefresh.requestsPerSecond)} req/s (p99 ${num(gRefresh.p99Ms)} ms, ` +
      `${num(cpuMsPerRequest(gRefresh), 2)} ms CPU/request) against ${num(bRefresh.requestsPerSecond)} req/s for the minimal ` +
      `server (p99 ${num(bRefresh.p99Ms)} ms, ${num(cpuMsPerRequest(bRefresh), 2)} ms CPU/request): ` +
      `${ratioText(gRefresh.requestsPerSecond / bRefresh.requestsPerSecond)} the throughput (issue 14 target: ≥ 0.5×). Both rotate in one ` +
      'autocommitted statement; Gatehouse\u2019s also records the issued hash for reuse detection and reads the organization ' +
      'role, and its request first resolves the application of `x-application-id`.',
  );
  if (profile) {
    const g = profile.runs.find((r) => r.label === 'Gatehouse');
    const b = profile.runs.find((r) => r.label === 'minimal');
    if (g && b) {
      const shared = sharedPackages(profile);
      const perRequest = (run: ProfiledRun, ms: number) => ms / Math.max(1, run.requests);
      const added = g.summary.packages.filter((p) => !shared.has(p.name) && !p.name.startsWith('V8'));
      const addedMs = added.reduce((sum, p) => sum + p.ms, 0);
      const gcMs = (run: ProfiledRun) => run.summary.packages.find((p) => p.name === 'V8: garbage collection')?.ms ?? 0;
      lines.push(
        `Under the profiler, Gatehouse's main thread was busy ${num(perRequest(g, g.summary.busyMs), 2)} ms per \`/me\` ` +
          `request, the minimal server's ${num(perRequest(b, b.summary.busyMs), 2)} ms. Packages the minimal server does not ` +
          `run took ${num((addedMs / Math.max(1, g.summary.busyMs)) * 100)} % of Gatehouse's (${num(perRequest(g, addedMs), 2)} ms ` +
          `per request): ${added
            .slice(0, 6)
            .map((p) => `${p.name} ${num(perRequest(g, p.ms), 3)} ms`)
            .join(', ')}. Garbage collection: ${num(perRequest(g, gcMs(g)), 3)} ms per request against ` +
          `${num(perRequest(b, gcMs(b)), 3)} ms. The tables below have the detail.`,
      );
    }
  }
  lines.push(
    `Both servers share the machine's ${cores} CPUs with PostgreSQL and autocannon (${config.connections} connections); the ` +
      'minimal server shows what this machine does for the same work, so the ratios, not the absolute figures, are the result.',
  );
  return lines;
}

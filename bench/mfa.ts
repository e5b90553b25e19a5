/**
 * The mfa suite (`npm run bench -- mfa`), on PostgreSQL: the cost of a second factor per request, against the raw cost
 * of its cryptography in the same run.
 *
 * - `POST /v1/auth/passkeys/mfa/finish`: every request finishes a fresh pending sign-in (`mfa_required`) with a fresh
 *   `mfa/start` state and an assertion signed by the tests' software authenticator (real P-256 signatures).
 * - `POST /v1/auth/mfa/totp/verify`: every request a fresh pending sign-in of another user, with the code of that
 *   user's seed for the current time step.
 * - bench/mfa-crypto.ts: the ECDSA P-256 check and the TOTP check alone (raw node:crypto / otpauth, and as the
 *   libraries and the service call them).
 * - Where the time goes: the server started again behind a PostgreSQL protocol tracer (bench/pg-trace.ts) for a few
 *   requests sent one at a time (round trips, statements, time waited on the database), and `pg_stat_activity`
 *   sampled under load (what the backends wait for).
 *
 * Preparation (not timed). Everything a request consumes is made before the load: the users, their factors and the
 * first template of every row go through the API (magic-link sign-ins, passkey registration, TOTP enrollment and a
 * complete second-factor sign-in each), so the rows are the server's own; the bulk (one pending token per request,
 * one WebAuthn ceremony per passkey request, one user with a TOTP factor per TOTP request) is then inserted with SQL,
 * copying what the server wrote. The API's own routes cannot make them fast enough: a pending token needs a
 * magic-link sign-in (a message, ~30 ms), and `mfa/start` allows 100 ceremonies per client address per 5 minutes.
 */
import { randomBytes } from 'node:crypto';
import type { PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/server';
import { Secret, TOTP } from 'otpauth';
import { Client } from 'pg';
import { v7 } from 'uuid';
import { SoftwareAuthenticator } from '../apps/server/test/helpers/authenticator.ts';
// The project's own sealing (a file with no imports but node:crypto): TOTP seeds are stored sealed with the master key.
import { SecretBox } from '../packages/api/src/lib/crypto.ts';
import { num } from './format.ts';
import type { ConnectionState, Measurement, Scenario } from './load.ts';
import type { MfaCryptoResult } from './mfa-crypto.ts';
import { type PgTrace, type RoundTrip, startPgTrace } from './pg-trace.ts';
import {
  type ActivitySample,
  type BenchApplication,
  createApplication,
  runJsonScript,
  sampleActivity,
  scratchDatabase,
} from './server.ts';
import {
  call,
  cpuMsPerRequest,
  type Harness,
  magicLinkSignIns,
  type ProfileConfig,
  type ProfiledRun,
  profiled,
  runScenario,
  type SignedIn,
  saturation,
  signIn,
} from './sign-in.ts';

export interface MfaConfig extends ProfileConfig {
  adminUrl: string;
  /** The most requests per second the preparation provides for (it fails loudly when a load uses them up). */
  maxRate: number;
  /** Profile both scenarios (`node --cpu-prof`, a run of `profileSeconds` each) after the loads. */
  profile: boolean;
}

/** What the backends waited for under load: one row per kind of wait and statement. */
export interface WaitRow {
  what: string;
  statement: string;
  /** Mean number of backends in this state over the samples of the window. */
  backends: number;
}

/** What the backends were doing, summed over statements (a state, or what they waited for). */
export interface WaitKind {
  what: string;
  backends: number;
}

export interface MfaScenarioRun {
  measurement: Measurement;
  /** Users behind the requests, and how the requests were spread over them. */
  users: number;
  usersText: string;
  /** Items (pending sign-ins with what finishes them) prepared, and used by the load and the one client. */
  prepared: number;
  used: number;
  prepareSeconds: number;
  /** Sessions at aal 2 the scenario created (each 200 must have made one). */
  sessions: number;
  waits: { samples: number; busyBackends: number; kinds: WaitKind[]; rows: WaitRow[] };
}

export interface Trace {
  scenario: string;
  requests: number;
  /** Medians over the traced requests. */
  latencyMs: number;
  databaseMs: number;
  roundTrips: number;
  rateLimitRoundTrips: number;
  /** Time waited on the rate limiter's round trips. */
  rateLimitMs: number;
  transactions: number;
  /** Commits: the transactions' COMMITs and the writes sent outside a transaction (each waits for its WAL flush). */
  commits: number;
  commitMs: number;
  /** Round trips the server made after it had answered (none expected). */
  afterResponse: number;
  /** The round trips of one request, in order: `[rate limiter] ` before those of the rate limiter's pool. */
  statements: string[];
}

export interface MfaRun {
  version: string;
  database: string;
  /** `synchronous_commit = on, fsync = on`: whether a commit waits for its WAL flush. */
  durability: string;
  origin: string;
  setupSeconds: number;
  passkey: MfaScenarioRun;
  totp: MfaScenarioRun;
  traces: Trace[];
  /** Requests sent to the traced server before the counted ones. */
  traceWarmup: number;
  crypto: MfaCryptoResult;
  /** CPU profiles under load (passkey finish, then TOTP verify), unless BENCH_PROFILE=never. */
  profile?: { seconds: number; runs: ProfiledRun[] };
  serverWarnings: number;
  interpretation: string[];
}

const ORIGIN = 'https://app.bench.test';
const RP_ID = new URL(ORIGIN).hostname;
/** A development application (the message log keeps the links); sign-in links for many addresses from one client. */
const APPLICATION_SETTINGS = { rate_limits: { magic_link_per_address: 100_000, magic_link_per_email: 10, window_s: 900 } };
/** As mfa.service.ts makes them. */
const TOTP_OPTIONS = { algorithm: 'SHA1', digits: 6, period: 30 } as const;
/** The traced server is new: its first requests warm it up (JIT, the ORM's caches) and are not counted. */
const TRACE_WARMUP_REQUESTS = 100;
const TRACED_REQUESTS = 10;
/** The one client after the load sends one uncounted request, then 10 (see `unloaded` in load.ts). */
const ONE_CLIENT_REQUESTS = 11;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor((sorted.length - 1) / 2)]! : Number.NaN;
};
/** A one-time secret as long as the server's (`randomSecret`: a prefix and 43 characters). */
const secret = (prefix: string) => `${prefix}${randomBytes(32).toString('base64url')}`;
const bearer = (app: BenchApplication, token?: string) => ({
  'x-application-id': app.id,
  ...(token ? { authorization: `Bearer ${token}` } : {}),
});

function expectStatus(answer: { status: number; body: any }, status: number, what: string): any {
  if (answer.status !== status) throw new Error(`${what} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer.body?.data;
}

/** What a scenario has consumed of what was prepared for it (the load, then the profiled run, go on from there). */
interface Pool {
  used: number;
  /** A request found nothing left: the run fails, and says so. */
  exhausted: boolean;
}
const newPool = (): Pool => ({ used: 0, exhausted: false });

/** Runs a load of `scenario`; when it failed because the prepared requests ran out, says so. */
async function unlessExhausted<T>(scenario: Scenario, pool: Pool, maxRate: number, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (!pool.exhausted) throw error;
    throw new Error(
      `${scenario.name}: the prepared requests ran out after ${num(pool.used)} (the server was faster than ` +
        `BENCH_MFA_MAX_RATE=${maxRate} req/s); run again with a higher BENCH_MFA_MAX_RATE`,
    );
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Passkeys

interface PasskeyUser extends SignedIn {
  authenticator: SoftwareAuthenticator;
  credentialId: string;
  /** Request bodies prepared for this user, in the order of their counters. */
  bodies: string[];
  used: number;
}

/** Users who sign in by magic link and register a passkey through the API (`register/start`, create(), `finish`). */
async function passkeyUsers(url: string, app: BenchApplication, count: number): Promise<PasskeyUser[]> {
  const users: PasskeyUser[] = [];
  for (const signedIn of await signIn(url, app, count, 'passkey')) {
    const headers = bearer(app, signedIn.accessToken);
    const start = expectStatus(
      await call(url, 'POST', '/v1/auth/passkeys/register/start', headers),
      200,
      'POST /v1/auth/passkeys/register/start',
    ) as { options: PublicKeyCredentialCreationOptionsJSON; state: string };
    const authenticator = new SoftwareAuthenticator({ counterStep: 1 });
    const credential = await authenticator.create(start.options, ORIGIN);
    expectStatus(
      await call(url, 'POST', '/v1/auth/passkeys/register/finish', headers, { credential, state: start.state }),
      201,
      'POST /v1/auth/passkeys/register/finish',
    );
    users.push({ ...signedIn, authenticator, credentialId: credential.id, bodies: [], used: 0 });
  }
  return users;
}

/** The shape of a pending second-factor sign-in as the server wrote it (to copy). */
interface PendingShape {
  aal: number;
  firstFactor: string;
}

/** Pending second-factor sign-ins of the given shape, stored as the service stores them (the token SHA-256 hashed). */
async function insertPendingTokens(
  client: Client,
  applicationId: string,
  shape: PendingShape,
  rows: Array<{ id: string; userId: string; token: string }>,
) {
  await client.query(
    `insert into pending_tokens (id, application_id, user_id, token_hash, stage, aal, first_factor, failed_attempts,
                                   expires_at, consumed_at, created_at)
       select x.id, $1, x.user_id, encode(sha256(convert_to(x.token, 'UTF8')), 'hex'), 'mfa', $2, $3, 0,
              now() + interval '10 minutes', null, now()
         from unnest($4::uuid[], $5::uuid[], $6::text[]) as x (id, user_id, token)`,
    [applicationId, shape.aal, shape.firstFactor, rows.map((r) => r.id), rows.map((r) => r.userId), rows.map((r) => r.token)],
  );
}

async function pendingShape(client: Client, userId: string): Promise<PendingShape> {
  const { rows } = await client.query<{ aal: number; first_factor: string }>(
    "select aal, first_factor from pending_tokens where user_id = $1 and stage = 'mfa' order by created_at desc limit 1",
    [userId],
  );
  if (!rows[0]) throw new Error('no pending sign-in was stored for the second factor');
  return { aal: rows[0].aal, firstFactor: rows[0].first_factor };
}

/**
 * The whole second-factor sign-in through the API, for one user: magic link → `mfa_required` (passkey) → `mfa/start`
 * → get() → `mfa/finish` → `complete` at aal 2. Proves the path works and shows what the server stores.
 */
async function passkeySignInThroughApi(url: string, app: BenchApplication, user: PasskeyUser, client: Client) {
  const [first] = await magicLinkSignIns(url, app, [user.email]);
  if (first?.status !== 'mfa_required' || !first.mfa.methods.includes('passkey')) {
    throw new Error(`a sign-in of a user with a passkey answered ${JSON.stringify(first)}`);
  }
  const started = expectStatus(
    await call(url, 'POST', '/v1/auth/passkeys/mfa/start', bearer(app), { pending_token: first.pending_token }),
    200,
    'POST /v1/auth/passkeys/mfa/start',
  );
  const { rows } = await client.query<{ n: string }>(
    "select count(*) as n from webauthn_challenges where user_id = $1 and ceremony = 'mfa' and pending_token_id is not null",
    [user.userId],
  );
  if (Number(rows[0]?.n) !== 1) throw new Error('mfa/start did not store the ceremony the benchmark copies');
  const credential = await user.authenticator.get(started.options, ORIGIN);
  const finished = expectStatus(
    await call(url, 'POST', '/v1/auth/passkeys/mfa/finish', bearer(app), { credential, state: started.state }),
    200,
    'POST /v1/auth/passkeys/mfa/finish',
  );
  if (finished.status !== 'complete' || finished.tokens.aal !== 2) throw new Error(`mfa/finish: ${JSON.stringify(finished)}`);
  return pendingShape(client, user.userId);
}

/**
 * `perUser` pending sign-ins per user, each with its ceremony (as `mfa/start` stores them: the state's SHA-256, a
 * 32-byte challenge, bound to the user and the pending token, 5 minutes), and the signed assertion that finishes it:
 * the user's next request bodies, in counter order.
 */
async function preparePasskeyMfa(
  client: Client,
  app: BenchApplication,
  users: PasskeyUser[],
  perUser: number,
  shape: PendingShape,
): Promise<number> {
  const rows = users.flatMap((user) =>
    Array.from({ length: perUser }, () => ({
      user,
      pendingId: v7(),
      pendingToken: secret('pt_'),
      ceremonyId: v7(),
      state: secret('wst_'),
      challenge: randomBytes(32).toString('base64url'),
    })),
  );
  for (let from = 0; from < rows.length; from += 10_000) {
    const chunk = rows.slice(from, from + 10_000);
    await insertPendingTokens(
      client,
      app.id,
      shape,
      chunk.map((r) => ({ id: r.pendingId, userId: r.user.userId, token: r.pendingToken })),
    );
    await client.query(
      `insert into webauthn_challenges (id, application_id, ceremony, state_hash, challenge, user_id, session_id,
                                        pending_token_id, expires_at, consumed_at, created_at)
       select x.id, $1, 'mfa', encode(sha256(convert_to(x.state, 'UTF8')), 'hex'), x.challenge, x.user_id, null,
              x.pending_id, now() + interval '5 minutes', null, now()
         from unnest($2::uuid[], $3::text[], $4::text[], $5::uuid[], $6::uuid[]) as x (id, state, challenge, user_id, pending_id)`,
      [
        app.id,
        chunk.map((r) => r.ceremonyId),
        chunk.map((r) => r.state),
        chunk.map((r) => r.challenge),
        chunk.map((r) => r.user.userId),
        chunk.map((r) => r.pendingId),
      ],
    );
  }
  await client.query('analyze pending_tokens, webauthn_challenges');
  // The authenticator signs in order: each assertion's counter is one above the previous one of the same passkey.
  for (const r of rows) {
    const credential = await r.user.authenticator.get(
      {
        challenge: r.challenge,
        rpId: RP_ID,
        allowCredentials: [{ id: r.user.credentialId, type: 'public-key' }],
        userVerification: 'required',
      },
      ORIGIN,
    );
    r.user.bodies.push(JSON.stringify({ credential, state: r.state }));
  }
  return rows.length;
}

/**
 * `POST /v1/auth/passkeys/mfa/finish`: connection i signs user i in, with that user's prepared bodies in counter
 * order (one request in flight per connection, so the counters reach the server in order, as from one device).
 */
function passkeyScenario(app: BenchApplication, users: PasskeyUser[], pool: Pool): Scenario {
  let next = 0;
  return {
    name: 'POST /v1/auth/passkeys/mfa/finish',
    method: 'POST',
    path: '/v1/auth/passkeys/mfa/finish',
    headers: { 'x-application-id': app.id },
    expect: 200,
    connection: {
      request: (state: ConnectionState) => {
        state.user ??= users[next++];
        const user = state.user as PasskeyUser | undefined;
        const body = user?.bodies[user.used++];
        if (body === undefined) {
          pool.exhausted = true;
          return { body: '{}' }; // answered 400: the run fails, and says why
        }
        pool.used++;
        return { body };
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// TOTP

interface TotpUser {
  email: string;
  pendingToken: string;
  totp: TOTP;
}

interface TotpTemplate {
  userId: string;
  factorId: string;
  shape: PendingShape;
}

const code = (totp: TOTP, offsetSteps = 0) => totp.generate({ timestamp: Date.now() + offsetSteps * TOTP_OPTIONS.period * 1000 });

/**
 * One user with a TOTP factor made through the API (magic link, `totp/enroll`, `totp/confirm`), then signed in again
 * with it (magic link → `mfa_required` (totp) → `totp/verify` → `complete` at aal 2), to copy.
 */
async function totpTemplate(url: string, app: BenchApplication, client: Client): Promise<TotpTemplate> {
  const [user] = await signIn(url, app, 1, 'totp-template');
  const headers = bearer(app, user!.accessToken);
  const enrolled = expectStatus(
    await call(url, 'POST', '/v1/auth/mfa/totp/enroll', headers),
    201,
    'POST /v1/auth/mfa/totp/enroll',
  );
  const totp = new TOTP({ ...TOTP_OPTIONS, secret: Secret.fromBase32(enrolled.secret) });
  expectStatus(
    await call(url, 'POST', '/v1/auth/mfa/totp/confirm', headers, { factor_id: enrolled.factor_id, code: code(totp) }),
    200,
    'POST /v1/auth/mfa/totp/confirm',
  );
  // The confirmation spent this time step: the sign-in uses the next one's code (accepted: ±1 step).
  await totpSignInThroughApi(url, app, user!.email, totp, 1);
  return { userId: user!.userId, factorId: enrolled.factor_id, shape: await pendingShape(client, user!.userId) };
}

async function totpSignInThroughApi(url: string, app: BenchApplication, email: string, totp: TOTP, offsetSteps = 0) {
  const [first] = await magicLinkSignIns(url, app, [email]);
  if (first?.status !== 'mfa_required' || first.mfa.methods.join() !== 'totp') {
    throw new Error(`a sign-in of a user with TOTP answered ${JSON.stringify(first)}`);
  }
  const verified = expectStatus(
    await call(url, 'POST', '/v1/auth/mfa/totp/verify', bearer(app), {
      pending_token: first.pending_token,
      code: code(totp, offsetSteps),
    }),
    200,
    'POST /v1/auth/mfa/totp/verify',
  );
  if (verified.status !== 'complete' || verified.tokens.aal !== 2) throw new Error(`totp/verify: ${JSON.stringify(verified)}`);
}

/**
 * `count` users like the template, each with a confirmed TOTP factor of its own seed (sealed with the master key for
 * its factor id, as `enrollTotp` does) and one pending second-factor sign-in.
 */
async function prepareTotpUsers(
  client: Client,
  app: BenchApplication,
  template: TotpTemplate,
  box: SecretBox,
  count: number,
): Promise<TotpUser[]> {
  const tag = randomBytes(4).toString('hex');
  const rows = Array.from({ length: count }, (_, i) => {
    const seed = new Secret({ size: 20 });
    const factorId = v7();
    return {
      userId: v7(),
      email: `totp-${tag}-${i}@bench.example.com`,
      factorId,
      sealed: box.encrypt(seed.base32, `totp:${factorId}`),
      pendingId: v7(),
      pendingToken: secret('pt_'),
      totp: new TOTP({ ...TOTP_OPTIONS, secret: seed }),
    };
  });
  for (let from = 0; from < rows.length; from += 10_000) {
    const chunk = rows.slice(from, from + 10_000);
    await client.query(
      `insert into users (id, application_id, primary_email, email_normalized, email_verified, status, profile, merged_into,
                          created_at, updated_at)
       select x.id, t.application_id, x.email, x.email, t.email_verified, t.status, t.profile, null, now(), now()
         from unnest($2::uuid[], $3::text[]) as x (id, email), users t where t.id = $1`,
      [template.userId, chunk.map((r) => r.userId), chunk.map((r) => r.email)],
    );
    await client.query(
      `insert into mfa_factors (id, application_id, user_id, kind, name, secret_sealed, last_used_step, confirmed_at,
                                created_at, last_used_at)
       select x.id, t.application_id, x.user_id, t.kind, t.name, x.sealed, null, now(), now(), null
         from unnest($2::uuid[], $3::uuid[], $4::text[]) as x (id, user_id, sealed), mfa_factors t where t.id = $1`,
      [template.factorId, chunk.map((r) => r.factorId), chunk.map((r) => r.userId), chunk.map((r) => r.sealed)],
    );
    await insertPendingTokens(
      client,
      app.id,
      template.shape,
      chunk.map((r) => ({ id: r.pendingId, userId: r.userId, token: r.pendingToken })),
    );
  }
  await client.query('analyze users, mfa_factors, pending_tokens');
  return rows.map((r) => ({ email: r.email, pendingToken: r.pendingToken, totp: r.totp }));
}

/** `POST /v1/auth/mfa/totp/verify`: each request the next user's pending sign-in, with the current step's code. */
function totpScenario(app: BenchApplication, users: TotpUser[], pool: Pool): Scenario {
  return {
    name: 'POST /v1/auth/mfa/totp/verify',
    method: 'POST',
    path: '/v1/auth/mfa/totp/verify',
    headers: { 'x-application-id': app.id },
    expect: 200,
    body: () => {
      const user = users[pool.used];
      if (!user) {
        pool.exhausted = true;
        return '{}';
      }
      pool.used++;
      return JSON.stringify({ pending_token: user.pendingToken, code: code(user.totp) });
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Where the time goes

const isRateLimiter = (trip: RoundTrip) => trip.statements.some((s) => /\brate_limits\b/i.test(s));
const isTransaction = (trip: RoundTrip) => trip.statements.some((s) => /^(begin|start transaction)\b/i.test(s));

/**
 * The round trips that commit: a COMMIT, or a write (INSERT, UPDATE, DELETE) sent outside a transaction, which
 * PostgreSQL commits on its own. Each waits for its WAL flush when `synchronous_commit` is on.
 */
function commitTrips(trips: RoundTrip[]): Set<RoundTrip> {
  const inTransaction = new Map<number, boolean>();
  const commits = new Set<RoundTrip>();
  for (const trip of [...trips].sort((a, b) => a.sent - b.sent)) {
    for (const statement of trip.statements) {
      if (/^(begin|start transaction)\b/i.test(statement)) inTransaction.set(trip.connection, true);
      else if (/^(commit|end)\b/i.test(statement)) {
        inTransaction.set(trip.connection, false);
        commits.add(trip);
      } else if (/^(rollback|abort)\b/i.test(statement)) inTransaction.set(trip.connection, false);
      else if (/^(insert|update|delete)\b/i.test(statement) && !inTransaction.get(trip.connection)) commits.add(trip);
    }
  }
  return commits;
}

/** Time covered by the round trips (overlapping ones counted once). */
function waitedMs(trips: RoundTrip[]): number {
  let total = 0;
  let until = Number.NEGATIVE_INFINITY;
  for (const trip of [...trips].sort((a, b) => a.sent - b.sent)) {
    const from = Math.max(trip.sent, until);
    if (trip.answered > from) total += trip.answered - from;
    until = Math.max(until, trip.answered);
  }
  return total;
}

const shorten = (statement: string) => (statement.length > 240 ? `${statement.slice(0, 239)}…` : statement);

/** Requests sent one at a time to the server behind the tracer: `TRACE_WARMUP_REQUESTS` uncounted, then `TRACED_REQUESTS`. */
async function traceScenario(url: string, scenario: Scenario, trace: PgTrace): Promise<Trace> {
  const state: ConnectionState = {};
  const traced: Array<{ latencyMs: number; during: RoundTrip[]; after: RoundTrip[] }> = [];
  for (let i = -TRACE_WARMUP_REQUESTS; i < TRACED_REQUESTS; i++) {
    const body = scenario.connection?.request(state).body ?? scenario.body?.();
    trace.reset();
    const started = performance.now();
    const response = await fetch(`${url}${scenario.path}`, {
      method: scenario.method,
      headers: { ...scenario.headers, 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    const answered = performance.now();
    if (response.status !== scenario.expect) throw new Error(`${scenario.name} (traced) answered ${response.status}: ${text}`);
    if (i >= 0) {
      await sleep(5); // anything the server still does right after answering shows up now
      const trips = trace.trips();
      traced.push({
        latencyMs: answered - started,
        during: trips.filter((t) => t.sent < answered),
        after: trips.filter((t) => t.sent >= answered),
      });
    }
  }
  const typical = traced.find((t) => t.during.length === median(traced.map((x) => x.during.length))) ?? traced[0]!;
  const typicalCommits = commitTrips(typical.during);
  const label = (trip: RoundTrip) =>
    `${isRateLimiter(trip) ? '[rate limiter] ' : ''}${typicalCommits.has(trip) ? '[commit] ' : ''}` +
    `${trip.statements.map(shorten).join(' ; ') || '(sync)'} — ${num(trip.answered - trip.sent, 2)} ms`;
  return {
    scenario: scenario.name,
    requests: traced.length,
    latencyMs: median(traced.map((t) => t.latencyMs)),
    databaseMs: median(traced.map((t) => waitedMs(t.during))),
    roundTrips: median(traced.map((t) => t.during.length)),
    rateLimitRoundTrips: median(traced.map((t) => t.during.filter(isRateLimiter).length)),
    rateLimitMs: median(traced.map((t) => waitedMs(t.during.filter(isRateLimiter)))),
    transactions: median(traced.map((t) => t.during.filter(isTransaction).length)),
    commits: median(traced.map((t) => commitTrips(t.during).size)),
    commitMs: median(traced.map((t) => waitedMs([...commitTrips(t.during)]))),
    afterResponse: Math.max(...traced.map((t) => t.after.length)),
    statements: typical.during.map(label),
  };
}

/** The samples of a measured window, summed by what the backends were doing: wait kind and statement. */
function summarizeWaits(samples: ActivitySample[], m: Measurement): MfaScenarioRun['waits'] {
  const inWindow = samples.filter((s) => s.at >= m.windowStart && s.at <= m.windowEnd);
  const counts = new Map<string, WaitRow>();
  let busy = 0;
  for (const sample of inWindow) {
    for (const backend of sample.backends) {
      busy++;
      const what =
        backend.state === 'idle in transaction'
          ? 'idle in transaction: waiting for the server process'
          : backend.wait
            ? `waiting: ${backend.wait}`
            : `${backend.state}: running`;
      // The ORM inlines values: statements that differ only in them are one statement here.
      const statement = backend.query
        .replace(/'(?:[^']|'')*'/g, "'…'")
        .replace(/(?<!\$)\b\d+\b/g, 'N')
        .replace(/\s+/g, ' ')
        .trim()
        .slice(0, 140);
      const key = `${what}\0${statement}`;
      const row = counts.get(key) ?? { what, statement, backends: 0 };
      row.backends++;
      counts.set(key, row);
    }
  }
  const n = Math.max(1, inWindow.length);
  const kinds = new Map<string, number>();
  for (const row of counts.values()) kinds.set(row.what, (kinds.get(row.what) ?? 0) + row.backends);
  return {
    samples: inWindow.length,
    busyBackends: busy / n,
    kinds: [...kinds].map(([what, count]) => ({ what, backends: count / n })).sort((a, b) => b.backends - a.backends),
    rows: [...counts.values()]
      .map((row) => ({ ...row, backends: row.backends / n }))
      .sort((a, b) => b.backends - a.backends)
      .slice(0, 15),
  };
}

// ---------------------------------------------------------------------------------------------------------------

async function sessionsAtAal2(client: Client, applicationId: string): Promise<number> {
  const { rows } = await client.query<{ n: string }>('select count(*) as n from sessions where application_id = $1 and aal = 2', [
    applicationId,
  ]);
  return Number(rows[0]?.n ?? 0);
}

export async function benchMfa(config: MfaConfig, h: Harness, cores: number): Promise<MfaRun> {
  const scratch = await scratchDatabase(config.adminUrl, h.onCleanup);
  const { url } = scratch;
  const version = `PostgreSQL ${scratch.version}`;
  h.log(`mfa: scratch database ${scratch.name} on ${version}`);
  const env = { DATABASE_URL: url.toString(), GATEHOUSE_DATA_DIR: await h.tempDir('mfa'), ...h.secrets() };
  const box = new SecretBox(Buffer.from(env.GATEHOUSE_MASTER_KEY, 'base64'));
  const gatehouse = await h.serve('gatehouse', env);
  const app = await createApplication(gatehouse.url, env.GATEHOUSE_OPERATOR_TOKEN, APPLICATION_SETTINGS, {
    allowed_origins: [ORIGIN],
  });
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  h.onCleanup('close the checking connection', () => client.end());
  const sampler = new Client({ connectionString: url.toString() });
  await sampler.connect();
  h.onCleanup('close the sampling connection', () => sampler.end());

  // Enough for `maxRate` requests per second through the warm-up, the window and the drain, the same again for the
  // profiled run, plus the one client.
  const loadSeconds =
    config.warmupSeconds + config.durationSeconds + 10 + (config.profile ? config.warmupSeconds + config.profileSeconds + 10 : 0);
  const perConnection = Math.ceil((config.maxRate * loadSeconds) / config.connections) + ONE_CLIENT_REQUESTS;
  const totpCount = Math.ceil(config.maxRate * loadSeconds) + ONE_CLIENT_REQUESTS;
  const setupStarted = performance.now();

  // Passkeys: one user per connection, one for the single client, one for the trace.
  const users = await passkeyUsers(gatehouse.url, app, config.connections + 2);
  const traceUser = users.at(-1)!;
  const passkeyShape = await passkeySignInThroughApi(gatehouse.url, app, traceUser, client);
  const totp = await totpTemplate(gatehouse.url, app, client);
  const setupSeconds = (performance.now() - setupStarted) / 1000;
  h.log(
    `mfa: ${users.length} users with a passkey and one with TOTP through the API, each signed in with its second factor, ` +
      `in ${setupSeconds.toFixed(1)} s`,
  );

  /** One load, with `pg_stat_activity` sampled beside it, and the check that every 200 made a session at aal 2. */
  const run = async (
    scenario: Scenario,
    pool: Pool,
    prepared: number,
    about: Pick<MfaScenarioRun, 'users' | 'usersText' | 'prepareSeconds'>,
  ): Promise<MfaScenarioRun> => {
    const before = await sessionsAtAal2(client, app.id);
    const activity = sampleActivity(sampler);
    const measurement = await unlessExhausted(scenario, pool, config.maxRate, () =>
      runScenario(h, config, 'gatehouse', gatehouse, scenario, client),
    ).catch(async (error: unknown) => {
      await activity.stop();
      throw error;
    });
    const samples = await activity.stop();
    const sessions = (await sessionsAtAal2(client, app.id)) - before;
    if (sessions < measurement.expected || sessions > pool.used) {
      throw new Error(
        `${scenario.name}: ${sessions} sessions at aal 2 for ${measurement.expected} 200s in the window, ${pool.used} requests`,
      );
    }
    return { ...about, measurement, prepared, used: pool.used, sessions, waits: summarizeWaits(samples, measurement) };
  };

  // The passkey load.
  let started = performance.now();
  const loadUsers = users.slice(0, -1);
  const passkeyPrepared = await preparePasskeyMfa(client, app, loadUsers, perConnection, passkeyShape);
  const passkeyPrepareSeconds = (performance.now() - started) / 1000;
  h.log(
    `mfa: ${num(passkeyPrepared)} pending sign-ins, ceremonies and signed assertions prepared in ${passkeyPrepareSeconds.toFixed(1)} s`,
  );
  const passkeyPool = newPool();
  const passkey = await run(passkeyScenario(app, loadUsers, passkeyPool), passkeyPool, passkeyPrepared, {
    users: loadUsers.length,
    usersText: `${loadUsers.length} users with one passkey each; connection i signs user i in (the last user is the one client)`,
    prepareSeconds: passkeyPrepareSeconds,
  });

  // The TOTP load. One extra user is signed in through the API first: the copies are real users to the server.
  started = performance.now();
  const totpUsers = await prepareTotpUsers(client, app, totp, box, totpCount + 1);
  const check = totpUsers.pop()!;
  await totpSignInThroughApi(gatehouse.url, app, check.email, check.totp);
  const totpPrepareSeconds = (performance.now() - started) / 1000;
  h.log(
    `mfa: ${num(totpUsers.length)} users with TOTP and a pending sign-in each prepared in ${totpPrepareSeconds.toFixed(1)} s`,
  );
  const totpPool = newPool();
  const totpRun = await run(totpScenario(app, totpUsers, totpPool), totpPool, totpUsers.length, {
    users: totpUsers.length,
    usersText: `${num(totpUsers.length)} users with a TOTP factor each; every request is another user's (a time step is accepted once per user)`,
    prepareSeconds: totpPrepareSeconds,
  });
  await gatehouse.stop(60_000);
  let serverWarnings = gatehouse.warnings();

  // CPU profiles under the same load, on what is left of the prepared requests (each user's next counters).
  let profile: MfaRun['profile'];
  if (config.profile) {
    const runs: ProfiledRun[] = [];
    for (const [label, scenario, pool] of [
      ['passkey finish', passkeyScenario(app, loadUsers, passkeyPool), passkeyPool],
      ['TOTP verify', totpScenario(app, totpUsers, totpPool), totpPool],
    ] as const) {
      runs.push(await unlessExhausted(scenario, pool, config.maxRate, () => profiled(h, config, label, env, {}, scenario)));
    }
    profile = { seconds: config.profileSeconds, runs };
  }

  // Where the time goes: the same database and secrets, the server behind the protocol tracer, one request at a time.
  h.log('mfa: the server again behind a PostgreSQL protocol tracer, a few requests one at a time');
  const trace = await startPgTrace(url);
  h.onCleanup('close the PostgreSQL tracer', () => trace.close());
  const traced = await h.serve('gatehouse (traced)', { ...env, DATABASE_URL: trace.url });
  await preparePasskeyMfa(client, app, [traceUser], TRACE_WARMUP_REQUESTS + TRACED_REQUESTS, passkeyShape);
  const traceTotp = await prepareTotpUsers(client, app, totp, box, TRACE_WARMUP_REQUESTS + TRACED_REQUESTS);
  const traces = [
    await traceScenario(traced.url, passkeyScenario(app, [traceUser], newPool()), trace),
    await traceScenario(traced.url, totpScenario(app, traceTotp, newPool()), trace),
  ];
  for (const t of traces) {
    h.log(
      `mfa (traced): ${t.scenario}: ${num(t.latencyMs, 1)} ms, ${t.roundTrips} PostgreSQL round trips ` +
        `(${t.rateLimitRoundTrips} of the rate limiter, ${t.transactions} transactions) waited ${num(t.databaseMs, 1)} ms`,
    );
  }
  await traced.stop(30_000);
  serverWarnings += traced.warnings();

  h.log('mfa: the signature and TOTP checks alone (bench/mfa-crypto.ts)');
  const crypto = await runJsonScript<MfaCryptoResult>('bench/mfa-crypto.ts', ['--json'], {
    nodeArgs: ['--disable-warning=ExperimentalWarning'],
  });
  h.log(
    `mfa: ECDSA P-256 ${num(1e6 / crypto.ecdsaRawOpsPerSecond, 1)} µs raw, ${num(1e6 / crypto.ecdsaLibraryOpsPerSecond, 1)} µs ` +
      `through @simplewebauthn/server; TOTP ${num(1e6 / crypto.totpRawOpsPerSecond, 1)} µs raw, ` +
      `${num(1e6 / crypto.totpServiceOpsPerSecond, 1)} µs as the service checks it`,
  );

  const settings = await client.query<{ name: string; setting: string }>(
    "select name, setting from pg_settings where name in ('synchronous_commit', 'fsync') order by name desc",
  );
  const result: MfaRun = {
    version,
    database: `a scratch database on ${url.host}`,
    durability: settings.rows.map((r) => `\`${r.name} = ${r.setting}\``).join(', '),
    origin: ORIGIN,
    setupSeconds,
    passkey,
    totp: totpRun,
    traces,
    traceWarmup: TRACE_WARMUP_REQUESTS,
    crypto,
    profile,
    serverWarnings,
    interpretation: [],
  };
  result.interpretation = interpret(config, cores, result);
  return result;
}

function interpret(config: MfaConfig, cores: number, run: MfaRun): string[] {
  const lines: string[] = [];
  const us = (opsPerSecond: number) => 1e6 / opsPerSecond;
  const share = (part: number, whole: number) => `${num((part / whole) * 100, 1)} %`;
  const databaseMs = (m: Measurement) => (m.databaseCores * 1000) / m.requestsPerSecond;
  const scenarios = [
    {
      label: 'A passkey MFA finish',
      s: run.passkey,
      trace: run.traces[0],
      check: 'the ECDSA P-256 signature check',
      raw: us(run.crypto.ecdsaRawOpsPerSecond),
      library: us(run.crypto.ecdsaLibraryOpsPerSecond),
      libraryText: 'through `verifyAuthenticationResponse`',
    },
    {
      label: 'A TOTP verify',
      s: run.totp,
      trace: run.traces[1],
      check: 'the HMAC-SHA1 code check',
      raw: us(run.crypto.totpRawOpsPerSecond),
      library: us(run.crypto.totpServiceOpsPerSecond),
      libraryText: 'with the seed unsealed and the TOTP built as the service does',
    },
  ];
  for (const { label, s, trace, check, raw, library, libraryText } of scenarios) {
    const m = s.measurement;
    const cpu = cpuMsPerRequest(m);
    lines.push(
      `${label} costs ${num(m.unloadedMs, 1)} ms for one client and ${num(cpu, 2)} ms of server CPU per request under load ` +
        `(${num(m.requestsPerSecond)} req/s at ${config.connections} connections, p50 ${num(m.p50Ms)} ms, p99 ${num(m.p99Ms)} ms; ` +
        `PostgreSQL ${Number.isNaN(m.databaseCores) ? 'n/a' : `${num(databaseMs(m), 2)} ms`} of CPU per request); of which ` +
        `${check} is ${num(raw, 1)} µs raw (${share(raw / 1000, m.unloadedMs)} of the one-client latency, ` +
        `${share(raw / 1000, cpu)} of the server CPU) and ${num(library, 1)} µs ${libraryText} ` +
        `(${share(library / 1000, cpu)} of the server CPU). Under load: ${saturation(m, cores)}.`,
    );
    if (trace) {
      lines.push(
        `${label}, traced (one client, the server behind the protocol tracer): ${trace.roundTrips} PostgreSQL round trips ` +
          `per request, ${trace.rateLimitRoundTrips} of them for the rate limiter (${num(trace.rateLimitMs, 1)} ms), ` +
          `${trace.transactions} transaction${trace.transactions === 1 ? '' : 's'}, and ${trace.commits} commits (the ` +
          'COMMIT, and each write sent outside a transaction), each waiting for its WAL flush ' +
          `(${run.durability}): ${num(trace.commitMs, 1)} ms. In all the request waited ${num(trace.databaseMs, 1)} ms on ` +
          `PostgreSQL of its ${num(trace.latencyMs, 1)} ms behind the tracer, which adds its forwarding to every round trip ` +
          `(${num(m.unloadedMs, 1)} ms without it, above${
            trace.latencyMs > 1.5 * m.unloadedMs
              ? '; a difference larger than the forwarding of a few dozen round trips: the traced requests ran on a ' +
                'server started anew, at another moment, and other work on the machine slows single requests (see the ' +
                'load averages)'
              : ''
          }); the rest is the Node process, whose CPU the profile below breaks down.` +
          (trace.afterResponse ? ` ${trace.afterResponse} round trips came after the answer.` : ''),
      );
    }
  }
  if (run.profile) {
    const perRequest = (r: ProfiledRun, ms: number) => ms / Math.max(1, r.requests);
    const pkg = (r: ProfiledRun, name: string) => r.summary.packages.find((p) => p.name === name)?.ms ?? 0;
    const [passkeyProfile, totpProfile] = run.profile.runs as [ProfiledRun, ProfiledRun];
    const top = (r: ProfiledRun) =>
      r.summary.packages
        .slice(0, 6)
        .map((p) => `${p.name} ${num(perRequest(r, p.ms), 2)} ms`)
        .join(', ');
    lines.push(
      `Under the profiler (loaded as above), the server\u2019s main thread was busy ${num(perRequest(passkeyProfile, passkeyProfile.summary.busyMs), 2)} ms ` +
        `per passkey finish (${top(passkeyProfile)}) and ${num(perRequest(totpProfile, totpProfile.summary.busyMs), 2)} ms per ` +
        `TOTP verify (${top(totpProfile)}). The checks as they run inside the server: @simplewebauthn/server ` +
        `${num(perRequest(passkeyProfile, pkg(passkeyProfile, '@simplewebauthn/server')), 3)} ms per finish ` +
        `(${share(pkg(passkeyProfile, '@simplewebauthn/server'), passkeyProfile.summary.busyMs)} of the busy time; the ` +
        'ECDSA verification itself runs on libuv\u2019s thread pool through WebCrypto, outside this profile but inside ' +
        `the server CPU above), otpauth ${num(perRequest(totpProfile, pkg(totpProfile, 'otpauth')), 3)} ms ` +
        `per verify (${share(pkg(totpProfile, 'otpauth'), totpProfile.summary.busyMs)}).`,
    );
  }
  const waits = [
    { name: 'passkey finish', s: run.passkey },
    { name: 'TOTP verify', s: run.totp },
  ].map(({ name, s }) => {
    const kinds = (filter: (what: string) => boolean) =>
      s.waits.kinds.filter((k) => filter(k.what)).reduce((total, k) => total + k.backends, 0);
    const rows = (filter: (r: WaitRow) => boolean) =>
      s.waits.rows.filter((r) => /rate_limits/i.test(r.statement) && filter(r)).reduce((total, r) => total + r.backends, 0);
    return {
      name,
      busy: s.waits.busyBackends,
      idleInTransaction: kinds((w) => w.startsWith('idle in transaction')),
      wal: kinds((w) => /WAL/.test(w)),
      lock: kinds((w) => w.startsWith('waiting: Lock')),
      rateLimiter: rows(() => true),
      rateLimiterLock: rows((r) => r.what.startsWith('waiting: Lock')),
      rateLimiterWal: rows((r) => /WAL/.test(r.what)),
    };
  });
  lines.push(
    'What PostgreSQL did under load (`pg_stat_activity` every 100 ms in the window; mean backends that were not idle): ' +
      `${waits
        .map(
          (w) =>
            `${w.name}: ${num(w.busy, 1)} busy, of which ${num(w.idleInTransaction, 1)} idle in a transaction (waiting ` +
            `for the server process to send the next statement), ${num(w.wal, 1)} waiting for a WAL flush, ` +
            `${num(w.lock, 1)} for a row lock; the rate limiter\u2019s upserts of \`rate_limits\` ${num(w.rateLimiter, 1)} ` +
            `(${num(w.rateLimiterLock, 1)} in a lock, ${num(w.rateLimiterWal, 1)} on the WAL)`,
        )
        .join('; ')}. With the Node process saturated, the sign-in transaction stays open while the process gets round to ` +
      'its next statement: the database mostly waits for the server, not the other way round.',
  );
  lines.push(
    'Seen, not changed — the rate limiter per attempt: every second-factor attempt counts itself against ' +
      '`mfa_failures_user` and `mfa_failures_address` before the check and refunds both after a success (mfa.service.ts, ' +
      '`secondFactorAttempt`): four autocommitted upserts through rate-limiter-flexible\u2019s own pool of 4 connections, ' +
      'each with its own WAL flush, for a limit that only counts failures. The address key (application and client ' +
      'address) is one row for every attempt from one address, so those upserts serialize on its row lock, held until ' +
      'each commit is flushed. It is not the limit at this throughput (the Node process is), but it is a fixed ' +
      `${num(run.traces[0]?.rateLimitMs ?? Number.NaN, 1)} ms per attempt at one client and a single-row queue for all ` +
      'attempts from one address once the server is faster (more processes); here every request comes from 127.0.0.1, ' +
      'like many users behind one NAT or proxy.',
  );
  const [passkeyTrace] = run.traces;
  const libraryFunctions = run.profile?.runs[0]?.summary.functions.filter((f) => f.pkg === '@simplewebauthn/server') ?? [];
  const noticed: string[] = [];
  if (passkeyTrace?.statements[0]?.includes('from "applications"')) {
    noticed.push(
      'each request starts by reading its application row (`select … from "applications"`), one round trip of its own',
    );
  }
  if (libraryFunctions.some((f) => f.name === 'importJwkKey')) {
    noticed.push(
      '`verifyAuthenticationResponse` decodes the stored COSE key and imports it into WebCrypto on every call ' +
        '(`importJwkKey` in the profile): the library costs about ' +
        `${num(run.crypto.ecdsaRawOpsPerSecond / run.crypto.ecdsaLibraryOpsPerSecond, 1)}× the raw signature check, ` +
        'still a small part of a finish',
    );
  }
  if (noticed.length) lines.push(`Also seen, not changed: ${noticed.join('; ')}.`);
  lines.push(
    `The preparation is not timed: the users, passkeys and TOTP factors, and one complete second-factor sign-in of each ` +
      'kind, go through the API; the pending sign-ins and ceremonies the load consumes are copies of the rows the server ' +
      `wrote, inserted with SQL (${num(run.passkey.prepared)} for passkeys, ${num(run.totp.prepared)} users for TOTP). The ` +
      'server cannot tell them apart: it looks them up by the SHA-256 of the token and state, as always.',
  );
  lines.push(
    `Everything shares ${cores} CPUs (autocannon, the server, PostgreSQL) with whatever else runs on the machine; the load ` +
      'averages above say how busy it was. The absolute figures are this machine\u2019s; the split between the check and the rest ' +
      'is the result.',
  );
  return lines;
}

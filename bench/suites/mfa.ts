/**
 * mfa: a passkey MFA finish and a TOTP verify per request under load, and the PostgreSQL round trips of one request
 * of each (target ≤ 8), counted by a protocol tracer in front of the database (harness/pg-trace.ts).
 *
 * Preparation (not timed): the users, their factors and one complete second-factor sign-in of each kind go through the
 * API, so the rows are the server's own; what the load consumes (one pending sign-in per request, one WebAuthn
 * ceremony per passkey request, one TOTP user per TOTP request) is then inserted with SQL as copies of them. The API
 * cannot make them fast enough: a pending token needs a first factor (a magic link and its message), and `mfa/start`
 * allows 100 ceremonies per client address per 5 minutes.
 */
import { randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { v7 } from 'uuid';
import { SoftwareAuthenticator } from '../../apps/server/test/helpers/authenticator.ts';
// The project's own sealing (a file with no imports but node:crypto): TOTP seeds are stored sealed with the master key.
import { SecretBox } from '../../packages/api/src/lib/crypto.ts';
import { config, log, onCleanup } from '../harness/env.ts';
import {
  type Application,
  api,
  MANY_SIGN_INS,
  magicLinkSignIns,
  type SignedIn,
  signIn,
  startGatehouse,
} from '../harness/gatehouse.ts';
import { type ConnectionState, load, type Measurement, own, type Scenario } from '../harness/load.ts';
import { roundTripList, startPgTrace, type TracedScenario, traceRequests } from '../harness/pg-trace.ts';
import { type ScratchDatabase, scratchDatabase } from '../harness/postgres.ts';
import { startServer } from '../harness/processes.ts';
import { cpuMs, limitTarget, num, type SuiteResult } from '../harness/report.ts';

const ORIGIN = 'https://app.bench.test';
const TOTP_OPTIONS = { algorithm: 'SHA1', digits: 6, period: 30 } as const; // as mfa.service.ts makes them
const MAX_ROUND_TRIPS = 8;
const TRACE = { warmup: 100, count: 10, classify: { 'rate limiter': /\brate_limits\b/i } };
const secret = (prefix: string) => `${prefix}${randomBytes(32).toString('base64url')}`; // as long as the server's
const es = (app: Application, token?: string) => ({
  'x-application-id': app.id,
  ...(token ? { authorization: `Bearer ${token}` } : {}),
});
const code = (totp: TOTP, steps = 0) => totp.generate({ timestamp: Date.now() + steps * TOTP_OPTIONS.period * 1000 });

/** What a scenario has used of what was prepared for it. When nothing is left, the request is an empty body (a 422). */
class Pool {
  used = 0;
  exhausted = false;
  next(body: string | undefined): string {
    if (body === undefined) this.exhausted = true;
    else this.used++;
    return body ?? '{}';
  }
}

/** Pending second-factor sign-ins as the service stores them (the token SHA-256 hashed), copying the stage of one. */
async function insertPending(
  db: ScratchDatabase,
  app: Application,
  shape: Shape,
  rows: Array<{ id: string; userId: string; token: string }>,
) {
  await db.client.query(
    `insert into pending_tokens (id, application_id, user_id, token_hash, stage, aal, first_factor, failed_attempts, expires_at, created_at)
     select x.id, $1, x.user_id, encode(sha256(convert_to(x.token, 'UTF8')), 'hex'), 'mfa', $2, $3, 0, now() + interval '10 minutes', now()
       from unnest($4::uuid[], $5::uuid[], $6::text[]) as x (id, user_id, token)`,
    [app.id, shape.aal, shape.first_factor, rows.map((r) => r.id), rows.map((r) => r.userId), rows.map((r) => r.token)],
  );
}
interface Shape {
  aal: number;
  first_factor: string;
}
const pendingShape = async (db: ScratchDatabase, userId: string): Promise<Shape> =>
  (await db.client.query("select aal, first_factor from pending_tokens where user_id = $1 and stage = 'mfa' limit 1", [userId]))
    .rows[0];

// Passkeys ---------------------------------------------------------------------------------------------------------

interface PasskeyUser extends SignedIn {
  authenticator: SoftwareAuthenticator;
  credentialId: string;
  /** Request bodies prepared for this user, in the order of their counters. */
  bodies: string[];
}

async function passkeyUsers(url: string, app: Application, count: number): Promise<PasskeyUser[]> {
  const users: PasskeyUser[] = [];
  for (const user of await signIn(url, app, count, 'passkey')) {
    const start = await api(url, 'POST', '/v1/auth/passkeys/register/start', es(app, user.accessToken));
    const authenticator = new SoftwareAuthenticator({ counterStep: 1 });
    const credential = await authenticator.create(start.options, ORIGIN);
    const body = { credential, state: start.state };
    await api(url, 'POST', '/v1/auth/passkeys/register/finish', es(app, user.accessToken), body, 201);
    users.push({ ...user, authenticator, credentialId: credential.id, bodies: [] });
  }
  return users;
}

/** magic link → `mfa_required` → `mfa/start` → get() → `mfa/finish` → `complete` at aal 2, through the API. */
async function passkeySignIn(url: string, app: Application, user: PasskeyUser) {
  const [first] = await magicLinkSignIns(url, app, [user.email]);
  if (first?.status !== 'mfa_required') throw new Error(`a sign-in with a passkey answered ${JSON.stringify(first)}`);
  const started = await api(url, 'POST', '/v1/auth/passkeys/mfa/start', es(app), { pending_token: first.pending_token });
  const credential = await user.authenticator.get(started.options, ORIGIN);
  const done = await api(url, 'POST', '/v1/auth/passkeys/mfa/finish', es(app), { credential, state: started.state });
  if (done.status !== 'complete' || done.tokens.aal !== 2) throw new Error(`mfa/finish: ${JSON.stringify(done)}`);
}

/** `perUser` pending sign-ins per user, each with its ceremony (as `mfa/start` stores it) and its signed assertion. */
async function preparePasskeys(db: ScratchDatabase, app: Application, users: PasskeyUser[], perUser: number, shape: Shape) {
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
    await insertPending(
      db,
      app,
      shape,
      chunk.map((r) => ({ id: r.pendingId, userId: r.user.userId, token: r.pendingToken })),
    );
    await db.client.query(
      `insert into webauthn_challenges (id, application_id, ceremony, state_hash, challenge, user_id, pending_token_id, expires_at, created_at)
       select x.id, $1, 'mfa', encode(sha256(convert_to(x.state, 'UTF8')), 'hex'), x.challenge, x.user_id, x.pending_id,
              now() + interval '5 minutes', now()
         from unnest($2::uuid[], $3::text[], $4::text[], $5::uuid[], $6::uuid[]) as x (id, state, challenge, user_id, pending_id)`,
      [
        app.id,
        ...(['ceremonyId', 'state', 'challenge'] as const).map((k) => chunk.map((r) => r[k])),
        chunk.map((r) => r.user.userId),
        chunk.map((r) => r.pendingId),
      ],
    );
  }
  await db.client.query('analyze pending_tokens, webauthn_challenges');
  for (const r of rows) {
    // Signed in order: each assertion's counter is one above the previous one of the same passkey.
    const request = {
      challenge: r.challenge,
      rpId: new URL(ORIGIN).hostname,
      allowCredentials: [{ id: r.user.credentialId, type: 'public-key' as const }],
      userVerification: 'required' as const,
    };
    r.user.bodies.push(JSON.stringify({ credential: await r.user.authenticator.get(request, ORIGIN), state: r.state }));
  }
  return rows.length;
}

/** Connection i signs user i in with that user's bodies in counter order (one request in flight: they arrive in order). */
function passkeyScenario(app: Application, users: PasskeyUser[], pool: Pool): Scenario {
  let next = 0;
  return {
    method: 'POST',
    path: '/v1/auth/passkeys/mfa/finish',
    headers: es(app),
    request: (state: ConnectionState) => {
      const user = own(state, 'user', () => users[next++]);
      return { body: pool.next(user?.bodies.shift()) };
    },
  };
}

// TOTP -------------------------------------------------------------------------------------------------------------

async function totpSignIn(url: string, app: Application, email: string, totp: TOTP, steps = 0) {
  const [first] = await magicLinkSignIns(url, app, [email]);
  if (first?.status !== 'mfa_required' || first.mfa.methods.join() !== 'totp')
    throw new Error(`a sign-in with TOTP answered ${JSON.stringify(first)}`);
  const body = { pending_token: first.pending_token, code: code(totp, steps) };
  const done = await api(url, 'POST', '/v1/auth/mfa/totp/verify', es(app), body);
  if (done.status !== 'complete' || done.tokens.aal !== 2) throw new Error(`totp/verify: ${JSON.stringify(done)}`);
}

/** A user enrolled through the API (enroll, confirm), then signed in with the factor: the template to copy. */
async function totpTemplate(url: string, app: Application, db: ScratchDatabase) {
  const [user] = await signIn(url, app, 1, 'totp');
  const enrolled = await api(url, 'POST', '/v1/auth/mfa/totp/enroll', es(app, user!.accessToken), undefined, 201);
  const totp = new TOTP({ ...TOTP_OPTIONS, secret: Secret.fromBase32(enrolled.secret) });
  const confirm = { factor_id: enrolled.factor_id, code: code(totp) };
  await api(url, 'POST', '/v1/auth/mfa/totp/confirm', es(app, user!.accessToken), confirm);
  await totpSignIn(url, app, user!.email, totp, 1); // the confirmation spent this step: the next one's code
  return { userId: user!.userId, factorId: enrolled.factor_id as string, shape: await pendingShape(db, user!.userId) };
}

/** `count` copies of the template user, each with a TOTP seed of its own (sealed as `enrollTotp` does) and a pending sign-in. */
async function prepareTotpUsers(
  db: ScratchDatabase,
  app: Application,
  template: Awaited<ReturnType<typeof totpTemplate>>,
  box: SecretBox,
  count: number,
) {
  const tag = randomBytes(4).toString('hex');
  const rows = Array.from({ length: count }, (_, i) => {
    const seed = new Secret({ size: 20 });
    const factorId = v7();
    const user = {
      userId: v7(),
      email: `totp-${tag}-${i}@bench.example.com`,
      factorId,
      pendingId: v7(),
      pendingToken: secret('pt_'),
    };
    return { ...user, sealed: box.encrypt(seed.base32, `totp:${factorId}`), totp: new TOTP({ ...TOTP_OPTIONS, secret: seed }) };
  });
  for (let from = 0; from < rows.length; from += 10_000) {
    const chunk = rows.slice(from, from + 10_000);
    await db.client.query(
      `insert into users (id, application_id, primary_email, email_normalized, email_verified, status, profile, created_at, updated_at)
       select x.id, t.application_id, x.email, x.email, t.email_verified, t.status, t.profile, now(), now()
         from unnest($2::uuid[], $3::text[]) as x (id, email), users t where t.id = $1`,
      [template.userId, chunk.map((r) => r.userId), chunk.map((r) => r.email)],
    );
    await db.client.query(
      `insert into mfa_factors (id, application_id, user_id, kind, name, secret_sealed, confirmed_at, created_at)
       select x.id, t.application_id, x.user_id, t.kind, t.name, x.sealed, now(), now()
         from unnest($2::uuid[], $3::uuid[], $4::text[]) as x (id, user_id, sealed), mfa_factors t where t.id = $1`,
      [template.factorId, chunk.map((r) => r.factorId), chunk.map((r) => r.userId), chunk.map((r) => r.sealed)],
    );
    await insertPending(
      db,
      app,
      template.shape,
      chunk.map((r) => ({ id: r.pendingId, userId: r.userId, token: r.pendingToken })),
    );
  }
  await db.client.query('analyze users, mfa_factors, pending_tokens');
  return rows;
}

/** Every request another user's pending sign-in (a time step is accepted once per user), the current step's code. */
function totpScenario(app: Application, users: Array<{ pendingToken: string; totp: TOTP }>, pool: Pool): Scenario {
  return {
    method: 'POST',
    path: '/v1/auth/mfa/totp/verify',
    headers: es(app),
    request: () => {
      const user = users[pool.used];
      return { body: pool.next(user && JSON.stringify({ pending_token: user.pendingToken, code: code(user.totp) })) };
    },
  };
}

// The suite --------------------------------------------------------------------------------------------------------

export async function mfaSuite(): Promise<SuiteResult> {
  const db = await scratchDatabase();
  const { server, app, env } = await startGatehouse('Gatehouse', db.url, {
    settings: MANY_SIGN_INS,
    fields: { allowed_origins: [ORIGIN] },
  });
  const box = new SecretBox(Buffer.from(env.GATEHOUSE_MASTER_KEY!, 'base64'));
  // Enough for BENCH_MFA_MAX_RATE requests per second through the warm-up, the window and the drain, and the one client.
  const perLoad = Math.ceil(config.mfaMaxRate * (config.warmupSeconds + config.durationSeconds + 10)) + 11;
  const users = await passkeyUsers(server.url, app, config.connections + 2); // one per connection, the one client, the trace
  const traceUser = users.pop()!;
  await passkeySignIn(server.url, app, traceUser);
  const passkeyShape = await pendingShape(db, traceUser.userId);
  const template = await totpTemplate(server.url, app, db);
  const sessions = async () =>
    (await db.client.query('select count(*)::int as n from sessions where aal = 2')).rows[0].n as number;

  const run = async (scenario: Scenario, pool: Pool): Promise<Measurement> => {
    const before = await sessions();
    const m = await load(server, scenario, db).catch((error: Error) => {
      throw pool.exhausted ? new Error(`the prepared requests ran out after ${pool.used}: raise BENCH_MFA_MAX_RATE`) : error;
    });
    const made = (await sessions()) - before;
    if (made < m.expected || made > pool.used)
      throw new Error(`${scenario.path}: ${made} sessions at aal 2 for ${m.expected} 200s`);
    return m;
  };
  const passkeyPrepared = await preparePasskeys(db, app, users, Math.ceil(perLoad / config.connections) + 11, passkeyShape);
  const passkeyPool = new Pool();
  const passkey = await run(passkeyScenario(app, users, passkeyPool), passkeyPool);
  const totpUsers = await prepareTotpUsers(db, app, template, box, perLoad + 1);
  const check = totpUsers.pop()!;
  await totpSignIn(server.url, app, check.email, check.totp); // the copies are users the server recognizes
  const totpPool = new Pool();
  const totp = await run(totpScenario(app, totpUsers, totpPool), totpPool);
  await server.stop();
  log(
    `mfa: ${num(passkeyPrepared)} passkey and ${num(totpUsers.length)} TOTP requests prepared, ${passkeyPool.used} and ${totpPool.used} used`,
  );

  // The round trips: the server again, behind the protocol tracer, one request at a time.
  const trace = await startPgTrace(new URL(db.url));
  onCleanup('close the PostgreSQL tracer', () => trace.close());
  const traced = await startServer('Gatehouse (traced)', { ...env, DATABASE_URL: trace.url });
  await preparePasskeys(db, app, [traceUser], TRACE.warmup + TRACE.count, passkeyShape);
  const traceTotp = await prepareTotpUsers(db, app, template, box, TRACE.warmup + TRACE.count);
  const traces: Array<[string, TracedScenario]> = [
    [passkey.scenario, await traceRequests(traced.url, passkeyScenario(app, [traceUser], new Pool()), trace, TRACE)],
    [totp.scenario, await traceRequests(traced.url, totpScenario(app, traceTotp, new Pool()), trace, TRACE)],
  ];
  await traced.stop();

  return {
    title: 'MFA: a passkey MFA finish and a TOTP verify, their load and their PostgreSQL round trips',
    software: [db.version],
    targets: traces.map(([name, t]) =>
      limitTarget(`\`${name}\` PostgreSQL round trips per request`, t.roundTrips, 'round trips', MAX_ROUND_TRIPS),
    ),
    method: [
      `Through the API (not timed): ${users.length + 1} users sign in by magic link and register a passkey (the tests\u2019 ` +
        'software authenticator: real P-256 keys and signatures, counter +1 per assertion); one signs in all the way with it ' +
        '(magic link → `mfa_required` → `mfa/start` → `mfa/finish` → aal 2). One user enrolls TOTP and signs in with it.',
      'Prepared with SQL (not timed), as copies of the rows the server wrote: for passkeys, per user, pending sign-ins with ' +
        'their `mfa/start` ceremonies and the assertions signed over them in counter order (connection i is user i); for ' +
        'TOTP, copies of the enrolled user, each with a seed of its own sealed with the master key and one pending sign-in ' +
        `(every request is another user\u2019s, with the current step\u2019s code). ${num(passkeyPrepared)} and ` +
        `${num(totpUsers.length)} prepared (\`BENCH_MFA_MAX_RATE\`=${config.mfaMaxRate} req/s). Every 200 must have made a session at aal 2.`,
      `Round trips: the server started again with \`DATABASE_URL\` pointing at a PostgreSQL protocol tracer in the benchmark ` +
        `process (harness/pg-trace.ts); each scenario sent one request at a time, ${TRACE.warmup} uncounted, then ` +
        `${TRACE.count}; a round trip is a Sync or a simple Query up to its ReadyForQuery (medians). The tracer adds its ` +
        'forwarding to each round trip: its latencies are for the shape of a request, not its speed.',
    ],
    measurements: [passkey, totp],
    details: [
      [
        '| scenario (traced, one client) | round trips | of which the rate limiter | waiting on PostgreSQL ms | latency ms | after the response |',
        '|---|---:|---:|---:|---:|---:|',
        ...traces.map(
          ([name, t]) =>
            `| ${name} | ${t.roundTrips} | ${t.classified['rate limiter']} | ${num(t.databaseMs, 1)} | ${num(t.latencyMs, 1)} | ${t.afterResponse} |`,
        ),
      ].join('\n'),
      ...traces.map(([name, t]) => roundTripList(name, t)),
    ],
    notes: [
      `Server CPU per request under load: passkey finish ${num(cpuMs(passkey), 2)} ms, TOTP verify ${num(cpuMs(totp), 2)} ms.`,
    ],
  };
}

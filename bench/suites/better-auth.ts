/**
 * better-auth: completing a sign-in, Gatehouse against Better Auth 1.x (bench/peers/better-auth.ts: its magic-link
 * plugin, database sessions) on the same PostgreSQL in the same run. A magic-link verify for a new user (the user is
 * created), for a returning one; `GET /v1/auth/me` against Better Auth's `get-session`; Gatehouse's refresh against
 * the minimal refresh (bench/minimal/sign-in.ts). Then the statements of each Gatehouse completion, traced.
 */
import { createHash, randomBytes } from 'node:crypto';
import { config, log, onCleanup } from '../harness/env.ts';
import { MANY_SIGN_INS, signIn, startGatehouse } from '../harness/gatehouse.ts';
import { type ConnectionState, load, type Measurement, own, type Scenario } from '../harness/load.ts';
import { roundTripList, startPgTrace, traceRequests } from '../harness/pg-trace.ts';
import { type ScratchDatabase, scratchDatabase } from '../harness/postgres.ts';
import { type ServerProcess, startServer } from '../harness/processes.ts';
import { cpuMs, num, ratioTarget, type SuiteResult } from '../harness/report.ts';
import { refresh, startMinimalSignIn } from './sign-in.ts';

const TTL_S = 3600;
/** Sign-ins per second of load the prepared links provide for (each link signs in once). */
const MAX_RATE = Number(process.env.BENCH_SIGNIN_MAX_RATE ?? 2000);
const TRACE = { warmup: 20, count: 10 };
/** The warm-up round's loads (see the rounds). */
const WARMUP_S = 15;
/** Distinct returning users the returning scenarios cycle through (each link is new; the user is not). */
const RETURNING_USERS = 2000;
const linksNeeded = () => Math.ceil(MAX_RATE * (config.warmupSeconds + config.durationSeconds + 10));

const sha256 = (text: string, encoding: 'hex' | 'base64url') => createHash('sha256').update(text).digest(encoding);

/** A link for each address, written as the server's start would write it (the start's own cost is not measured). */
async function gatehouseLinks(db: ScratchDatabase, applicationId: string, emails: string[]): Promise<string[]> {
  const tokens = emails.map(() => `ml_${randomBytes(32).toString('hex')}`);
  for (let i = 0; i < emails.length; i += 20_000) {
    await db.client.query(
      `insert into magic_links (id, application_id, created_at, email, email_normalized, token_hash, expires_at)
       select gen_random_uuid(), $1, now(), e, lower(e), h, now() + interval '1 hour'
         from unnest($2::text[], $3::text[]) as x (e, h)`,
      [applicationId, emails.slice(i, i + 20_000), tokens.slice(i, i + 20_000).map((t) => sha256(t, 'hex'))],
    );
  }
  await db.client.query('analyze magic_links, users');
  return tokens;
}

/** Better Auth's verification rows for the addresses, as its `sign-in/magic-link` writes them (`storeToken: 'hashed'`). */
async function betterAuthLinks(db: ScratchDatabase, emails: string[]): Promise<string[]> {
  const tokens = emails.map(() => randomBytes(24).toString('base64url'));
  for (let i = 0; i < emails.length; i += 20_000) {
    const chunk = emails.slice(i, i + 20_000);
    await db.client.query(
      `insert into verification (id, identifier, value, "expiresAt")
       select md5(random()::text), i, json_build_object('type', 'magic-link', 'email', e)::text, now() + interval '1 hour'
         from unnest($1::text[], $2::text[]) as x (i, e)`,
      [tokens.slice(i, i + 20_000).map((t) => `magic-link:${sha256(t, 'base64url')}`), chunk],
    );
  }
  await db.client.query('analyze verification, "user"');
  return tokens;
}

const newEmails = (label: string, count: number) => {
  const tag = randomBytes(4).toString('hex');
  return Array.from({ length: count }, (_, i) => `${label}-${tag}-${i}@bench.example.com`);
};
const cycle = (emails: string[], count: number) => Array.from({ length: count }, (_, i) => emails[i % emails.length]!);

/** Each request spends the next prepared link (shared by the connections: a link is used once). */
function verifier(label: string, tokens: string[], send: (token: string) => ReturnType<NonNullable<Scenario['request']>>) {
  let next = 0;
  return () => {
    if (next >= tokens.length) throw new Error(`the prepared ${label} links ran out: raise BENCH_SIGNIN_MAX_RATE`);
    return send(tokens[next++]!);
  };
}

function gatehouseVerify(applicationId: string, tokens: string[]): Scenario {
  return {
    method: 'POST',
    path: '/v1/auth/magic-link/verify',
    headers: { 'x-application-id': applicationId, 'content-type': 'application/json' },
    request: verifier('Gatehouse', tokens, (token) => ({ body: JSON.stringify({ token }) })),
    response: (_state, status, body) => {
      if (status === 200 && !body.includes('"status":"complete"')) throw new Error(`a verify did not complete: ${body}`);
    },
  };
}

function betterAuthVerify(tokens: string[]): Scenario {
  return {
    method: 'GET',
    path: '/api/auth/magic-link/verify',
    headers: {},
    request: verifier('Better Auth', tokens, (token) => ({ path: `/api/auth/magic-link/verify?token=${token}` })),
    response: (_state, status, body) => {
      if (status !== 200 || !body.startsWith('{"token":')) throw new Error(`a verify did not sign in: ${status} ${body}`);
    },
  };
}

function me(applicationId: string, tokens: string[]): Scenario {
  let next = 0;
  return {
    method: 'GET',
    path: '/v1/auth/me',
    headers: { 'x-application-id': applicationId },
    request: (state: ConnectionState) => ({
      headers: { authorization: `Bearer ${own(state, 'token', () => tokens[next++ % tokens.length])}` },
    }),
  };
}

function getSession(cookies: string[]): Scenario {
  let next = 0;
  return {
    method: 'GET',
    path: '/api/auth/get-session',
    headers: {},
    request: (state: ConnectionState) => ({
      headers: { cookie: own(state, 'cookie', () => cookies[next++ % cookies.length]!) },
    }),
    response: (_state, status, body) => {
      if (status !== 200 || !body.includes('"session"')) throw new Error(`get-session answered ${status} ${body}`);
    },
  };
}

/**
 * A refresh load with the write-ahead log PostgreSQL wrote for it: the WAL position before and after the whole load
 * (warm-up, window, drain and the requests one at a time), divided by the refreshes answered 200 in it. The rest of the
 * log in that time (the server's housekeeping, PostgreSQL's own) is small beside tens of thousands of rotations.
 */
async function refreshWithWal(db: ScratchDatabase, server: ServerProcess, scenario: Scenario, seconds: number) {
  let answered = 0;
  const counted: Scenario = {
    ...scenario,
    response: (state, status, body, headers) => {
      if (status === 200) answered++;
      scenario.response?.(state, status, body, headers);
    },
  };
  const lsn = async () => (await db.client.query('select pg_current_wal_lsn()::text as at')).rows[0].at as string;
  const before = await lsn();
  const measurement = await load(server, counted, db, seconds);
  const { rows } = await db.client.query('select pg_wal_lsn_diff($1, $2)::float8 as bytes', [await lsn(), before]);
  return { measurement, walBytes: rows[0].bytes / answered };
}

async function settled(db: ScratchDatabase): Promise<void> {
  log(`PostgreSQL settled (vacuum, analyze, checkpoint, no autovacuum running) in ${(await db.settle()).toFixed(1)} s`);
}

const count = async (db: ScratchDatabase, sql: string, params: unknown[] = []) =>
  Number((await db.client.query(sql, params)).rows[0].n);

export async function betterAuthSuite(): Promise<SuiteResult> {
  const links = linksNeeded();
  const db = await scratchDatabase();
  const { server, app, env } = await startGatehouse('Gatehouse', db.url, {
    settings: { session: { access_token_ttl_s: TTL_S }, ...MANY_SIGN_INS },
  });
  // A refresh load spends one session per connection and one for its requests one at a time: fresh ones each round,
  // the warm-up's included.
  const perRound = config.connections + 1;
  const users = await signIn(server.url, app, perRound * (config.rounds + 1));
  const roundOf = <T>(all: T[], round: number) => all.slice(round * perRound, (round + 1) * perRound);
  log(`writing ${links} Gatehouse links for new users`);
  const gNewTokens = await gatehouseLinks(db, app.id, newEmails('new', links));
  const usersBefore = await count(db, 'select count(*) as n from users where application_id = $1', [app.id]);
  const gNew = await load(server, gatehouseVerify(app.id, gNewTokens), db);
  const created = (await count(db, 'select count(*) as n from users where application_id = $1', [app.id])) - usersBefore;
  const gReturningEmails = (
    await db.client.query('select primary_email as e from users where application_id = $1 limit $2', [app.id, RETURNING_USERS])
  ).rows.map((r: { e: string }) => r.e);
  log(`writing ${links} Gatehouse links for returning users`);
  const gReturningTokens = await gatehouseLinks(db, app.id, cycle(gReturningEmails, links));
  const gReturning = await load(server, gatehouseVerify(app.id, gReturningTokens), db);
  const peer = await startServer(
    'Better Auth',
    { DATABASE_URL: db.url, BETTER_AUTH_SECRET: randomBytes(32).toString('hex') },
    'bench/peers/better-auth.ts',
  );
  const cookies: string[] = [];
  for (const token of await betterAuthLinks(db, newEmails('peer-user', config.connections + 1))) {
    const response = await fetch(`${peer.url}/api/auth/magic-link/verify?token=${token}`);
    const cookie = /better-auth\.session_token=[^;]+/.exec(response.headers.get('set-cookie') ?? '')?.[0];
    if (response.status !== 200 || !cookie) throw new Error(`Better Auth's verify answered ${response.status}`);
    cookies.push(cookie);
  }
  log(`writing ${links} Better Auth links for new users`);
  const bNewTokens = await betterAuthLinks(db, newEmails('peer-new', links));
  const peerUsersBefore = await count(db, 'select count(*) as n from "user"');
  const bNew = await load(peer, betterAuthVerify(bNewTokens), db);
  const peerCreated = (await count(db, 'select count(*) as n from "user"')) - peerUsersBefore;
  const bReturningEmails = (await db.client.query('select email as e from "user" limit $1', [RETURNING_USERS])).rows.map(
    (r: { e: string }) => r.e,
  );
  log(`writing ${links} Better Auth links for returning users`);
  const bReturning = await load(peer, betterAuthVerify(await betterAuthLinks(db, cycle(bReturningEmails, links))), db);
  const { minimal, sessions } = await startMinimalSignIn(db, app.id, users, TTL_S);

  // The session reads and refreshes in alternated rounds, each server's load next to the other's: on a shared machine
  // the speed of the cores drifts from one minute to the next, and a ratio of two loads minutes apart carried it. Each
  // load starts once PostgreSQL has done what the loads before it left (autovacuum, the checkpoint of their writes).
  // First a warm-up round, not reported: each of the four loads once, WARMUP_S long. Run cold, Gatehouse's first refresh
  // load answered 5-10 % below its later rounds in every series measured (server CPU per refresh higher, PostgreSQL's
  // the same), and no longer did after a 15 s warm-up; the minimal's did not change. The rounds measure each server as
  // it runs for hours, not in its first minute.
  const rounds: Array<{
    me: Measurement;
    session: Measurement;
    refresh: Measurement;
    minimal: Measurement;
    wal: [number, number];
  }> = [];
  for (let round = -1; round < config.rounds; round++) {
    const warmUp = round < 0;
    const seconds = warmUp ? WARMUP_S : config.durationSeconds;
    const label = (m: Measurement) => ({ ...m, scenario: `${m.scenario} (round ${round + 1})` });
    await settled(db);
    const gMe = await load(
      server,
      me(
        app.id,
        roundOf(users, 0).map((u) => u.accessToken),
      ),
      db,
      seconds,
    );
    await settled(db);
    const bSession = await load(peer, getSession(cookies), db, seconds);
    await settled(db);
    const gRefresh = await refreshWithWal(
      db,
      server,
      refresh(
        app.id,
        roundOf(users, round + 1).map((u) => u.refreshToken),
      ),
      seconds,
    );
    await settled(db);
    const mRefresh = await refreshWithWal(
      db,
      minimal,
      refresh(
        app.id,
        roundOf(sessions, round + 1).map((s) => s.token),
      ),
      seconds,
    );
    if (warmUp) continue;
    rounds.push({
      me: label(gMe),
      session: label(bSession),
      refresh: label(gRefresh.measurement),
      minimal: label(mRefresh.measurement),
      wal: [gRefresh.walBytes, mRefresh.walBytes],
    });
  }
  await Promise.all([server.stop(), peer.stop(), minimal.stop()]);
  const revoked = await count(db, 'select count(*) as n from sessions where revoked_at is not null');
  if (revoked > 0) throw new Error(`${revoked} sessions were revoked: a refresh token was presented twice`);
  /** The middle one of the rounds by `by` (the upper one of an even count). */
  const middle = <T>(values: T[], by: (value: T) => number) =>
    [...values].sort((a, b) => by(a) - by(b))[Math.floor(values.length / 2)]!;
  /** Each server's round of the median throughput. */
  const medianRound = (pick: (r: (typeof rounds)[number]) => Measurement) => middle(rounds.map(pick), (m) => m.requestsPerSecond);
  const [gMe, bSession, gRefresh, mRefresh] = [
    medianRound((r) => r.me),
    medianRound((r) => r.session),
    medianRound((r) => r.refresh),
    medianRound((r) => r.minimal),
  ];
  const [gWal, mWal] = [
    middle(
      rounds.map((r) => r.wal[0]),
      Number,
    ),
    middle(
      rounds.map((r) => r.wal[1]),
      Number,
    ),
  ];

  // The statements of each completion: the server again, behind the protocol tracer, one request at a time.
  const trace = await startPgTrace(new URL(db.url));
  onCleanup('close the PostgreSQL tracer', () => trace.close());
  const traced = await startServer('Gatehouse (traced)', { ...env, DATABASE_URL: trace.url });
  const n = TRACE.warmup + TRACE.count + 2;
  const tNew = await traceRequests(
    traced.url,
    gatehouseVerify(app.id, await gatehouseLinks(db, app.id, newEmails('trace', n))),
    trace,
    TRACE,
  );
  const tReturning = await traceRequests(
    traced.url,
    gatehouseVerify(app.id, await gatehouseLinks(db, app.id, cycle(gReturningEmails, n))),
    trace,
    TRACE,
  );
  await traced.stop();

  const dbMs = (m: typeof gMe) => num((m.databaseCores * 1000) / m.requestsPerSecond, 2);
  const cpu = (m: typeof gMe) => num(cpuMs(m), 2);
  return {
    title: 'Sign-in completion: Gatehouse against Better Auth (magic link, session read) and the minimal refresh',
    software: [db.version, 'better-auth 1.7.25'],
    targets: [
      ratioTarget('magic-link verify, a new user', gNew.requestsPerSecond, bNew.requestsPerSecond, 'req/s', '≥', 1.5),
      ratioTarget(
        'magic-link verify, a returning user',
        gReturning.requestsPerSecond,
        bReturning.requestsPerSecond,
        'req/s',
        '≥',
        2,
      ),
      ratioTarget(
        '`GET /v1/auth/me` vs Better Auth `get-session`',
        gMe.requestsPerSecond,
        bSession.requestsPerSecond,
        'req/s',
        '≥',
        5,
      ),
      ratioTarget(
        '`POST /v1/auth/token/refresh` vs the minimal refresh',
        gRefresh.requestsPerSecond,
        mRefresh.requestsPerSecond,
        'req/s',
        '≥',
        1,
      ),
    ],
    method: [
      'One scratch database. The verify loads: Gatehouse\u2019s, then Better Auth\u2019s. Then, with the three servers started ' +
        `(idle but for the one measured), a warm-up round of the four loads (${WARMUP_S} s each, not reported: run cold, ` +
        'Gatehouse\u2019s first refresh load answered 5\u201310 % below its later ones, the minimal\u2019s did not), then ' +
        `${config.rounds} rounds of the four loads, one after the other: Gatehouse \`/me\`, ` +
        'Better Auth `get-session`, Gatehouse\u2019s refresh, the minimal refresh. Each of these targets compares the round ' +
        'of each server with the median throughput (the figures in its row), and the write-ahead log per refresh is the ' +
        'median of the rounds\u2019. ' +
        `Gatehouse: ${users.length} users signed in through the API (magic-link start, the link from the message log, ` +
        'verify) for `/me` and refresh (fresh sessions for each round\u2019s refresh); links for the verify loads ' +
        'written with SQL as the start writes them (SHA-256 ' +
        `of a new \`ml_\` token, an hour to live), ${num(links)} per load (BENCH_SIGNIN_MAX_RATE ${MAX_RATE}/s of load): ` +
        `first new addresses (each verify creates the user), then the addresses of ${RETURNING_USERS} of the users so created.`,
      'Better Auth 1.7.25 (`bench/peers/better-auth.ts`): `betterAuth` with a `pg` pool of 20 (Gatehouse\u2019s default), its ' +
        '`magicLink` plugin with `storeToken: \u0027hashed\u0027`, database sessions (`cookieCache` off), rate limiter off, its ' +
        'tables created by its own `getMigrations(…).runMigrations()`, served by `toNodeHandler` on node:http. Its ' +
        'verification rows written with SQL as `sign-in/magic-link` writes them; `GET /api/auth/magic-link/verify?token=` ' +
        'without a callback URL answers the session as JSON with its cookie. `get-session`: each connection sends one of ' +
        `${config.connections + 1} users\u2019 signed session cookies.`,
      'Before each session read and each refresh load, PostgreSQL is settled (the database vacuumed and analyzed, a ' +
        'checkpoint, no autovacuum worker left on it), so that what the verify loads left it does not run in the window.',
      'Every verify must answer a signed-in session (Gatehouse `status: complete` with tokens; Better Auth its JSON), or ' +
        'the run fails. Refresh: each connection owns one session and presents the token the previous response gave it; ' +
        'the minimal refresh (bench/minimal/sign-in.ts, the sign-in suite\u2019s) on the same users.',
      `Statements: Gatehouse started again behind harness/pg-trace.ts; ${TRACE.warmup} uncounted verifies, then ` +
        `${TRACE.count}, one at a time, of each kind (medians).`,
    ],
    measurements: [gNew, bNew, gReturning, bReturning, ...rounds.flatMap((r) => [r.me, r.session, r.refresh, r.minimal])],
    details: [
      `Users created by the new-user loads: Gatehouse ${num(created)}, Better Auth ${num(peerCreated)}.`,
      `Round trips per completion: a new user ${tNew.roundTrips} (${num(tNew.databaseMs, 2)} ms waiting on PostgreSQL, ` +
        `${num(tNew.latencyMs, 2)} ms one at a time through the tracer); a returning user ${tReturning.roundTrips} ` +
        `(${num(tReturning.databaseMs, 2)} ms, ${num(tReturning.latencyMs, 2)} ms).`,
      roundTripList('new user\u2019s verify', tNew),
      roundTripList('returning user\u2019s verify', tReturning),
    ],
    notes: [
      `Server CPU per request (Gatehouse against the peer): new user ${cpu(gNew)} against ${cpu(bNew)} ms; returning ` +
        `${cpu(gReturning)} against ${cpu(bReturning)} ms; \`/me\` ${cpu(gMe)} against get-session ${cpu(bSession)} ms; ` +
        `refresh ${cpu(gRefresh)} against the minimal\u2019s ${cpu(mRefresh)} ms.`,
      `PostgreSQL CPU per request: new user ${dbMs(gNew)} against ${dbMs(bNew)} ms; returning ${dbMs(gReturning)} ` +
        `against ${dbMs(bReturning)} ms; \`/me\` ${dbMs(gMe)} against ${dbMs(bSession)} ms; refresh ${dbMs(gRefresh)} ` +
        `against ${dbMs(mRefresh)} ms.`,
      `PostgreSQL write-ahead log per refresh (the whole load over the refreshes it answered): Gatehouse ${num(gWal)} ` +
        `bytes, the minimal ${num(mWal)} bytes.`,
      'What each does per verify: Better Auth reads the verification row, deletes it, reads the user, (a new user: inserts ' +
        'the user and, for a magic link, no account row), inserts the session, each its own statement without a transaction; ' +
        'Gatehouse consumes the link, reads or creates the user, opens the session with its refresh token, and writes the ' +
        'events (`user.created`, `session.created`) with their webhook outbox rows, in one transaction, then signs an ' +
        'access token.',
    ],
  };
}

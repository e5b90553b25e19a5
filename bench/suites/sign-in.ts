/**
 * sign-in: `GET /v1/auth/me` and `POST /v1/auth/token/refresh`, Gatehouse against a minimal fastify + jose + pg server
 * (bench/minimal/sign-in.ts) on the same database and users; and the SDK's `verifyToken` against a raw Ed25519
 * verification (bench/micro/verify.ts, a process of its own).
 */
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { decodeJwt, SignJWT } from 'jose';
import { config } from '../harness/env.ts';
import { api, MANY_SIGN_INS, signIn, startGatehouse } from '../harness/gatehouse.ts';
import { type ConnectionState, load, own, type Scenario } from '../harness/load.ts';
import { scratchDatabase } from '../harness/postgres.ts';
import { runJsonScript, startServer } from '../harness/processes.ts';
import { cpuMs, num, ratioTarget, type SuiteResult } from '../harness/report.ts';

const TTL_S = 3600; // no access token expires during the suite; the cost of a check does not depend on it

/** Connection i sends user i's access token on every request. */
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

/**
 * Connection i owns session i alone and presents the refresh token the previous response gave it: a token presented
 * twice would be reuse, which revokes the session and fails the run on 401s.
 */
export function refresh(applicationId: string, tokens: string[]): Scenario {
  let next = 0;
  return {
    method: 'POST',
    path: '/v1/auth/token/refresh',
    headers: { 'x-application-id': applicationId },
    request: (state: ConnectionState) => {
      const token = own(state, 'token', () => {
        if (next >= tokens.length) throw new Error('more connections than sessions');
        return tokens[next++];
      });
      return { body: JSON.stringify({ refresh_token: token }) };
    },
    response: (state: ConnectionState, status: number, body: string) => {
      if (status === 200) state.token = JSON.parse(body).data.refresh_token;
    },
  };
}

/**
 * The minimal server of this suite (bench/minimal/sign-in.ts) on Gatehouse's database: its own key, the same claims for
 * the same users, one refresh session per user in its own table. The oauth2 suite compares its token endpoint with it.
 */
export async function startMinimalSignIn(
  db: Awaited<ReturnType<typeof scratchDatabase>>,
  applicationId: string,
  users: Array<{ userId: string; accessToken: string }>,
  ttlS: number,
) {
  const { privateKey } = generateKeyPairSync('ed25519');
  const claims = decodeJwt(users[0]!.accessToken);
  const env = {
    DATABASE_URL: db.url,
    MINIMAL_PRIVATE_KEY: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    MINIMAL_KID: randomUUID(),
    MINIMAL_ISSUER: String(claims.iss),
    MINIMAL_AUDIENCE: applicationId,
    MINIMAL_TTL_S: String(ttlS),
  };
  await db.client.query(
    `create table minimal_refresh (session_id uuid primary key, user_id uuid not null references users (id), aal int not null,
       token_hash varchar(64) not null unique, last_active_at timestamptz not null, expires_at timestamptz not null,
       revoked_at timestamptz null)`,
  );
  const sessions = users.map((u) => ({
    userId: u.userId,
    id: randomUUID(),
    token: `rt_${randomBytes(32).toString('base64url')}`,
  }));
  await db.client.query(
    `insert into minimal_refresh (session_id, user_id, aal, token_hash, last_active_at, expires_at)
     select s, u, 1, encode(sha256(convert_to(t, 'UTF8')), 'hex'), now(), now() + interval '90 days'
       from unnest($1::uuid[], $2::uuid[], $3::text[]) as x (s, u, t)`,
    [sessions.map((s) => s.id), sessions.map((s) => s.userId), sessions.map((s) => s.token)],
  );
  const now = Math.floor(Date.now() / 1000);
  const minimalTokens = await Promise.all(
    sessions.map((s) =>
      new SignJWT({ sid: s.id, aal: 1, org: null, org_role: null })
        .setProtectedHeader({ alg: 'EdDSA', kid: env.MINIMAL_KID, typ: 'at+jwt' })
        .setIssuer(env.MINIMAL_ISSUER)
        .setAudience(applicationId)
        .setSubject(s.userId)
        .setIssuedAt(now)
        .setExpirationTime(now + ttlS)
        .sign(privateKey),
    ),
  );
  const minimal = await startServer('minimal', env, 'bench/minimal/sign-in.ts');
  const check = await api(minimal.url, 'GET', '/v1/auth/me', { authorization: `Bearer ${minimalTokens[0]}` });
  if (check.id !== users[0]!.userId) throw new Error('the minimal server answered another user');
  return { minimal, minimalTokens, sessions };
}

interface VerifyResult {
  rawOpsPerSecond: number;
  sameStringOpsPerSecond: number;
  newStringOpsPerSecond: number;
  ratio: number;
  target: number;
}

export async function signInSuite(): Promise<SuiteResult> {
  const db = await scratchDatabase();
  const { server, app } = await startGatehouse('Gatehouse', db.url, {
    settings: { session: { access_token_ttl_s: TTL_S }, ...MANY_SIGN_INS },
  });
  const users = await signIn(server.url, app, config.connections + 1);
  const headers = { 'x-application-id': app.id, authorization: `Bearer ${users[0]!.accessToken}` };
  if ((await api(server.url, 'GET', '/v1/auth/me', headers)).id !== users[0]!.userId) {
    throw new Error('GET /v1/auth/me answered another user');
  }
  const [accessTokens, refreshTokens] = [users.map((u) => u.accessToken), users.map((u) => u.refreshToken)];
  const gMe = await load(server, me(app.id, accessTokens), db);
  const gRefresh = await load(server, refresh(app.id, refreshTokens), db);
  await server.stop();
  const { rows } = await db.client.query('select count(*)::int as n from sessions where revoked_at is not null');
  if (rows[0].n > 0) throw new Error(`${rows[0].n} sessions were revoked: a refresh token was presented twice`);

  const { minimal, minimalTokens, sessions } = await startMinimalSignIn(db, app.id, users, TTL_S);
  const bMe = await load(minimal, me(app.id, minimalTokens), db);
  const bRefresh = await load(
    minimal,
    refresh(
      app.id,
      sessions.map((s) => s.token),
    ),
    db,
  );
  await minimal.stop();

  const verify = await runJsonScript<VerifyResult>('bench/micro/verify.ts');
  const verifyOps = Math.min(verify.sameStringOpsPerSecond, verify.newStringOpsPerSecond);
  const dbMs = (m: typeof gMe) => num((m.databaseCores * 1000) / m.requestsPerSecond, 2);
  return {
    title: 'Sign-in: `/v1/auth/me` and token refresh against a minimal server, and `verifyToken`',
    software: [db.version],
    targets: [
      ratioTarget('`GET /v1/auth/me` throughput', gMe.requestsPerSecond, bMe.requestsPerSecond, 'req/s', '≥', 0.9),
      ratioTarget('`GET /v1/auth/me` p99 latency', gMe.p99Ms, bMe.p99Ms, 'ms', '≤', 3),
      ratioTarget(
        '`POST /v1/auth/token/refresh` throughput',
        gRefresh.requestsPerSecond,
        bRefresh.requestsPerSecond,
        'req/s',
        '≥',
        0.5,
      ),
      ratioTarget(
        '`verifyToken` (a token seen before) vs raw Ed25519 `crypto.verify`',
        verifyOps,
        verify.rawOpsPerSecond,
        'ops/s',
        '≥',
        verify.target,
      ),
    ],
    method: [
      `${users.length} users sign in through Gatehouse\u2019s API as people would (magic-link start, the link from the ` +
        'message log of a development application, verify); connection i is user i, the last one the single client. ' +
        `Access tokens last ${TTL_S / 3600} h, so none expires during the suite.`,
      '`/me`: each connection sends its user\u2019s access token on every request. Refresh: each connection owns one ' +
        'session and presents the refresh token the previous response gave it (a token presented twice would revoke the ' +
        'session and fail the run; the revoked sessions are counted afterwards: 0).',
      'minimal: `node bench/minimal/sign-in.ts` (fastify + jose + pg, pool of 20) on the same database, its own Ed25519 ' +
        'key, tokens with the same header and claims for the same users. `/me` verifies the token with `jwtVerify` and ' +
        'reads the user by id; refresh rotates the SHA-256 of the token in `minimal_refresh` with one UPDATE … RETURNING ' +
        'and signs a new access token.',
      '`verifyToken` (bench/micro/verify.ts, its own process, after the servers): a token the SDK verified before, against ' +
        '`crypto.verify` of its Ed25519 signature with a KeyObject, best of three rounds; the ratio judged is the slower of ' +
        '"the same string again" and "an equal string made anew" (as a request header would be).',
    ],
    measurements: [gMe, gRefresh, bMe, bRefresh],
    details: [
      `verifyToken: raw ${num(verify.rawOpsPerSecond)} ops/s; the same string again ${num(verify.sameStringOpsPerSecond)} ` +
        `ops/s; an equal string made anew ${num(verify.newStringOpsPerSecond)} ops/s.`,
    ],
    notes: [
      `Server CPU per request: \`/me\` ${num(cpuMs(gMe), 2)} ms for Gatehouse against ${num(cpuMs(bMe), 2)} ms; refresh ` +
        `${num(cpuMs(gRefresh), 2)} ms against ${num(cpuMs(bRefresh), 2)} ms. PostgreSQL CPU per request: \`/me\` ` +
        `${dbMs(gMe)} against ${dbMs(bMe)} ms; refresh ${dbMs(gRefresh)} against ${dbMs(bRefresh)} ms.`,
      'Both servers share the machine\u2019s cores with PostgreSQL and autocannon: the minimal server shows what this machine ' +
        'does for the same work, so the ratios, not the absolute figures, are the result.',
    ],
  };
}

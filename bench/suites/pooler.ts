/**
 * pooler: what GATEHOUSE_DATABASE_POOLER=transaction costs on the hot paths. The same server code, the same database
 * and users, two processes side by side: one with named prepared statements (the default), one with every statement
 * unnamed (the setting), both straight to PostgreSQL so that only the setting differs (a pooler in between adds its
 * own hop, which is the pooler's cost, not the setting's). Each scenario runs on one, then the other.
 */
import { api, MANY_SIGN_INS, signIn, startGatehouse } from '../harness/gatehouse.ts';
import { type ConnectionState, load, type Measurement, own, type Scenario } from '../harness/load.ts';
import { scratchDatabase } from '../harness/postgres.ts';
import { startServer } from '../harness/processes.ts';
import { cpuMs, num, ratioTarget, type SuiteResult } from '../harness/report.ts';
import { refresh } from './sign-in.ts';

const TTL_S = 3600;

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

const check = (sk: Record<string, string>, userId: string): Scenario => ({
  method: 'POST',
  path: '/v1/authz/check',
  headers: { ...sk, 'content-type': 'application/json' },
  request: () => ({ body: JSON.stringify({ object: 'doc:readme', relation: 'viewer', subject: `user:${userId}` }) }),
});

const getUser = (sk: Record<string, string>, userId: string): Scenario => ({
  method: 'GET',
  path: `/v1/users/${userId}`,
  headers: sk,
});

export async function poolerSuite(): Promise<SuiteResult> {
  const db = await scratchDatabase();
  const {
    server: named,
    app,
    env,
  } = await startGatehouse('Gatehouse (direct: named statements)', db.url, {
    settings: { session: { access_token_ttl_s: TTL_S }, ...MANY_SIGN_INS },
    // One issuer for both processes (by default each names its own port), as one deployment's processes share it.
    env: { GATEHOUSE_BASE_URL: 'http://gatehouse.bench.test' },
  });
  const unnamed = await startServer('Gatehouse (pooler=transaction: unnamed)', {
    ...env,
    GATEHOUSE_DATABASE_POOLER: 'transaction',
  });
  const users = await signIn(named.url, app, 2 * 64 + 2);
  const [forNamed, forUnnamed] = [users.slice(0, 65), users.slice(65)];
  const userId = users[0]!.userId;
  await api(named.url, 'POST', '/v1/authz/tuples', app.sk, {
    writes: [
      { object: 'doc:readme', relation: 'viewer', subject: 'group:staff#member' },
      { object: 'group:staff', relation: 'member', subject: `user:${userId}` },
    ],
  });
  const accessTokens = users.map((u) => u.accessToken);
  const pairs: Array<[string, Measurement, Measurement]> = [];
  for (const [label, scenario] of [
    ['`GET /v1/auth/me`', () => me(app.id, accessTokens)],
    ['`GET /v1/users/{id}` (secret key)', () => getUser(app.sk, userId)],
    ['`POST /v1/authz/check`', () => check(app.sk, userId)],
  ] as const) {
    pairs.push([label, await load(named, scenario(), db), await load(unnamed, scenario(), db)]);
  }
  pairs.push([
    '`POST /v1/auth/token/refresh`',
    await load(
      named,
      refresh(
        app.id,
        forNamed.map((u) => u.refreshToken),
      ),
      db,
    ),
    await load(
      unnamed,
      refresh(
        app.id,
        forUnnamed.map((u) => u.refreshToken),
      ),
      db,
    ),
  ]);
  await unnamed.stop();
  await named.stop();
  const { rows } = await db.client.query('select count(*)::int as n from sessions where revoked_at is not null');
  if (rows[0].n > 0) throw new Error(`${rows[0].n} sessions were revoked: a refresh token was presented twice`);

  const dbMs = (m: Measurement) => num((m.databaseCores * 1000) / m.requestsPerSecond, 2);
  return {
    title: 'Pooler: what `GATEHOUSE_DATABASE_POOLER=transaction` (unnamed statements) costs on the hot paths',
    software: [db.version],
    targets: pairs.map(([label, n, u]) =>
      ratioTarget(`${label} throughput, unnamed ÷ named`, u.requestsPerSecond, n.requestsPerSecond, 'req/s', '≥', 0.8),
    ),
    method: [
      `${users.length} users sign in by magic link; one relationship path (doc → group → user) for the check. Two ` +
        'server processes on the same database with the same secrets: the default (hot statements named and prepared ' +
        'once per pooled connection) and `GATEHOUSE_DATABASE_POOLER=transaction` (the same statements unnamed: parsed ' +
        'and planned on every execution). Both connect to PostgreSQL directly: only the setting differs.',
      'Each scenario runs on the named server, then on the unnamed one. Refresh: each server rotates sessions of its own ' +
        '(a token presented twice would revoke its session and fail the run).',
    ],
    measurements: pairs.flatMap(([, n, u]) => [n, u]),
    details: [],
    notes: [
      ...pairs.map(
        ([label, n, u]) =>
          `${label}: server CPU ${num(cpuMs(n), 2)} → ${num(cpuMs(u), 2)} ms/req, PostgreSQL CPU ${dbMs(n)} → ${dbMs(u)} ` +
          `ms/req, p50 ${num(n.p50Ms, 1)} → ${num(u.p50Ms, 1)} ms, one client ${num(n.oneClientMs, 1)} → ${num(u.oneClientMs, 1)} ms.`,
      ),
      'The target (≥ 0.8×) is this setting\u2019s budget: a deployment behind a transaction-mode pooler gives up at most a ' +
        'fifth of a hot path\u2019s throughput for it. What the setting adds is PostgreSQL\u2019s parse and plan of each ' +
        'statement, so it shows in PostgreSQL CPU per request first.',
    ],
  };
}

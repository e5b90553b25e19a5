/**
 * oauth2: each application's token endpoint (refresh grant, rotating) and introspection, under load on PostgreSQL,
 * beside the minimal refresh of the sign-in suite (bench/minimal/sign-in.ts) in the same run.
 */
import { createHash, randomBytes } from 'node:crypto';
import { config, onCleanup } from '../harness/env.ts';
import { api, MANY_SIGN_INS, type SignedIn, signIn, startGatehouse } from '../harness/gatehouse.ts';
import { type ConnectionState, load, own, type Scenario } from '../harness/load.ts';
import { roundTripList, startPgTrace, type TracedScenario, traceRequests } from '../harness/pg-trace.ts';
import { scratchDatabase } from '../harness/postgres.ts';
import { startServer } from '../harness/processes.ts';
import { cpuMs, num, ratioTarget, type SuiteResult } from '../harness/report.ts';
import { refresh as minimalRefresh, startMinimalSignIn } from './sign-in.ts';

const CALLBACK = 'https://partner.bench.example/callback';
const LOGIN = 'https://app.bench.example/login';
const TRACE = { warmup: 100, count: 10 };

/** One user's authorization code + PKCE flow through the provider, as a browser and the third-party app run it. */
async function authorizeOne(url: string, appId: string, client: { id: string; secret: string }, user: SignedIn) {
  const cookies = new Map<string, string>();
  const get = async (target: string) => {
    const response = await fetch(target.replace(/^https?:\/\/[^/]+/, url), {
      redirect: 'manual',
      headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    return response.headers.get('location') ?? '';
  };
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const query = new URLSearchParams({
    client_id: client.id,
    redirect_uri: CALLBACK,
    response_type: 'code',
    scope: 'openid offline_access',
    prompt: 'consent',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: randomBytes(8).toString('hex'),
  });
  const login = await get(`${url}/oauth2/${appId}/auth?${query}`);
  const uid = new URL(login).searchParams.get('interaction');
  if (!uid) throw new Error(`the provider did not ask for a login: ${login}`);
  const { redirect_to } = await api(
    url,
    'POST',
    `/v1/oauth2/interactions/${uid}/complete`,
    { 'x-application-id': appId, authorization: `Bearer ${user.accessToken}` },
    { approved_scopes: ['openid', 'offline_access'] },
  );
  let location = await get(redirect_to);
  for (let hops = 0; !location.startsWith(CALLBACK) && hops < 5; hops++)
    location = await get(new URL(location, redirect_to).href);
  const code = new URL(location).searchParams.get('code');
  if (!code) throw new Error(`no code: ${location}`);
  const response = await fetch(`${url}/oauth2/${appId}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(client) },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: CALLBACK, code_verifier: verifier }),
  });
  const tokens = (await response.json()) as { access_token: string; refresh_token: string };
  if (!tokens.refresh_token) throw new Error(`no refresh token: ${JSON.stringify(tokens)}`);
  return tokens;
}

const basic = (client: { id: string; secret: string }) =>
  `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`;

/** Connection i owns grant i and presents the refresh token the previous response gave it (reuse would revoke). */
function oauthRefresh(appId: string, client: { id: string; secret: string }, tokens: string[]): Scenario {
  let next = 0;
  return {
    method: 'POST',
    path: `/oauth2/${appId}/token`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(client) },
    request: (state: ConnectionState) => {
      const token = own(state, 'token', () => {
        if (next >= tokens.length) throw new Error('more connections than grants');
        return tokens[next++];
      });
      return { body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token as string }).toString() };
    },
    response: (state: ConnectionState, status: number, body: string) => {
      if (status === 200) state.token = JSON.parse(body).refresh_token;
    },
  };
}

function introspection(appId: string, client: { id: string; secret: string }, tokens: string[]): Scenario {
  let next = 0;
  return {
    method: 'POST',
    path: `/oauth2/${appId}/token/introspection`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(client) },
    request: (state: ConnectionState) => ({
      body: new URLSearchParams({ token: own(state, 'token', () => tokens[next++ % tokens.length]!) }).toString(),
    }),
  };
}

export async function oauth2Suite(): Promise<SuiteResult> {
  const db = await scratchDatabase();
  const { server, app, env } = await startGatehouse('Gatehouse', db.url, {
    settings: { ...MANY_SIGN_INS, oauth2: { login_url: LOGIN } },
  });
  const created = await api(
    server.url,
    'POST',
    '/v1/oauth2/clients',
    app.sk,
    {
      name: 'Benchmark partner',
      type: 'confidential',
      redirect_uris: [CALLBACK],
      scopes: ['openid', 'offline_access'],
    },
    201,
  );
  const client = { id: created.id as string, secret: created.client_secret as string };
  const users = await signIn(server.url, app, config.connections + 2); // one per connection, one spare, the trace
  const grants = [];
  for (const user of users) grants.push(await authorizeOne(server.url, app.id, client, user));
  const traceGrant = grants.pop()!;
  const gIntrospect = await load(
    server,
    introspection(
      app.id,
      client,
      grants.map((g) => g.access_token),
    ),
    db,
  );
  const gRefresh = await load(
    server,
    oauthRefresh(
      app.id,
      client,
      grants.map((g) => g.refresh_token),
    ),
    db,
  );
  await server.stop();

  // The round trips: the server again, behind the protocol tracer, one request at a time.
  const trace = await startPgTrace(new URL(db.url));
  onCleanup('close the PostgreSQL tracer', () => trace.close());
  const traced = await startServer('Gatehouse (traced)', { ...env, DATABASE_URL: trace.url });
  const traces: Array<[string, TracedScenario]> = [];
  for (const scenario of [
    introspection(app.id, client, [traceGrant.access_token]),
    oauthRefresh(app.id, client, [traceGrant.refresh_token]),
  ])
    traces.push([`${scenario.method} ${scenario.path}`, await traceRequests(traced.url, scenario, trace, TRACE)]);
  await traced.stop();

  const { rows } = await db.client.query('select count(*)::int as n from oauth2_grants');
  if (rows[0].n !== users.length)
    throw new Error(`${users.length - rows[0].n} grants were revoked: a refresh token was presented twice`);

  const { minimal, sessions } = await startMinimalSignIn(db, app.id, users, 3600);
  const bRefresh = await load(
    minimal,
    minimalRefresh(
      app.id,
      sessions.map((s) => s.token),
    ),
    db,
  );
  await minimal.stop();

  const cores = (await import('node:os')).availableParallelism();
  const perCore = gRefresh.requestsPerSecond / cores;
  return {
    title: 'OAuth provider: token endpoint (refresh grant) and introspection against the minimal refresh',
    software: [db.version],
    targets: [
      ratioTarget(
        '`POST /oauth2/{id}/token` (refresh) throughput',
        gRefresh.requestsPerSecond,
        bRefresh.requestsPerSecond,
        'req/s',
        '≥',
        0.4,
      ),
    ],
    method: [
      `${users.length} users sign in (magic link) and each authorizes one confidential client through the provider ` +
        '(authorization code + PKCE, consent by the interaction API, code exchange): one grant and one refresh token each.',
      'Introspection: each connection asks about its user\u2019s access token (client_secret_basic). Refresh: each connection ' +
        'owns one grant and presents the refresh token the previous response gave it (rotation; a reuse would revoke the ' +
        'grant and fail the run — the grants are counted afterwards).',
      `Round trips: the server started again with \`DATABASE_URL\` pointing at a PostgreSQL protocol tracer ` +
        `(harness/pg-trace.ts); one more user\u2019s grant, one request at a time, ${TRACE.warmup} uncounted, then ` +
        `${TRACE.count} (medians); a round trip is a Sync or a simple Query up to its ReadyForQuery.`,
      'minimal: the sign-in suite\u2019s minimal server (fastify + jose + pg) rotating a SHA-256 refresh token with one UPDATE … ' +
        'RETURNING and signing an access token, on the same database, in the same run.',
    ],
    measurements: [gIntrospect, gRefresh, bRefresh],
    details: [
      `Introspection ${num(gIntrospect.requestsPerSecond)} req/s. Refresh ${num(gRefresh.requestsPerSecond)} req/s on ` +
        `${cores} vCPU shared with PostgreSQL and the load generator: ${num(perCore)} refresh/s per vCPU, beside ` +
        'Keycloak\u2019s sizing guide (120 refresh/s per vCPU).',
      [
        '| scenario (traced, one client) | round trips | statements | waiting on PostgreSQL ms | latency ms | after the response |',
        '|---|---:|---:|---:|---:|---:|',
        ...traces.map(
          ([name, t]) =>
            `| ${name} | ${t.roundTrips} | ${t.typical.reduce((n, trip) => n + trip.statements.length, 0)} | ` +
            `${num(t.databaseMs, 1)} | ${num(t.latencyMs, 1)} | ${t.afterResponse} |`,
        ),
      ].join('\n'),
      ...traces.map(([name, t]) => roundTripList(name, t)),
    ],
    notes: [
      `Server CPU per request: refresh ${num(cpuMs(gRefresh), 2)} ms against ${num(cpuMs(bRefresh), 2)} ms for the minimal ` +
        `server; introspection ${num(cpuMs(gIntrospect), 2)} ms.`,
      'Measured on a loaded machine (other work ran beside it): the ratio, not the absolute figures, is the result.',
    ],
  };
}

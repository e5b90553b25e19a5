/**
 * oauth: the social sign-in callback (`POST /v1/auth/oauth/oidc/callback`) under load on PostgreSQL, against a minimal
 * callback that only redeems the code and verifies the ID token (bench/minimal/oauth.ts, openid-client), in the same
 * run, both against one real OpenID Connect server (oidc-provider, in the benchmark process). Target: Gatehouse keeps at
 * least 0.5× the minimal callback's throughput per CPU (its server CPU per request at most 2× the minimal's), both
 * measured at the same steady request rates (half and four fifths of Gatehouse's closed-loop throughput; the lower
 * ratio counts): a server's CPU per request falls as its request rate rises, and at 64 connections the minimal answers
 * several times as many.
 */
import { CookieJar, startOidcProvider } from '../../apps/server/test/helpers/oauth-idp.ts';
import { config, log } from '../harness/env.ts';
import { api, startGatehouse } from '../harness/gatehouse.ts';
import { load, type Measurement, type Scenario } from '../harness/load.ts';
import { scratchDatabase } from '../harness/postgres.ts';
import { freePort, startServer } from '../harness/processes.ts';
import { cpuMs, num, ratioTarget, type SuiteResult } from '../harness/report.ts';

const ORIGIN = 'https://app.bench.test';
const MINIMAL_REDIRECT = 'http://minimal.bench.test/callback';
/** Starts per application and client address are limited (100 per 5 minutes): the codes are spread over applications. */
const STARTS_PER_APP = 90;

interface Pair {
  app?: string;
  code: string;
  state: string;
}

/** Authorizations in parallel, `parallel` at a time. */
async function collect(count: number, parallel: number, make: (i: number) => Promise<Pair>): Promise<Pair[]> {
  const pairs: Pair[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) pairs.push(await make(next++));
    }),
  );
  return pairs;
}

const callback = (path: string, pairs: Pair[]): Scenario => ({
  method: 'POST',
  path,
  headers: {},
  request: () => {
    const pair = pairs.pop();
    if (!pair) throw new Error('the prepared authorization codes ran out: raise BENCH_OAUTH_MAX_RATE');
    const headers: Record<string, string> = pair.app ? { 'x-application-id': pair.app } : {};
    return {
      headers,
      body: JSON.stringify({ code: pair.code, state: pair.state }),
    };
  },
});

export async function oauthSuite(): Promise<SuiteResult> {
  const db = await scratchDatabase();
  const idpPort = await freePort();
  const { server, app, env } = await startGatehouse('Gatehouse', db.url, {
    fields: { allowed_origins: [ORIGIN] },
    env: { GATEHOUSE_ALLOW_INSECURE_OIDC: '1' },
  });
  const gatehouseRedirect = `http://localhost:${new URL(server.url).port}/v1/auth/oauth/redirect`;
  // ID tokens carry the email, so neither side calls UserInfo; codes live long enough to be prepared before the load.
  const idp = await startOidcProvider({
    port: idpPort,
    redirectUris: [gatehouseRedirect, MINIMAL_REDIRECT],
    claimsInIdToken: true,
    codeTtlS: 3600,
  });
  idp.accounts.set('bench', { email: 'bench@example.com', email_verified: true, name: 'Bench' });
  const minimal = await startServer(
    'minimal',
    {
      MINIMAL_ISSUER: idp.issuer,
      MINIMAL_CLIENT_ID: idp.clientId,
      MINIMAL_CLIENT_SECRET: idp.clientSecret,
      MINIMAL_REDIRECT_URI: MINIMAL_REDIRECT,
    },
    'bench/minimal/oauth.ts',
  );

  // One browser, signed in at the provider and consented once: later authorizations go straight back with a code.
  const jar = new CookieJar();
  const codeOf = async (authorizationUrl: string, app?: string): Promise<Pair> => {
    const back = new URL(await idp.authorize(authorizationUrl, 'bench', { jar }));
    const code = back.searchParams.get('code');
    if (!code) throw new Error(`the provider answered no code: ${back}`);
    return { app, code, state: back.searchParams.get('state')! };
  };
  const startAt = async (id: string) => {
    const started = await api(
      server.url,
      'POST',
      '/v1/auth/oauth/oidc/start',
      { 'x-application-id': id },
      { redirect_uri: `${ORIGIN}/callback` },
    );
    return codeOf(started.authorization_url, id);
  };
  await codeOf((await api(minimal.url, 'POST', '/start', {})).authorization_url);

  const apps: string[] = [];
  const operator = { authorization: `Bearer ${env.GATEHOUSE_OPERATOR_TOKEN}` };
  /**
   * An application with the provider set up, which the person signs in to once (their first sign-in there creates the
   * user and links the identity): the load measures returning sign-ins, the callback the minimal is compared with.
   */
  const addApp = async (id: string, sk: Record<string, string>) => {
    await api(server.url, 'PUT', `/v1/applications/${id}/providers/oauth/oidc`, sk, {
      issuer: idp.issuer,
      client_id: idp.clientId,
      client_secret: idp.clientSecret,
      enabled: true,
    });
    const { code, state } = await startAt(id);
    const first = await api(server.url, 'POST', '/v1/auth/oauth/oidc/callback', { 'x-application-id': id }, { code, state });
    if (first.status !== 'complete') throw new Error(`the callback did not sign in: ${JSON.stringify(first)}`);
    apps.push(id);
  };
  await addApp(app.id, app.sk);

  const gatehousePairs: Pair[] = [];
  const minimalPairs: Pair[] = [];
  let prepared = 0;
  /** `count` more authorizations for each server, prepared while neither is measured. */
  const prepare = async (count: number) => {
    log(`oauth: preparing ${count} authorizations for each server`);
    const first = prepared;
    prepared += count;
    // Starts are rate limited per application and client address: they are spread over applications.
    while (apps.length * STARTS_PER_APP < prepared) {
      const created = await api(
        server.url,
        'POST',
        '/v1/applications',
        operator,
        { name: 'Bench', allowed_origins: [ORIGIN] },
        201,
      );
      const id = created.application.id as string;
      await addApp(id, { authorization: `Bearer ${created.secret_key.secret}`, 'x-application-id': id });
    }
    gatehousePairs.push(...(await collect(count, 8, (i) => startAt(apps[Math.floor((first + i) / STARTS_PER_APP)]!))));
    minimalPairs.push(
      ...(await collect(count, 8, async () => codeOf((await api(minimal.url, 'POST', '/start', {})).authorization_url))),
    );
    // The preparation's rows vacuumed and analyzed now, so that autovacuum does not run during a measured load.
    await db.client.query('vacuum analyze');
  };

  // Each at 64 connections (its own closed-loop rate; it warms both up), then both under steady open loads at two common
  // rates, half and four fifths of Gatehouse's closed-loop throughput: the CPU figures compared are those at one load.
  await prepare(config.oauthMaxRate * (config.durationSeconds + 2 * config.warmupSeconds + 10));
  const gatehouseScenario = callback('/v1/auth/oauth/oidc/callback', gatehousePairs);
  const minimalScenario = callback('/callback', minimalPairs);
  const g = await load(server, gatehouseScenario, db);
  const b = await load(minimal, minimalScenario);
  const rates = [1 / 2, 4 / 5].map((share) => Math.max(1, Math.round(g.requestsPerSecond * share)));
  await prepare(rates.reduce((sum, rate) => sum + rate * (config.durationSeconds + 2 * config.warmupSeconds + 5), 0));
  // Each pair back to back: the two loads compared meet the same machine.
  const gSteady: Measurement[] = [];
  const bSteady: Measurement[] = [];
  for (const rate of rates) {
    gSteady.push(await load(server, gatehouseScenario, db, config.durationSeconds, rate));
    bSteady.push(await load(minimal, minimalScenario, undefined, config.durationSeconds, rate));
  }
  await server.stop();
  await minimal.stop();
  await idp.close();
  const atRates = rates.map((rate, i) => ({ rate, gCpu: cpuMs(gSteady[i]!), bCpu: cpuMs(bSteady[i]!) }));
  const [gClosed, bClosed] = [cpuMs(g), cpuMs(b)];
  const sameRate = atRates.map(
    ({ rate, gCpu, bCpu }) =>
      `at ${rate} req/s each: Gatehouse ${num(gCpu, 2)} ms of server CPU per callback, the minimal ${num(bCpu, 2)} ms ` +
      `(${num(bCpu / gCpu, 2)}×)`,
  );
  const closed =
    `at 64 connections (each at its own rate): Gatehouse ${num(gClosed, 2)} ms at ${num(g.requestsPerSecond, 0)} req/s, ` +
    `the minimal ${num(bClosed, 2)} ms at ${num(b.requestsPerSecond, 0)} req/s (${num(bClosed / gClosed, 2)}×; ` +
    `throughput ${num(g.requestsPerSecond / b.requestsPerSecond, 2)}×)`;
  log(`oauth: ${[...sameRate, closed].join('; ')}`);
  return {
    title: 'OAuth: the sign-in callback against a minimal code exchange and ID-token check',
    software: [db.version],
    targets: atRates.map(({ rate, gCpu, bCpu }) =>
      ratioTarget(
        `\`POST /v1/auth/oauth/{provider}/callback\` throughput per CPU second vs the minimal callback, both at ${rate} req/s`,
        1000 / gCpu,
        1000 / bCpu,
        'req/CPU-s',
        '≥',
        0.5,
      ),
    ),
    method: [
      'One real OpenID Connect server (oidc-provider, in the benchmark process, client_secret_basic, PKCE required, the ' +
        'email in the ID token so neither side calls UserInfo). For each server, authorization codes are prepared while ' +
        `neither is measured (${prepared}; then the database is vacuumed and analyzed): its start, then the provider's ` +
        'authorization with one signed-in browser ' +
        `session. Gatehouse's starts are spread over ${apps.length} applications (starts are rate limited per application ` +
        'and client address); the person signs in to each application once before the load (the first sign-in creates ' +
        'the user), so every callback under load signs in a returning user (state consumed, code exchanged, ID token ' +
        'verified, identity found and marked used, session opened, tokens signed) and must answer 200.',
      'Minimal (bench/minimal/oauth.ts): fastify + openid-client, state in memory, the same exchange and ID-token ' +
        'checks, no database. CPU per request is the server process’s in the load window; throughput per CPU ' +
        'second is its inverse (the requests one fully busy core would answer).',
      'Each server runs at 64 connections (closed loop: its own rate; this warms both up); then both, one after the ' +
        `other at each rate, under steady open loads at half and four fifths of Gatehouse's closed-loop throughput (${rates.join(' and ')} ` +
        'req/s; request i sent at i / rate). The targets compare the CPU per ' +
        'request at those common rates: a server answers more requests per event-loop turn (fewer wake-ups and system ' +
        `calls each) the faster they come, so its CPU per request falls as its rate rises, and at 64 connections the minimal ran at ${num(b.requestsPerSecond / g.requestsPerSecond, 1)}× ` +
        `Gatehouse’s rate (its process using ${num(b.serverCores * 100, 0)} % of a core, the benchmark process with ` +
        `the provider ${num(b.loadGeneratorCores * 100, 0)} %). Comparing the closed-loop figures would credit the ` +
        'minimal with that batching; they are in the table and the notes. The closed-loop throughputs are no measure of ' +
        'the callbacks either: the machine is full (PostgreSQL, the provider and the load generator share its two cores), ' +
        'and only Gatehouse writes to a database.',
    ],
    measurements: [g, ...gSteady, b, ...bSteady],
    details: [],
    notes: [...sameRate, closed].map((line) => `${line[0]!.toUpperCase()}${line.slice(1)}.`),
  };
}

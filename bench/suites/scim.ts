/**
 * scim: a directory's SCIM 2.0 service under load on PostgreSQL. `POST /scim/v2/{id}/Users` beside `POST /v1/users`
 * in the same run (a SCIM create is a user, a directory user and a membership, with their events); then
 * BENCH_SCIM_USERS directory users seeded in SQL and `GET /Users?filter=userName eq "…"` among them under a steady
 * load; one group PATCH adding 1 000 members; and BENCH_SCIM_PROVISION users provisioned through the API in parallel
 * and listed back page by page.
 */
import { config, log, onCleanup } from '../harness/env.ts';
import { api, startGatehouse } from '../harness/gatehouse.ts';
import { load, type Scenario } from '../harness/load.ts';
import { roundTripList, startPgTrace, type TracedScenario, traceRequests } from '../harness/pg-trace.ts';
import { scratchDatabase } from '../harness/postgres.ts';
import { startServer } from '../harness/processes.ts';
import { limitTarget, num, ratioTarget, type SuiteResult } from '../harness/report.ts';

const SEEDED = config.scimUsers;
const PROVISION = config.scimProvision;
const MEMBERS = 1000;
const TRACE = { warmup: 50, count: 10 };

const scimHeaders = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' });

let sent = 0;
const createUsers = (headers: Record<string, string>): Scenario => ({
  method: 'POST',
  path: '/v1/users',
  headers,
  request: () => ({ body: JSON.stringify({ primary_email: `api-${process.pid}-${++sent}@bench.example.com` }) }),
  expect: 201,
});

const createScimUsers = (directoryId: string, token: string): Scenario => ({
  method: 'POST',
  path: `/scim/v2/${directoryId}/Users`,
  headers: scimHeaders(token),
  request: () => {
    const email = `scim-${process.pid}-${++sent}@bench.example.com`;
    return {
      body: JSON.stringify({
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: email,
        name: { givenName: 'Bench', familyName: 'User' },
        emails: [{ primary: true, type: 'work', value: email }],
        active: true,
      }),
    };
  },
  expect: 201,
});

const filterUsers = (directoryId: string, token: string): Scenario => ({
  method: 'GET',
  path: `/scim/v2/${directoryId}/Users?filter=userName%20eq%20%22seed-0%40bench.example.com%22`,
  headers: { authorization: `Bearer ${token}` },
  request: () => {
    const i = Math.floor(Math.random() * SEEDED);
    return { path: `/scim/v2/${directoryId}/Users?filter=${encodeURIComponent(`userName eq "SEED-${i}@bench.example.com"`)}` };
  },
  response: (_state, _status, body) => {
    if (JSON.parse(body).totalResults !== 1) throw new Error(`a seeded userName was not found: ${body.slice(0, 200)}`);
  },
  expect: 200,
});

async function scim(url: string, directoryId: string, token: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${url}/scim/v2/${directoryId}${path}`, {
    method,
    headers: scimHeaders(token),
    body: body !== undefined ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(60_000),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`SCIM ${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

export async function scimSuite(): Promise<SuiteResult> {
  const db = await scratchDatabase();
  const { server, app, env } = await startGatehouse('Gatehouse', db.url);
  const org = await api(server.url, 'POST', '/v1/organizations', app.sk, { name: 'Bench Inc' }, 201);
  const directory = await api(
    server.url,
    'POST',
    `/v1/organizations/${org.id}/directories`,
    app.sk,
    { name: 'Bench', provider: 'okta' },
    201,
  );
  const { id: directoryId, token } = directory as { id: string; token: string };

  const users = await load(server, createUsers(app.sk), db);
  const scimCreates = await load(server, createScimUsers(directoryId, token), db);
  const shown = await api(server.url, 'GET', `/v1/organizations/${org.id}/directories/${directoryId}`, app.sk);
  if (shown.user_count < scimCreates.expected)
    throw new Error(`${shown.user_count} directory users for ${scimCreates.expected} 201s`);

  // BENCH_SCIM_USERS more, in SQL: users and their directory users, one statement each.
  const started = performance.now();
  await db.client.query(
    `insert into users (id, application_id, primary_email, email_normalized, email_verified, status, profile, created_at, updated_at)
     select gen_random_uuid(), $1, 'seed-' || i || '@bench.example.com', 'seed-' || i || '@bench.example.com', false, 'active',
            '{}', now(), now() from generate_series(0, $2 - 1) i`,
    [app.id, SEEDED],
  );
  await db.client.query(
    `insert into directory_users (id, application_id, directory_id, user_id, user_name, user_name_normalized, external_id,
                                  active, resource, created_at, updated_at)
     select gen_random_uuid(), u.application_id, $2, u.id, u.primary_email, u.email_normalized, null, true,
            jsonb_build_object('userName', u.primary_email, 'emails', jsonb_build_array(jsonb_build_object('value', u.primary_email, 'primary', true))),
            now(), now()
       from users u where u.application_id = $1 and u.email_normalized like 'seed-%'`,
    [app.id, directoryId],
  );
  // As a deployment that has had these users a while: vacuumed and analyzed (the benchmark's PostgreSQL may run without
  // autovacuum) and the seed's dirty pages written out, so that the loads below do not share the machine with the
  // seed's write-back (a checkpoint flushing them, with its fsyncs, during the steady load).
  await db.client.query('vacuum (analyze) users, directory_users');
  await db.client.query('checkpoint');
  log(`seeded ${num(SEEDED)} directory users in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const filterClosed = await load(server, filterUsers(directoryId, token), db);
  const FILTER_RATE = config.scimFilterRate || Math.max(10, Math.round(filterClosed.requestsPerSecond / 2));
  // A paced load cannot read the answers: the closed loop above checked them.
  const { response: _checked, ...unchecked } = filterUsers(directoryId, token);
  const filterSteady = await load(server, unchecked, db, config.durationSeconds, FILTER_RATE);

  // One PATCH adding 1 000 members (existing directory users), five times, each on a new group.
  const memberIds = (
    await db.client.query('select user_id from directory_users where directory_id = $1 order by user_id limit $2', [
      directoryId,
      MEMBERS * 5,
    ])
  ).rows.map((r: { user_id: string }) => r.user_id);
  const patchMs: number[] = [];
  for (let round = 0; round < 5; round++) {
    const group = await scim(server.url, directoryId, token, 'POST', '/Groups', { displayName: `Bench group ${round}` });
    const members = memberIds.slice(round * MEMBERS, (round + 1) * MEMBERS).map((value) => ({ value }));
    const t = performance.now();
    await scim(server.url, directoryId, token, 'PATCH', `/Groups/${group.id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'add', path: 'members', value: members }],
    });
    patchMs.push(performance.now() - t);
    const back = await scim(server.url, directoryId, token, 'GET', `/Groups/${group.id}`);
    if (back.members.length !== MEMBERS) throw new Error(`the group has ${back.members.length} members, not ${MEMBERS}`);
  }
  const patchSorted = [...patchMs].sort((a, b) => a - b);

  // BENCH_SCIM_PROVISION users through the API, 32 at a time (an identity provider's first sync), then listed back.
  const provisionDirectory = await api(
    server.url,
    'POST',
    `/v1/organizations/${org.id}/directories`,
    app.sk,
    { name: 'Provisioned', provider: 'entra' },
    201,
  );
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < PROVISION) {
        const i = next++;
        const email = `provision-${i}@bench.example.com`;
        await scim(server.url, provisionDirectory.id, provisionDirectory.token, 'POST', '/Users', {
          schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
          userName: email,
          emails: [{ primary: true, value: email }],
        });
      }
    }),
  );
  const provisionS = (performance.now() - t0) / 1000;
  const t1 = performance.now();
  const seen = new Set<string>();
  for (let start = 1; start <= PROVISION; start += 1000) {
    const page = await scim(
      server.url,
      provisionDirectory.id,
      provisionDirectory.token,
      'GET',
      `/Users?startIndex=${start}&count=1000`,
    );
    if (page.totalResults !== PROVISION) throw new Error(`listed ${page.totalResults} users, not ${PROVISION}`);
    for (const u of page.Resources) seen.add(u.id);
  }
  if (seen.size !== PROVISION) throw new Error(`listed ${seen.size} distinct users, not ${PROVISION}`);
  const listS = (performance.now() - t1) / 1000;
  log(`provisioned ${num(PROVISION)} users in ${provisionS.toFixed(1)} s, listed them in ${listS.toFixed(1)} s`);
  await server.stop();

  // The round trips: the server again, behind the protocol tracer, one request at a time.
  const trace = await startPgTrace(new URL(db.url));
  onCleanup('close the PostgreSQL tracer', () => trace.close());
  const traced = await startServer('Gatehouse (traced)', { ...env, DATABASE_URL: trace.url });
  const traces: Array<[string, TracedScenario]> = [];
  for (const scenario of [createUsers(app.sk), createScimUsers(directoryId, token), filterUsers(directoryId, token)])
    traces.push([
      `${scenario.method} ${scenario.path.replace(directoryId, '{id}')}`,
      await traceRequests(traced.url, scenario, trace, TRACE),
    ]);
  await traced.stop();

  return {
    title: 'SCIM: provisioning users and groups through a directory',
    software: [db.version],
    targets: [
      ratioTarget(
        '`POST /scim/v2/{id}/Users` throughput against `POST /v1/users`',
        scimCreates.requestsPerSecond,
        users.requestsPerSecond,
        'req/s',
        '≥',
        0.8,
      ),
      limitTarget(
        `\`GET /Users?filter=userName eq …\` p95 at ${FILTER_RATE} req/s (${num(SEEDED)} users)`,
        filterSteady.p95Ms,
        'ms',
        10,
      ),
      limitTarget(
        `group PATCH adding ${num(MEMBERS)} members (slowest of 5)`,
        patchSorted[patchSorted.length - 1] ?? NaN,
        'ms',
        1000,
      ),
    ],
    method: [
      'Gatehouse: the server as `npm start` runs it (bundled, `apps/server/start.js`) on a scratch PostgreSQL database; an application, an organization and ' +
        'an `okta` directory made through the API; SCIM requests carry the directory token, `/v1` requests the secret key.',
      '`POST /v1/users` (a new address each time) and `POST /scim/v2/{id}/Users` (a new userName and address each time: a ' +
        'new Gatehouse user, its directory user and its membership, with `user.created`, `directory_user.created` and ' +
        '`organization_membership.created`) at the same connections, one after the other.',
      `${num(SEEDED)} more directory users inserted in SQL (users, then directory users; VACUUM (ANALYZE) of both, then a ` +
        'CHECKPOINT: the loads do not overlap the write-back of the seed), then ' +
        '`GET /Users?filter=userName eq "SEED-<random>@bench.example.com"` (upper-cased: the match is case-insensitive), ' +
        `closed-loop, then at a steady ${FILTER_RATE} req/s (half the closed loop's throughput unless ` +
        '`BENCH_SCIM_FILTER_RATE` says otherwise); each answer of the closed loop must find exactly one user.',
      `A group PATCH adding ${num(MEMBERS)} existing users in one \`add\` operation, timed from the client, five times on ` +
        `five new groups; each group then read back with its ${num(MEMBERS)} members.`,
      `${num(PROVISION)} users provisioned through \`POST /Users\` by 32 concurrent clients into a second directory, then ` +
        'listed back in pages of 1 000 (`startIndex`/`count`), every id seen once.',
      'Round trips: the server started again with `DATABASE_URL` pointing at a PostgreSQL protocol tracer ' +
        `(harness/pg-trace.ts); \`POST /v1/users\`, a SCIM create and the filter, one request at a time, ${TRACE.warmup} ` +
        `uncounted, then ${TRACE.count} (medians; the list of one).`,
    ],
    measurements: [users, scimCreates, filterClosed, filterSteady],
    details: [
      `| step | time |\n|---|---|\n` +
        `| group PATCH, ${num(MEMBERS)} members (5 runs) | ${patchSorted.map((m) => `${num(m)} ms`).join(', ')} |\n` +
        `| ${num(PROVISION)} users provisioned (32 clients) | ${provisionS.toFixed(1)} s (${num(PROVISION / provisionS)} users/s) |\n` +
        `| ${num(PROVISION)} users listed (pages of 1 000) | ${listS.toFixed(1)} s |`,
      [
        '| scenario (traced, one client) | round trips | statements | waiting on PostgreSQL ms | latency ms |',
        '|---|---:|---:|---:|---:|',
        ...traces.map(
          ([name, t]) =>
            `| ${name} | ${t.roundTrips} | ${t.typical.reduce((n, trip) => n + trip.statements.length, 0)} | ` +
            `${num(t.databaseMs, 2)} | ${num(t.latencyMs, 2)} |`,
        ),
      ].join('\n'),
      ...traces.map(([name, t]) => roundTripList(name, t)),
    ],
    notes: [
      `A SCIM create writes four rows and three events (a read, then one statement that also asks the seat check's clear ` +
        `condition) where \`POST /v1/users\` writes one row and one event: ${num(scimCreates.requestsPerSecond)} against ` +
        `${num(users.requestsPerSecond)} req/s.`,
    ],
  };
}

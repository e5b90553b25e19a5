/**
 * authz: `POST /v1/authz/check` at BENCH_AUTHZ_TUPLES relationship tuples (a realistic graph: organizations with
 * members, teams, folders and documents; subject sets three deep), at 64 connections and at half of the maximum
 * throughput, Gatehouse against a minimal fastify + pg server running the same recursive query as a named prepared
 * statement (bench/minimal/authz.ts), on the same tables, in the same run.
 */
import { config, log } from '../harness/env.ts';
import { api, startGatehouse } from '../harness/gatehouse.ts';
import { load, type Measurement, type Scenario } from '../harness/load.ts';
import { type ScratchDatabase, scratchDatabase } from '../harness/postgres.ts';
import { startServer } from '../harness/processes.ts';
import { cpuMs, num, ratioTarget, type SuiteResult, type Target } from '../harness/report.ts';

const dbMs = (m: Measurement) => (m.databaseCores * 1000) / m.requestsPerSecond;

/** Per organization: 10 users, 4 teams, 5 folders, 35 documents; 100 tuples (see `seed`). */
const TUPLES_PER_ORG = 100;
const USERS_PER_ORG = 10;
const DOCS_PER_ORG = 35;
const P95_TARGET_MS = 5;

const userId = (u: string) => `md5('user' || ${u})::uuid`;

/**
 * The graph, generated in SQL (ids derived with md5, so the load generator can name them): user u belongs to
 * organization u % O (the first user of each is its admin) and to 2 of its 4 teams; folder f of an organization is
 * viewable by one team and by the organization's admins; document d is in folder d % 5 (doc#viewer@folder#viewer) and
 * owned by one of the organization's users. doc → folder → team → user: three subject sets deep.
 */
function seed(applicationId: string, orgs: number): string[] {
  if (!/^[0-9a-f-]{36}$/.test(applicationId)) throw new Error(`not a UUID: ${applicationId}`);
  const app = `'${applicationId}'::uuid`;
  const users = orgs * USERS_PER_ORG;
  const org = (o: string) => `md5('org' || ${o})::uuid`;
  return [
    `insert into users (id, application_id, primary_email, email_normalized, email_verified, status, profile, created_at, updated_at)
       select ${userId('u')}, ${app}, 'u' || u || '@bench.example.com', 'u' || u || '@bench.example.com', true, 'active', '{}', now(), now()
         from generate_series(0, ${users - 1}) u`,
    `insert into organizations (id, application_id, name, slug, created_at, updated_at)
       select ${org('o')}, ${app}, 'Org ' || o, 'org-' || o, now(), now() from generate_series(0, ${orgs - 1}) o`,
    `insert into organization_members (id, application_id, organization_id, user_id, role, created_at, updated_at)
       select gen_random_uuid(), ${app}, ${org(`(u % ${orgs})`)}, ${userId('u')},
              case when u < ${orgs} then 'admin' else 'member' end, now(), now()
         from generate_series(0, ${users - 1}) u`,
    `insert into authz_tuples (id, application_id, object_type, object_id, relation, subject_type, subject_id, subject_relation, revision, created_at)
       select gen_random_uuid(), ${app}, t.*, 1, now() from (
         select 'team', 't' || (u % ${orgs}) || '-' || ((u / ${orgs} + k) % 4), 'member', 'user', ${userId('u')}::text, ''
           from generate_series(0, ${users - 1}) u, generate_series(0, 1) k
         union all
         select 'folder', 'f' || o || '-' || f, 'viewer', 'team', 't' || o || '-' || (f % 4), 'member'
           from generate_series(0, ${orgs - 1}) o, generate_series(0, 4) f
         union all
         select 'folder', 'f' || o || '-' || f, 'viewer', 'organization', ${org('o')}::text, 'admin'
           from generate_series(0, ${orgs - 1}) o, generate_series(0, 4) f
         union all
         select 'doc', 'd' || o || '-' || d, 'viewer', 'folder', 'f' || o || '-' || (d % 5), 'viewer'
           from generate_series(0, ${orgs - 1}) o, generate_series(0, ${DOCS_PER_ORG - 1}) d
         union all
         select 'doc', 'd' || o || '-' || d, 'owner', 'user', ${userId(`(o + ${orgs} * (d % ${USERS_PER_ORG}))`)}::text, ''
           from generate_series(0, ${orgs - 1}) o, generate_series(0, ${DOCS_PER_ORG - 1}) d
       ) t`,
    `select setval('authz_revisions', 1)`,
    'analyze users, organizations, organization_members, authz_tuples',
  ];
}

/** The md5-derived user ids, computed once by the database (the load generator names users by them). */
async function userIds(db: ScratchDatabase, count: number): Promise<string[]> {
  const { rows } = await db.client.query<{ id: string }>(
    `select ${userId('u')}::text as id from generate_series(0, ${count - 1}) u order by u`,
  );
  return rows.map((r) => r.id);
}

/** A document of a random organization, asked for one of its own users (3 in 4) or any user. */
function checks(headers: Record<string, string>, orgs: number, users: string[]): Scenario {
  return {
    method: 'POST',
    path: '/v1/authz/check',
    headers,
    request: () => {
      const o = Math.floor(Math.random() * orgs);
      const d = Math.floor(Math.random() * DOCS_PER_ORG);
      const u =
        Math.random() < 0.75 ? o + orgs * Math.floor(Math.random() * USERS_PER_ORG) : Math.floor(Math.random() * users.length);
      return { body: JSON.stringify({ object: `doc:d${o}-${d}`, relation: 'viewer', subject: `user:${users[u]}` }) };
    },
  };
}

/** The same questions to both servers: the answers must agree, and some must be allowed and some denied. */
async function sample(url: string, headers: Record<string, string>, orgs: number, users: string[]) {
  const answers: boolean[] = [];
  for (let i = 0; i < 200; i++) {
    const o = (i * 7919) % orgs;
    const body = { object: `doc:d${o}-${i % DOCS_PER_ORG}`, relation: 'viewer', subject: `user:${users[o + orgs * (i % 10)]}` };
    answers.push((await api(url, 'POST', '/v1/authz/check', headers, body)).allowed);
  }
  return answers;
}

export async function authzSuite(): Promise<SuiteResult> {
  const orgs = Math.max(1, Math.round(config.authzTuples / TUPLES_PER_ORG));
  const tuples = orgs * TUPLES_PER_ORG;
  const db = await scratchDatabase();
  const { server, app } = await startGatehouse('Gatehouse', db.url);
  const started = performance.now();
  for (const statement of seed(app.id, orgs)) await db.client.query(statement);
  log(`seeded ${num(tuples)} tuples (${num(orgs)} organizations) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const users = await userIds(db, orgs * USERS_PER_ORG);
  const stored = await api(server.url, 'GET', '/v1/authz/tuples?limit=1', app.sk);
  if (stored.total !== tuples) throw new Error(`${stored.total} tuples stored, ${tuples} seeded`);
  const answers = await sample(server.url, app.sk, orgs, users);
  const allowedShare = answers.filter(Boolean).length / answers.length;
  if (allowedShare === 0 || allowedShare === 1) throw new Error(`every sample check answered ${answers[0]}`);

  const scenario = checks(app.sk, orgs, users);
  const gatehouse = await load(server, scenario, db);
  const gatehouseHalf = await load(server, scenario, db, config.durationSeconds, gatehouse.requestsPerSecond / 2);
  await server.stop();

  const minimal = await startServer(
    'minimal',
    { DATABASE_URL: db.url, MINIMAL_SECRET_KEY: app.secretKey },
    'bench/minimal/authz.ts',
  );
  if ((await sample(minimal.url, app.sk, orgs, users)).join() !== answers.join())
    throw new Error('the minimal server answered otherwise');
  const baseline = await load(minimal, scenario, db);
  const baselineHalf = await load(minimal, scenario, db, config.durationSeconds, baseline.requestsPerSecond / 2);
  await minimal.stop();

  // The plan of one denied check (the whole reachable graph is walked), warm: the third run.
  const o = Math.floor(orgs / 2);
  const explain = `explain (analyze, buffers, costs off) with recursive reach(t, i, r, d) as (
      select 'doc'::text, 'd${o}-3'::text, 'viewer'::text, 0
      union
      select x.subject_type, x.subject_id, x.subject_relation, reach.d + 1 from reach join authz_tuples x
        on x.application_id = '${app.id}' and x.object_type = reach.t and x.object_id = reach.i and x.relation = reach.r
       where reach.d < 26 and x.subject_relation <> '')
    select exists (select 1 from reach join authz_tuples x
                on x.application_id = '${app.id}' and x.object_type = reach.t and x.object_id = reach.i and x.relation = reach.r
               where reach.d < 26 and x.subject_type = 'user' and x.subject_id = '${users[(o + 1) % users.length]}' and x.subject_relation = '')
        or exists (select 1 from organization_members m join reach
                on reach.t = 'organization' and reach.i = m.organization_id::text and (reach.r = 'member' or reach.r = m.role)
               where m.user_id = '${users[(o + 1) % users.length]}' and m.application_id = '${app.id}' and reach.d < 26) as allowed`;
  let plan = '';
  for (let i = 0; i < 3; i++)
    plan = (await db.client.query<{ 'QUERY PLAN': string }>(explain)).rows.map((r) => r['QUERY PLAN']).join('\n');

  const name = `\`POST /v1/authz/check\` (${num(tuples)} tuples)`;
  const p95: Target = {
    name: `${name} p95 at half of the maximum throughput`,
    gatehouse: `${num(gatehouseHalf.p95Ms, 1)} ms`,
    baseline: `${num(baselineHalf.p95Ms, 1)} ms`,
    required: `≤ ${P95_TARGET_MS} ms`,
    pass: gatehouseHalf.p95Ms <= P95_TARGET_MS,
  };
  return {
    title: 'Authorization: checking relationship tuples against a minimal server',
    software: [db.version],
    targets: [ratioTarget(`${name} throughput`, gatehouse.requestsPerSecond, baseline.requestsPerSecond, 'req/s', '≥', 0.6), p95],
    method: [
      `${num(tuples)} tuples of one application, generated in SQL: ${num(orgs)} organizations of ${USERS_PER_ORG} users ` +
        `(${num(orgs * USERS_PER_ORG)} users and memberships; the first user of each is its admin), each user in 2 of its ` +
        'organization\u2019s 4 teams (`team#member@user`), 5 folders per organization viewable by one team and by the ' +
        `organization\u2019s admins (\`folder#viewer@team#member\`, \`folder#viewer@organization#admin\`), ${DOCS_PER_ORG} ` +
        'documents per organization in those folders (`doc#viewer@folder#viewer`) each with an owner (`doc#owner@user`): ' +
        'doc → folder → team → user is three subject sets deep, and the organization userset resolves from the membership table.',
      'Each request asks `doc:<random document>#viewer` for one of the organization\u2019s users (3 in 4) or any user: about ' +
        `${num(allowedShare * 100)} % are allowed. Both servers must give the same answers to 200 sample checks first.`,
      'Gatehouse: the server as `npm start` runs it (bundled, `apps/server/start.js`) on a scratch PostgreSQL database (its pool of 20), the secret key on every ' +
        'request. minimal: `node bench/minimal/authz.ts` (fastify + pg, pool of 20): the same recursive statement as a named ' +
        'prepared statement, on the same tables and indexes.',
      'Each server is measured at 64 connections (closed loop: its maximum throughput), then under a steady open load of ' +
        'half that throughput (request i sent at i / rate whether or not earlier ones were answered; latency from the ' +
        'scheduled send): the latency at a realistic load.',
    ],
    measurements: [gatehouse, gatehouseHalf, baseline, baselineHalf],
    details: [`The plan of a denied check (the whole reachable graph walked), warm:\n\n\`\`\`\n${plan}\n\`\`\``],
    notes: [
      `Gatehouse served ${(gatehouse.requestsPerSecond / baseline.requestsPerSecond).toFixed(2)}× the minimal server\u2019s ` +
        `throughput; at half load its p95 was ${num(gatehouseHalf.p95Ms, 1)} ms (the minimal server\u2019s ` +
        `${num(baselineHalf.p95Ms, 1)} ms at half of its own maximum).`,
      `Where the difference goes, per check at 64 connections: server CPU ${num(cpuMs(gatehouse), 2)} ms against ` +
        `${num(cpuMs(baseline), 2)} ms, PostgreSQL CPU ${num(dbMs(gatehouse), 2)} ms against ${num(dbMs(baseline), 2)} ms. ` +
        'The check statement is the same walk; Gatehouse\u2019s also reads the application and the secret key (a live key ' +
        'with the scope gates the walk, so it is still one round trip), and the call goes through what every management ' +
        'call does: its fastify route, tRPC\u2019s middlewares (the key judged, errors mapped), zod input and output, the ' +
        'envelope, the request id, metrics and logging.',
      `The check itself at this scale: ${plan.match(/Execution Time: [\d.]+ ms/)?.[0] ?? 'see the plan'} (the plan below).`,
    ],
  };
}

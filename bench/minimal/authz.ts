/**
 * The baseline of the authz suite: `POST /v1/authz/check` as fastify + pg with nothing around it, on Gatehouse's own
 * `authz_tuples` and `organization_members` tables in the same scratch database: the same recursive query as
 * Gatehouse's check (subject sets walked breadth first with `UNION`, depth 25, organization usersets from the
 * membership table), as one named prepared statement. `node bench/minimal/authz.ts`, configured by PORT, HOST,
 * DATABASE_URL, MINIMAL_SECRET_KEY.
 */
import Fastify from 'fastify';
import pg from 'pg';

const env = (name: string) => process.env[name] ?? `${name} missing`;
const pool = new pg.Pool({ connectionString: env('DATABASE_URL'), max: 20 });
const app = Fastify();
const LIMIT = 26;

const CHECK = `with recursive reach(t, i, r, d) as (
    select $2::text, $3::text, $4::text, 0
    union
    select x.subject_type, x.subject_id, x.subject_relation, reach.d + 1
      from reach join authz_tuples x
        on x.application_id = $1 and x.object_type = reach.t and x.object_id = reach.i and x.relation = reach.r
     where reach.d < ${LIMIT} and x.subject_relation <> ''
  )
  select (
      exists (select 1 from reach where reach.d < ${LIMIT} and reach.t = $5::text and reach.i = $6::text and reach.r = $7::text)
   or exists (select 1 from reach join authz_tuples x
                on x.application_id = $1 and x.object_type = reach.t and x.object_id = reach.i and x.relation = reach.r
               where reach.d < ${LIMIT} and x.subject_type = $5::text and x.subject_id = $6::text and x.subject_relation = $7::text)
   or exists (select 1 from organization_members m join reach
                on reach.t = 'organization' and reach.i = m.organization_id::text and (reach.r = 'member' or reach.r = m.role)
               where m.user_id = $8::uuid and m.application_id = $1 and reach.d < ${LIMIT})
    ) as allowed,
    exists (select 1 from reach a where a.d = ${LIMIT} and not exists (
      select 1 from reach b where b.t = a.t and b.i = a.i and b.r = a.r and b.d < ${LIMIT})) as exceeded`;

const split = (text: string, separator: string) => {
  const at = text.indexOf(separator);
  return at < 0 ? [text, ''] : [text.slice(0, at), text.slice(at + 1)];
};

app.get('/readyz', async () => (await pool.query('select 1 as ok')).rows[0]);

app.post<{ Body: { object: string; relation: string; subject: string } }>('/v1/authz/check', async (request, reply) => {
  if (request.headers.authorization !== `Bearer ${env('MINIMAL_SECRET_KEY')}`) return reply.code(401).send();
  const { object, relation, subject } = request.body;
  const [objectType, objectId] = split(object, ':');
  const [subjectRef, subjectRelation] = split(subject, '#');
  const [subjectType, subjectId] = split(subjectRef!, ':');
  const user = subjectType === 'user' && !subjectRelation ? subjectId : null;
  const { rows } = await pool.query({
    name: 'check',
    text: CHECK,
    values: [request.headers['x-application-id'], objectType, objectId, relation, subjectType, subjectId, subjectRelation, user],
  });
  if (!rows[0].allowed && rows[0].exceeded) return reply.code(422).send({ error: { code: 'depth_limit_exceeded' } });
  return { data: { allowed: rows[0].allowed } };
});

await app.listen({ port: Number(env('PORT')), host: env('HOST') });
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => void app.close().then(() => pool.end().then(() => process.exit(0))));
}

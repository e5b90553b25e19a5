/**
 * The baseline of the organizations suite: `GET /v1/organizations?search=` as fastify + pg with the best query written
 * by hand, on Gatehouse's own `organizations` table (its trigram indexes on name and slug) in the same scratch
 * database. `node bench/minimal/organizations.ts`, configured by PORT, HOST, DATABASE_URL, MINIMAL_SECRET_KEY,
 * MINIMAL_COUNT_THRESHOLD.
 *
 * One statement, one round trip: the page (newest first, each organization's member count) and the `total` as two
 * scalar subqueries, so that each gets its own plan. `count` picks the total: `exact` (the default, as Gatehouse
 * answers), `none` (the page alone: what `total` costs), `estimate` (the planner's estimate of the matches when it is
 * above MINIMAL_COUNT_THRESHOLD, answered with `total_estimated: true`; the exact count below it).
 */
import Fastify from 'fastify';
import pg from 'pg';

const env = (name: string) => process.env[name] ?? `${name} missing`;
const THRESHOLD = Number(env('MINIMAL_COUNT_THRESHOLD'));
const pool = new pg.Pool({ connectionString: env('DATABASE_URL'), max: 20 });
const app = Fastify();
const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);
const page = `coalesce((select json_agg(p) from (
    select o.id, o.name, o.slug, (select count(*) from organization_members m where m.organization_id = o.id)::int as member_count,
           o.created_at, o.updated_at
      from organizations o where o.application_id = $1 and (o.name ilike $2 or o.slug ilike $2)
     order by o.created_at desc, o.id desc limit $3 offset $4) p), '[]') as organizations`;
const match = 'from organizations o where o.application_id = $1 and (o.name ilike $2 or o.slug ilike $2)';
const TOTAL = {
  exact: `(select count(*) ${match})::int as total`,
  none: 'null::int as total',
  estimate: `(select case when e > ${THRESHOLD} then e else (select count(*) ${match}) end
     from minimal_estimate(format('select 1 ${match.replaceAll("'", "''").replace('$1', '%L').replaceAll('$2', '%L')}', $1, $2, $2)) e)::int as total`,
};
// The planner's row estimate of a query (EXPLAIN without running it), as the PostgreSQL wiki's count_estimate.
await pool.query(`create or replace function minimal_estimate(query text) returns bigint language plpgsql as $$
  declare plan json; begin execute 'explain (format json) ' || query into plan; return (plan->0->'Plan'->>'Plan Rows')::bigint; end $$`);

app.get('/readyz', async () => (await pool.query('select 1 as ok')).rows[0]);

app.get<{ Querystring: { search?: string; limit?: string; offset?: string; count?: keyof typeof TOTAL } }>(
  '/v1/organizations',
  async (request, reply) => {
    if (request.headers.authorization !== `Bearer ${env('MINIMAL_SECRET_KEY')}`) return reply.code(401).send();
    const { search = '', limit = '25', offset = '0', count = 'exact' } = request.query;
    const total = TOTAL[count] ?? TOTAL.exact;
    const { rows } = await pool.query(`select ${page}, ${total}`, [
      request.headers['x-application-id'],
      `%${escapeLike(search.trim())}%`,
      Number(limit),
      Number(offset),
    ]);
    const row = rows[0];
    const estimated = count === 'estimate' && row.total > THRESHOLD;
    return {
      data: {
        organizations: row.organizations,
        total: row.total,
        total_estimated: estimated,
        limit: Number(limit),
        offset: Number(offset),
      },
    };
  },
);

await app.listen({ port: Number(env('PORT')), host: env('HOST') });
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => void app.close().then(() => pool.end().then(() => process.exit(0))));
}

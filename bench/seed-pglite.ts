/**
 * Seeds organizations into an embedded PGlite data directory while no server holds it (PGlite is single-process):
 * `node bench/seed-pglite.ts <pglite dir> <application id> <count>`. It opens the directory with the project's own
 * `createOrm` (the same driver and options the server uses), applies pending migrations (none: the server ran them),
 * runs the bulk insert and prints one JSON line `{inserted, ms, version}`.
 */
import { createOrm, migrate } from '@gatehouse/api';
import { ANALYZE_SQL, seedOrganizationsSql } from './seed.ts';

const [dataDir, applicationId, countText] = process.argv.slice(2);
if (!dataDir || !applicationId || !countText) {
  console.error('usage: node bench/seed-pglite.ts <pglite dir> <application id> <count>');
  process.exit(2);
}

const started = performance.now();
const orm = await createOrm({ kind: 'pglite', dataDir });
try {
  await migrate(orm);
  const connection = orm.em.getConnection();
  await connection.execute(seedOrganizationsSql(applicationId, Number(countText)), [], 'run');
  await connection.execute(ANALYZE_SQL, [], 'run');
  const [counted] = await connection.execute<Array<{ n: number | string }>>(
    'select count(*) as n from organizations where application_id = ?',
    [applicationId],
  );
  const [version] = await connection.execute<Array<{ server_version: string }>>('show server_version');
  console.log(
    JSON.stringify({
      inserted: Number(counted?.n ?? 0),
      ms: Math.round(performance.now() - started),
      version: version?.server_version ?? 'unknown',
    }),
  );
} finally {
  await orm.close();
}

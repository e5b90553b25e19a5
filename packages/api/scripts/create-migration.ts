/**
 * Generates the next migration from the difference between the entities and the committed migrations.
 * Needs a PostgreSQL server: it creates a scratch database, applies the committed migrations there, diffs, and
 * writes `src/db/migrations/<name>.ts` (then add it to `src/db/migrations/index.ts`).
 *   MIGRATION_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run migration:create -w @gatehouse/api -- name
 */
import { fileURLToPath } from 'node:url';
import { MikroORM } from '@mikro-orm/core';
import { migrate } from '../src/db/orm.ts';
import { createOrm } from '../src/modules.ts';

const admin = process.env.MIGRATION_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const scratch = `gatehouse_migration_${process.pid}`;
const adminOrm = await createOrm({ kind: 'postgres', url: admin, poolSize: 1 });
await adminOrm.em.getConnection().execute(`create database ${scratch}`);
try {
  const url = new URL(admin);
  url.pathname = `/${scratch}`;
  const orm = await createOrm({ kind: 'postgres', url: url.toString(), poolSize: 1 });
  await migrate(orm);
  const path = fileURLToPath(new URL('../src/db/migrations', import.meta.url));
  const result = await orm.migrator.create(path, false, false, process.argv[2]);
  console.log(result.diff.up.length ? `wrote ${result.fileName}` : 'no changes');
  await orm.close();
} finally {
  await adminOrm.em.getConnection().execute(`drop database if exists ${scratch}`);
  await adminOrm.close();
}
void MikroORM;

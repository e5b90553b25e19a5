import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrm, migrate, openPglite } from '@gatehouse/api';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A migrated PGlite data directory (tar) that each test file restores. */
    pgliteSnapshot: string;
    /** DATABASE_URL when set: where each test server creates its own database (PostgreSQL only). */
    databaseUrl: string;
    /** A migrated PostgreSQL database that each test server's database is copied from (`create database … template`). */
    databaseTemplate: string;
  }
}

/**
 * Runs once per test run. PGlite: migrates an embedded database once and snapshots it, because initdb costs
 * seconds of CPU and a restore well under one. PostgreSQL: migrates a template database once; each test server gets a
 * copy of its own (as each PGlite server gets its own restore), because a deployment's processes share everything —
 * the outbox workers of two unrelated test servers on one database would take each other's mail. Dropped at the end.
 */
export default async function setup(project: TestProject) {
  const url = process.env.DATABASE_URL;
  if (url) {
    const name = `gatehouse_test_${Date.now()}_${process.pid}`;
    const admin = await createOrm({ kind: 'postgres', url, poolSize: 1 });
    await admin.em.getConnection().execute(`create database ${name}`);
    const scratch = new URL(url);
    scratch.pathname = `/${name}`;
    const orm = await createOrm({ kind: 'postgres', url: scratch.toString(), poolSize: 1 });
    await migrate(orm);
    await orm.close();
    project.provide('databaseUrl', url);
    project.provide('databaseTemplate', name);
    project.provide('pgliteSnapshot', '');
    return async () => {
      await admin.em.getConnection().execute(`drop database if exists ${name} with (force)`);
      // Copies a test file left behind (a worker killed mid-run) go too.
      const copies = await admin.em
        .getConnection()
        .execute<Array<{ datname: string }>>(`select datname from pg_database where datname like ?`, [`${name}_%`]);
      for (const { datname } of copies) await admin.em.getConnection().execute(`drop database if exists ${datname} with (force)`);
      await admin.close();
    };
  }
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-test-'));
  const pglite = await openPglite();
  const orm = await createOrm({ kind: 'pglite', pglite });
  await migrate(orm);
  await orm.close();
  const snapshot = join(dir, 'migrated.tar');
  await writeFile(snapshot, Buffer.from(await (await pglite.dumpDataDir('none')).arrayBuffer()));
  await pglite.close();
  project.provide('pgliteSnapshot', snapshot);
  project.provide('databaseUrl', '');
  project.provide('databaseTemplate', '');
  return () => rm(dir, { recursive: true, force: true });
}

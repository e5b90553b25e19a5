import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrm, migrate, openPglite } from '@gatehouse/api';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A migrated PGlite data directory (tar) that each test file restores. */
    pgliteSnapshot: string;
    /** A fresh, migrated PostgreSQL database for this run, when DATABASE_URL is set. */
    databaseUrl: string;
  }
}

/**
 * Runs once per test run. PGlite: migrates an embedded database once and snapshots it, because initdb costs
 * seconds of CPU and a restore well under one. PostgreSQL: creates a scratch database, migrates it, drops it at the end.
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
    project.provide('databaseUrl', scratch.toString());
    project.provide('pgliteSnapshot', '');
    return async () => {
      await admin.em.getConnection().execute(`drop database if exists ${name} with (force)`);
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
  return () => rm(dir, { recursive: true, force: true });
}

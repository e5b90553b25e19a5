import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrm, migrate, openPglite } from '@gatehouse/api';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A migrated PGlite data directory (tar) that each test file restores. */
    pgliteSnapshot: string;
    /** The same, unpacked on disk: what a server process started on a copy of it finds (`seedEmbeddedDatabase`). */
    pgliteDataDir: string;
    /** DATABASE_URL when set: where each test server creates its own database (PostgreSQL only). */
    databaseUrl: string;
    /** A migrated PostgreSQL database that each test server's database is copied from (`create database … template`). */
    databaseTemplate: string;
    /**
     * GATEHOUSE_TEST_POOLER_URL when set: a pooler in transaction mode (PgBouncer) in front of DATABASE_URL's server.
     * Test servers then reach their database through it with `pooler: 'transaction'`; databases are still created,
     * copied and dropped on DATABASE_URL directly (a pooler keeps server connections, and a template must have none).
     */
    poolerUrl: string;
  }
}

/**
 * Runs once per test run. PGlite: migrates an embedded database once and snapshots it, because initdb costs
 * seconds of CPU and a restore well under one. PostgreSQL: migrates a template database once; each test server gets a
 * copy of its own (as each PGlite server gets its own restore), because a deployment's processes share everything —
 * the outbox workers of two unrelated test servers on one database would take each other's mail. Dropped at the end.
 * The embedded snapshot is made on PostgreSQL runs too: the files that start the real entry point on the embedded
 * database (lifecycle, the mail outbox across kill -9) run on it whatever DATABASE_URL says.
 */
export default async function setup(project: TestProject) {
  const url = process.env.DATABASE_URL;
  const [embedded, postgres] = await Promise.all([embeddedTemplate(), url ? postgresTemplate(url) : undefined]);
  project.provide('pgliteSnapshot', embedded.snapshot);
  project.provide('pgliteDataDir', embedded.dataDir);
  project.provide('databaseUrl', url ?? '');
  project.provide('databaseTemplate', postgres?.name ?? '');
  project.provide('poolerUrl', url ? (process.env.GATEHOUSE_TEST_POOLER_URL ?? '') : '');
  return async () => {
    await postgres?.drop();
    await embedded.remove();
  };
}

/** A migrated embedded database: as a snapshot (tar) for in-process servers, and unpacked on disk for processes. */
async function embeddedTemplate() {
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-test-'));
  const pglite = await openPglite();
  const orm = await createOrm({ kind: 'pglite', pglite });
  await migrate(orm);
  await orm.close();
  const snapshot = join(dir, 'migrated.tar');
  const tarball = await pglite.dumpDataDir('none');
  await writeFile(snapshot, Buffer.from(await tarball.arrayBuffer()));
  await pglite.close();
  // Server processes open their data directory from disk: a fresh one costs them an initdb (seconds of CPU).
  const dataDir = join(dir, 'db');
  await mkdir(dataDir);
  await (await openPglite(tarball, dataDir)).close();
  return { snapshot, dataDir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** A migrated PostgreSQL database that test databases are created from, dropped with its copies at the end. */
async function postgresTemplate(url: string) {
  const name = `gatehouse_test_${Date.now()}_${process.pid}`;
  const admin = await createOrm({ kind: 'postgres', url, poolSize: 1 });
  await admin.em.getConnection().execute(`create database ${name}`);
  const scratch = new URL(url);
  scratch.pathname = `/${name}`;
  const orm = await createOrm({ kind: 'postgres', url: scratch.toString(), poolSize: 1 });
  await migrate(orm);
  await orm.close();
  return {
    name,
    drop: async () => {
      await admin.em.getConnection().execute(`drop database if exists ${name} with (force)`);
      // Copies a test file left behind (a worker killed mid-run) go too.
      const copies = await admin.em
        .getConnection()
        .execute<Array<{ datname: string }>>(`select datname from pg_database where datname like ?`, [`${name}_%`]);
      for (const { datname } of copies) await admin.em.getConnection().execute(`drop database if exists ${datname} with (force)`);
      await admin.close();
    },
  };
}

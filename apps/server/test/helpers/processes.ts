import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, inject } from 'vitest';

/** A database of a test's own for the real entry point run as a process: its environment and where its data lives. */
export interface ProcessDeployment {
  env: NodeJS.ProcessEnv;
  /** PGlite: the embedded database's directory (the server must not be running while the test opens it). */
  pgliteDir?: string;
  /** PostgreSQL: the deployment's database. */
  databaseUrl?: string;
}

/**
 * How a test server reaches the database `name` on the run's PostgreSQL: directly, or through the run's
 * transaction-mode pooler when there is one (GATEHOUSE_TEST_POOLER_URL, global-setup.ts).
 */
export function serverDatabaseUrl(name: string): { kind: 'postgres'; url: string; pooler: 'direct' | 'transaction' } {
  const pooler = inject('poolerUrl');
  const url = new URL(pooler || inject('databaseUrl'));
  url.pathname = `/${name}`;
  return { kind: 'postgres', url: url.toString(), pooler: pooler ? 'transaction' : 'direct' };
}

/** Runs one statement on a PostgreSQL database through a connection of its own. */
export async function onDatabase<T = Record<string, unknown>>(url: string, statement: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // The rows' shape is the statement's: the driver types them loosely.
    return (await client.query(statement)).rows as T[];
  } finally {
    await client.end();
  }
}

let deployments = 0;

/**
 * Puts a migrated embedded database into `dataDir` (as `GATEHOUSE_DATA_DIR`), as an upgraded deployment has it: a
 * server process started there opens it instead of creating one (initdb, seconds of CPU). The first start on an
 * empty directory stays tested where it is the subject (main.test.ts, the README's quick start).
 */
export async function seedEmbeddedDatabase(dataDir: string): Promise<void> {
  await cp(inject('pgliteDataDir'), join(dataDir, 'db'), { recursive: true });
}

/**
 * For a file whose tests run the server as child processes (kill -9, restarts): the processes it spawns (`children`,
 * killed after the file), what else the file undoes after it (`cleanups`), and `deployment()`, a database of its own — a fresh data directory (PGlite) or a copy of the
 * migrated template (PostgreSQL) — removed after the file. Call it at the top level of the file.
 */
export function processTestbed() {
  const children: ChildProcess[] = [];
  const cleanups: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  });

  async function deployment(label: string, settings: NodeJS.ProcessEnv = {}): Promise<ProcessDeployment> {
    const dataDir = await mkdtemp(join(tmpdir(), `gatehouse-${label}-`));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOST: '127.0.0.1',
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_LOG_LEVEL: 'warn',
      GATEHOUSE_OPERATOR_TOKEN: `op_${randomBytes(24).toString('hex')}`,
      GATEHOUSE_MASTER_KEY: randomBytes(32).toString('base64'),
      ...settings,
    };
    delete env.DATABASE_URL;
    const admin = inject('databaseUrl');
    if (!admin) {
      await seedEmbeddedDatabase(dataDir);
      return { env, pgliteDir: join(dataDir, 'db') };
    }
    // A worker runs many files in one process (vitest.config.ts): the counter keeps names apart across them.
    const name = `${inject('databaseTemplate')}_${label}_${process.pid}_${++deployments}`;
    await onDatabase(admin, `create database ${name} template ${inject('databaseTemplate')}`);
    cleanups.push(() => onDatabase(admin, `drop database if exists ${name} with (force)`));
    const url = new URL(admin);
    url.pathname = `/${name}`;
    const served = serverDatabaseUrl(name);
    env.DATABASE_URL = served.url;
    env.GATEHOUSE_DATABASE_POOLER = served.pooler;
    return { env, databaseUrl: url.toString() };
  }

  return { children, cleanups, deployment };
}

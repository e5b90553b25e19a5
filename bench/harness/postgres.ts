/**
 * A scratch PostgreSQL database per suite (`gatehouse_bench_<pid>_<random>`, dropped WITH FORCE by an undo step), a
 * connection to it for the suite's own queries, and the CPU time of its backends (read from /proc: PostgreSQL must run
 * on this machine; the shared WAL writer and checkpointer are not counted).
 */
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { config, onCleanup } from './env.ts';
import { processCpuSeconds } from './processes.ts';

export interface ScratchDatabase {
  name: string;
  url: string;
  host: string;
  /** e.g. `PostgreSQL 15.20 (Debian 15.20-0+deb12u1)`. */
  version: string;
  /** A connection of the benchmark's own to the scratch database. */
  client: Client;
  /** Learns which backends serve the database now (call it while a load runs: pools open connections lazily). */
  refreshBackends: () => Promise<void>;
  /** CPU seconds of the backends last learnt of (synchronous, to be read when a window opens and closes). */
  cpuSeconds: () => number;
  /** Statements of other connections running now. */
  activeStatements: () => Promise<number>;
}

export async function scratchDatabase(): Promise<ScratchDatabase> {
  const admin = new Client({ connectionString: config.adminUrl });
  await admin.connect();
  onCleanup('close the admin connection', () => admin.end());
  const { rows } = await admin.query<{ server_version: string }>('show server_version');
  const name = `gatehouse_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
  await admin.query(`create database ${name}`);
  onCleanup(`drop database ${name}`, () => admin.query(`drop database if exists ${name} with (force)`));
  const url = new URL(config.adminUrl);
  url.pathname = `/${name}`;
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  onCleanup('close the benchmark connection', () => client.end());
  let pids: number[] = [];
  const others = "datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'";
  return {
    name,
    url: url.toString(),
    host: url.host,
    version: `PostgreSQL ${rows[0]?.server_version ?? 'unknown'}`,
    client,
    refreshBackends: async () => {
      pids = (await client.query<{ pid: number }>(`select pid from pg_stat_activity where ${others}`)).rows.map((r) => r.pid);
    },
    cpuSeconds: () => {
      const values = pids.map(processCpuSeconds).filter((v) => !Number.isNaN(v));
      return values.length ? values.reduce((a, b) => a + b, 0) : Number.NaN;
    },
    activeStatements: async () =>
      Number(
        (await client.query<{ n: string }>(`select count(*) as n from pg_stat_activity where ${others} and state <> 'idle'`))
          .rows[0]?.n ?? 0,
      ),
  };
}

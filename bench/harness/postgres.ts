/**
 * A scratch PostgreSQL database per suite (`gatehouse_bench_<pid>_<random>`, dropped WITH FORCE by an undo step), a
 * connection to it for the suite's own queries, and the CPU time of its backends (read from /proc: PostgreSQL must run
 * on this machine; the shared WAL writer and checkpointer are not counted).
 */
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { config, onCleanup, sleep } from './env.ts';
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
  /**
   * CPU seconds of every backend learnt of, those that have exited counted at their last reading (synchronous, to be
   * read when a window opens and closes, and now and then in between).
   */
  cpuSeconds: () => number;
  /** Statements of other connections running now. */
  activeStatements: () => Promise<number>;
  /**
   * PostgreSQL's deferred work after a load that wrote much, done before the next one rather than during its window:
   * the database vacuumed and analyzed (autovacuum then finds nothing to do), a checkpoint (the dirty pages written),
   * and no autovacuum worker left on it (at most 60 s). Answers the seconds it took.
   */
  settle: () => Promise<number>;
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
  // Every backend seen, with its CPU seconds when last read: one that has exited since (a pool closes idle connections)
  // keeps its last reading, so a window's difference never loses what it used before.
  const backends = new Map<number, number>();
  const others = "datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'";
  return {
    name,
    url: url.toString(),
    host: url.host,
    version: `PostgreSQL ${rows[0]?.server_version ?? 'unknown'}`,
    client,
    refreshBackends: async () => {
      const { rows } = await client.query<{ pid: number }>(`select pid from pg_stat_activity where ${others}`);
      for (const { pid } of rows) if (!backends.has(pid)) backends.set(pid, 0);
    },
    cpuSeconds: () => {
      if (backends.size === 0) return Number.NaN;
      let total = 0;
      for (const [pid, last] of backends) {
        const now = processCpuSeconds(pid);
        if (!Number.isNaN(now)) backends.set(pid, now);
        total += Number.isNaN(now) ? last : now;
      }
      return total;
    },
    settle: async () => {
      const started = performance.now();
      await client.query('vacuum (analyze)');
      await client.query('checkpoint');
      for (let i = 0; i < 120; i++) {
        const { rows } = await client.query<{ n: string }>(
          "select count(*) as n from pg_stat_activity where datname = current_database() and backend_type = 'autovacuum worker'",
        );
        if (Number(rows[0]?.n ?? 0) === 0) break;
        await sleep(500);
      }
      return (performance.now() - started) / 1000;
    },
    activeStatements: async () =>
      Number(
        (await client.query<{ n: string }>(`select count(*) as n from pg_stat_activity where ${others} and state <> 'idle'`))
          .rows[0]?.n ?? 0,
      ),
  };
}

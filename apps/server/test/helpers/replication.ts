import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './ports.ts';

/** Debian's PostgreSQL 15 server binaries (package postgresql-15), which the failover test runs privately. */
export const PG_BIN = '/usr/lib/postgresql/15/bin';
export const hasPostgresBinaries = () => existsSync(join(PG_BIN, 'pg_basebackup')) && existsSync('/usr/sbin/runuser');

const exec = promisify(execFile);
const root = process.getuid?.() === 0;

/** A PostgreSQL program; as root it runs as the postgres user (initdb and the server refuse to run as root). */
async function run(program: string, args: string[]): Promise<string> {
  const [file, argv] = root
    ? ['/usr/sbin/runuser', ['-u', 'postgres', '--', join(PG_BIN, program), ...args]]
    : [join(PG_BIN, program), args];
  const { stdout } = await exec(file, argv, { timeout: 60_000 });
  return stdout;
}

async function postgresIds(): Promise<{ uid: number; gid: number }> {
  const line = (await readFile('/etc/passwd', 'utf8')).split('\n').find((l) => l.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (!uid || !gid) throw new Error('no postgres user to run PostgreSQL as');
  return { uid: Number(uid), gid: Number(gid) };
}

export interface Node {
  port: number;
  dataDir: string;
  url: (database: string) => string;
}

/**
 * A primary and one synchronous streaming replica, two private clusters: a commit is acknowledged only once the
 * replica has the WAL (`synchronous_standby_names = '*'`, `synchronous_commit = on`). `database` is created on the
 * primary before the replica is copied from it.
 */
export async function startReplicatedPair(database: string) {
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-failover-'));
  if (root) {
    const { uid, gid } = await postgresIds();
    await chown(dir, uid, gid);
  }
  const node = (name: string, port: number): Node => ({
    port,
    dataDir: join(dir, name),
    url: (db) => `postgres://postgres@127.0.0.1:${port}/${db}`,
  });
  const primary = node('primary', await freePort());
  const replica = node('replica', await freePort());
  const started: Node[] = [];
  const startNode = async (n: Node) => {
    await run('pg_ctl', ['-D', n.dataDir, '-l', `${n.dataDir}.log`, '-w', '-t', '60', 'start']);
    started.push(n);
  };
  const stopNode = (n: Node, mode: 'fast' | 'immediate') =>
    run('pg_ctl', ['-D', n.dataDir, '-m', mode, '-w', 'stop']).catch(() => undefined);
  const cleanup = async () => {
    for (const n of started) await stopNode(n, 'immediate');
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await run('initdb', ['-D', primary.dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    await appendFile(
      join(primary.dataDir, 'postgresql.conf'),
      [
        `port = ${primary.port}`,
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${dir}'`,
        'wal_level = replica',
        'max_wal_senders = 4',
        'synchronous_commit = on',
        'max_connections = 60',
        'shared_buffers = 32MB',
        // The machine's own crash is not what is tested (a process stop is): no fsync keeps the clusters quick.
        'fsync = off',
        '',
      ].join('\n'),
    );
    await startNode(primary);
    const admin = new pg.Client({ connectionString: primary.url('postgres') });
    await admin.connect();
    await admin.query(`create database ${database}`);
    await admin.end();
    await run('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-D',
      replica.dataDir,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
      '--no-sync',
    ]);
    // Once promoted, the replica is a primary with no standby of its own: it must not wait for one.
    await appendFile(join(replica.dataDir, 'postgresql.auto.conf'), `port = ${replica.port}\nsynchronous_standby_names = ''\n`);
    await startNode(replica);
    const check = new pg.Client({ connectionString: primary.url('postgres') });
    await check.connect();
    try {
      // Synchronous from now on: set before the replica existed, the database's creation would have waited for it.
      await check.query("alter system set synchronous_standby_names = '*'");
      await check.query('select pg_reload_conf()');
      const deadline = Date.now() + 30_000;
      for (;;) {
        const { rows } = await check.query("select 1 from pg_stat_replication where sync_state = 'sync'");
        if (rows.length) break;
        if (Date.now() > deadline) throw new Error('the replica did not become a synchronous standby');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await check.end();
    }
  } catch (error) {
    await cleanup();
    throw error;
  }
  return {
    primary,
    replica,
    /** The primary's processes end at once (no shutdown checkpoint, connections cut): a crash of the server. */
    crashPrimary: () => stopNode(primary, 'immediate'),
    promoteReplica: () => run('pg_ctl', ['-D', replica.dataDir, '-w', '-t', '60', 'promote']),
    cleanup,
  };
}

/**
 * A TCP proxy in front of PostgreSQL, as HAProxy with a health check or a cloud endpoint is: it forwards each new
 * connection to the current target; `cut()` ends every forwarded connection and refuses new ones until `point()`
 * names the next target.
 */
export async function startTcpProxy(targetPort: number) {
  let target: number | null = targetPort;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    if (target === null) {
      client.destroy();
      return;
    }
    const upstream = connect(target, '127.0.0.1');
    sockets.add(client).add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    cut() {
      target = null;
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    },
    point(next: number) {
      target = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

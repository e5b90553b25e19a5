import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.ts';

/** Debian's PgBouncer (1.18: no prepared statements in transaction mode). CI installs it (.ci/run). */
export const PGBOUNCER = '/usr/sbin/pgbouncer';
export const hasPgBouncer = () => existsSync(PGBOUNCER);

export interface PgBouncer {
  /** `postgres://postgres@127.0.0.1:<port>/<database>`. */
  url: (database: string) => string;
  stop: () => Promise<void>;
}

/**
 * A PgBouncer of the test's own in transaction mode in front of `target` (host and port of a PostgreSQL server), every
 * database name passed through, user postgres without a password. `poolSize` server connections per database: a small
 * pool makes consecutive transactions of one client land on different server connections, as under production load.
 * PgBouncer refuses to run as root; as root it runs as the postgres user.
 */
export async function startPgBouncer(target: { host: string; port: number }, poolSize: number): Promise<PgBouncer> {
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-pgbouncer-'));
  const port = await freePort();
  await writeFile(join(dir, 'userlist.txt'), '"postgres" ""\n');
  await writeFile(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${target.host} port=${target.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 500',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      '',
    ].join('\n'),
  );
  const root = process.getuid?.() === 0;
  if (root) {
    const { uid, gid } = await postgresUser();
    await chown(dir, uid, gid);
    for (const file of ['userlist.txt', 'pgbouncer.ini']) await chown(join(dir, file), uid, gid);
  }
  const child: ChildProcess = spawn(PGBOUNCER, [...(root ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], {
    stdio: 'ignore',
  });
  const deadline = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`PgBouncer did not start on port ${port} (exit ${child.exitCode})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGINT');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const line = (await readFile('/etc/passwd', 'utf8')).split('\n').find((l) => l.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (!uid || !gid) throw new Error('no postgres user to run PgBouncer as (it refuses to run as root)');
  return { uid: Number(uid), gid: Number(gid) };
}

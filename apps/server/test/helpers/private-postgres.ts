import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.ts';

const run = promisify(execFile);

/** The directory of PostgreSQL's server programs (`initdb`, `pg_ctl`), or undefined where they are not installed. */
function serverBin(): string | undefined {
  for (const dir of [
    '/usr/local/bin',
    '/usr/lib/postgresql/17/bin',
    '/usr/lib/postgresql/16/bin',
    '/usr/lib/postgresql/15/bin',
  ]) {
    try {
      accessSync(join(dir, 'pg_ctl'), constants.X_OK);
      accessSync(join(dir, 'initdb'), constants.X_OK);
      return dir;
    } catch {
      // not here
    }
  }
  return undefined;
}

export const privatePostgresAvailable = serverBin() !== undefined;

/**
 * A PostgreSQL server of the test's own (initdb in a temporary directory, its own port, fsync off): the test stops and
 * starts it at will — what an outage is — without touching the shared one. PostgreSQL refuses to run as root, so as
 * root it runs as the `postgres` user.
 */
export async function startPrivatePostgres() {
  const bin = serverBin();
  if (!bin) throw new Error('initdb and pg_ctl are not installed');
  const root = process.getuid?.() === 0;
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-pg-'));
  if (root) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const as = (program: string, args: string[]) =>
    root ? run('runuser', ['-u', 'postgres', '--', join(bin, program), ...args]) : run(join(bin, program), args);
  const data = join(dir, 'data');
  await as('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200`;
  const start = () => as('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '120', 'start']);
  await start();
  let running = true;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    /** Stops the server (fast: connections are ended, as in a restart or a failover). */
    async stop() {
      await as('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '120', 'stop']);
      running = false;
    },
    async start() {
      await start();
      running = true;
    },
    async dispose() {
      if (running) await as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
export type PrivatePostgres = Awaited<ReturnType<typeof startPrivatePostgres>>;

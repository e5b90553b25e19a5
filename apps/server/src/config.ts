/**
 * The light part of the server package: configuration and where things live. The CLI imports it
 * (`@gatehouse/server/config`) without loading fastify or the ORM.
 */
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import type { DatabaseConfig } from '@gatehouse/api';
import { type Env, StartupError } from './env.ts';

export { type Env, readEnv, StartupError } from './env.ts';
export { loadSecrets, masterKeyPath, operatorTokenPath } from './secrets.ts';

/**
 * The data directory. A relative path is taken from where the person ran the command: npm scripts run in the
 * workspace (`apps/server`), so `npm start` at the repository root would otherwise put `./.gatehouse` in there;
 * npm tells the original directory in `INIT_CWD`.
 */
export const dataDirOf = (env: Pick<Env, 'GATEHOUSE_DATA_DIR' | 'INIT_CWD'>): string =>
  resolve(env.INIT_CWD ?? process.cwd(), env.GATEHOUSE_DATA_DIR);

/**
 * The database of this environment: PostgreSQL from `DATABASE_URL`, else the embedded PGlite in
 * `<GATEHOUSE_DATA_DIR>/db`. Creates the data directory (0700: it holds secrets too) when needed.
 */
export async function databaseFromEnv(env: Env): Promise<{ database: DatabaseConfig; where: string }> {
  if (env.DATABASE_URL) return { database: { kind: 'postgres', url: env.DATABASE_URL }, where: 'PostgreSQL (DATABASE_URL)' };
  const dataDir = dataDirOf(env);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  return { database: { kind: 'pglite', dataDir: resolve(dataDir, 'db') }, where: `embedded PGlite in ${resolve(dataDir, 'db')}` };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * The embedded database belongs to one process: two servers (or a server and `migrate`) on one PGlite directory
 * would each keep their own copy in memory and silently diverge. A lock file next to it holds the owner's pid; a
 * second process refuses to start before it touches the database, and a lock left by a process that died (kill -9)
 * is taken over. Answers the release (also run at exit). PostgreSQL needs no lock.
 */
export function lockEmbeddedDatabase(database: DatabaseConfig): () => void {
  if (database.kind !== 'pglite' || !('dataDir' in database)) return () => undefined;
  const file = `${database.dataDir}.lock`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      const release = () => {
        try {
          if (readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file);
        } catch {
          // Already gone.
        }
      };
      process.once('exit', release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number.parseInt(readFileSync(file, 'utf8'), 10);
      if (Number.isInteger(holder) && holder !== process.pid && alive(holder)) {
        throw new StartupError(
          `The embedded database ${database.dataDir} is in use by process ${holder} (another Gatehouse server or migrate). ` +
            'Stop it first; to run several processes, use PostgreSQL (DATABASE_URL).',
        );
      }
      unlinkSync(file);
    }
  }
  throw new StartupError(`Could not lock the embedded database ${database.dataDir}`);
}

/** Fails with one line when the port is taken, before anything else starts (the database is not opened). */
export async function assertPortFree(port: number, host: string): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen(port, host, resolve);
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE')
      throw new StartupError(`Port ${port} on ${host} is already in use: stop what holds it, or set PORT.`);
    if (code === 'EACCES') throw new StartupError(`Port ${port} on ${host} needs privileges: set PORT to 1024 or above.`);
    throw error;
  } finally {
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  }
}

/**
 * What a listening socket serves, in words for the start log: fastify's own line names one reachable URL per
 * interface (`http://127.0.0.1:4000` for a socket on 0.0.0.0), which reads as if the server were local only.
 */
export function describeBind(address: string, port: number): string {
  const shown = address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
  if (address === '0.0.0.0') return `${shown} (every IPv4 interface: HOST=127.0.0.1 keeps it to this machine)`;
  if (address === '::') return `${shown} (every interface: HOST=127.0.0.1 keeps it to this machine)`;
  if (address === '::1' || address.startsWith('127.')) return `${shown} (this machine only)`;
  return `${shown} (this address only)`;
}

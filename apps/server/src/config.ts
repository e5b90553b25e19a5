/**
 * The light part of the server package: configuration and where things live. The CLI imports it
 * (`@gatehouse/server/config`) without loading fastify or the ORM.
 */
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import type { DatabaseConfig } from '@gatehouse/api';
import { type Env, StartupError } from './env.ts';

export { type Env, readEnv, StartupError } from './env.ts';
export { lockEmbeddedDatabase } from './lock.ts';
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
  if (env.DATABASE_URL) {
    const pooler = env.GATEHOUSE_DATABASE_POOLER;
    return {
      database: { kind: 'postgres', url: env.DATABASE_URL, pooler, poolSize: env.GATEHOUSE_DATABASE_POOL_SIZE },
      where:
        pooler === 'transaction'
          ? 'PostgreSQL (DATABASE_URL) through a transaction-mode pooler (GATEHOUSE_DATABASE_POOLER)'
          : 'PostgreSQL (DATABASE_URL)',
    };
  }
  const dataDir = dataDirOf(env);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  return { database: { kind: 'pglite', dataDir: resolve(dataDir, 'db') }, where: `embedded PGlite in ${resolve(dataDir, 'db')}` };
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

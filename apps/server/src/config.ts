/**
 * The light part of the server package: configuration and where things live. The CLI imports it
 * (`@gatehouse/server/config`) without loading fastify or the ORM.
 */
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { DatabaseConfig } from '@gatehouse/api';
import type { Env } from './env.ts';

export { type Env, readEnv } from './env.ts';
export { loadSecrets, masterKeyPath, operatorTokenPath } from './secrets.ts';

/**
 * The data directory. A relative path is taken from where the person ran the command: npm scripts run in the
 * workspace (`apps/server`), so `npm start` at the repository root would otherwise put `./.gatehouse` in there;
 * npm tells the original directory in `INIT_CWD`.
 */
export const dataDirOf = (env: Pick<Env, 'GATEHOUSE_DATA_DIR'>, processEnv: NodeJS.ProcessEnv = process.env): string =>
  resolve(processEnv.INIT_CWD ?? process.cwd(), env.GATEHOUSE_DATA_DIR);

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

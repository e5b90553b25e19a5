import { resolve } from 'node:path';
import { createOrm, type DatabaseConfig, migrate } from '@gatehouse/api';
import { readEnv } from './env.ts';
import { createGatehouseServer, loadSecrets } from './index.ts';

/** `node src/main.ts` serves; `node src/main.ts migrate` applies pending migrations and exits. */
const env = readEnv();
const dataDir = resolve(env.GATEHOUSE_DATA_DIR);
const database: DatabaseConfig = env.DATABASE_URL
  ? { kind: 'postgres', url: env.DATABASE_URL }
  : { kind: 'pglite', dataDir: resolve(dataDir, 'db') };
const where = env.DATABASE_URL ? 'PostgreSQL (DATABASE_URL)' : `embedded PGlite in ${resolve(dataDir, 'db')}`;

if (process.argv[2] === 'migrate') {
  const orm = await createOrm(database);
  const applied = await migrate(orm);
  await orm.close();
  console.log(
    applied.length
      ? `Applied ${applied.length} migration(s) to ${where}: ${applied.join(', ')}`
      : `Database is up to date (${where}).`,
  );
} else {
  const secrets = await loadSecrets(dataDir, env);
  const baseUrl = env.GATEHOUSE_BASE_URL ?? `http://localhost:${env.PORT}`;
  const server = await createGatehouseServer({
    database,
    operatorToken: secrets.operatorToken,
    masterKey: secrets.masterKey,
    baseUrl,
    logLevel: env.GATEHOUSE_LOG_LEVEL,
  });
  await server.app.listen({ port: env.PORT, host: env.HOST });
  console.log(
    [
      '',
      `  Gatehouse is running at ${baseUrl}`,
      `  API reference:   ${baseUrl}/docs`,
      `  Database:        ${where}`,
      `  Operator token:  ${secrets.operatorTokenFile ?? 'from GATEHOUSE_OPERATOR_TOKEN'}`,
      '',
    ].join('\n'),
  );
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    server.app.log.info({ signal }, 'shutting down');
    await server.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

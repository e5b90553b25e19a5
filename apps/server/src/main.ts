import { createOrm, migrate } from '@gatehouse/api';
import { databaseFromEnv, dataDirOf, readEnv } from './config.ts';
import { createGatehouseServer, loadSecrets } from './index.ts';

/** `node src/main.ts` serves; `node src/main.ts migrate` applies pending migrations and exits. */
const env = readEnv();
const dataDir = dataDirOf(env);
const { database, where } = await databaseFromEnv(env);

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
    smtpUrl: env.GATEHOUSE_SMTP_URL,
    mailFrom: env.GATEHOUSE_MAIL_FROM,
    redisUrl: env.GATEHOUSE_REDIS_URL,
    mailRetryScheduleS: env.GATEHOUSE_MAIL_RETRY_SCHEDULE,
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

import { flushCompileCache } from 'node:module';
import { createOrm, migrate } from '@gatehouse/api';
import {
  assertPortFree,
  databaseFromEnv,
  dataDirOf,
  describeBind,
  lockEmbeddedDatabase,
  readEnv,
  StartupError,
} from './config.ts';
import { sharedOAuthCredentials } from './env.ts';
import { createGatehouseServer, loadSecrets } from './index.ts';

/**
 * The command line, run by main.ts once the compile cache is on. `node src/main.ts` serves; `node src/main.ts migrate`
 * applies pending migrations and exits. Standard output carries only the JSON log lines; the banner and start-up
 * failures go to standard error.
 */
async function main() {
  const env = readEnv();
  const serving = process.argv[2] !== 'migrate';
  if (serving) await assertPortFree(env.PORT, env.HOST);
  const dataDir = dataDirOf(env);
  const { database, where } = await databaseFromEnv(env);
  lockEmbeddedDatabase(database);

  if (!serving) {
    const orm = await createOrm(database);
    const applied = await migrate(orm);
    await orm.close();
    process.stderr.write(
      applied.length
        ? `Applied ${applied.length} migration(s) to ${where}: ${applied.join(', ')}\n`
        : `Database is up to date (${where}).\n`,
    );
    return;
  }
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
    webhooks: {
      allowInsecure: env.GATEHOUSE_ALLOW_INSECURE_WEBHOOKS === '1' || env.GATEHOUSE_ALLOW_INSECURE_WEBHOOKS === 'true',
      retryScheduleS: env.GATEHOUSE_WEBHOOK_RETRY_SCHEDULE,
      timeoutMs: env.GATEHOUSE_WEBHOOK_TIMEOUT_MS,
    },
    metricsToken: env.GATEHOUSE_METRICS_TOKEN,
    refreshGraceS: env.GATEHOUSE_REFRESH_GRACE_S,
    housekeepingIntervalS: env.GATEHOUSE_HOUSEKEEPING_INTERVAL_S,
    allowInsecureSaml: env.GATEHOUSE_ALLOW_INSECURE_SAML === '1',
    cnameTarget: env.GATEHOUSE_CNAME_TARGET,
    dnsServers: env.GATEHOUSE_DNS_SERVERS,
    oauth: { sharedCredentials: sharedOAuthCredentials(env), allowInsecureIssuers: env.GATEHOUSE_ALLOW_INSECURE_OIDC === '1' },
  });
  // SIGTERM (an orchestrator, a rolling restart) drains first: /readyz goes 503 and the process keeps serving until the
  // balancer has noticed. SIGINT (Ctrl-C in a terminal) and a second signal close at once.
  const shutdownDelayS = env.GATEHOUSE_SHUTDOWN_DELAY_S ?? (database.kind === 'postgres' ? 5 : 0);
  let draining: { skip: () => void } | undefined;
  const stop = async (signal: string) => {
    if (draining) {
      draining.skip();
      return;
    }
    const delayMs = signal === 'SIGTERM' ? shutdownDelayS * 1000 : 0;
    server.app.log.info({ signal, delay_s: delayMs / 1000 }, 'shutting down');
    const drain = server.drain(delayMs);
    draining = drain;
    await drain.done;
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  const bound = () => {
    const socket = server.app.server.address();
    return typeof socket === 'object' && socket ? describeBind(socket.address, socket.port) : String(socket);
  };
  await server.app.listen({
    port: env.PORT,
    host: env.HOST,
    listenTextResolver: (url) => `Server listening on ${bound()}, reachable at ${url}`,
  });
  process.stderr.write(
    [
      '',
      `  Gatehouse is running at ${baseUrl}`,
      `  Listening on:    ${bound()}`,
      `  API reference:   ${baseUrl}/docs`,
      `  Database:        ${where}`,
      `  Operator token:  ${secrets.operatorTokenFile ?? 'from GATEHOUSE_OPERATOR_TOKEN'}`,
      `  Console:         ${baseUrl}/console/`,
      ...(server.setupLink
        ? [
            `  First operator:  ${server.setupLink}`,
            '                   (one use, 24 hours: it makes you the console\u2019s owner)',
          ]
        : []),
      '',
      '',
    ].join('\n'),
  );
  // Every module of a start is loaded by now: their compile cache is written now, not only at exit (a process that is
  // killed never exits).
  flushCompileCache();
}

/**
 * A database (or Redis) that cannot be reached or opened: refused or unknown address, no such database, wrong
 * credentials (SQLSTATE classes 08, 28 and 3D). Its own message says what is wrong; a stack adds nothing.
 */
const unreachable = (code: unknown) =>
  typeof code === 'string' &&
  (['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', '57P03'].includes(code) || /^(08|28|3D)[0-9A-Z]{3}$/.test(code));

try {
  await main();
} catch (error) {
  // Known start-up problems are one message, no stack; anything else keeps its stack for whoever debugs it.
  const code = (error as NodeJS.ErrnoException).code;
  const known = error instanceof StartupError || code === 'EADDRINUSE' || unreachable(code);
  process.stderr.write(`gatehouse: ${known ? (error as Error).message : ((error as Error).stack ?? String(error))}\n`);
  process.exit(1);
}

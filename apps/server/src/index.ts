import {
  consoleSetupLink,
  createOrm,
  createServices,
  type DatabaseConfig,
  ensureConsoleApplication,
  hasOperators,
  hasProductionApplications,
  MailWorker,
  migrate,
  type OAuthConfig,
  type Orm,
  pendingMigrations,
  runHousekeeping,
  type Services,
  syncConsoleApplication,
  WebhookWorker,
  type WebhookWorkerOptions,
} from '@gatehouse/api';
import type { FastifyInstance } from 'fastify';
import { buildServer } from './http.ts';
import { StartupError } from './startup-error.ts';

export { databaseFromEnv, dataDirOf, loadSecrets, masterKeyPath, operatorTokenPath, readEnv } from './config.ts';

export interface GatehouseServerOptions {
  database: DatabaseConfig;
  operatorToken: string;
  masterKey: Buffer;
  /** Public base URL (issuer and links). Never derived from request headers. */
  baseUrl: string;
  logLevel?: string | false;
  /** Where log lines go (default stdout). */
  logStream?: { write(line: string): void };
  /** `smtp://…` for outgoing mail; unset prints mail to the console. */
  smtpUrl?: string;
  mailFrom?: string;
  /** Shared rate-limit counters; unset uses the database (PostgreSQL) or memory (PGlite, one process). */
  redisUrl?: string;
  /** When set, `GET /metrics` needs it as a bearer token. */
  metricsToken?: string;
  /** Seconds between mail attempts after each failure (default 10 s, 1 min, 5 min, 30 min, 2 h). */
  mailRetryScheduleS?: number[];
  /** `GATEHOUSE_ALLOW_INSECURE_SAML=1`: http and loopback IdP URLs (local development and tests). */
  allowInsecureSaml?: boolean;
  /** Social sign-in: the operator's shared development credentials, http issuers (development), and — for tests
   * that construct the server in-process only — stand-in endpoints of built-in providers. */
  oauth?: Partial<Omit<OAuthConfig, 'dnsServers'>>;
  /** Webhook delivery: insecure receivers (development), the retry schedule, the per-attempt timeout. */
  webhooks?: WebhookWorkerOptions;
  /** `GATEHOUSE_CNAME_TARGET`: the host name custom domains point their CNAME at (default: the base URL's). */
  cnameTarget?: string;
  /** `GATEHOUSE_DNS_SERVERS`: resolvers (`ip` or `ip:port`) for outbound requests and domain verification. */
  dnsServers?: readonly string[];
  /** `GATEHOUSE_HOUSEKEEPING_INTERVAL_S`: seconds between housekeeping runs (default 600). */
  housekeepingIntervalS?: number;
  /** `GATEHOUSE_REFRESH_GRACE_S`: how long a just-rotated refresh token still answers its successor (default 30). */
  refreshGraceS?: number;
  /** The clock TOTP codes are judged by (default the system's): set only by tests that construct the server in-process. */
  totpClock?: () => number;
}

/**
 * How often each process runs housekeeping by default: deletes long-expired rows and runs the recurring tasks
 * (subscription periods, re-checking pending custom domains). Several processes do not conflict: each task claims its
 * rows (`FOR UPDATE SKIP LOCKED`), so a row is handled once whichever process gets it.
 */
const HOUSEKEEPING_INTERVAL_MS = 10 * 60_000;

export interface GatehouseServer {
  app: FastifyInstance;
  orm: Orm;
  /** The process's services (what the hosted pages call; in-process tests call them too). */
  services: Services;
  /** One housekeeping run now (the process also runs one every 10 minutes, or `housekeepingIntervalS`). */
  housekeeping: () => ReturnType<typeof runHousekeeping>;
  /** Stops accepting connections, lets in-flight requests finish, then closes the database. */
  close: () => Promise<void>;
  /**
   * A graceful shutdown behind a load balancer: `/readyz` answers 503 `draining` at once (and every answer asks to
   * close its connection), the process keeps serving for `delayMs` so the balancer notices and sends nothing new, then
   * `close()`. `skip()` cuts the wait short (a second signal).
   */
  drain: (delayMs: number) => { done: Promise<void>; skip: () => void };
  /** Whether `drain` or `close` has begun. */
  readonly draining: boolean;
  /** While the console has no operator: the first operator's one-time set-up link (the start prints it). */
  setupLink: string | undefined;
}

/** Connects the database, applies pending migrations and builds the HTTP server (not yet listening). */
export async function createGatehouseServer(options: GatehouseServerOptions): Promise<GatehouseServer> {
  const orm = await createOrm(options.database);
  // The database's first round trips — a connection opened, the migrations checked (or applied), then on the same
  // connection the console application synced to the base URL and the operators counted — advance while the HTTP
  // server is built below, which needs none of them (the build gives the event loop a turn between its steps).
  const checked = migrate(orm).then(async () => ({
    consoleId: await syncConsoleApplication(orm, options.baseUrl),
    operators: await hasOperators(orm),
  }));
  // Awaited below, after the build; a failure must not count as unhandled meanwhile.
  checked.catch(() => undefined);
  let draining = false;
  const rateLimitStore = options.redisUrl
    ? ({ kind: 'redis', url: options.redisUrl } as const)
    : options.database.kind === 'postgres'
      ? ({ kind: 'postgres', url: options.database.url, unnamed: options.database.pooler === 'transaction' } as const)
      : ({ kind: 'memory' } as const);
  const { app, services } = await buildServer({
    services: (log) =>
      createServices({
        orm,
        log,
        masterKey: options.masterKey,
        operatorToken: options.operatorToken,
        baseUrl: options.baseUrl,
        smtpUrl: options.smtpUrl,
        mailFrom: options.mailFrom,
        rateLimitStore,
        allowInsecureSaml: options.allowInsecureSaml,
        cnameTarget: options.cnameTarget,
        dnsServers: options.dnsServers,
        oauth: options.oauth,
        totpClock: options.totpClock,
        refreshGraceS: options.refreshGraceS,
      }),
    logLevel: options.logLevel ?? 'info',
    logStream: options.logStream,
    ready: async () => (await pendingMigrations(orm)) === 0,
    draining: () => draining,
    metricsToken: options.metricsToken,
  });
  let consoleId: string | undefined;
  let operators: boolean;
  try {
    ({ consoleId, operators } = await checked);
    if (options.webhooks?.allowInsecure && (await hasProductionApplications(orm))) {
      throw new StartupError(
        'GATEHOUSE_ALLOW_INSECURE_WEBHOOKS is a development setting, and this database holds production applications: ' +
          'unset it here, and keep it to a development database (it admits http and loopback webhook URLs).',
      );
    }
  } catch (error) {
    await services.rateLimits.close();
    await orm.close();
    throw error;
  }
  // Created on the first start (the sync found none).
  if (!consoleId) await ensureConsoleApplication(services);
  const setupLink = operators ? undefined : consoleSetupLink(services);
  if (setupLink) {
    services.log.info(
      { command: 'gatehouse operators add EMAIL --role owner' },
      'No console operator yet: open the set-up link printed on the terminal, or add the first one with the operator ' +
        'token, `gatehouse operators add you@example.com` (or POST /v1/operators).',
    );
  }
  const mailWorker = new MailWorker(services, options.mailRetryScheduleS);
  mailWorker.start();
  const webhookWorker = new WebhookWorker(services, options.webhooks);
  webhookWorker.start();
  const housekeeping = setInterval(
    () => {
      runHousekeeping(services).catch((error: unknown) => {
        if (!services.outage.absorb(error)) services.log.warn({ err: error }, 'housekeeping failed');
      });
    },
    (options.housekeepingIntervalS ?? 0) * 1000 || HOUSEKEEPING_INTERVAL_MS,
  );
  housekeeping.unref();
  let closing: Promise<void> | undefined;
  const close = () => {
    draining = true;
    closing ??= closeAll();
    return closing;
  };
  const closeAll = async () => {
    clearInterval(housekeeping);
    services.outage.close();
    await app.close();
    await services.inFlight.idle(10_000);
    // A send in hand finishes; queued mail stays queued for the next process.
    await mailWorker.stop();
    // Deliveries in hand finish (or their lease runs out and another process sends them).
    await webhookWorker.stop();
    await services.rateLimits.close();
    services.mailer.close();
    await orm.close();
  };
  return {
    app,
    orm,
    services,
    setupLink,
    housekeeping: () => runHousekeeping(services),
    close,
    drain: (delayMs) => {
      draining = true;
      let skip = () => {};
      const waited = new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delayMs);
        skip = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      return { done: waited.then(close), skip: () => skip() };
    },
    get draining() {
      return draining;
    },
  };
}

import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { type DatabaseConfig, type OAuthConfig, openPglite, type WebhookWorkerOptions } from '@gatehouse/api';
import { createGatehouse, type GatehouseClient, GatehouseError } from '@gatehouse/sdk';
import pg from 'pg';
import { expect, inject } from 'vitest';
import { createGatehouseServer, type GatehouseServer } from '../../src/index.ts';
import { totpNow } from './clock.ts';
import { WAIT_MS } from './limits.ts';
import { serverDatabaseUrl } from './processes.ts';

export interface Envelope<T = any> {
  success: boolean;
  data: T;
  /** null on success; typed as present so that assertions on failures read simply. */
  error: { code: string; message: string; details?: Array<{ path: string; message: string }> };
  meta: { timestamp: string; request_id: string };
}

export interface RestResponse<T = any> {
  status: number;
  headers: Headers;
  body: Envelope<T>;
}

export interface TestServer {
  url: string;
  operatorToken: string;
  /** The master key the server seals secrets with: tests that forge tokens with the real signing key use it. */
  masterKey: Buffer;
  server: GatehouseServer;
  /** What it was started with: a peer started with the same is another process of the same deployment. */
  started: StartOptions & { database: DatabaseConfig };
  /** Creates a fresh application through the operator API: each test gets its own tenant. */
  createApp(input?: Record<string, unknown>): Promise<TestApp>;
  close(): Promise<void>;
}

export interface TestApp {
  id: string;
  secretKey: string;
  application: any;
  /** A REST call with this application's secret key (override or drop headers with `headers`). */
  rest<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string | undefined>,
  ): Promise<RestResponse<T>>;
  /** The typed SDK bound to this application. */
  sdk: GatehouseClient;
  /** The same application, its calls sent to another server on the same database (see `acrossServers`). */
  via(server: { url: string }): TestApp;
}

/** A UUID (any version), an id that exists nowhere, and an ISO 8601 UTC timestamp as the API writes them. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const MISSING = '00000000-0000-7000-8000-000000000000';
export const isoDate = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);

/** Asserts an error answer: the status, the error envelope, and its code. */
export function expectError(res: RestResponse, status: number, code: string, label = '') {
  expect(res.status, `${label} ${JSON.stringify(res.body)}`).toBe(status);
  expect(res.body.success, label).toBe(false);
  expect(res.body.data, label).toBeNull();
  expect(res.body.error.code, label).toBe(code);
}

/** Asserts a success answer (the body in the message when the status differs) and answers its `data`. */
export async function ok<T = any>(res: Promise<RestResponse<T>> | RestResponse<T>, status = 200): Promise<T> {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.body.success).toBe(true);
  return r.body.data;
}

/**
 * SQL straight on the server's database: to look at what is stored, or to simulate time passing (expiry is judged by
 * the database clock).
 */
export const sql = <T = Record<string, any>>(server: TestServer, query: string, params: unknown[] = []): Promise<any> =>
  // Loose on purpose, as tests read rows (`rows[0].column`): the typed SQL connection would answer `T | undefined`.
  server.server.orm.em.fork().getConnection().execute<T[]>(query, params);

export async function rawRequest(
  url: string,
  method: string,
  path: string,
  init: { body?: unknown; headers?: Record<string, string | undefined> } = {},
) {
  const headers = Object.fromEntries(Object.entries(init.headers ?? {}).filter(([, v]) => v !== undefined)) as Record<
    string,
    string
  >;
  let body: string | undefined;
  if (init.body !== undefined) {
    body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${url}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: any;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

let copies = 0;
/** The migrated snapshot, read once per worker (a worker runs many files: vitest.config.ts). */
let snapshot: Promise<Blob> | undefined;

/** Runs one statement on the PostgreSQL server of the run (outside any test database). */
async function onPostgres(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: inject('databaseUrl') });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** A database of the server's own: a copy of the migrated template on PostgreSQL, a restored snapshot on PGlite. */
async function database(): Promise<{ config: DatabaseConfig; dispose: () => Promise<void> }> {
  if (inject('databaseUrl')) {
    const template = inject('databaseTemplate');
    const name = `${template}_${process.pid}_${++copies}`;
    await onPostgres(`create database ${name} template ${template}`);
    return {
      config: { ...serverDatabaseUrl(name), poolSize: 10 },
      dispose: () => onPostgres(`drop database if exists ${name} with (force)`),
    };
  }
  snapshot ??= readFile(inject('pgliteSnapshot')).then((bytes) => new Blob([bytes]));
  const pglite = await openPglite(await snapshot);
  return { config: { kind: 'pglite', pglite }, dispose: () => pglite.close() };
}

export interface StartOptions {
  baseUrl?: string;
  /** Listen on this port (default: any free one), e.g. to make `baseUrl` the server's real address. */
  port?: number;
  smtpUrl?: string;
  redisUrl?: string;
  operatorToken?: string;
  masterKey?: Buffer;
  /** Collects the server's JSON log lines (level `info` and above) instead of discarding them. */
  logLines?: string[];
  /** Another database than the run's (the caller owns it). */
  database?: DatabaseConfig;
  mailRetryScheduleS?: number[];
  metricsToken?: string;
  /** GATEHOUSE_ALLOW_INSECURE_SAML: http and loopback IdP URLs. */
  allowInsecureSaml?: boolean;
  /** Webhook delivery options (tests allow insecure receivers and shorten the schedule). */
  webhooks?: WebhookWorkerOptions;
  /** GATEHOUSE_CNAME_TARGET. */
  cnameTarget?: string;
  /** GATEHOUSE_DNS_SERVERS (a `LocalDns`'s address). */
  dnsServers?: string[];
  /** Social sign-in: shared credentials, http issuers, stand-in endpoints of built-in providers (in-process only). */
  oauth?: Partial<OAuthConfig>;
  /** GATEHOUSE_REFRESH_GRACE_S (default 30). */
  refreshGraceS?: number;
}

/** Boots the real server on an ephemeral port, on a database of its own unless one is given. */
export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  const db = options.database ? { config: options.database, dispose: async () => {} } : await database();
  const operatorToken = options.operatorToken ?? `op_${randomBytes(24).toString('hex')}`;
  const masterKey = options.masterKey ?? randomBytes(32);
  const server = await createGatehouseServer({
    database: db.config,
    operatorToken,
    masterKey,
    baseUrl: options.baseUrl ?? 'http://gatehouse.test',
    logLevel: options.logLines ? 'info' : false,
    logStream: options.logLines ? { write: (line: string) => void options.logLines!.push(line) } : undefined,
    smtpUrl: options.smtpUrl,
    mailRetryScheduleS: options.mailRetryScheduleS,
    webhooks: options.webhooks,
    metricsToken: options.metricsToken,
    redisUrl: options.redisUrl,
    allowInsecureSaml: options.allowInsecureSaml,
    cnameTarget: options.cnameTarget,
    dnsServers: options.dnsServers,
    oauth: options.oauth,
    refreshGraceS: options.refreshGraceS,
    totpClock: totpNow,
  });
  await server.app.listen({ port: options.port ?? 0, host: '127.0.0.1' });
  const address = server.app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

  const createApp = async (input: Record<string, unknown> = {}): Promise<TestApp> => {
    const created = await rawRequest(url, 'POST', '/v1/applications', {
      body: { name: 'Test app', ...input },
      headers: { authorization: `Bearer ${operatorToken}` },
    });
    if (created.status !== 201) throw new Error(`creating an application failed: ${JSON.stringify(created.body)}`);
    const { application, secret_key } = created.body.data;
    const auth = { authorization: `Bearer ${secret_key.secret}`, 'x-application-id': application.id };
    const at = (base: string): TestApp => ({
      id: application.id,
      secretKey: secret_key.secret,
      application,
      rest: (method, path, body, headers) => rawRequest(base, method, path, { body, headers: { ...auth, ...headers } }),
      sdk: createGatehouse({ baseUrl: base, applicationId: application.id, secretKey: secret_key.secret }),
      via: (other) => at(other.url),
    });
    return at(url);
  };

  return {
    url,
    operatorToken,
    masterKey,
    server,
    started: { ...options, operatorToken, masterKey, database: db.config },
    createApp,
    close: async () => {
      await server.close();
      await db.dispose();
    },
  };
}

/**
 * Runs `count` calls at once (`run(server, i)`), alternating between `server` and a peer: on PostgreSQL a second server
 * on the same database with the same configuration (keys, SMTP), as a deployment's second process is (its own
 * connection pool and caches; its pool warmed first, so both really race). One-time things must be consumed
 * once across processes (SECURITY 3). PGlite belongs to one process: there every call goes to `server`.
 */
export async function acrossServers<T>(
  server: TestServer,
  count: number,
  run: (target: TestServer, i: number) => Promise<T>,
): Promise<T[]> {
  if (!inject('databaseUrl')) return Promise.all(Array.from({ length: count }, (_, i) => run(server, i)));
  const peer = await startServer({ ...server.started, logLines: undefined });
  try {
    const warm = await Promise.all(
      Array.from({ length: Math.ceil(count / 2) }, () =>
        rawRequest(peer.url, 'GET', '/v1/applications?limit=1', { headers: { authorization: `Bearer ${peer.operatorToken}` } }),
      ),
    );
    if (warm.some((r) => r.status !== 200)) throw new Error('the peer server did not answer');
    return await Promise.all(Array.from({ length: count }, (_, i) => run(i % 2 ? peer : server, i)));
  } finally {
    await peer.close();
  }
}

/** The `GatehouseError` an SDK call rejects with (and a failure when it resolves instead). */
export const rejection = (promise: Promise<unknown>): Promise<GatehouseError> =>
  promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => {
      expect(error).toBeInstanceOf(GatehouseError);
      return error as GatehouseError;
    },
  );

/** Polls `probe` until it answers something (every 50 ms), or fails naming `what` after `timeoutMs`. */
export async function until<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  what: string,
  timeoutMs = WAIT_MS,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

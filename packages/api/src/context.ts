import { type EntityManager, type Orm, requestEntityManager } from './db/orm.ts';
import { SecretBox, sha256 } from './lib/crypto.ts';
import { createMailer, type Mailer } from './lib/mailer.ts';
import { createMetrics, type Metrics } from './lib/metrics.ts';
import type { Hooks } from './lib/modules.ts';
import { DatabaseOutage } from './lib/outage.ts';
import { type RateLimitStore, RateLimits } from './lib/rate-limit.ts';

/** The logging the API needs (pino's, as fastify hands it over). */
export interface Logger {
  error(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
}

/** What the process holds for every request: built once at start. */
export interface Services {
  orm: Orm;
  secretBox: SecretBox;
  /** SHA-256 of the operator token; the token itself is not kept in memory longer than start-up. */
  operatorTokenHash: string;
  /** The public base URL from configuration (never from request headers). */
  baseUrl: string;
  log: Logger;
  mailer: Mailer;
  rateLimits: RateLimits;
  inFlight: InFlight;
  /** Whether the database is reachable, as requests found it: an outage is logged once, and its end (lib/outage.ts). */
  outage: DatabaseOutage;
  metrics: Metrics;
  /** `GATEHOUSE_ALLOW_INSECURE_SAML=1`: IdP URLs may be http or loopback (local development and tests only). */
  allowInsecureSaml: boolean;
  /** `GATEHOUSE_CNAME_TARGET`: where custom domains point their CNAME (default: the base URL's host name). */
  cnameTarget: string;
  /** `GATEHOUSE_DNS_SERVERS`: the resolvers of outbound requests and domain verification; unset: the system's. */
  dnsServers: readonly string[] | undefined;
  oauth: OAuthConfig;
  /**
   * The time TOTP codes are judged at (ms since the epoch): the system clock. A test that constructs the server
   * in-process may pass one shifted to the start of a step, so its codes never straddle a step boundary.
   */
  totpClock: () => number;
  /**
   * `GATEHOUSE_REFRESH_GRACE_S`: seconds during which a just-rotated refresh token presented again answers the same
   * successor pair (its first answer was lost) instead of revoking the session; 0 turns the grace off.
   */
  refreshGraceS: number;
  /** The registries the modules fill (merge steps, sign-in checks, …), composed once from the module list. */
  hooks: Hooks;
}

/** Social sign-in, as the process is configured (the oauth module reads it). */
export interface OAuthConfig {
  /** `GATEHOUSE_SHARED_OAUTH_<PROVIDER>_CLIENT_ID/_SECRET`: the operator's clients, for development applications only. */
  sharedCredentials: Partial<Record<string, { clientId: string; clientSecret: string }>>;
  /**
   * A built-in provider's endpoints replaced (`authorization`, `token`, `jwks`, `api`). Set only by a test that
   * constructs the server in-process (a stand-in speaking the provider's wire format); never read from the environment.
   */
  endpoints: Partial<Record<string, Partial<Record<'authorization' | 'token' | 'jwks' | 'api', string>>>>;
  /** `GATEHOUSE_ALLOW_INSECURE_OIDC=1`: a generic OIDC issuer may be http and loopback (local development and tests). */
  allowInsecureIssuers: boolean;
  /** The resolvers the issuers' requests look names up on (`Services.dnsServers`). */
  dnsServers: readonly string[] | undefined;
}

/**
 * Counts procedures running. Shutdown waits for them after the HTTP server stops accepting: a handler whose client
 * has gone still runs to its end before the database closes.
 */
export class InFlight {
  #count = 0;
  #waiters: Array<() => void> = [];

  async run<T>(work: () => Promise<T>): Promise<T> {
    this.#count++;
    try {
      return await work();
    } finally {
      if (--this.#count === 0) for (const wake of this.#waiters.splice(0)) wake();
    }
  }

  /** Resolves when nothing runs (or after `timeoutMs`, so a stuck handler cannot hold shutdown forever). */
  idle(timeoutMs: number): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.#waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

export interface ServicesOptions {
  orm: Orm;
  masterKey: Buffer;
  operatorToken: string;
  baseUrl: string;
  log: Logger;
  /** `smtp://…`; unset prints mail to the console. */
  smtpUrl?: string;
  mailFrom?: string;
  rateLimitStore: RateLimitStore;
  allowInsecureSaml?: boolean;
  cnameTarget?: string;
  dnsServers?: readonly string[];
  oauth?: Partial<Omit<OAuthConfig, 'dnsServers'>>;
  totpClock?: () => number;
  /** Default 30 seconds. */
  refreshGraceS?: number;
  hooks: Hooks;
}

/** How long a rotated refresh token answers its successor again (Auth0's reuse interval, Okta's grace period). */
export const DEFAULT_REFRESH_GRACE_S = 30;

/** The base URL as the services hold it: without a trailing slash (paths are appended to it). */
export const baseUrlOf = (configured: string) => configured.replace(/\/+$/, '');

export function createServices(options: ServicesOptions): Services {
  const metrics = createMetrics();
  return {
    orm: options.orm,
    secretBox: new SecretBox(options.masterKey),
    operatorTokenHash: sha256(options.operatorToken),
    baseUrl: baseUrlOf(options.baseUrl),
    log: options.log,
    mailer: createMailer(options.smtpUrl, options.mailFrom ?? 'Gatehouse <no-reply@gatehouse.local>'),
    rateLimits: new RateLimits(options.rateLimitStore, metrics),
    inFlight: new InFlight(),
    outage: new DatabaseOutage(options.log, () => options.orm.em.fork().execute('select 1')),
    metrics,
    allowInsecureSaml: options.allowInsecureSaml === true,
    cnameTarget: options.cnameTarget ?? new URL(options.baseUrl).hostname,
    dnsServers: options.dnsServers,
    oauth: {
      sharedCredentials: options.oauth?.sharedCredentials ?? {},
      endpoints: options.oauth?.endpoints ?? {},
      allowInsecureIssuers: options.oauth?.allowInsecureIssuers === true,
      dnsServers: options.dnsServers,
    },
    totpClock: options.totpClock ?? Date.now,
    refreshGraceS: options.refreshGraceS ?? DEFAULT_REFRESH_GRACE_S,
    hooks: options.hooks,
  };
}

/** The per-request facts an HTTP host hands to the API. */
export interface RequestInfo {
  requestId: string;
  headers: Record<string, string | string[] | undefined>;
  ip: string;
  log: Logger;
}

/**
 * What every procedure receives. The kernel knows no module: what authentication adds (the application, the API key,
 * the session and its user) is typed by the module that authenticates it, as a context that extends this one
 * (`TenantContext`, `SecretKeyContext`, `SignedInContext`…), and handed to the handler by that module's procedure
 * builder (`authenticatedProcedure` in trpc.ts).
 */
export interface Context extends RequestInfo {
  services: Services;
  /**
   * A fork of the ORM's entity manager, made at its first use (`requestEntityManager`): its identity map belongs to this
   * request only.
   */
  em: EntityManager;
  /**
   * Filled by the REST host from procedure meta (e.g. 201); tRPC ignores it. `meta`: the envelope's meta when the
   * answer must carry a given one (an idempotent replay repeats the first answer's).
   */
  response: {
    status?: number;
    headers: Record<string, string>;
    raw?: boolean;
    meta?: { timestamp: string; request_id: string };
    /**
     * A body the REST host streams as it is, not enveloped (a procedure with meta `stream`: the audit log export): its
     * chunks are produced as the client reads them, so a body of any size needs the memory of one chunk.
     */
    stream?: { contentType: string; filename?: string; body: AsyncIterable<string> };
  };
}

export function createContext(services: Services, info: RequestInfo): Context {
  return { ...info, services, em: requestEntityManager(services.orm.em), response: { headers: {} } };
}

export function header(ctx: Pick<Context, 'headers'>, name: string): string | undefined {
  const value = ctx.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

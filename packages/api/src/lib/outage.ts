import { AppError, errorName, fieldOf } from '../errors.ts';

/** The two log levels an outage is told at (pino's, as the services hold it). */
interface Logger {
  warn(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
}

/**
 * Seconds a client is told to wait (`retry-after`) when the database cannot be reached: long enough for a restart or
 * a failover to progress, short enough that a retried read usually lands once it is back.
 */
export const OUTAGE_RETRY_AFTER_S = 5;

/** Network errors of a connection that cannot be made or was cut (Node's codes). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * SQLSTATEs of a server that is going away or not there yet: class 08 (connection exception), 57P01–57P03
 * (administrator or crash shutdown, cannot connect now: starting up, shutting down, in recovery).
 */
const unavailableState = (code: string) => /^08[0-9A-Z]{3}$/.test(code) || ['57P01', '57P02', '57P03'].includes(code);

/**
 * What node-postgres says, with no code, when a connection it held or was opening ended under it (a server stopped
 * mid-query, a pool's connect timeout).
 */
const DRIVER_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect/,
  /^Client has encountered a connection error and is not queryable/,
  /^Connection ended unexpectedly/,
];

/**
 * Whether `error` (or an error it wraps) says the database cannot be reached — not that a statement was wrong. Only
 * PostgreSQL over the network fails like this (an `AppError` is judged by its `cause`); the embedded database (PGlite) lives in the process and cannot be
 * unreachable, so its failures stay internal errors.
 */
export function isDatabaseUnreachable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current !== undefined && current !== null; depth++) {
    const code = fieldOf(current, 'code');
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || unavailableState(code))) return true;
    if (errorName(current) === 'ConnectionException') return true;
    const message = fieldOf(current, 'message');
    if (typeof message === 'string' && DRIVER_MESSAGES.some((pattern) => pattern.test(message))) return true;
    // An AggregateError (a host name with several addresses, all refused) carries its reasons in `errors`.
    const errors = fieldOf(current, 'errors');
    if (Array.isArray(errors) && errors.some((inner) => isDatabaseUnreachable(inner))) return true;
    current = fieldOf(current, 'cause');
  }
  return false;
}

/** The answer to a request that needs the database while it cannot be reached (CONTRACT §1: 503, safe to retry). */
export const databaseUnavailable = (): AppError =>
  new AppError('service_unavailable', 'The database cannot be reached; try again shortly', undefined, {
    'retry-after': String(OUTAGE_RETRY_AFTER_S),
  });

/**
 * The process's view of the database's reachability, so that an outage is logged once when it starts and once when it
 * ends — not once per failed request. The first failure starts probing with a trivial query (at once, then every
 * `probeMs`): a probe that fails confirms the outage, logged once (`warn`, with the driver's error kind and code); the
 * first probe that succeeds ends it, logged once (`info`, with how long it lasted and how many requests were refused).
 * A failure the first probe does not confirm (one connection cut under a request, a blip) is not logged as an outage.
 * Probing runs only while an outage is suspected; its timer never keeps the process alive.
 */
export class DatabaseOutage {
  readonly #log: Logger;
  readonly #probe: () => Promise<unknown>;
  readonly #probeMs: number;
  /** When the first failure was met; undefined while the database is taken to be reachable. */
  #since: number | undefined;
  /** The first failure's kind and code, for the outage's log line. */
  #cause: { type: string | undefined; code: unknown } | undefined;
  /** Whether the outage has been confirmed (and logged). */
  #confirmed = false;
  #refused = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(log: Logger, probe: () => Promise<unknown>, probeMs = 1000) {
    this.#log = log;
    this.#probe = probe;
    this.#probeMs = probeMs;
  }

  /** Whether an outage is suspected or going on (from its first failure to the first probe that succeeded). */
  get active(): boolean {
    return this.#since !== undefined;
  }

  /**
   * Records a request refused because the database cannot be reached (`error`: what the driver threw, kept to its
   * kind and code in the log: a driver message can quote SQL).
   */
  report(error: unknown, refused = true): void {
    if (refused) this.#refused++;
    if (this.#since !== undefined || this.#closed) return;
    this.#since = Date.now();
    this.#cause = { type: errorName(error), code: fieldOf(error, 'code') ?? fieldOf(fieldOf(error, 'cause'), 'code') };
    this.#schedule(0);
  }

  /**
   * For background work (outbox workers, housekeeping): when `error` is the database being unreachable, the outage
   * takes it (logged once for the process, not once per poll) and this answers true; otherwise false, and the caller
   * logs it as it would.
   */
  absorb(error: unknown): boolean {
    if (!isDatabaseUnreachable(error)) return false;
    this.report(error, false);
    return true;
  }

  #schedule(delayMs: number) {
    if (this.#closed) return;
    this.#timer = setTimeout(() => void this.#check(), delayMs);
    this.#timer.unref();
  }

  async #check() {
    try {
      await this.#probe();
    } catch {
      if (!this.#confirmed && !this.#closed) {
        this.#confirmed = true;
        this.#log.warn({ err: this.#cause }, 'database unreachable: answering 503 service_unavailable until it is back');
      }
      this.#schedule(this.#probeMs);
      return;
    }
    if (this.#since === undefined) return;
    if (this.#confirmed) {
      this.#log.info({ lasted_ms: Date.now() - this.#since, refused: this.#refused }, 'database reachable again');
    }
    this.#since = undefined;
    this.#cause = undefined;
    this.#confirmed = false;
    this.#refused = 0;
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }
}

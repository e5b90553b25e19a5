import { Redis } from 'ioredis';
import pg from 'pg';
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterPostgres,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import { AppError } from '../errors.ts';
import type { Metrics } from './metrics.ts';

/** Writes the RateLimit-* headers when this limit is the tightest so far; answers its reset in seconds. */
function report(headers: Record<string, string>, limit: number, res: RateLimiterRes, refused = false): number {
  const remaining = refused ? 0 : Math.max(0, res.remainingPoints);
  const reset = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
  const current = headers['ratelimit-remaining'];
  if (refused || current === undefined || remaining < Number(current)) {
    headers['ratelimit-limit'] = String(limit);
    headers['ratelimit-remaining'] = String(remaining);
    headers['ratelimit-reset'] = String(reset);
  }
  return reset;
}

/** Where counters live: shared by every process (PostgreSQL or Redis), or in memory for the one-process PGlite. */
export type RateLimitStore = { kind: 'postgres'; url: string } | { kind: 'redis'; url: string } | { kind: 'memory' };

/**
 * Fixed-window counters from rate-limiter-flexible. Limits come from each application's settings, so a limiter is
 * made (and cached) per distinct (name, points, window).
 */
export class RateLimits {
  readonly #limiters = new Map<string, RateLimiterAbstract>();
  readonly #client: pg.Pool | Redis | undefined;
  readonly #store: RateLimitStore;

  readonly #metrics: Metrics;

  constructor(store: RateLimitStore, metrics: Metrics) {
    this.#store = store;
    this.#metrics = metrics;
    if (store.kind === 'postgres') this.#client = new pg.Pool({ connectionString: store.url, max: 4 });
    if (store.kind === 'redis') this.#client = new Redis(store.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  }

  #limiter(name: string, points: number, windowS: number): RateLimiterAbstract {
    const id = `${name}:${points}:${windowS}`;
    let limiter = this.#limiters.get(id);
    if (!limiter) {
      const options = { keyPrefix: `gh:${id}`, points, duration: windowS };
      if (this.#store.kind === 'postgres') {
        // The table comes from our migrations (entity RateLimitEntity), so the library does not create it.
        limiter = new RateLimiterPostgres({
          ...options,
          storeClient: this.#client,
          storeType: 'pool',
          tableName: 'rate_limits',
          tableCreated: true,
        });
      } else if (this.#store.kind === 'redis') {
        limiter = new RateLimiterRedis({ ...options, storeClient: this.#client });
      } else {
        limiter = new RateLimiterMemory(options);
      }
      this.#limiters.set(id, limiter);
    }
    return limiter;
  }

  /**
   * Counts one attempt against `key`; over the limit it throws 429 `rate_limited` with `retry-after`. A store that
   * fails fails closed (SECURITY 12): the attempt is refused, not waved through. `headers` (the response's) get the
   * IETF draft's `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (seconds) of the tightest limit the
   * request met.
   */
  async consume(name: string, key: string, points: number, windowS: number, headers?: Record<string, string>): Promise<void> {
    try {
      const res = await this.#limiter(name, points, windowS).consume(key);
      if (headers) report(headers, points, res);
    } catch (error) {
      if (error instanceof RateLimiterRes) {
        this.#metrics.rateLimited.inc({ limit: name });
        const refused: Record<string, string> = {};
        const reset = report(refused, points, error, true);
        throw new AppError('rate_limited', 'Too many requests; try again later', undefined, {
          ...refused,
          'retry-after': String(reset),
        });
      }
      throw new AppError('service_unavailable', 'Rate limiting is unavailable; try again later');
    }
  }

  /**
   * Gives back one point that `consume` counted for an attempt that turned out not to count (a correct second
   * factor: limits count failures, but an attempt is counted before it is checked so that concurrent guesses cannot
   * slip past the limit). Best effort: a refund that fails only over-counts, which errs on the safe side.
   */
  async refund(name: string, key: string, points: number, windowS: number): Promise<void> {
    try {
      await this.#limiter(name, points, windowS).reward(key);
    } catch {
      // Over-counting is safe; nothing to do.
    }
  }

  async close(): Promise<void> {
    if (this.#client instanceof Redis) this.#client.disconnect();
    else await this.#client?.end();
  }
}

import type { Redis, RedisOptions } from 'ioredis';
import pg from 'pg';
import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../errors.ts';
import { deleteInBatches, type PurgeStep } from './housekeeping.ts';
import type { Metrics } from './metrics.ts';
import { OUTAGE_RETRY_AFTER_S } from './outage.ts';

/** One counter: at most `points` attempts per `key` in a fixed window of `windowS` seconds. */
export interface Limit {
  name: string;
  key: string;
  points: number;
  windowS: number;
}

/** A counter after an attempt was added: its points in the window and when the window ends. */
/** A limit and its counter after the attempt. */
interface Count {
  limit: Limit;
  points: number;
  msBeforeNext: number;
}

/** Where counters live: shared by every process (PostgreSQL or Redis), or in memory for the one-process PGlite. */
export type RateLimitStore =
  /** `unnamed`: behind a transaction-mode pooler, statements are not prepared by name (`DatabasePooler`). */
  { kind: 'postgres'; url: string; unnamed?: boolean } | { kind: 'redis'; url: string } | { kind: 'memory' };

/** Adds `delta` to every limit's counter and answers the counts, in the order of `limits`. */
interface Counters {
  /** Counts `delta` against every limit; answers each limit's count, in the order of `limits`. */
  add(limits: Limit[], delta: 1 | -1): Promise<Count[]>;
  close(): Promise<void>;
}

const storageKey = (limit: Limit) => `gh:${limit.name}:${limit.points}:${limit.windowS}:${limit.key}`;

/**
 * PostgreSQL: every limit of a request in one statement (one round trip however many limits), on a small pool of its
 * own so that a flood of refused attempts cannot take the pool the API needs. The table is rate-limiter-flexible's
 * layout (key, points, expire in ms), created by our migrations. rate-limiter-flexible's own PostgreSQL store writes
 * one statement per key, which is why this store is ours.
 */
class PostgresCounters implements Counters {
  readonly #pool: pg.Pool;
  readonly #named: boolean;

  constructor(url: string, unnamed = false) {
    this.#pool = new pg.Pool({ connectionString: url, max: 4 });
    this.#named = !unnamed;
    // An idle connection the server ends (a restart, a dropped database) is an 'error' on the pool: without a
    // listener, Node would end the process. The pool discards that connection; the next query opens another.
    this.#pool.on('error', () => undefined);
  }

  async add(limits: Limit[], delta: 1 | -1): Promise<Count[]> {
    const now = Date.now();
    const keys = limits.map(storageKey);
    // Rows are locked in key order by both statements (the insert's input sorted, the refund's locking subquery
    // ordered): a consume and a refund of the same keys can never deadlock.
    const ordered = limits
      .map((limit) => ({ key: storageKey(limit), windowMs: limit.windowS * 1000 }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const { rows } = await this.#pool.query<{ key: string; points: number; expire: string }>(
      delta === 1
        ? {
            name: this.#named ? 'rate_limit_consume' : undefined,
            text: `insert into rate_limits (key, points, expire)
                     select key, 1, $3::bigint + window_ms from unnest($1::text[], $2::bigint[]) as l(key, window_ms)
                   on conflict (key) do update set
                     points = case when rate_limits.expire <= $3 then 1 else rate_limits.points + 1 end,
                     expire = case when rate_limits.expire <= $3 then excluded.expire else rate_limits.expire end
                   returning key, points, expire`,
            values: [ordered.map((l) => l.key), ordered.map((l) => l.windowMs), now],
          }
        : {
            name: this.#named ? 'rate_limit_refund' : undefined,
            text: `update rate_limits set points = points - 1
                    where key in (select key from rate_limits where key = any($1::text[]) order by key for update)
                      and expire > $2 and points > 0
                    returning key, points, expire`,
            values: [keys, now],
          },
    );
    const byKey = new Map(rows.map((row) => [row.key, row]));
    return limits.map((limit) => {
      const row = byKey.get(storageKey(limit));
      return { limit, points: row?.points ?? 0, msBeforeNext: row ? Math.max(0, Number(row.expire) - now) : 0 };
    });
  }

  close(): Promise<void> {
    return this.#pool.end();
  }
}

/**
 * ioredis's client, typed as the one constructor used here: checking a call against the class's own overloads costs the
 * type checker about 230 k type instantiations, a quarter of this package's (`tsc --extendedDiagnostics`).
 */
type RedisClient = new (url: string, options: RedisOptions) => Redis;

/** What a library store holds once loaded: rate-limiter-flexible, and the Redis client when counters live there. */
interface LibraryStore {
  library: typeof import('rate-limiter-flexible');
  redis: Redis | undefined;
}

/**
 * Memory (one process) or Redis (several): rate-limiter-flexible, one limiter per distinct (name, points, window). The
 * library (and ioredis) load when such a store is made, never on PostgreSQL, whose store is ours; the Redis client
 * still connects at start.
 */
class LibraryCounters implements Counters {
  readonly #limiters = new Map<string, RateLimiterAbstract>();
  readonly #store: Promise<LibraryStore>;

  constructor(redisUrl?: string) {
    this.#store = Promise.all([import('rate-limiter-flexible'), redisUrl ? import('ioredis') : undefined]).then(
      ([library, ioredis]): LibraryStore => ({
        library,
        redis:
          ioredis && redisUrl
            ? // see RedisClient
              new (ioredis.Redis as unknown as RedisClient)(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 })
            : undefined,
      }),
    );
  }

  #limiter(store: LibraryStore, limit: Limit): RateLimiterAbstract {
    const id = `${limit.name}:${limit.points}:${limit.windowS}`;
    let limiter = this.#limiters.get(id);
    if (!limiter) {
      // The limit is enforced by RateLimits, so the library may count past it (points: a bound it never reaches).
      const options = { keyPrefix: `gh:${id}`, points: Number.MAX_SAFE_INTEGER, duration: limit.windowS };
      limiter = store.redis
        ? new store.library.RateLimiterRedis({ ...options, storeClient: store.redis })
        : new store.library.RateLimiterMemory(options);
      this.#limiters.set(id, limiter);
    }
    return limiter;
  }

  async add(limits: Limit[], delta: 1 | -1): Promise<Count[]> {
    const store = await this.#store;
    return Promise.all(
      limits.map(async (limit) => {
        const limiter = this.#limiter(store, limit);
        const res: RateLimiterRes = delta === 1 ? await limiter.consume(limit.key) : await limiter.reward(limit.key);
        return { limit, points: res.consumedPoints, msBeforeNext: res.msBeforeNext };
      }),
    );
  }

  async close(): Promise<void> {
    (await this.#store).redis?.disconnect();
  }
}

/** Writes the RateLimit-* headers of the tightest limit (IETF draft: limit, remaining, reset in seconds). */
function report(headers: Record<string, string>, count: Count, refused: boolean): number {
  const limit = count.limit;
  const remaining = refused ? 0 : Math.max(0, limit.points - count.points);
  const reset = Math.max(1, Math.ceil(count.msBeforeNext / 1000));
  const current = headers['ratelimit-remaining'];
  if (refused || current === undefined || remaining < Number(current)) {
    headers['ratelimit-limit'] = String(limit.points);
    headers['ratelimit-remaining'] = String(remaining);
    headers['ratelimit-reset'] = String(reset);
  }
  return reset;
}

/** Fixed-window counters. Limits come from each application's settings, so every call names its own. */
export class RateLimits {
  readonly #counters: Counters;
  readonly #metrics: Metrics;

  constructor(store: RateLimitStore, metrics: Metrics) {
    this.#metrics = metrics;
    this.#counters =
      store.kind === 'postgres'
        ? new PostgresCounters(store.url, store.unnamed)
        : new LibraryCounters(store.kind === 'redis' ? store.url : undefined);
  }

  /**
   * Counts one attempt against every limit at once (one round trip on PostgreSQL). Over any of them it throws 429
   * `rate_limited` with `retry-after`, and the refused attempt counts nowhere. A store that fails fails closed
   * (SECURITY 12): the attempt is refused, not waved through. `headers` (the response's) get the RateLimit-* headers
   * of the tightest limit the request met.
   */
  async consume(limits: Limit[], headers?: Record<string, string>): Promise<void> {
    let counts: Count[];
    try {
      counts = await this.#counters.add(limits, 1);
    } catch (error) {
      throw new AppError(
        'service_unavailable',
        'Rate limiting is unavailable; try again later',
        undefined,
        { 'retry-after': String(OUTAGE_RETRY_AFTER_S) },
        error,
      );
    }
    const over = counts.find((count) => count.points > count.limit.points);
    if (!over) {
      if (headers) for (const count of counts) report(headers, count, false);
      return;
    }
    await this.refund(limits);
    this.#metrics.rateLimited.inc({ limit: over.limit.name });
    const refused: Record<string, string> = {};
    const reset = report(refused, over, true);
    throw new AppError('rate_limited', 'Too many requests; try again later', undefined, {
      ...refused,
      'retry-after': String(reset),
    });
  }

  /**
   * Gives back the point `consume` counted for an attempt that turned out not to count (a correct second factor:
   * limits count failures, but an attempt is counted before it is checked so that concurrent guesses cannot slip past
   * the limit). Best effort: a refund that fails only over-counts, which errs on the safe side.
   */
  async refund(limits: Limit[]): Promise<void> {
    await this.#counters.add(limits, -1).catch(() => undefined);
  }

  close(): Promise<void> {
    return this.#counters.close();
  }
}

/** Counters whose window ended an hour ago count nothing any more (the PostgreSQL store's rows; none elsewhere). */
export const purgeRateLimits: PurgeStep = (em) =>
  deleteInBatches(em, 'rate_limits', `t.expire < (extract(epoch from now()) * 1000)::bigint - 3600000`);

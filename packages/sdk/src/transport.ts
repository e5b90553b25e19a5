import type { AppRouter } from '@gatehouse/api';
import { createTRPCUntypedClient, httpLink } from '@trpc/client';
import packageJson from '../package.json' with { type: 'json' };
import { GatehouseError } from './errors.ts';
import { PROCEDURES } from './procedures.ts';

export type ProcedurePath = keyof typeof PROCEDURES;

/** Sent on every call as `x-gatehouse-client` (and in the User-Agent on servers), so operators see who calls. */
export const SDK_CLIENT = `gatehouse-sdk-js/${packageJson.version}`;

export interface TransportOptions {
  baseUrl: string;
  fetch?: typeof fetch;
  headers: (accessToken: string | undefined) => Record<string, string>;
  /** Per attempt; default 30 s. A call that takes longer fails with `timeout`. */
  timeoutMs?: number;
  /**
   * Retries of a read (a query: safe to repeat), a create (it carries an Idempotency-Key) or a refresh (the server
   * answers a repeat within its grace with the same pair) after a network error, a timeout, 429 or a 5xx answer;
   * default 2, 0 turns them off. Other writes are never repeated by the SDK.
   */
  maxRetries?: number;
  /** Set a User-Agent (servers; a browser sets its own). */
  userAgent?: boolean;
}

const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504]);

/**
 * Writes the service answers the same when they are repeated, so a retry after a lost answer is safe: a refresh
 * presented again within the server's grace (30 s by default) answers the same new pair, never a second one.
 */
const REPLAYABLE_PATHS = ['/trpc/auth.token.refresh'];
const replayable = (input: Parameters<typeof fetch>[0]) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const path = url.split('?')[0] ?? '';
  return REPLAYABLE_PATHS.some((suffix) => path.endsWith(suffix));
};
const MAX_DELAY_MS = 20_000;

/** Exponential back-off with full jitter (0.5 s, 1 s, 2 s … capped), or the server's `retry-after` when it says. */
function delayBefore(attempt: number, response: Response | undefined): number {
  const retryAfter = response?.headers.get('retry-after');
  if (retryAfter) {
    const seconds = Number(retryAfter);
    const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(retryAfter) - Date.now();
    if (ms >= 0) return Math.min(ms, MAX_DELAY_MS);
  }
  return Math.random() * Math.min(MAX_DELAY_MS, 500 * 2 ** attempt);
}

/** What to say when no answer came: the fetch's own words, or for undici's bare "fetch failed" its cause. */
function unreachable(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (message !== 'fetch failed') return message;
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return `Could not reach the service (${cause?.code ?? cause?.message ?? 'no answer'})`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A failure below the API (a timeout, the network, an answer that is not the service's: a proxy's 502 page), so that
 * the error mapping names it with its status instead of a generic network error.
 */
class TransportFailure extends Error {
  readonly code: 'timeout' | 'network_error' | 'unexpected_response';
  readonly status: number;
  readonly requestId: string | undefined;

  constructor(code: TransportFailure['code'], message: string, response?: Response) {
    super(message);
    this.code = code;
    this.status = response?.status ?? 0;
    this.requestId = response?.headers.get('x-request-id') ?? undefined;
  }
}

/**
 * `fetch` with a timeout per attempt and, for reads, retries. Answers the last response (its status and body go on
 * to the error mapping), or throws a `TransportFailure`.
 */
function resilientFetch(options: TransportOptions): typeof fetch {
  const base = options.fetch ?? globalThis.fetch;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxRetries = options.maxRetries ?? 2;
  return async (input, init) => {
    // Reads, creates that carry an Idempotency-Key (the service answers a repeat with the first answer), and refreshes.
    const idempotent =
      (init?.method ?? 'GET').toUpperCase() === 'GET' || new Headers(init?.headers).has('idempotency-key') || replayable(input);
    for (let attempt = 0; ; attempt++) {
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
      let response: Response | undefined;
      let failure: TransportFailure | undefined;
      try {
        response = await base(input, { ...init, signal });
      } catch (error) {
        if (init?.signal?.aborted) throw error;
        failure = timeout.aborted
          ? new TransportFailure('timeout', `No answer within ${timeoutMs} ms`)
          : new TransportFailure('network_error', unreachable(error));
      }
      const retry = idempotent && attempt < maxRetries && (failure !== undefined || RETRYABLE_STATUS.has(response!.status));
      if (!retry) {
        if (failure) throw failure;
        if (!response!.ok && !response!.headers.get('content-type')?.includes('json')) {
          await response!.body?.cancel().catch(() => undefined);
          throw new TransportFailure(
            'unexpected_response',
            `The service answered HTTP ${response!.status} ${response!.statusText} without a Gatehouse body (a proxy or load balancer in between?)`,
            response,
          );
        }
        return response!;
      }
      await response?.body?.cancel().catch(() => undefined);
      await sleep(delayBefore(attempt, response));
    }
  };
}

/**
 * The one way both clients reach the service: tRPC over `{baseUrl}/trpc` (part of the public, versioned surface, like
 * `/v1`), the query or mutation the router declares for the path, and failures as `GatehouseError`. `headers` sees
 * the per-call access token, if any.
 */
export function createTransport(options: TransportOptions) {
  const client = createTRPCUntypedClient<AppRouter>({
    links: [
      httpLink({
        url: `${options.baseUrl.replace(/\/+$/, '')}/trpc`,
        fetch: resilientFetch(options),
        headers: ({ op }) => ({
          ...options.headers((op.context as { accessToken?: string }).accessToken),
          ...((op.context as { idempotencyKey?: string }).idempotencyKey
            ? { 'idempotency-key': (op.context as { idempotencyKey: string }).idempotencyKey }
            : {}),
          'x-gatehouse-client': SDK_CLIENT,
          ...(options.userAgent && typeof process !== 'undefined'
            ? { 'user-agent': `${SDK_CLIENT} node/${process.version}` }
            : {}),
        }),
      }),
    ],
  });
  return async <T>(path: ProcedurePath, input: unknown, accessToken?: string): Promise<T> => {
    // A create gets one key for all its attempts: a retry after a lost answer cannot create twice.
    const request = {
      context: {
        ...(accessToken ? { accessToken } : {}),
        ...(PROCEDURES[path] === 'create' ? { idempotencyKey: crypto.randomUUID() } : {}),
      },
    };
    try {
      return (await (PROCEDURES[path] === 'query'
        ? client.query(path, input, request)
        : client.mutation(path, input, request))) as T;
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause;
      if (cause instanceof TransportFailure) {
        throw new GatehouseError(cause.code, cause.status, cause.message, undefined, cause.requestId);
      }
      throw GatehouseError.from(error);
    }
  };
}

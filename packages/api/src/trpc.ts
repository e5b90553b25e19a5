import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { initTRPC, TRPCError } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { ZodError } from 'zod';
import { type Context, header } from './context.ts';
import type { EntityManager } from './db/orm.ts';
import { AppError, ERROR_CODES, type ErrorBody, type ErrorCode, fieldOf } from './errors.ts';
import { withRequest } from './lib/acting.ts';
import { type IdempotentContext, idempotent } from './lib/idempotency.ts';
import { databaseUnavailable, isDatabaseUnreachable } from './lib/outage.ts';
import { issueCode } from './lib/schemas.ts';
import type { Scope } from './lib/scopes.ts';

/** Who may call: the operator, a secret key, a browser (publishable id), a signed-in browser (★), anyone. */
export type CallerKind = 'operator' | 'secret_key' | 'end_user' | 'signed_in' | 'public';

export type Meta = OpenApiMeta<{
  /** HTTP status of a successful REST call (201 for creates); tRPC always answers 200. */
  successStatus?: number;
  caller?: CallerKind;
  scope?: Scope;
  /** REST answers the data as it is, without the envelope (JWKS documents: standard tools read them). */
  envelope?: false;
  /**
   * REST streams the body the procedure leaves in `ctx.response.stream`, of one of these content types (each with an
   * example body for OpenAPI), instead of an envelope; tRPC answers the procedure's output (null).
   */
  stream?: Readonly<Record<string, string>>;
  /** The route counts attempts against a rate limit, so it can answer 429 (documented in OpenAPI). */
  rateLimited?: true;
  /**
   * A create that honours an `Idempotency-Key` (`lib/idempotency.ts`; documented in OpenAPI, retried by the SDK): the
   * key's claim, the handler's writes (through `ctx.em`) and the stored answer commit in one transaction. `'own-write'`:
   * the handler makes an outbound call before it writes, which no transaction may wait on (PGlite has one connection),
   * so it runs outside one and does its write through `idempotentWrite`.
   */
  idempotent?: true | 'own-write';
}>;

/** tRPC's own error codes (thrown by tRPC before our middlewares run) mapped to ours. */
const TRPC_TO_CODE: Partial<Record<TRPCError['code'], ErrorCode>> = {
  PARSE_ERROR: 'invalid_json',
  // tRPC's own refusal of an input it cannot read (zod failures arrive with their ZodError, handled above).
  BAD_REQUEST: 'validation_failed',
  NOT_FOUND: 'not_found',
  METHOD_NOT_SUPPORTED: 'method_not_allowed',
  PAYLOAD_TOO_LARGE: 'payload_too_large',
  UNSUPPORTED_MEDIA_TYPE: 'unsupported_media_type',
};

const zodDetails = (error: ZodError) =>
  error.issues.map((issue) => ({ path: issue.path.join('.') || '(root)', message: issue.message }));

/** The error body of any thrown thing: AppErrors as they are, known framework errors mapped, the rest internal. */
export function errorBody(error: unknown): ErrorBody {
  const cause = error instanceof TRPCError ? (error.cause ?? error) : error;
  if (cause instanceof AppError) return { code: cause.code, message: cause.message, details: cause.details };
  if (cause instanceof ZodError) {
    // a ZodError of our schemas carries the issues of the zod version issueCode is typed for; the code is one of ERROR_CODES, checked below.
    const code = issueCode(cause.issues as Parameters<typeof issueCode>[0]) as ErrorCode;
    const details = zodDetails(cause);
    // A refused URL says why in the message too (a plain CLI line or a log shows only the message).
    const message =
      code === 'validation_failed'
        ? 'The request does not match the schema'
        : `The URL is not allowed: ${details.map((d) => `${d.path}: ${d.message}`).join('; ')}`;
    return { code: code in ERROR_CODES ? code : 'validation_failed', message, details };
  }
  if (cause instanceof UniqueConstraintViolationException) return { code: 'conflict', message: 'Already exists' };
  if (isDatabaseUnreachable(cause)) return { code: 'service_unavailable', message: databaseUnavailable().message };
  const mapped = error instanceof TRPCError ? { code: TRPC_TO_CODE[error.code], message: error.message } : undefined;
  if (mapped?.code) return { code: mapped.code, message: mapped.message };
  return { code: 'internal_error', message: 'Internal error' };
}

/** What may be logged about an unexpected error: its kind, never a driver message (it can quote SQL and values). */
export function describeError(error: unknown): Record<string, unknown> {
  const cause = error instanceof TRPCError && error.cause ? error.cause : error;
  if (!(cause instanceof Error)) return { type: typeof cause };
  const sqlState = fieldOf(cause, 'code');
  const isDriver = cause.constructor.name.endsWith('Exception') || typeof sqlState === 'string';
  return { type: cause.constructor.name, ...(isDriver ? { sqlState } : { message: cause.message }) };
}

const t = initTRPC
  .context<Context>()
  .meta<Meta>()
  .create({
    isDev: false,
    errorFormatter({ shape, error }) {
      const body = errorBody(error);
      return {
        message: body.message,
        code: shape.code,
        data: {
          code: body.code,
          httpStatus: ERROR_CODES[body.code].status,
          path: shape.data.path,
          ...(body.details ? { details: body.details } : {}),
        },
      };
    },
  });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

type AuthenticatedCaller = Exclude<CallerKind, 'public'>;

/**
 * How a kind of caller is authenticated: answers what it adds to the context (the application, the key, the session…),
 * or throws the credential's error. `meta` is the procedure's.
 */
export type Authenticate<Caller extends object> = (ctx: Context, meta: Meta | undefined) => Promise<Caller>;

/**
 * A credential its procedure checks inside its own statement, which saves a hot path a round trip (a secret key, or an
 * end user's application and origin): an authenticator answers it as the context's `deferredCredential`, and the
 * procedure marks it `settled` once its statement has judged it. A call that fails before that (invalid input, say)
 * gets it checked the ordinary way by `settle()`, so its answers and their order are those of every other procedure
 * of its kind.
 */
export class DeferredCredential {
  settled = false;
  readonly settle: () => Promise<void>;
  constructor(settle: () => Promise<void>) {
    this.settle = settle;
  }
}

type Settled = { ok: true } | { ok: false; error: unknown };

/**
 * Runs the procedure (`run`, the handler through tRPC's `next`), a create with meta `idempotent` under its
 * Idempotency-Key: `run` gets the entity manager of the key's transaction, when there is one.
 */
async function runProcedure<Result extends Settled & { data?: unknown }>(
  context: () => IdempotentContext,
  meta: Meta | undefined,
  call: () => Promise<{ path: string; rawInput: unknown }>,
  run: (em?: EntityManager) => Promise<Result>,
): Promise<Result> {
  const mode = meta?.idempotent;
  if (!mode) return run();
  const { data } = await idempotent(context(), await call(), mode, async (em) => {
    const result = await run(em);
    if (!result.ok) throw result.error;
    return result.data;
  });
  // A replay answers without running the handler: the result tRPC's own would have been.
  return { ok: true, data, marker: undefined } as unknown as Result;
}

/**
 * What the one middleware of every procedure does around `call` (the caller's authentication and the procedure):
 * errors leave with the tRPC code matching their HTTP status, unexpected ones logged once with the request id (and
 * nothing that could hold secrets), and REST creates answer 201. One middleware, not one per concern: each costs a
 * closure and an await on every call of the hot paths.
 */
async function guarded<Result extends Settled>(
  ctx: Context,
  meta: Meta | undefined,
  call: () => Promise<Result>,
): Promise<Result> {
  let failure: unknown;
  try {
    // The acting scope of the call (lib/acting.ts): its events carry the caller the authenticator names (`actAs`),
    // the system until then, and the request's address and user agent.
    const result = await withRequest({ ip: ctx.ip, userAgent: header(ctx, 'user-agent') ?? null }, () =>
      ctx.services.inFlight.run(call),
    );
    const settled: Settled = result;
    if (settled.ok) {
      if (meta?.successStatus) ctx.response.status = meta.successStatus;
      if (meta?.envelope === false) ctx.response.raw = true;
      return result;
    }
    failure = settled.error;
  } catch (error) {
    failure = error;
  }
  const body = errorBody(failure);
  if (body.code === 'internal_error') ctx.log.error({ err: describeError(failure) }, 'unhandled error');
  const thrown = failure instanceof TRPCError ? failure.cause : failure;
  // The database (or the rate limiter's store in it) cannot be reached: 503 with retry-after, and the outage logged
  // once for the process rather than once per request.
  const unreachable = body.code === 'service_unavailable' && isDatabaseUnreachable(thrown);
  if (unreachable) ctx.services.outage.report(thrown);
  const cause =
    thrown instanceof AppError
      ? thrown
      : unreachable
        ? databaseUnavailable()
        : new AppError(body.code, body.message, body.details);
  if (cause.headers) Object.assign(ctx.response.headers, cause.headers);
  throw new TRPCError({ code: ERROR_CODES[body.code].trpc, message: body.message, cause });
}

/** Anyone may call: the context is the request's, unauthenticated. */
export const publicProcedure = t.procedure.meta({ caller: 'public' }).use(({ ctx, meta, next, path, getRawInput }) =>
  guarded(ctx, meta, () =>
    runProcedure(
      () => ctx,
      meta,
      async () => ({ path, rawInput: await getRawInput() }),
      (em) => (em ? next({ ctx: { em } }) : next()),
    ),
  ),
);

/**
 * The procedure builder of a kind of caller, for the module that owns its credential: its one middleware authenticates
 * the caller with `authenticate` and runs the procedure with what that answered added to its context (a merged copy,
 * since the calls of one tRPC batch share the context they start from), so the handler's context has the caller's
 * type. A credential its procedure was to check in its own statement (`DeferredCredential`) and did not reach is
 * checked here, so that its error comes first, as for every other procedure.
 */
export function authenticatedProcedure<Caller extends object>(caller: AuthenticatedCaller, authenticate: Authenticate<Caller>) {
  return t.procedure.meta({ caller }).use(({ ctx, meta, next, path, getRawInput }) =>
    guarded(ctx, meta, async () => {
      const authenticated = await authenticate(ctx, meta);
      const result = await runProcedure(
        // The merged copy only for a create under a key: the hot paths pay no spread.
        () => ({ ...ctx, ...authenticated }),
        meta,
        async () => ({ path, rawInput: await getRawInput() }),
        (em) => next({ ctx: em ? { ...authenticated, em } : authenticated }),
      );
      if (!result.ok && 'deferredCredential' in authenticated) {
        const deferred = authenticated.deferredCredential;
        if (deferred instanceof DeferredCredential && !deferred.settled) await deferred.settle();
      }
      return result;
    }),
  );
}

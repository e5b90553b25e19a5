import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { initTRPC, TRPCError } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { ZodError } from 'zod';
import type { Authenticated, Context } from './context.ts';
import { AppError, ERROR_CODES, type ErrorBody, type ErrorCode } from './errors.ts';
import { idempotent } from './lib/idempotency.ts';
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
  /** The route counts attempts against a rate limit, so it can answer 429 (documented in OpenAPI). */
  rateLimited?: true;
  /**
   * A create that honours an `Idempotency-Key` (`lib/idempotency.ts`; documented in OpenAPI, retried by the SDK): the
   * key's claim, the handler's writes (through `ctx.em`) and the stored answer commit in one transaction. `'own-write'`:
   * the handler makes an outbound call before it writes, which no transaction may wait on (PGlite has one connection),
   * so it runs outside one and does its write through `idempotentWrite`.
   */
  idempotent?: true | 'own-write';
  /**
   * The procedure checks its credential inside its own statement, which saves a hot path a round trip: a secret key
   * (api-keys `secretKeyInStatement`), or an end user's application and origin (`ctx.applicationInStatement`). Its
   * answers and their order are those of every other procedure of its kind.
   */
  credentialInStatement?: true;
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
  const mapped = error instanceof TRPCError ? TRPC_TO_CODE[error.code] : undefined;
  if (mapped) return { code: mapped, message: (error as TRPCError).message };
  return { code: 'internal_error', message: 'Internal error' };
}

/** What may be logged about an unexpected error: its kind, never a driver message (it can quote SQL and values). */
export function describeError(error: unknown): Record<string, unknown> {
  const cause = error instanceof TRPCError && error.cause ? error.cause : error;
  if (!(cause instanceof Error)) return { type: typeof cause };
  const sqlState = (cause as { code?: unknown }).code;
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

/**
 * How each kind of caller is authenticated: filled by the module that owns the credential (api-keys: operator, secret
 * key, end user; sessions: signed in), so the kernel imports no module. What an authenticator answers is merged into
 * the context (the fields it declares on `Context`).
 */
type Authenticator = (ctx: Context, meta: Meta | undefined) => Promise<Authenticated>;
type AuthenticatedCaller = Exclude<CallerKind, 'public'>;
const authenticators = new Map<AuthenticatedCaller, Authenticator>();

export function registerAuthenticator(caller: AuthenticatedCaller, authenticate: Authenticator): void {
  authenticators.set(caller, authenticate);
}

/**
 * Authenticates the caller (by its meta `caller`) and runs the procedure with what the authenticator answered merged
 * into its context: a merged copy, since the calls of one tRPC batch share the context they start from. A credential
 * its procedure was to check in its own statement (`deferredCredential`) and did not reach is checked here, so that
 * its error comes first, as for every other procedure.
 */
async function authenticateAndRun(ctx: Context, meta: Meta | undefined, next: Next) {
  const caller = meta?.caller ?? 'public';
  if (caller === 'public') return next();
  const authenticate = authenticators.get(caller);
  // Fail closed: a route whose credential has no authenticator (a module not loaded) refuses everyone.
  if (!authenticate) throw new Error(`no authenticator for ${caller}`);
  const authenticated = await authenticate(ctx, meta);
  const result = await next({ ctx: authenticated });
  const deferred = authenticated.deferredCredential;
  if (!result.ok && deferred && !deferred.settled) await deferred.settle();
  return result;
}
type Next = (options?: { ctx: Authenticated }) => Promise<{ ok: true } | { ok: false; error: TRPCError }>;

/**
 * The one middleware of every procedure: the caller authenticated (by its meta `caller`), errors leaving with the tRPC
 * code matching their HTTP status, unexpected ones logged once with the request id (and nothing that could hold
 * secrets), creates run under their Idempotency-Key (meta `idempotent`), and REST creates answering 201.
 */
const procedure = t.procedure.use(async ({ ctx, meta, next, path, getRawInput }) => {
  let failure: unknown;
  try {
    const mode = meta?.idempotent;
    const run: Next = !mode
      ? next
      : async (options) => {
          const call = { path, rawInput: await getRawInput() };
          const { data } = await idempotent({ ...ctx, ...options?.ctx }, call, mode, async (em) => {
            const result = await next({ ctx: em ? { ...options?.ctx, em } : options?.ctx });
            if (!result.ok) throw result.error;
            return result.data;
          });
          // A replay answers without running the handler: the result tRPC's own would have been.
          return { ok: true, data, marker: undefined } as unknown as Awaited<ReturnType<typeof next>>;
        };
    const result = await ctx.services.inFlight.run(() => authenticateAndRun(ctx, meta, run));
    if (result.ok) {
      if (meta?.successStatus) ctx.response.status = meta.successStatus;
      if (meta?.envelope === false) ctx.response.raw = true;
      return result as Awaited<ReturnType<typeof next>>;
    }
    failure = result.error;
  } catch (error) {
    failure = error;
  }
  const body = errorBody(failure);
  if (body.code === 'internal_error') ctx.log.error({ err: describeError(failure) }, 'unhandled error');
  const thrown = failure instanceof TRPCError ? failure.cause : failure;
  const cause = thrown instanceof AppError ? thrown : new AppError(body.code, body.message, body.details);
  if (cause.headers) Object.assign(ctx.response.headers, cause.headers);
  throw new TRPCError({ code: ERROR_CODES[body.code].trpc, message: body.message, cause });
});

export const publicProcedure = procedure.meta({ caller: 'public' });

const authenticated = (caller: AuthenticatedCaller) => procedure.meta({ caller });

/** Operator routes: the operator token. */
export const operatorProcedure = authenticated('operator');

/** Secret-key procedures: the application from `x-application-id` first, then the key, then the scope. */
export const secretKeyProcedure = (scope: Scope) => authenticated('secret_key').meta({ scope });

/** End-user routes (ES): the application from `x-application-id`, then the browser's origin against its allowlist. */
export const endUserProcedure = authenticated('end_user');

/** Signed-in end-user routes (ES★): a valid access token of a session that is still live, of an active user. */
export const signedInProcedure = authenticated('signed_in');

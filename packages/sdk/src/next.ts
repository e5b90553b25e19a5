import {
  type AuthRequirements,
  authenticate,
  checkGuardOptions,
  checkRequirements,
  type GatehouseAuth,
  type GuardOptions,
  type GuardResult,
} from './guard.ts';

export type { AuthRequirements, GatehouseAuth, GuardErrorBody, GuardOptions } from './guard.ts';

/** A route handler that gets the caller: Next.js's `context` (`params`) with `auth` added. */
export type AuthedRouteHandler<Context, R extends Request = Request> = (
  request: R,
  context: Context & { auth: GatehouseAuth },
) => Response | Promise<Response>;

/** The guard of a Next.js app, made once with `createNextAuth(options)`. */
export interface NextAuthGuard {
  /**
   * For `middleware.ts`: a refusal `Response`, or `undefined` to let the request continue (what Next.js's
   * middleware does when it returns nothing). It only gates: a route handler that needs the caller uses `withAuth`.
   */
  middleware(request: Request): Promise<Response | undefined>;
  /**
   * Wraps a route handler (`export const GET = withAuth(async (request, { auth, params }) => …)`): a request
   * without a valid token, or short of the requirements, gets the refusal and never reaches the handler.
   */
  withAuth<Context = unknown, R extends Request = Request>(
    handler: AuthedRouteHandler<Context, R>,
    requirements?: AuthRequirements,
  ): (request: R, context: Context) => Promise<Response>;
  /** The verdict alone, for a middleware that does more: `{ auth }`, or `{ response }` to answer instead. */
  authenticate(
    request: Request,
    requirements?: AuthRequirements,
  ): Promise<{ auth: GatehouseAuth; response: null } | { auth: null; response: Response }>;
}

const toResponse = (refusal: NonNullable<GuardResult['refusal']>): Response =>
  new Response(JSON.stringify(refusal.body), {
    status: refusal.status,
    headers: { ...refusal.headers, 'content-type': 'application/json; charset=utf-8' },
  });

/**
 * Guards for Next.js on the standard `Request` and `Response` (a `NextRequest` is a `Request`), in the Node.js and
 * the Edge runtime alike:
 *
 * ```ts
 * // lib/gatehouse.ts
 * export const gatehouse = createNextAuth({ baseUrl: 'https://auth.example.com', applicationId: APP_ID });
 * // middleware.ts
 * export const middleware = gatehouse.middleware;
 * export const config = { matcher: '/api/:path*' };
 * // app/api/me/route.ts
 * export const GET = gatehouse.withAuth(async (request, { auth }) => Response.json({ user: auth.userId }));
 * ```
 *
 * Refusals: 401 (`WWW-Authenticate: Bearer …`) for a missing, malformed, expired or foreign token, 403 when the
 * token falls short of `requireOrganization`, `roles` or `minimumAal`, 503 when the signing keys cannot be fetched;
 * each in the service's JSON error envelope. Tokens are verified locally (`verifyToken`): a revoked session's token
 * passes until it expires. Throws a `TypeError` at once for options that could not work (no `baseUrl`, `roles: []`).
 */
export function createNextAuth(options: GuardOptions): NextAuthGuard {
  checkGuardOptions(options);
  const defaults: GuardOptions = { ...options };
  const settle = (requirements: AuthRequirements | undefined): GuardOptions => {
    if (requirements === undefined) return defaults;
    checkRequirements(requirements);
    return { ...defaults, ...requirements };
  };
  const judge = (request: Request, settled: GuardOptions) =>
    authenticate(request.headers.get('authorization') ?? undefined, settled, request.headers.get('x-request-id') ?? undefined);

  return {
    async middleware(request) {
      const result = await judge(request, defaults);
      return result.refusal ? toResponse(result.refusal) : undefined;
    },
    withAuth(handler, requirements) {
      const settled = settle(requirements);
      return async (request, context) => {
        const result = await judge(request, settled);
        if (result.refusal) return toResponse(result.refusal);
        // `context` is whatever Next.js passes (`{ params }`), possibly nothing: copied, never changed.
        return handler(request, Object.assign({}, context, { auth: result.auth }));
      };
    },
    async authenticate(request, requirements) {
      const result = await judge(request, settle(requirements));
      return result.refusal ? { auth: null, response: toResponse(result.refusal) } : { auth: result.auth, response: null };
    },
  };
}

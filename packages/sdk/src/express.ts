import { authenticate, checkGuardOptions, type GatehouseAuth, type GuardOptions, headerValue } from './guard.ts';

export type { AuthRequirements, GatehouseAuth, GuardErrorBody, GuardOptions } from './guard.ts';

/**
 * `req.auth`, typed for every Express app that imports this module: Express's types keep `Express.Request` open
 * for exactly this (it is where passport's `req.user` lives too). It is optional because the types cannot know
 * which routes ran `requireAuth()`; `getAuth(req)` answers it non-null.
 */
declare global {
  namespace Express {
    interface Request {
      /** The caller, set by `requireAuth()` of `@gatehouse/sdk/express` (absent on routes it does not guard). */
      auth?: GatehouseAuth;
    }
  }
}

/**
 * The request as the guard reads it: Express's `Request` (4 or 5), or Node's `IncomingMessage` under Connect, fits.
 * Typed here rather than imported from express, so that the SDK's types need no `@types/express`.
 */
export interface GuardedRequest {
  headers: Record<string, string | string[] | undefined>;
  auth?: GatehouseAuth;
}

/** The response as the guard writes a refusal: Node's `ServerResponse`, which Express's `Response` extends. */
export interface GuardedResponse {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body: string): unknown;
}

/**
 * Express (4 or 5) middleware that lets a request through only with a valid Gatehouse access token in
 * `Authorization: Bearer …`, and sets `req.auth`. It answers 401 (`WWW-Authenticate: Bearer …`) for a missing,
 * malformed, expired or foreign token, 403 when the token falls short of `requireOrganization`, `roles` or
 * `minimumAal`, and 503 when the signing keys cannot be fetched; each in the service's JSON error envelope.
 *
 * ```ts
 * app.use('/api', requireAuth({ baseUrl: 'https://auth.example.com', applicationId: APP_ID }));
 * app.delete('/api/projects/:id', requireAuth({ ...gatehouse, roles: ['owner', 'admin'] }), handler);
 * ```
 *
 * Tokens are verified locally (`verifyToken`): a revoked session's token passes until it expires.
 * Throws a `TypeError` at once for options that could not work (no `baseUrl`, `roles: []`, …).
 */
export function requireAuth(
  options: GuardOptions,
): (req: GuardedRequest, res: GuardedResponse, next: (error?: unknown) => void) => void {
  checkGuardOptions(options);
  const settled = { ...options };
  return (req, res, next) => {
    authenticate(headerValue(req.headers.authorization), settled, headerValue(req.headers['x-request-id'])).then(
      (result) => {
        if (result.refusal) {
          const { status, headers, body } = result.refusal;
          res.writeHead(status, { ...headers, 'content-type': 'application/json; charset=utf-8' });
          res.end(JSON.stringify(body));
          return;
        }
        req.auth = result.auth;
        next();
      },
      // Not a refusal but a fault (a bug, never a bad token): Express's error handling answers it.
      next,
    );
  };
}

/**
 * `req.auth` on a route guarded by `requireAuth()`, non-null. Throws (a 500 through Express's error handling) when
 * the route is not guarded: that is a mistake in the app's routing, not the caller's.
 */
export function getAuth(req: { auth?: GatehouseAuth }): GatehouseAuth {
  if (!req.auth) throw new Error('getAuth(req): requireAuth() of @gatehouse/sdk/express did not run for this route');
  return req.auth;
}

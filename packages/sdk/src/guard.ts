import { GatehouseError } from './errors.ts';
import { type AccessTokenClaims, type VerifyTokenOptions, verifyToken } from './verify.ts';

/**
 * The shared core of the framework guards (`@gatehouse/sdk/express`, `/fastify`, `/next`): it reads the
 * `Authorization: Bearer …` header, verifies the access token with `verifyToken`, checks the route's requirements,
 * and answers either the caller (`GatehouseAuth`) or the refusal to send (status, headers, body). Each framework
 * module only reads the header from its request type and writes the refusal with its response type.
 */

/** What a route asks of the caller beyond a valid token. Every requirement is off by default. */
export interface AuthRequirements {
  /** The token must carry an active organization (`org`): 403 `insufficient_scope` otherwise. */
  requireOrganization?: boolean;
  /**
   * The organization roles allowed (`org_role`: `owner`, `admin`, `member` or one of the application's role keys).
   * Implies `requireOrganization`. A token with another role, or none, is refused with 403 `insufficient_scope`.
   */
  roles?: readonly string[];
  /** The least authenticator assurance level: 2 asks for a second factor or a passkey (403 `step_up_required`). */
  minimumAal?: 1 | 2;
}

/** How a guard verifies tokens (the options of `verifyToken`) and what it asks of every request it guards. */
export interface GuardOptions extends VerifyTokenOptions, AuthRequirements {}

/** The caller of a guarded request, from its verified access token. */
export interface GatehouseAuth {
  /** The user id (`sub`). */
  readonly userId: string;
  /** The session id (`sid`). */
  readonly sessionId: string;
  /** The active organization (`org`), or null when the person has none active. */
  readonly organizationId: string | null;
  /** The person's role in that organization (`org_role`), or null. */
  readonly organizationRole: string | null;
  /** 1, or 2 after a second factor or a passkey (`aal`). */
  readonly aal: number;
  /** Every claim of the token (`host`, `scope`, `client_id`, `iat`, `exp`, …). */
  readonly claims: Readonly<AccessTokenClaims>;
}

/** The service's error envelope, as a guard answers it. */
export interface GuardErrorBody {
  success: false;
  data: null;
  error: {
    code: 'missing_credentials' | 'invalid_token' | 'insufficient_scope' | 'step_up_required' | 'service_unavailable';
    message: string;
  };
  meta: { timestamp: string; request_id: string };
}

/** A request the guard refused: send `status`, `headers` and the JSON `body` as they are. */
export interface GuardRefusal {
  status: 401 | 403 | 503;
  headers: Record<string, string>;
  body: GuardErrorBody;
}

/** The guard's verdict on one request: exactly one of `auth` and `refusal` is set. */
export type GuardResult = { auth: GatehouseAuth; refusal: null } | { auth: null; refusal: GuardRefusal };

/** RFC 6750 §2.1: `Bearer` (any case), one or more spaces, then a b64token. Anything else is not a bearer token. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const SCHEME = /^Bearer(?: |$)/i;
/** The service's own rule for an incoming `x-request-id` it echoes. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Seconds a client should wait before retrying after the signing keys could not be fetched. */
const RETRY_AFTER_S = '5';

/** Fixed descriptions: RFC 6750 allows only printable ASCII without `"` and `\` in `error_description`. */
const MESSAGES = {
  missing_credentials: 'An Authorization: Bearer access token is required',
  invalid_token: 'The access token is invalid or expired',
  organization: 'This needs an active organization: switch to one and use the new access token',
  role: 'Your role in the active organization does not allow this',
  step_up_required: 'This needs a session at aal 2: sign in again with your second factor',
  service_unavailable: 'The signing keys could not be fetched, so the access token could not be checked: try again shortly',
} as const;

/**
 * Checks options once, when a guard is made, so that a mistake fails at start-up rather than on the first request:
 * a guard without `baseUrl` or `applicationId` could verify nothing, and `roles: []` would refuse everybody.
 */
export function checkGuardOptions(options: Partial<GuardOptions>): void {
  if (typeof options.baseUrl !== 'string' || options.baseUrl === '')
    throw new TypeError('Gatehouse guard: `baseUrl` is required');
  if (typeof options.applicationId !== 'string' || options.applicationId === '') {
    throw new TypeError('Gatehouse guard: `applicationId` is required');
  }
  checkRequirements(options);
}

/** The part of `checkGuardOptions` that a per-route override (`requirements`) is checked with. */
export function checkRequirements(requirements: AuthRequirements): void {
  const { roles, minimumAal } = requirements;
  if (roles !== undefined && (!Array.isArray(roles) || roles.length === 0 || roles.some((r) => typeof r !== 'string'))) {
    throw new TypeError('Gatehouse guard: `roles` must be a non-empty list of organization roles');
  }
  if (minimumAal !== undefined && minimumAal !== 1 && minimumAal !== 2) {
    throw new TypeError('Gatehouse guard: `minimumAal` must be 1 or 2');
  }
}

/** The first value of a header as Node (string, or a list for repeated headers) or the Fetch API (string or null) gives it. */
export const headerValue = (value: string | readonly string[] | null | undefined): string | undefined =>
  typeof value === 'string' ? value : Array.isArray(value) ? value[0] : undefined;

function refusal(
  status: GuardRefusal['status'],
  code: GuardErrorBody['error']['code'],
  message: string,
  challenge: string | null,
  requestId: string | undefined,
): GuardResult {
  const headers: Record<string, string> = { 'cache-control': 'no-store' };
  if (challenge !== null) headers['www-authenticate'] = challenge;
  if (status === 503) headers['retry-after'] = RETRY_AFTER_S;
  const body: GuardErrorBody = {
    success: false,
    data: null,
    error: { code, message },
    meta: {
      timestamp: new Date().toISOString(),
      request_id: requestId !== undefined && REQUEST_ID.test(requestId) ? requestId : crypto.randomUUID(),
    },
  };
  return { auth: null, refusal: { status, headers, body } };
}

const challenge = (error: 'invalid_token' | 'insufficient_scope', description: string) =>
  `Bearer error="${error}", error_description="${description}"`;

/**
 * The guard's verdict on one request, from its `Authorization` header value (and its `x-request-id`, echoed in the
 * error body's `meta` when it is a valid one):
 * - no header, or another scheme than Bearer: 401 `missing_credentials`, `WWW-Authenticate: Bearer` (RFC 6750 §3.1:
 *   a request without bearer credentials gets no error code in the challenge);
 * - a malformed header or a token that does not verify: 401 `invalid_token`, `Bearer error="invalid_token"`;
 * - a valid token short of the requirements: 403 `insufficient_scope` (organization, role) or `step_up_required`
 *   (aal), with `Bearer error="insufficient_scope"`; the organization is checked before the aal;
 * - the signing keys cannot be fetched: 503 `service_unavailable` with `retry-after`. It never lets the request
 *   through (fail closed), and it is not a 401, so that clients do not sign the person out over an outage.
 * Anything else thrown (a bug) is rethrown for the framework's own error handling.
 */
export async function authenticate(
  authorization: string | undefined,
  options: GuardOptions,
  requestId?: string,
): Promise<GuardResult> {
  if (authorization === undefined || !SCHEME.test(authorization)) {
    return refusal(401, 'missing_credentials', MESSAGES.missing_credentials, 'Bearer', requestId);
  }
  const token = BEARER.exec(authorization)?.[1];
  const invalid = () =>
    refusal(401, 'invalid_token', MESSAGES.invalid_token, challenge('invalid_token', MESSAGES.invalid_token), requestId);
  if (token === undefined) return invalid();

  let claims: Readonly<AccessTokenClaims>;
  try {
    claims = await verifyToken(token, options);
  } catch (error) {
    if (error instanceof GatehouseError && error.code === 'invalid_token') return invalid();
    if (error instanceof GatehouseError && error.code === 'jwks_unavailable') {
      return refusal(503, 'service_unavailable', MESSAGES.service_unavailable, null, requestId);
    }
    throw error;
  }

  const forbidden = (code: 'insufficient_scope' | 'step_up_required', message: string) =>
    refusal(403, code, message, challenge('insufficient_scope', message), requestId);
  if ((options.requireOrganization || options.roles !== undefined) && claims.org === null) {
    return forbidden('insufficient_scope', MESSAGES.organization);
  }
  if (options.roles !== undefined && (claims.org_role === null || !options.roles.includes(claims.org_role))) {
    return forbidden('insufficient_scope', MESSAGES.role);
  }
  if (options.minimumAal !== undefined && claims.aal < options.minimumAal) {
    return forbidden('step_up_required', MESSAGES.step_up_required);
  }

  const auth: GatehouseAuth = Object.freeze({
    userId: claims.sub,
    sessionId: claims.sid,
    organizationId: claims.org,
    organizationRole: claims.org === null ? null : claims.org_role,
    aal: claims.aal,
    claims,
  });
  return { auth, refusal: null };
}

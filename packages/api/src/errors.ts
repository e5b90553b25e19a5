import type { TRPC_ERROR_CODE_KEY } from '@trpc/server';

/** Every error code of CONTRACT §1, with its HTTP status and the tRPC code that carries it. */
export const ERROR_CODES = {
  invalid_json: { status: 400, trpc: 'PARSE_ERROR' },
  missing_credentials: { status: 401, trpc: 'UNAUTHORIZED' },
  invalid_credentials: { status: 401, trpc: 'UNAUTHORIZED' },
  application_not_resolved: { status: 401, trpc: 'UNAUTHORIZED' },
  invalid_api_key: { status: 401, trpc: 'UNAUTHORIZED' },
  invalid_token: { status: 401, trpc: 'UNAUTHORIZED' },
  invalid_pending_token: { status: 401, trpc: 'UNAUTHORIZED' },
  assertion_failed: { status: 401, trpc: 'UNAUTHORIZED' },
  invalid_verification: { status: 401, trpc: 'UNAUTHORIZED' },
  insufficient_scope: { status: 403, trpc: 'FORBIDDEN' },
  origin_not_allowed: { status: 403, trpc: 'FORBIDDEN' },
  step_up_required: { status: 403, trpc: 'FORBIDDEN' },
  access_denied: { status: 403, trpc: 'FORBIDDEN' },
  sso_required: { status: 403, trpc: 'FORBIDDEN' },
  invitation_email_mismatch: { status: 403, trpc: 'FORBIDDEN' },
  not_found: { status: 404, trpc: 'NOT_FOUND' },
  method_not_allowed: { status: 405, trpc: 'METHOD_NOT_SUPPORTED' },
  conflict: { status: 409, trpc: 'CONFLICT' },
  domain_already_configured: { status: 409, trpc: 'CONFLICT' },
  already_member: { status: 409, trpc: 'CONFLICT' },
  slug_taken: { status: 409, trpc: 'CONFLICT' },
  email_taken: { status: 409, trpc: 'CONFLICT' },
  seat_limit_reached: { status: 409, trpc: 'CONFLICT' },
  invitation_pending: { status: 409, trpc: 'CONFLICT' },
  domain_already_claimed: { status: 409, trpc: 'CONFLICT' },
  domain_not_verified: { status: 409, trpc: 'CONFLICT' },
  no_second_factor: { status: 409, trpc: 'CONFLICT' },
  payload_too_large: { status: 413, trpc: 'PAYLOAD_TOO_LARGE' },
  unsupported_media_type: { status: 415, trpc: 'UNSUPPORTED_MEDIA_TYPE' },
  validation_failed: { status: 422, trpc: 'UNPROCESSABLE_CONTENT' },
  invalid_domain: { status: 422, trpc: 'UNPROCESSABLE_CONTENT' },
  user_not_found: { status: 422, trpc: 'UNPROCESSABLE_CONTENT' },
  cannot_merge_into_self: { status: 422, trpc: 'UNPROCESSABLE_CONTENT' },
  consent_incomplete: { status: 422, trpc: 'UNPROCESSABLE_CONTENT' },
  user_merged: { status: 422, trpc: 'UNPROCESSABLE_CONTENT' },
  unknown_scope: { status: 422, trpc: 'UNPROCESSABLE_CONTENT' },
  invalid_url: { status: 422, trpc: 'UNPROCESSABLE_CONTENT' },
  idempotency_key_reused: { status: 422, trpc: 'UNPROCESSABLE_CONTENT' },
  depth_limit_exceeded: { status: 422, trpc: 'UNPROCESSABLE_CONTENT' },
  rate_limited: { status: 429, trpc: 'TOO_MANY_REQUESTS' },
  internal_error: { status: 500, trpc: 'INTERNAL_SERVER_ERROR' },
  service_unavailable: { status: 503, trpc: 'SERVICE_UNAVAILABLE' },
} as const satisfies Record<string, { status: number; trpc: TRPC_ERROR_CODE_KEY }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorDetail {
  path: string;
  message: string;
}

/**
 * An error's `details`: the failing paths (`[{path, message}]`, most errors), or an object for the errors whose
 * contract names fields (403 `sso_required`: `{organization_id}`).
 */
export type ErrorDetails = ErrorDetail[] | { readonly organization_id: string };

/** The one error type services throw. The message is shown to callers: never put internals in it. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails | undefined;
  /** Extra response headers (e.g. `retry-after` on 429). */
  readonly headers: Record<string, string> | undefined;

  /** `cause`: what went wrong underneath (never shown to callers; the database outage check reads it). */
  constructor(code: ErrorCode, message: string, details?: ErrorDetails, headers?: Record<string, string>, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'AppError';
    this.code = code;
    this.details = details;
    this.headers = headers;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

export const notFound = (what: string): AppError => new AppError('not_found', `${what} not found`);

/** The wire shape of an error, as REST (`error`) and tRPC (`error.data`) carry it. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  details?: ErrorDetails;
}

/** The sign-in errors several capabilities share (CONTRACT §1, §4). */
export const invalidPendingToken = (): AppError =>
  new AppError('invalid_pending_token', 'The pending token or state is invalid, expired or already used');
export const assertionFailed = (): AppError => new AppError('assertion_failed', 'The credential or code is not valid');
export const stepUpRequired = (): AppError =>
  new AppError('step_up_required', 'This needs a session at aal 2: sign in again with your second factor');

/** The message of whatever was thrown: `catch` binds `unknown`, and libraries may throw non-errors. */
export const errorMessage = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** The name of a thrown error (for logs that must not carry its message), if it has one. */
export const errorName = (error: unknown): string | undefined =>
  typeof error === 'object' && error !== null && 'name' in error && typeof error.name === 'string' ? error.name : undefined;

/** A property of something thrown or parsed (`unknown`), read without asserting the thing's shape. */
export const fieldOf = (value: unknown, key: string): unknown =>
  typeof value === 'object' && value !== null ? Reflect.get(value, key) : undefined;

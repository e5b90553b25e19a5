import type { ErrorCode } from '@gatehouse/api';
import { TRPCClientError } from '@trpc/client';

export interface GatehouseErrorDetail {
  path: string;
  message: string;
}

/**
 * What `GatehouseError.code` can be: an error code of the API (the same on REST, in `error.code`, and over tRPC), or
 * one of the SDK's own: a call that got no answer from the service, or `verifyToken` unable to fetch the signing keys.
 */
export type GatehouseErrorCode = ErrorCode | 'timeout' | 'network_error' | 'unexpected_response' | 'jwks_unavailable';

/**
 * Every failed call rejects with this. `code` is the API's error code (the `error.code` a REST call answers, listed
 * in the OpenAPI document's `Error` schema), or the SDK's own: `timeout`, `network_error` (status 0: no answer),
 * `unexpected_response` (an answer that is not the service's, e.g. a proxy's 502 page; `status` is its HTTP status)
 * or `jwks_unavailable` (`verifyToken` could not fetch the signing keys). `requestId` is the `x-request-id` of the
 * answer: quote it to the operator.
 */
export class GatehouseError extends Error {
  readonly code: GatehouseErrorCode;
  readonly status: number;
  readonly details: GatehouseErrorDetail[] | undefined;
  readonly requestId: string | undefined;
  /**
   * `sso_required`: the organization whose SSO is the way in (the API's `details.organization_id`); start the sign-in
   * with `auth.sso.start({ email, redirect_uri })`.
   */
  readonly organizationId: string | undefined;

  constructor(
    code: GatehouseErrorCode,
    status: number,
    message: string,
    details?: GatehouseErrorDetail[] | { organization_id?: string },
    requestId?: string,
  ) {
    super(message);
    this.name = 'GatehouseError';
    this.code = code;
    this.status = status;
    this.details = Array.isArray(details) ? details : undefined;
    this.organizationId = details && !Array.isArray(details) ? details.organization_id : undefined;
    this.requestId = requestId;
  }

  static from(error: unknown): GatehouseError {
    if (error instanceof GatehouseError) return error;
    if (error instanceof TRPCClientError) {
      const data = error.data as
        | { code?: ErrorCode; httpStatus?: number; details?: GatehouseErrorDetail[] | { organization_id?: string } }
        | undefined;
      const response = (error.meta as { response?: Response } | undefined)?.response;
      const requestId = response?.headers.get('x-request-id') ?? undefined;
      if (data?.code) return new GatehouseError(data.code, data.httpStatus ?? 0, error.message, data.details, requestId);
      return new GatehouseError('network_error', response?.status ?? 0, error.message, undefined, requestId);
    }
    return new GatehouseError('network_error', 0, error instanceof Error ? error.message : String(error));
  }
}

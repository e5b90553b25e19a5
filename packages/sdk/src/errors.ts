import { TRPCClientError } from '@trpc/client';

export interface GatehouseErrorDetail {
  path: string;
  message: string;
}

/** Every failed call rejects with this: `code` is the API's error code (CONTRACT §1), `status` its HTTP status. */
export class GatehouseError extends Error {
  readonly code: string;
  readonly status: number;
  readonly details: GatehouseErrorDetail[] | undefined;

  constructor(code: string, status: number, message: string, details?: GatehouseErrorDetail[]) {
    super(message);
    this.name = 'GatehouseError';
    this.code = code;
    this.status = status;
    this.details = details;
  }

  static from(error: unknown): GatehouseError {
    if (error instanceof GatehouseError) return error;
    if (error instanceof TRPCClientError) {
      const data = error.data as { code?: string; httpStatus?: number; details?: GatehouseErrorDetail[] } | undefined;
      if (data?.code) return new GatehouseError(data.code, data.httpStatus ?? 0, error.message, data.details);
      return new GatehouseError('network_error', 0, error.message);
    }
    return new GatehouseError('network_error', 0, error instanceof Error ? error.message : String(error));
  }
}

import type { AppRouter } from '@gatehouse/api';
import type { inferRouterOutputs } from '@trpc/server';
import { GatehouseError, type GatehouseErrorDetail } from './errors.ts';
import { SDK_CLIENT } from './transport.ts';

/** An audit log entry: who did what (`action`), when, from where, in which organization, to what. */
export type AuditLogEntry = inferRouterOutputs<AppRouter>['auditLogs']['list']['audit_logs'][number];
/** The filters of `auditLogs.list` and of the export: organization, actor, action (`user.*`), target, time. */
export interface AuditLogFilters {
  organization_id?: string;
  actor_id?: string;
  /** An event type (`user.created`), or a prefix ending in `.*` (`organization.*`). */
  action?: string;
  target_id?: string;
  /** ISO 8601: entries at or after it. */
  since?: string;
  /** ISO 8601: entries before it. */
  until?: string;
}
export type AuditLogExportFormat = 'ndjson' | 'csv';

/** What the export needs of the client's options. */
export interface ExportOptions {
  baseUrl: string;
  applicationId?: string;
  secretKey?: string;
  fetch?: typeof fetch;
}

/**
 * `GET /v1/audit-logs/export` (a REST stream, not a tRPC call): the response, its body unread, or the API's error. No
 * timeout covers the body, which may take as long as the log is big; an error before the first byte is the API's.
 */
async function openExport(options: ExportOptions, filters: AuditLogFilters, format: AuditLogExportFormat): Promise<Response> {
  const query = new URLSearchParams({ format });
  for (const [key, value] of Object.entries(filters)) if (typeof value === 'string') query.set(key, value);
  const headers: Record<string, string> = { 'x-gatehouse-client': SDK_CLIENT };
  if (options.applicationId) headers['x-application-id'] = options.applicationId;
  if (options.secretKey) headers.authorization = `Bearer ${options.secretKey}`;
  if (typeof process !== 'undefined') headers['user-agent'] = `${SDK_CLIENT} node/${process.version}`;
  let response: Response;
  try {
    response = await (options.fetch ?? globalThis.fetch)(`${options.baseUrl.replace(/\/+$/, '')}/v1/audit-logs/export?${query}`, {
      headers,
    });
  } catch (error) {
    throw new GatehouseError('network_error', 0, error instanceof Error ? error.message : String(error));
  }
  if (response.ok && response.body) return response;
  const requestId = response.headers.get('x-request-id') ?? undefined;
  const body = (await response.json().catch(() => undefined)) as
    | { error?: { code?: string; message?: string; details?: GatehouseErrorDetail[] } }
    | undefined;
  if (body?.error?.code) {
    // The envelope's code is one of the API's error codes.
    const code = body.error.code as ConstructorParameters<typeof GatehouseError>[0];
    throw new GatehouseError(code, response.status, body.error.message ?? code, body.error.details, requestId);
  }
  throw new GatehouseError(
    'unexpected_response',
    response.status,
    `The service answered HTTP ${response.status}`,
    undefined,
    requestId,
  );
}

/** The export's raw body (NDJSON or CSV), to write to a file as it comes. */
export async function downloadAuditLogs(
  options: ExportOptions,
  input: AuditLogFilters & { format?: AuditLogExportFormat },
): Promise<ReadableStream<Uint8Array>> {
  const { format = 'ndjson', ...filters } = input;
  const response = await openExport(options, filters, format);
  // openExport answers only a response with a body.
  return response.body as ReadableStream<Uint8Array>;
}

/**
 * Every entry under the filters, newest first, read from the NDJSON export as it streams: memory for one line at a
 * time, whatever the log's size. Stopping the loop early (`break`) closes the connection.
 */
export async function* exportAuditLogs(options: ExportOptions, filters: AuditLogFilters = {}): AsyncGenerator<AuditLogEntry> {
  const reader = (await downloadAuditLogs(options, { ...filters, format: 'ndjson' })).getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        // The connection was cut before the chunked answer's end: what came is not the whole export.
        throw new GatehouseError('network_error', 0, error instanceof Error ? error.message : String(error));
      }
      const { done, value } = chunk;
      buffered += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        // Each line is one entry, as the API's schema writes it.
        if (line) yield JSON.parse(line) as AuditLogEntry;
        newline = buffered.indexOf('\n');
      }
      if (done) break;
    }
    if (buffered.trim()) {
      throw new GatehouseError('unexpected_response', 200, 'The export ended in the middle of an entry (the connection was cut)');
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

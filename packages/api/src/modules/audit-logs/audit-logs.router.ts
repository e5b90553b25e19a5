import { z } from 'zod';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import {
  type AuditLogEntry,
  AuditLogPageSchema,
  ExportAuditLogsInputSchema,
  ListAuditLogsInputSchema,
} from './audit-logs.schema.ts';
import { CSV_COLUMNS, csvLine, EXPORT_CONTENT_TYPES, exportChunks, listAuditLogs } from './audit-logs.service.ts';

const tags = ['Audit logs'];

/** The entry the export's documented examples show. */
const EXAMPLE_ENTRY: AuditLogEntry = {
  id: '019ac1b2-7c4e-7d2a-9f3e-2b8c0d1e4f5a',
  action: 'organization_membership.created',
  occurred_at: '2026-11-28T09:30:00.000Z',
  actor: { type: 'api_key', id: '019ac1b2-0000-7000-8000-00000000a11c' },
  target: { type: 'user', id: '019ac1b2-0000-7000-8000-0000000005e1' },
  organization_id: '019ac1b2-0000-7000-8000-000000000a11',
  ip: '203.0.113.7',
  user_agent: 'gatehouse-sdk-js/0.1.0 node/v24.21.0',
  data: {
    organization_id: '019ac1b2-0000-7000-8000-000000000a11',
    user_id: '019ac1b2-0000-7000-8000-0000000005e1',
    role: 'member',
  },
};

/** The audit log (`auditLogs`): who did what, when and from where, read with `audit_logs:read`. */
export const auditLogsRouter = router({
  list: secretKeyProcedure('audit_logs:read')
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/audit-logs',
        tags,
        summary: 'List audit log entries, newest first',
        description:
          'Filters: `organization_id`, `actor_id`, `action` (an event type, or a prefix ending in `.*`), `target_id`, ' +
          '`since` (inclusive) and `until` (exclusive).',
      },
    })
    .input(ListAuditLogsInputSchema)
    .output(AuditLogPageSchema)
    .query(({ ctx, input }) => listAuditLogs(ctx, input)),
  export: secretKeyProcedure('audit_logs:read')
    .meta({
      stream: {
        [EXPORT_CONTENT_TYPES.ndjson]: `${JSON.stringify(EXAMPLE_ENTRY)}\n`,
        [EXPORT_CONTENT_TYPES.csv]: `${CSV_COLUMNS.join(',')}\r\n${csvLine(EXAMPLE_ENTRY)}`,
      },
      openapi: {
        method: 'GET',
        path: '/v1/audit-logs/export',
        tags,
        summary: 'Export audit log entries (NDJSON or CSV, streamed)',
        description:
          'The same filters as the list, every matching entry newest first, streamed (chunked) and not enveloped: ' +
          '`format=ndjson` (default) one entry a line, `format=csv` a header line then one entry a line (RFC 4180; a ' +
          "cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return is prefixed with `'`). Errors come before " +
          'the first byte, in the error envelope. REST only: over tRPC the call answers null (the SDK reads the REST ' +
          'stream).',
      },
    })
    .input(ExportAuditLogsInputSchema)
    .output(z.null())
    .query(({ ctx, input }) => {
      const { format, ...filters } = input;
      ctx.response.stream = {
        contentType: EXPORT_CONTENT_TYPES[format],
        filename: `audit-logs.${format}`,
        body: exportChunks(ctx.em, ctx.application, filters, format),
      };
      return null;
    }),
});

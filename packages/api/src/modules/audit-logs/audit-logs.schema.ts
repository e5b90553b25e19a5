import { z } from 'zod';
import { ACTOR_TYPES } from '../../lib/acting.ts';
import { listQuerySchema, pageOf } from '../../lib/pagination.ts';
import { text } from '../../lib/schemas.ts';

/** An audit log entry (CONTRACT §8): an event of the log, with who acted, from where, and on what. */
export const AuditLogEntrySchema = z
  .object({
    id: z.uuid(),
    action: text().meta({ description: 'The event type, e.g. `organization_membership.created`' }),
    occurred_at: z.iso.datetime(),
    actor: z.object({
      type: z.enum(ACTOR_TYPES),
      id: text().meta({
        description:
          'The user, API key, directory or portal session id; the console operator\u2019s id or `operator` (the operator token); `gatehouse`',
      }),
    }),
    target: z.object({ type: text(), id: text() }).nullable(),
    organization_id: z.uuid().nullable(),
    ip: text().nullable(),
    user_agent: text().nullable(),
    data: z.record(text(), z.unknown()).meta({ description: "The event's data, as webhooks deliver it" }),
  })
  .meta({ id: 'AuditLogEntry' });
export type AuditLogEntry = z.output<typeof AuditLogEntrySchema>;

/** An event type, or a prefix of one ending in `.*` (`organization.*`). */
const ACTION = /^[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?$/;

/** The filters of the list and of the export. */
const filters = {
  organization_id: z.uuid().optional().meta({ description: 'Entries of this organization' }),
  actor_id: text().min(1).max(255).optional().meta({ description: 'Entries of this actor (user, API key, directory…)' }),
  action: text()
    .max(64)
    .regex(ACTION, 'an event type, or a prefix ending in .* (organization.*)')
    .optional()
    .meta({ description: 'An event type (`user.created`), or a prefix ending in `.*` (`organization.*`)' }),
  target_id: text().min(1).max(255).optional().meta({ description: 'Entries whose target has this id' }),
  since: z.iso.datetime({ offset: true }).optional().meta({ description: 'Entries at or after this time' }),
  until: z.iso.datetime({ offset: true }).optional().meta({ description: 'Entries before this time' }),
};
export type AuditLogFilters = { [K in keyof typeof filters]?: string };

export const ListAuditLogsInputSchema = listQuerySchema(filters);
export const AuditLogPageSchema = pageOf('audit_logs', AuditLogEntrySchema).meta({ id: 'AuditLogPage' });

export const EXPORT_FORMATS = ['ndjson', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const ExportAuditLogsInputSchema = z
  .strictObject({
    ...filters,
    format: z.enum(EXPORT_FORMATS).default('ndjson').meta({ description: 'One JSON entry a line, or CSV' }),
  })
  // zod types prefault's value as the parsed output; `{}` is a valid input that parses to the defaults.
  .prefault({} as never);

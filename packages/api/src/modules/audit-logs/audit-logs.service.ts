import type { EntityManager } from '../../db/orm.ts';
import type { PageQuery } from '../../lib/pagination.ts';
import type { Application } from '../applications/application.entity.ts';
import { settingsOf } from '../applications/applications.service.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { NOT_AUDITED } from '../events/audit-mapping.ts';
import { EVENT_TYPES } from '../events/events.schema.ts';
import type { AuditLogEntry, AuditLogFilters, ExportFormat } from './audit-logs.schema.ts';

/**
 * The audit log is the event log read as who did what (CONTRACT §8): every event but the kinds the audit mapping
 * leaves out, with the columns each event was written with. One index per filter keeps each filter a range scan,
 * newest first (`event.entity.ts`).
 */

interface EntryRow {
  id: string;
  type: string;
  created_at: Date | string;
  position: string;
  actor_type: AuditLogEntry['actor']['type'];
  actor_id: string;
  target_type: string | null;
  target_id: string | null;
  organization_id: string | null;
  ip: string | null;
  user_agent: string | null;
  data: Record<string, unknown> | string;
}

const COLUMNS = `id, type, created_at, actor_type, actor_id, target_type, target_id, organization_id, ip, user_agent, data,
  to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as position`;

/**
 * The event types an `action` filter names: itself, or for a prefix ending in `.*` every known type under it (a list
 * the type index answers, where a `like` would depend on the database's collation).
 */
function actionTypes(action: string): string[] {
  if (!action.endsWith('.*')) return [action];
  const prefix = action.slice(0, -1);
  return EVENT_TYPES.filter((type) => type.startsWith(prefix));
}

/**
 * The `where` of the application's entries under `filters`, with its parameters: within the application's audit
 * retention (an older event kept for the event log is no entry any more).
 */
function whereOf(application: Application, filters: AuditLogFilters): { sql: string; params: unknown[] } {
  const days = settingsOf(application).audit_log_retention_days;
  const conditions = ['application_id = ?', 'created_at >= ?'];
  const params: unknown[] = [application.id, new Date(Date.now() - days * 86_400_000)];
  if (NOT_AUDITED.length) {
    conditions.push(`type not in (${NOT_AUDITED.map(() => '?').join(', ')})`);
    params.push(...NOT_AUDITED);
  }
  if (filters.organization_id) {
    conditions.push('organization_id = ?');
    params.push(filters.organization_id);
  }
  if (filters.actor_id) {
    conditions.push('actor_id = ?');
    params.push(filters.actor_id);
  }
  if (filters.target_id) {
    conditions.push('target_id = ?');
    params.push(filters.target_id);
  }
  if (filters.action) {
    const types = actionTypes(filters.action);
    // A prefix no known type has: nothing matches.
    conditions.push(types.length ? `type in (${types.map(() => '?').join(', ')})` : 'false');
    params.push(...types);
  }
  if (filters.since) {
    conditions.push('created_at >= ?');
    params.push(new Date(filters.since));
  }
  if (filters.until) {
    conditions.push('created_at < ?');
    params.push(new Date(filters.until));
  }
  return { sql: conditions.join(' and '), params };
}

const toEntry = (row: EntryRow): AuditLogEntry => ({
  id: row.id,
  action: row.type,
  occurred_at: new Date(row.created_at).toISOString(),
  actor: { type: row.actor_type, id: row.actor_id },
  target: row.target_type !== null && row.target_id !== null ? { type: row.target_type, id: row.target_id } : null,
  organization_id: row.organization_id,
  ip: row.ip,
  user_agent: row.user_agent,
  // jsonb comes back parsed from both drivers; a string would be a driver that does not parse it.
  data: typeof row.data === 'string' ? JSON.parse(row.data) : row.data,
});

/** `GET /v1/audit-logs`: a page of the application's entries under the filters, newest first. */
export async function listAuditLogs(ctx: TenantContext, input: PageQuery & AuditLogFilters) {
  const where = whereOf(ctx.application, input);
  const [rows, counted] = await Promise.all([
    ctx.em.execute<EntryRow[]>(
      `select ${COLUMNS} from events where ${where.sql} order by created_at desc, id desc limit ? offset ?`,
      [...where.params, input.limit, input.offset],
    ),
    ctx.em.execute<Array<{ total: string | number }>>(`select count(*) as total from events where ${where.sql}`, where.params),
  ]);
  return { audit_logs: rows.map(toEntry), total: Number(counted[0]?.total ?? 0), limit: input.limit, offset: input.offset };
}

/** Rows an export reads per statement: its memory is one page, whatever the log's size. */
export const EXPORT_PAGE = 500;

/**
 * Every entry under the filters, newest first, a page at a time: each page is one statement that continues after the
 * last row of the one before (keyset, on the exact microsecond and the id), so no statement holds a transaction open
 * and an export of any size needs the memory of one page. Entries written while it runs are not in it.
 */
export async function* auditLogPages(em: EntityManager, application: Application, filters: AuditLogFilters) {
  const where = whereOf(application, filters);
  let after: { position: string; id: string } | null = null;
  for (;;) {
    const rows: EntryRow[] = await em.execute<EntryRow[]>(
      `select ${COLUMNS} from events where ${where.sql}${after ? ' and (created_at, id) < (?::timestamptz, ?::uuid)' : ''}
        order by created_at desc, id desc limit ${EXPORT_PAGE}`,
      after ? [...where.params, after.position, after.id] : where.params,
    );
    if (rows.length) yield rows.map(toEntry);
    const last = rows.at(-1);
    if (!last || rows.length < EXPORT_PAGE) return;
    after = { position: last.position, id: last.id };
  }
}

export const CSV_COLUMNS = [
  'id',
  'action',
  'occurred_at',
  'actor_type',
  'actor_id',
  'target_type',
  'target_id',
  'organization_id',
  'ip',
  'user_agent',
  'data',
] as const;

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, a quote or a line break, quotes doubled. A cell that a
 * spreadsheet would read as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) is prefixed with
 * `'`, so opening an export never runs what an end user typed into their profile or user agent (OWASP "CSV
 * injection"). Null is the empty cell.
 */
export function csvCell(value: string | null): string {
  if (value === null) return '';
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** An entry as one CSV line (`CSV_COLUMNS`, CRLF-terminated). */
export const csvLine = (entry: AuditLogEntry): string =>
  `${[
    entry.id,
    entry.action,
    entry.occurred_at,
    entry.actor.type,
    entry.actor.id,
    entry.target?.type ?? null,
    entry.target?.id ?? null,
    entry.organization_id,
    entry.ip,
    entry.user_agent,
    JSON.stringify(entry.data),
  ]
    .map(csvCell)
    .join(',')}\r\n`;

/** The export's content types. */
export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  ndjson: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
};

/** The export's body, a chunk per page: NDJSON (one entry a line) or CSV (a header line, then one entry a line). */
export async function* exportChunks(em: EntityManager, application: Application, filters: AuditLogFilters, format: ExportFormat) {
  if (format === 'csv') yield `${CSV_COLUMNS.join(',')}\r\n`;
  for await (const page of auditLogPages(em, application, filters)) {
    yield format === 'csv' ? page.map(csvLine).join('') : page.map((entry) => `${JSON.stringify(entry)}\n`).join('');
  }
}

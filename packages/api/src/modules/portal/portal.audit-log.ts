import { z } from 'zod';
import { text } from '../../lib/schemas.ts';
import type { AuditLogFilters, ExportFormat } from '../audit-logs/audit-logs.schema.ts';
import { exportChunks, listAuditLogs } from '../audit-logs/audit-logs.service.ts';
import { NOT_AUDITED } from '../events/audit-mapping.ts';
import { EVENT_TYPES } from '../events/events.schema.ts';
import { requirePortalIntent } from './portal.domains.ts';
import type { PortalContext } from './portal.sso.ts';

/** Entries on one page of the portal's audit log. */
export const PORTAL_AUDIT_PAGE = 50;

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const ACTION = /^[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?$/;

/**
 * What the portal's audit log page may filter on: an action (an event type, or a prefix ending in `.*`), a first and
 * a last day (UTC, both included), and the page. Never an organization: that is the session's.
 */
export const PortalAuditLogQuerySchema = z.object({
  action: text().max(64).regex(ACTION).optional(),
  from: text().regex(DAY).optional(),
  to: text().regex(DAY).optional(),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});
export type PortalAuditLogQuery = z.output<typeof PortalAuditLogQuerySchema>;

/** The audit log's filters of a portal query, bound to the session's organization. */
function filtersOf(ctx: PortalContext, query: Omit<PortalAuditLogQuery, 'offset'>): AuditLogFilters {
  requirePortalIntent(ctx, 'audit_log');
  const since = query.from ? new Date(`${query.from}T00:00:00.000Z`) : undefined;
  const until = query.to ? new Date(Date.parse(`${query.to}T00:00:00.000Z`) + 86_400_000) : undefined;
  return {
    organization_id: ctx.portal.organizationId,
    ...(query.action ? { action: query.action } : {}),
    ...(since && !Number.isNaN(since.getTime()) ? { since: since.toISOString() } : {}),
    ...(until && !Number.isNaN(until.getTime()) ? { until: until.toISOString() } : {}),
  };
}

/** A page of the organization's audit log, newest first (the audit log module's own list). */
export function portalAuditLog(ctx: PortalContext, query: PortalAuditLogQuery) {
  return listAuditLogs(ctx, { ...filtersOf(ctx, query), limit: PORTAL_AUDIT_PAGE, offset: query.offset });
}

/** Every entry of the organization under the filters, as the API's export streams it (CSV or NDJSON). */
export function portalAuditLogExport(ctx: PortalContext, query: Omit<PortalAuditLogQuery, 'offset'>, format: ExportFormat) {
  return exportChunks(ctx.em, ctx.application, filtersOf(ctx, query), format);
}

const AUDITED = EVENT_TYPES.filter((type) => !NOT_AUDITED.includes(type));
/** The actions offered by the filter: each kind's prefix (`organization.*`), then every audited event type. */
export const PORTAL_AUDIT_ACTIONS: readonly string[] = [
  ...new Set(AUDITED.map((type) => `${type.slice(0, type.indexOf('.'))}.*`)),
  ...AUDITED,
];

import { Readable } from 'node:stream';
import {
  PORTAL_AUDIT_ACTIONS,
  PORTAL_AUDIT_PAGE,
  type PortalAuditLogQuery,
  PortalAuditLogQuerySchema,
  portalAuditLog,
  portalAuditLogExport,
} from '@gatehouse/api';
import type { FastifyInstance } from 'fastify';
import { html } from '../../hosted/html.ts';
import { type Portal, type PortalRoutes, portalPage, portalSend } from '../portal.ts';

/**
 * The `audit_log` intent: the organization's audit log, read-only — the audit log module's own list, filtered to the
 * session's organization (never one from the address), newest first, a page at a time, with an action and a date
 * filter, and the same entries exported as CSV or NDJSON (the API's export, streamed).
 */
const BASE = '/portal/audit-log';
const DONE = `${BASE}/done`;

export function registerAuditLogPages(pages: FastifyInstance, routes: PortalRoutes) {
  pages.get(BASE, routes.open('audit_log', show));
  pages.get(`${BASE}/export`, routes.open('audit_log', exportEntries));
}

/** The page's query, read by the portal's schema (an empty field is no filter); undefined when it cannot be used. */
function queryOf(p: Portal): PortalAuditLogQuery | undefined {
  const raw = p.request.query as Record<string, unknown>;
  const given = Object.fromEntries(
    ['action', 'from', 'to', 'offset'].flatMap((name) =>
      typeof raw[name] === 'string' && raw[name] !== '' ? [[name, raw[name]]] : [],
    ),
  );
  const parsed = PortalAuditLogQuerySchema.safeParse(given);
  return parsed.success ? parsed.data : undefined;
}

/** A query string of the page's filters (and an offset), for its links. */
function linkOf(path: string, query: Partial<PortalAuditLogQuery> & { format?: string }) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== '' && !(name === 'offset' && value === 0)) params.set(name, String(value));
  }
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}

async function show(p: Portal) {
  const { t } = p.frame;
  const query = queryOf(p);
  const effective: PortalAuditLogQuery = query ?? { offset: 0 };
  const page = await portalAuditLog(p.ctx, effective);
  const { action, from, to } = effective;
  const filters = { action, from, to };
  const first = page.total ? effective.offset + 1 : 0;
  const last = effective.offset + page.audit_logs.length;
  const when = (iso: string) => iso.slice(0, 19).replace('T', ' ');
  const rows = page.audit_logs.map(
    (e) => html`<tr>
<td>${when(e.occurred_at)}</td>
<td><code>${e.action}</code></td>
<td>${e.actor.type}<br><span class="muted">${e.actor.id}</span></td>
<td>${e.target ? html`${e.target.type}<br><span class="muted">${e.target.id}</span>` : '—'}</td>
<td>${e.ip ?? '—'}</td>
</tr>`,
  );
  const table = page.audit_logs.length
    ? html`<p class="muted">${t('portal.audit_log.showing', { first: String(first), last: String(last), total: String(page.total) })}</p>
<table id="entries">
<thead><tr><th scope="col">${t('portal.audit_log.when')}</th><th scope="col">${t('portal.audit_log.action')}</th><th scope="col">${t('portal.audit_log.actor')}</th><th scope="col">${t('portal.audit_log.target')}</th><th scope="col">${t('portal.audit_log.ip')}</th></tr></thead>
<tbody>${rows}</tbody>
</table>`
    : html`<p id="entries">${t('portal.audit_log.none')}</p>`;
  const newer = effective.offset > 0 ? Math.max(0, effective.offset - PORTAL_AUDIT_PAGE) : undefined;
  const older = last < page.total ? last : undefined;
  const body = html`<p>${t('portal.audit_log.intro')}</p>
${query ? '' : html`<p class="error" role="alert">${t('portal.audit_log.filter.invalid')}</p>`}
<form method="get" action="${BASE}" class="filters" role="search">
<div>
<label for="action">${t('portal.audit_log.filter.action')}</label>
<select id="action" name="action">
<option value="">${t('portal.audit_log.filter.any_action')}</option>
${PORTAL_AUDIT_ACTIONS.map((type) => html`<option value="${type}"${type === action ? html` selected` : ''}>${type}</option>`)}
</select>
</div>
<div>
<label for="from">${t('portal.audit_log.filter.from')}</label>
<input id="from" name="from" type="date" value="${from ?? ''}">
</div>
<div>
<label for="to">${t('portal.audit_log.filter.to')}</label>
<input id="to" name="to" type="date" value="${to ?? ''}">
</div>
<div><button type="submit" id="filter" class="secondary">${t('portal.audit_log.filter.apply')}</button></div>
</form>
${table}
<p class="pages">
${newer === undefined ? html`<span></span>` : html`<a href="${linkOf(BASE, { ...filters, offset: newer })}" id="newer">${t('portal.audit_log.newer')}</a>`}
${older === undefined ? html`<span></span>` : html`<a href="${linkOf(BASE, { ...filters, offset: older })}" id="older">${t('portal.audit_log.older')}</a>`}
</p>
<p>${t('portal.audit_log.export')}
<a href="${linkOf(`${BASE}/export`, { ...filters, format: 'csv' })}" id="export-csv" download>${t('portal.audit_log.export_csv')}</a> &middot;
<a href="${linkOf(`${BASE}/export`, { ...filters, format: 'ndjson' })}" id="export-ndjson" download>${t('portal.audit_log.export_ndjson')}</a></p>`;
  return portalSend(p, query ? 200 : 422, portalPage(p, DONE, t('portal.audit_log.title'), body));
}

/** The export: every entry of the organization under the page's filters, streamed as the API's export is. */
async function exportEntries(p: Portal) {
  const query = queryOf(p);
  const { format } = p.request.query as { format?: string };
  if (!query || (format !== 'csv' && format !== 'ndjson')) return show(p);
  const chunks = portalAuditLogExport(p.ctx, query, format);
  const body = Readable.from(chunks, { objectMode: false });
  body.on('error', (error) => p.request.log.error({ err: error }, 'audit log export failed'));
  return p.reply
    .code(200)
    .type(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-disposition', `attachment; filename="audit-log.${format}"`)
    .send(body);
}

import type { EntityManager } from '../../db/orm.ts';
import { deleteInBatches, type PurgeStep, retentionDays } from '../../lib/housekeeping.ts';
import { newId } from '../../lib/ids.ts';
import type { PageQuery } from '../../lib/pagination.ts';
import { settingsOf } from '../applications/applications.service.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { AUDIT_COLUMNS, auditValues, NOT_AUDITED } from './audit-mapping.ts';
import { EventEntity } from './event.entity.ts';
import type { EventPayloads, EventRecord, EventType } from './events.schema.ts';

/** The columns of `eventRow`, for a statement that writes an event beside the change it reports. */
export const EVENT_COLUMNS = `id, application_id, type, data, created_at, ${AUDIT_COLUMNS}`;

/** The placeholders of one `eventRow` in a `values` list. */
export const EVENT_VALUES = '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

/**
 * An event as the values of `EVENT_COLUMNS`, for native statements (one round trip for a change and its event): its
 * audit columns included (the acting scope's actor and origin, the kind's organization and target).
 */
export const eventRow = <T extends EventType>(applicationId: string, type: T, data: EventPayloads[T]) =>
  [newId(), applicationId, type, JSON.stringify(data), new Date(), ...auditValues(type, data)] as const;

/**
 * Many events in one statement, however many (a SCIM batch can be thousands): `insert into events (EVENT_COLUMNS)`
 * followed by this `select`, whose one parameter is `eventRecordset(rows)` of `eventRow`s.
 */
export const EVENTS_FROM_RECORDSET = `select ${EVENT_COLUMNS} from jsonb_to_recordset(?::jsonb) as r(id uuid,
  application_id uuid, type text, data jsonb, created_at timestamptz, actor_type text, actor_id text, ip text,
  user_agent text, organization_id uuid, target_type text, target_id text)`;

/** The parameter of `EVENTS_FROM_RECORDSET`. */
export const eventRecordset = (rows: ReadonlyArray<ReturnType<typeof eventRow>>) =>
  JSON.stringify(
    rows.map(([id, application_id, type, data, created_at, ...audit]) => {
      const [actor_type, actor_id, ip, user_agent, organization_id, target_type, target_id] = audit;
      return {
        ...{ id, application_id, type, data: JSON.parse(data), created_at },
        ...{ actor_type, actor_id, ip, user_agent, organization_id, target_type, target_id },
      };
    }),
  );

/**
 * Adds an event to the unit of work: it is written by the same flush, so in the same transaction, as the change it
 * reports (transactional outbox), with its audit columns. Never flush here. Answers the event's id.
 */
export function recordEvent<T extends EventType>(
  em: EntityManager,
  applicationId: string,
  type: T,
  data: EventPayloads[T],
): string {
  const id = newId();
  const [actorType, actorId, ip, userAgent, organizationId, targetType, targetId] = auditValues(type, data);
  em.create(EventEntity, {
    id,
    application: applicationId,
    type,
    data,
    actorType,
    actorId,
    ip,
    userAgent,
    organizationId,
    targetType,
    targetId,
  });
  return id;
}

export async function listEvents(ctx: TenantContext, input: PageQuery & { type?: EventType }) {
  // The event log's own days: older events stay only as audit log entries (see purgeEvents).
  const since = new Date(Date.now() - settingsOf(ctx.application).retention.events_days * 86_400_000);
  const where = {
    application: ctx.application.id,
    createdAt: { $gte: since },
    ...(input.type ? { type: input.type } : {}),
  };
  const [rows, total] = await ctx.em.findAndCount(EventEntity, where, {
    orderBy: { createdAt: 'desc', id: 'desc' },
    limit: input.limit,
    offset: input.offset,
  });
  return {
    // Each row was written by recordEvent or eventRow, with its kind's declared payload.
    events: rows.map((e) => ({ id: e.id, type: e.type, data: e.data, created_at: e.createdAt.toISOString() }) as EventRecord),
    total,
    limit: input.limit,
    offset: input.offset,
  };
}

/** An event's days in the event log: `settings.retention.events_days` (default 30). */
const EVENTS_DAYS = retentionDays('events_days', 30);
/** An audit log entry's days: `settings.audit_log_retention_days` (default 365). */
const AUDIT_DAYS = `coalesce((select (a.settings->>'audit_log_retention_days')::int from applications a where a.id = t.application_id), 365)`;

/**
 * One purge for both logs, which are one table: an event goes when neither log keeps it any more, after the longer
 * of `settings.retention.events_days` (the log webhooks read and replay from; default 30) and
 * `settings.audit_log_retention_days` (default 365); a kind that is no audit entry (`NOT_AUDITED`) after the first.
 * Between the two, an event is an audit entry only: the event log no longer lists it (`listEvents`).
 */
export const purgeEvents: PurgeStep = (em) =>
  deleteInBatches(
    em,
    'events',
    `t.created_at < now() - make_interval(days => case when t.type in (${NOT_AUDITED.map((kind) => `'${kind}'`).join(', ') || 'null'})
       then ${EVENTS_DAYS} else greatest(${EVENTS_DAYS}, ${AUDIT_DAYS}) end)`,
  );

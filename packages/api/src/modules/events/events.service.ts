import type { EntityManager } from '../../db/orm.ts';
import { deleteInBatches, type PurgeStep, retentionDays } from '../../lib/housekeeping.ts';
import { newId } from '../../lib/ids.ts';
import type { PageQuery } from '../../lib/pagination.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { EventEntity } from './event.entity.ts';
import type { EventPayloads, EventRecord, EventType } from './events.schema.ts';

/** The columns of `eventRow`, for a statement that writes an event beside the change it reports. */
export const EVENT_COLUMNS = 'id, application_id, type, data, created_at';

/** An event as the values of `EVENT_COLUMNS`, for native statements (one round trip for a change and its event). */
export const eventRow = <T extends EventType>(applicationId: string, type: T, data: EventPayloads[T]) =>
  [newId(), applicationId, type, JSON.stringify(data), new Date()] as const;

/**
 * Adds an event to the unit of work: it is written by the same flush, so in the same transaction, as the change it
 * reports (transactional outbox). Never flush here.
 */
export function recordEvent<T extends EventType>(
  em: EntityManager,
  applicationId: string,
  type: T,
  data: EventPayloads[T],
): void {
  em.create(EventEntity, { id: newId(), application: applicationId, type, data });
}

export async function listEvents(ctx: TenantContext, input: PageQuery & { type?: EventType }) {
  const where = { application: ctx.application.id, ...(input.type ? { type: input.type } : {}) };
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

/** Events are kept `settings.retention.events_days` (default 30): the log webhooks read and replay from. */
export const purgeEvents: PurgeStep = (em) =>
  deleteInBatches(em, 'events', `t.created_at < now() - make_interval(days => ${retentionDays('events_days', 30)})`);

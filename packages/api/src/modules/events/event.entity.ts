import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';

/**
 * The transactional outbox: written in the same transaction as the change it reports. Each row is also an audit log
 * entry: who acted (`actor_type`, `actor_id`), from where (`ip`, `user_agent`), in which organization and on what
 * (`target_type`, `target_id`), filled at write time from the acting scope and the kind's audit mapping
 * (`audit-mapping.ts`). `organization_id` is no foreign key: an entry outlives the organization it names.
 */
export const EventEntity = defineEntity({
  name: 'Event',
  tableName: 'events',
  extends: TenantRowEntity,
  properties: {
    type: p.string().length(64),
    data: p.json<Record<string, unknown>>(),
    actorType: p.string().length(16),
    actorId: p.string().length(255),
    ip: p.string().length(64).nullable(),
    userAgent: p.string().length(512).nullable(),
    organizationId: p.uuid().nullable(),
    targetType: p.string().length(64).nullable(),
    targetId: p.string().length(255).nullable(),
  },
  // Newest first under each audit log filter (and the event log's own, by type).
  indexes: [
    { properties: ['application', 'createdAt', 'id'] },
    { properties: ['application', 'type', 'createdAt', 'id'] },
    { properties: ['application', 'organizationId', 'createdAt', 'id'] },
    { properties: ['application', 'actorId', 'createdAt', 'id'] },
    { properties: ['application', 'targetId', 'createdAt', 'id'] },
  ],
});
export type Event = InferEntity<typeof EventEntity>;

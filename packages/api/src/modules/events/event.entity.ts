import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';

/** The transactional outbox: written in the same transaction as the change it reports. */
export const EventEntity = defineEntity({
  name: 'Event',
  tableName: 'events',
  extends: TenantRowEntity,
  properties: {
    type: p.string().length(64),
    data: p.json<Record<string, unknown>>(),
  },
  indexes: [{ properties: ['application', 'createdAt', 'id'] }, { properties: ['application', 'type'] }],
});
export type Event = InferEntity<typeof EventEntity>;

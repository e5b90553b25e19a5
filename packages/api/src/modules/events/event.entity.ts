import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';

/** The transactional outbox: written in the same transaction as the change it reports. */
export const EventEntity = defineEntity({
  name: 'Event',
  tableName: 'events',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    type: p.string().length(64),
    data: p.json<Record<string, unknown>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [{ properties: ['application', 'createdAt', 'id'] }, { properties: ['application', 'type'] }],
});
export type Event = InferEntity<typeof EventEntity>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';

/** The message log: every message the service sent, or handed to the developer (`message.created`). */
export const MessageEntity = defineEntity({
  name: 'Message',
  tableName: 'messages',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    templateKey: p.string().length(64),
    channel: p.string().length(16),
    to: p.string().length(320),
    subject: p.string().length(998).nullable(),
    /** For production applications, links are redacted before the body is stored (they hold one-time tokens). */
    body: p.text(),
    status: p.string().length(16),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [{ properties: ['application', 'createdAt', 'id'] }],
});
export type Message = InferEntity<typeof MessageEntity>;

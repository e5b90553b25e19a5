import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';

/** The message log: every message the service sent, or handed to the developer (`message.created`). */
export const MessageEntity = defineEntity({
  name: 'Message',
  tableName: 'messages',
  extends: TenantRowEntity,
  properties: {
    templateKey: p.string().length(64),
    channel: p.string().length(16),
    to: p.string().length(320),
    subject: p.string().length(998).nullable(),
    /** For production applications, links are redacted before the body is stored (they hold one-time tokens). */
    body: p.text(),
    /** `queued` → `sent` | `failed` (the outbox); `not_delivered` (handed to the developer); `suppressed` (never sent). */
    status: p.string().length(16),
    /** The mail to send, sealed with the master key; cleared once sent or failed for good. */
    payloadSealed: p.text().nullable(),
    attempts: p.integer().default(0),
    nextAttemptAt: p.datetime().nullable(),
    /** A process's claim on the row; a process that died leaves it claimable once this has passed. */
    lockedUntil: p.datetime().nullable(),
    lastError: p.string().length(64).nullable(),
    sentAt: p.datetime().nullable(),
  },
  indexes: [
    { properties: ['application', 'createdAt', 'id'] },
    {
      // The outbox worker's claim reads only due, queued rows.
      name: 'messages_queued_next_attempt_index',
      expression: `create index "messages_queued_next_attempt_index" on "messages" ("next_attempt_at") where "status" = 'queued'`,
    },
  ],
});
export type Message = InferEntity<typeof MessageEntity>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { WebhookDeliveryEntity } from './webhook-delivery.entity.ts';

/** Every attempt of a delivery: what the receiver answered (a sanitised excerpt of at most 1 KB) or what failed. */
export const WebhookAttemptEntity = defineEntity({
  name: 'WebhookAttempt',
  tableName: 'webhook_attempts',
  properties: {
    id: p.uuid().primary(),
    delivery: () => p.manyToOne(WebhookDeliveryEntity).mapToPk().deleteRule('cascade'),
    attemptedAt: p.datetime(),
    responseStatus: p.integer().nullable(),
    durationMs: p.integer(),
    responseExcerpt: p.text().nullable(),
    error: p.string().length(64).nullable(),
  },
  indexes: [{ properties: ['delivery', 'attemptedAt'] }],
});
export type WebhookAttempt = InferEntity<typeof WebhookAttemptEntity>;

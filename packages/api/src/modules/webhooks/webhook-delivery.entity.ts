import { defineEntity, type InferEntity, p, type TriggerDef } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';
import { EventEntity } from '../events/event.entity.ts';
import { WebhookEndpointEntity } from './webhook-endpoint.entity.ts';

/** One event for one endpoint: created by the fan-out trigger in the event's own transaction. */
export const WebhookDeliveryEntity = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  extends: TenantRowEntity,
  properties: {
    endpoint: () => p.manyToOne(WebhookEndpointEntity).mapToPk().deleteRule('cascade'),
    event: () => p.manyToOne(EventEntity).mapToPk().deleteRule('cascade'),
    eventType: p.string().length(64),
    /** `pending` → `succeeded` | `failed`. */
    status: p.string().length(16),
    attempts: p.integer().default(0),
    responseStatus: p.integer().nullable(),
    lastAttemptAt: p.datetime().nullable(),
    nextAttemptAt: p.datetime().nullable(),
    /** A process's claim; a process that died leaves the delivery claimable once this has passed. */
    lockedUntil: p.datetime().nullable(),
    lastError: p.string().length(64).nullable(),
  },
  uniques: [{ properties: ['event', 'endpoint'] }],
  indexes: [
    { properties: ['endpoint', 'createdAt', 'id'] },
    // The daily statistics count an application's deliveries by day and status from this alone.
    {
      name: 'webhook_deliveries_application_id_created_at_index',
      expression:
        'create index "webhook_deliveries_application_id_created_at_index" on "webhook_deliveries" ("application_id", "created_at") include ("status")',
    },
    {
      name: 'webhook_deliveries_pending_next_attempt_index',
      expression: `create index "webhook_deliveries_pending_next_attempt_index" on "webhook_deliveries" ("next_attempt_at") where "status" = 'pending'`,
    },
  ],
});
export type WebhookDelivery = InferEntity<typeof WebhookDeliveryEntity>;

/** UUID v7 in SQL (time-ordered, like every id the service makes): the v4 of gen_random_uuid with a ms timestamp. */
const UUID_V7_SQL =
  "encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing substring(int8send(floor(extract(epoch from clock_timestamp()) * 1000)::bigint) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid";

/**
 * Fan-out at write time: every event row gets one delivery per active endpoint of its application whose
 * `event_types` is empty or holds the type, inserted by the event's own statement, so in its transaction, whatever code
 * path wrote the event. `webhook.test` goes to one endpoint only: the test route writes that delivery itself. The
 * trigger belongs to this module (it writes this module's table); the webhooks module declares it on the events table
 * (`triggers`), so MikroORM's schema diff and migrations know it (the function is `events_events_webhook_fan_out_fn`).
 */
export const webhookFanOutTrigger: TriggerDef = {
  name: 'events_webhook_fan_out',
  timing: 'after',
  events: ['insert'],
  forEach: 'row',
  body:
    'insert into "webhook_deliveries" ("id", "application_id", "endpoint_id", "event_id", "event_type", "status", "attempts", "next_attempt_at", "created_at") ' +
    `select ${UUID_V7_SQL}, new."application_id", e."id", new."id", new."type", 'pending', 0, new."created_at", new."created_at" ` +
    'from "webhook_endpoints" e where e."application_id" = new."application_id" and e."status" = \'active\' ' +
    'and new."type" <> \'webhook.test\' ' +
    'and (jsonb_array_length(e."event_types") = 0 or e."event_types" @> jsonb_build_array(new."type")); return null;',
};

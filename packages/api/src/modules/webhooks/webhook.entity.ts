import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';
import { EventEntity } from '../events/event.entity.ts';

/** A developer's receiving URL. Deliveries are fanned out to it by a trigger on `events` (see the migration). */
export const WebhookEndpointEntity = defineEntity({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoints',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    url: p.string().length(2048),
    description: p.string().length(1024).default(''),
    /** Event kinds this endpoint receives; empty = every kind. */
    eventTypes: p.json<string[]>(),
    /** `active` | `disabled`. */
    status: p.string().length(16).default('active'),
    /** Why the service disabled it (`gone`: the receiver answered 410; `failing`: 5 days of failures); null otherwise. */
    disabledReason: p.string().length(32).nullable(),
    /** The signing secret (`whsec_…`), sealed with the master key. */
    secretSealed: p.text(),
    /** The secret before the last rotation: still signs beside the new one until `previousSecretExpiresAt`. */
    previousSecretSealed: p.text().nullable(),
    previousSecretExpiresAt: p.datetime().nullable(),
    /** Start of the current run of failed attempts (cleared by a success); 5 days of it disables the endpoint. */
    failingSince: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [{ properties: ['application', 'createdAt', 'id'] }],
});
export type WebhookEndpoint = InferEntity<typeof WebhookEndpointEntity>;

/** One event for one endpoint: created by the fan-out trigger in the event's own transaction. */
export const WebhookDeliveryEntity = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
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
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ properties: ['event', 'endpoint'] }],
  indexes: [
    { properties: ['endpoint', 'createdAt', 'id'] },
    {
      name: 'webhook_deliveries_pending_next_attempt_index',
      expression: `create index "webhook_deliveries_pending_next_attempt_index" on "webhook_deliveries" ("next_attempt_at") where "status" = 'pending'`,
    },
  ],
});
export type WebhookDelivery = InferEntity<typeof WebhookDeliveryEntity>;

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

/** UUID v7 in SQL (time-ordered, like every id the service makes): the v4 of gen_random_uuid with a ms timestamp. */
const UUID_V7_SQL =
  "encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing substring(int8send(floor(extract(epoch from clock_timestamp()) * 1000)::bigint) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid";

/**
 * Fan-out at write time: every event row gets one delivery per active endpoint of its application whose
 * `event_types` is empty or holds the type, inserted by the event's own statement, so in its transaction, whatever code
 * path wrote the event. `webhook.test` goes to one endpoint only: the test route writes that delivery itself. The
 * trigger belongs to this module (it writes this module's table) and is registered on the events table's metadata, so
 * MikroORM's schema diff and migrations know it (the function is `events_events_webhook_fan_out_fn`).
 */
EventEntity.meta.triggers.push({
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
});

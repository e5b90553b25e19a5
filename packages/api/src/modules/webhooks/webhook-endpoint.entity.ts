import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { EditableTenantRowEntity } from '../applications/tenant-row.entity.ts';

/** A developer's receiving URL. Deliveries are fanned out to it by a trigger on `events` (see the migration). */
export const WebhookEndpointEntity = defineEntity({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoints',
  extends: EditableTenantRowEntity,
  properties: {
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
  },
  indexes: [{ properties: ['application', 'createdAt', 'id'] }],
});
export type WebhookEndpoint = InferEntity<typeof WebhookEndpointEntity>;

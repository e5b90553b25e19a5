import { z } from 'zod';
import { PageQuerySchema, pageOf } from '../../lib/pagination.ts';
import { text } from '../../lib/schemas.ts';
import { EVENT_TYPES } from '../events/events.schema.ts';

/**
 * What an endpoint may subscribe to: every kind this build emits, and every kind of CONTRACT §6 (a capability that
 * is not built yet emits nothing, but a subscription to it is not a mistake).
 */
// a spread of a Set types as string[]; z.enum needs a non-empty tuple, and EVENT_TYPES is not empty.
export const WEBHOOK_EVENT_TYPES = [...new Set([...EVENT_TYPES, 'saml_connection.created', 'saml_connection.updated'])] as [
  string,
  ...string[],
];

/** Any refused URL, a too long one included, is 422 `invalid_url` (CONTRACT §1); the SSRF guard judges the rest. */
const UrlSchema = text()
  .refine((v) => v.length >= 1 && v.length <= 2048, { message: 'a URL of 1–2048 characters', params: { code: 'invalid_url' } })
  .meta({ format: 'uri', maxLength: 2048, description: 'https URL on a public address' });
const EventTypesSchema = z
  .array(z.enum(WEBHOOK_EVENT_TYPES))
  .max(100)
  .meta({ description: 'Event kinds to receive (those `GET /v1/events` lists); empty = every kind' });
const DescriptionSchema = text().max(1024);

export const WebhookEndpointSchema = z
  .object({
    id: z.uuid(),
    url: text(),
    description: text(),
    event_types: z.array(text()),
    status: z.enum(['active', 'disabled']),
    /** Why the service disabled it: `gone` (410) or `failing` (5 days of failures); null when active or disabled by hand. */
    disabled_reason: text().nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'WebhookEndpoint' });
export type WebhookEndpointRecord = z.infer<typeof WebhookEndpointSchema>;

export const WebhookEndpointWithSecretSchema = WebhookEndpointSchema.extend({
  secret: text().meta({ description: 'The signing secret `whsec_…`: shown here only' }),
}).meta({ id: 'WebhookEndpointWithSecret' });

export const CreateWebhookInputSchema = z.strictObject({
  url: UrlSchema,
  description: DescriptionSchema.default(''),
  event_types: EventTypesSchema.default([]),
});

export const UpdateWebhookInputSchema = z.strictObject({
  id: z.uuid(),
  url: UrlSchema.optional(),
  description: DescriptionSchema.optional(),
  event_types: EventTypesSchema.optional(),
  status: z.enum(['active', 'disabled']).optional(),
});

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;

export const WebhookDeliverySchema = z
  .object({
    id: z.uuid(),
    endpoint_id: z.uuid(),
    event_id: z.uuid(),
    event_type: text(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int(),
    response_status: z.number().int().nullable(),
    last_error: text().nullable(),
    last_attempt_at: z.iso.datetime().nullable(),
    next_attempt_at: z.iso.datetime().nullable(),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDeliveryRecord = z.infer<typeof WebhookDeliverySchema>;

export const WebhookAttemptSchema = z
  .object({
    attempted_at: z.iso.datetime(),
    response_status: z.number().int().nullable(),
    duration_ms: z.number().int(),
    response_excerpt: text().nullable().meta({ description: 'The start of the answer (at most 1 KB), sanitised' }),
    error: text().nullable(),
  })
  .meta({ id: 'WebhookAttempt' });

export const WebhookDeliveryDetailSchema = WebhookDeliverySchema.extend({
  attempt_log: z.array(WebhookAttemptSchema).meta({ description: 'Every attempt, oldest first' }),
}).meta({ id: 'WebhookDeliveryDetail' });

export const ListDeliveriesInputSchema = PageQuerySchema.extend({
  id: z.uuid(),
  status: z.enum(DELIVERY_STATUSES).optional(),
}).strict();
export const DeliveryPageSchema = pageOf('deliveries', WebhookDeliverySchema).meta({ id: 'WebhookDeliveryPage' });
export const DeliveryParamsSchema = z.strictObject({ id: z.uuid(), delivery_id: z.uuid() });
export const RecoverInputSchema = z.strictObject({
  id: z.uuid(),
  since: z.iso.datetime({ offset: true }).meta({ description: 'Re-queue the failed deliveries created since this time' }),
});
export const RecoverResultSchema = z.object({ recovered: z.number().int() }).meta({ id: 'WebhookRecoverResult' });

/** The `data` of `webhook_endpoint.created` and `.updated` (never the secret). */
export const EndpointEventSchema = z.object({
  id: z.uuid(),
  url: text(),
  event_types: z.array(text()),
  status: z.enum(['active', 'disabled']),
});
/** The `data` of `webhook_endpoint.deleted`. */
export const DeletedEndpointEventSchema = z.object({ id: z.uuid(), url: text() });
/** The `data` of `webhook_endpoint.disabled`: why the service disabled it (`gone`, `failing`). */
export const DisabledEndpointEventSchema = EndpointEventSchema.extend({
  status: z.literal('disabled'),
  reason: z.enum(['gone', 'failing']),
});
/** The `data` of `webhook.test`. */
export const TestEventSchema = z.object({ endpoint_id: z.uuid(), message: text() });

import { deleteInBatches, type PurgeStep, purgeSteps, retentionDays } from '../../lib/housekeeping.ts';
import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { EventEntity } from '../events/event.entity.ts';
import { WebhookAttemptEntity } from './webhook-attempt.entity.ts';
import { WebhookDeliveryEntity, webhookFanOutTrigger } from './webhook-delivery.entity.ts';
import { WebhookEndpointEntity } from './webhook-endpoint.entity.ts';
import { webhooksRouter } from './webhooks.router.ts';
import {
  DeletedEndpointEventSchema,
  DisabledEndpointEventSchema,
  EndpointEventSchema,
  TestEventSchema,
} from './webhooks.schema.ts';

/** The events this module emits, with their payload schemas. */
const events = {
  'webhook_endpoint.created': EndpointEventSchema,
  'webhook_endpoint.updated': EndpointEventSchema,
  'webhook_endpoint.deleted': DeletedEndpointEventSchema,
  'webhook_endpoint.disabled': DisabledEndpointEventSchema,
  'webhook.test': TestEventSchema,
} satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/**
 * Finished deliveries (and, by their foreign key, attempts) go after the event log's days
 * (`settings.retention.events_days`), although their events may stay longer as audit log entries.
 */
const purgeDeliveries: PurgeStep = (em) =>
  deleteInBatches(
    em,
    'webhook_deliveries',
    `t.status <> 'pending' and t.created_at < now() - make_interval(days => ${retentionDays('events_days', 30)})`,
  );

/** Webhook endpoints, their deliveries and attempts. */
export const webhooksModule = defineModule({
  name: 'webhooks',
  entities: [WebhookEndpointEntity, WebhookDeliveryEntity, WebhookAttemptEntity],
  procedures: { webhooks: webhooksRouter },
  triggers: [{ on: EventEntity, trigger: webhookFanOutTrigger }],
  hooks: [purgeSteps.entry('webhook_deliveries', purgeDeliveries)],
  tag: {
    name: 'Webhooks',
    description:
      'Endpoints that receive the events, signed per Standard Webhooks (at-least-once, retried for about a day), their deliveries and attempts.',
  },
  events,
});

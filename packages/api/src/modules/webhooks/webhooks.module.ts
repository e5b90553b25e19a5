import { defineModule } from '../../lib/modules.ts';
import { WebhookAttemptEntity, WebhookDeliveryEntity, WebhookEndpointEntity } from './webhook.entity.ts';
import { webhooksRouter } from './webhooks.router.ts';

/** Webhook endpoints, their deliveries and attempts. */
export const webhooksModule = defineModule({
  name: 'webhooks',
  entities: [WebhookEndpointEntity, WebhookDeliveryEntity, WebhookAttemptEntity],
  procedures: { webhooks: webhooksRouter },
  tag: {
    name: 'Webhooks',
    description:
      'Endpoints that receive the events, signed per Standard Webhooks (at-least-once, retried for about a day), their deliveries and attempts.',
  },
});

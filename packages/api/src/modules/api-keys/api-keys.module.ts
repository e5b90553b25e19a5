import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { ApiKeyEntity } from './api-key.entity.ts';
import { apiKeysRouter } from './api-keys.router.ts';
import { ApiKeyCreatedEventSchema, ApiKeyRevokedEventSchema } from './api-keys.schema.ts';

/** The events this module emits, with their payload schemas. */
const events = {
  'api_key.created': ApiKeyCreatedEventSchema,
  'api_key.revoked': ApiKeyRevokedEventSchema,
} satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/** An application's secret keys, and the authenticators of the operator, secret keys and end users. */
export const apiKeysModule = defineModule({
  name: 'api-keys',
  entities: [ApiKeyEntity],
  procedures: { apiKeys: apiKeysRouter },
  tag: {
    name: 'API keys',
    description: 'Secret keys of an application, with scopes. A secret is shown once, at creation.',
  },
  events,
});

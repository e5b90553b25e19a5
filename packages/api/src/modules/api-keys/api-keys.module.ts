import { defineModule } from '../../lib/modules.ts';
import { ApiKeyEntity } from './api-key.entity.ts';
import { apiKeysRouter } from './api-keys.router.ts';

/** An application's secret keys, and the authenticators of the operator, secret keys and end users. */
export const apiKeysModule = defineModule({
  name: 'api-keys',
  entities: [ApiKeyEntity],
  procedures: { apiKeys: apiKeysRouter },
  tag: {
    name: 'API keys',
    description: 'Secret keys of an application, with scopes. A secret is shown once, at creation.',
  },
});

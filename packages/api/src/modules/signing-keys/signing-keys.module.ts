import { defineModule } from '../../lib/modules.ts';
import { SigningKeyEntity } from './signing-key.entity.ts';
import { signingKeysRouter } from './signing-keys.router.ts';

/** Each application's Ed25519 signing keys and their JWKS. */
export const signingKeysModule = defineModule({
  name: 'signing-keys',
  entities: [SigningKeyEntity],
  procedures: { signingKeys: signingKeysRouter },
  tag: {
    name: 'Signing keys',
    description: "The application's Ed25519 keys: the public JWKS any backend verifies access tokens against, and rotation.",
  },
});

import { purgeSteps } from '../../lib/housekeeping.ts';
import { defineModule } from '../../lib/modules.ts';
import { secondFactorSources } from '../sign-in/sign-in.service.ts';
import { passkeysRouter } from './passkeys.router.ts';
import { passkeySecondFactors, purgeWebauthnChallenges } from './passkeys.service.ts';
import { WebauthnChallengeEntity } from './webauthn-challenge.entity.ts';

/** WebAuthn passkeys: registration, passwordless sign-in and second factor. */
export const passkeysModule = defineModule({
  name: 'passkeys',
  entities: [WebauthnChallengeEntity],
  procedures: { auth: { passkeys: passkeysRouter } },
  tag: {
    name: 'End-user passkeys',
    description: 'WebAuthn passkeys: registration, passwordless sign-in and second factor.',
  },
  hooks: [
    secondFactorSources.entry('passkeys', passkeySecondFactors),
    purgeSteps.entry('webauthn_challenges', purgeWebauthnChallenges),
  ],
});

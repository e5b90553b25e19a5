import { purgeSteps } from '../../lib/housekeeping.ts';
import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { secondFactorSources } from '../sign-in/sign-in.service.ts';
import { passkeysRouter } from './passkeys.router.ts';
import { CounterRegressionEventSchema } from './passkeys.schema.ts';
import { passkeySecondFactors, purgeWebauthnChallenges } from './passkeys.service.ts';
import { WebauthnChallengeEntity } from './webauthn-challenge.entity.ts';

/** The events this module emits, with their payload schemas. */
const events = { 'passkey.counter_regression': CounterRegressionEventSchema } satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

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
  events,
});

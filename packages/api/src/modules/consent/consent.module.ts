import { defineModule } from '../../lib/modules.ts';
import { mergeSteps } from '../users/users.merge.ts';
import { ConsentEntity } from './consent.entity.ts';
import { mergeConsents } from './consent.service.ts';

/** Consent documents accepted by users. */
export const consentModule = defineModule({
  name: 'consent',
  entities: [ConsentEntity],
  hooks: [mergeSteps.entry('consents', mergeConsents)],
});

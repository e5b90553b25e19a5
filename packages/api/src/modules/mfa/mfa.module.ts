import { defineModule } from '../../lib/modules.ts';
import { secondFactorSources } from '../sign-in/sign-in.service.ts';
import { mergeSteps } from '../users/users.merge.ts';
import { mfaRouter } from './mfa.router.ts';
import { mergeMfaFactors, mfaSecondFactors } from './mfa.service.ts';
import { MfaBackupCodeEntity } from './mfa-backup-code.entity.ts';
import { MfaFactorEntity } from './mfa-factor.entity.ts';

/** TOTP and backup codes. */
export const mfaModule = defineModule({
  name: 'mfa',
  entities: [MfaFactorEntity, MfaBackupCodeEntity],
  procedures: { auth: { mfa: mfaRouter } },
  tag: {
    name: 'End-user second factors',
    description: 'Authenticator apps (TOTP) and backup codes: enrollment and verification.',
  },
  hooks: [secondFactorSources.entry('mfa_factors', mfaSecondFactors), mergeSteps.entry('mfa_factors', mergeMfaFactors)],
});

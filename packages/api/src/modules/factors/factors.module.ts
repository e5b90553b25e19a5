import { defineModule } from '../../lib/modules.ts';
import { userFactorsRouter } from './factors.router.ts';

/** `users.factors`: the support view of a user's second factors (above mfa and passkeys). */
export const factorsModule = defineModule({
  name: 'factors',
  procedures: { users: { factors: userFactorsRouter } },
});

import { defineModule } from '../../lib/modules.ts';
import { createApplicationProcedure } from './application-setup.router.ts';

/** `applications.create`: an application is born with its first secret key and signing key. */
export const applicationSetupModule = defineModule({
  name: 'application-setup',
  procedures: { applications: { create: createApplicationProcedure } },
});

import { defineModule } from '../../lib/modules.ts';
import { createApplicationProcedure, eventsRouter, keyApplicationProcedures } from './application-setup.router.ts';

/**
 * `applications.create`: an application is born with its first secret key and signing key. Also the procedures of
 * applications and events that a secret key calls (`applications.get`/`update`, `events.list`): those modules rank
 * below api-keys, which records events.
 */
export const applicationSetupModule = defineModule({
  name: 'application-setup',
  procedures: { applications: { create: createApplicationProcedure, ...keyApplicationProcedures }, events: eventsRouter },
});

import { purgeSteps } from '../../lib/housekeeping.ts';
import { defineModule } from '../../lib/modules.ts';
import { EventEntity } from './event.entity.ts';
import { purgeEvents } from './events.service.ts';

/** The event log, written in the transaction of each change (its listing, a secret key's, is application-setup's). */
export const eventsModule = defineModule({
  name: 'events',
  entities: [EventEntity],
  tag: {
    name: 'Events',
    description: 'The event log: every change, written in the transaction that makes it.',
  },
  hooks: [purgeSteps.entry('events', purgeEvents)],
});

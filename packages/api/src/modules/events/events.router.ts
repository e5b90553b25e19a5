import { router, secretKeyProcedure } from '../../trpc.ts';
import { EventPageSchema, ListEventsInputSchema } from './events.schema.ts';
import { listEvents } from './events.service.ts';

export const eventsRouter = router({
  list: secretKeyProcedure('webhooks:read')
    .meta({ openapi: { method: 'GET', path: '/v1/events', tags: ['Events'], summary: 'List events, newest first' } })
    .input(ListEventsInputSchema)
    .output(EventPageSchema)
    .query(({ ctx, input }) => listEvents(ctx, input)),
});

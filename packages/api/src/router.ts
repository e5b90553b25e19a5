import { apiKeysRouter } from './modules/api-keys/api-keys.router.ts';
import { applicationsRouter } from './modules/applications/applications.router.ts';
import { eventsRouter } from './modules/events/events.router.ts';
import { organizationsRouter } from './modules/organizations/organizations.router.ts';
import { usersRouter } from './modules/users/users.router.ts';
import { router } from './trpc.ts';

export const appRouter = router({
  applications: applicationsRouter,
  apiKeys: apiKeysRouter,
  users: usersRouter,
  organizations: organizationsRouter,
  events: eventsRouter,
});

export type AppRouter = typeof appRouter;

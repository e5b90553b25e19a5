import { apiKeysRouter } from './modules/api-keys/api-keys.router.ts';
import { applicationsRouter } from './modules/applications/applications.router.ts';
import { authRouter } from './modules/auth.router.ts';
import { eventsRouter } from './modules/events/events.router.ts';
import { messagesRouter } from './modules/messages/messages.router.ts';
import { organizationsRouter } from './modules/organizations/organizations.router.ts';
import { signingKeysRouter } from './modules/signing-keys/signing-keys.router.ts';
import { statsRouter } from './modules/stats/stats.router.ts';
import { templatesRouter } from './modules/templates/templates.router.ts';
import { usersRouter } from './modules/users/users.router.ts';
import { router } from './trpc.ts';

export const appRouter = router({
  applications: applicationsRouter,
  apiKeys: apiKeysRouter,
  users: usersRouter,
  organizations: organizationsRouter,
  events: eventsRouter,
  signingKeys: signingKeysRouter,
  stats: statsRouter,
  templates: templatesRouter,
  messages: messagesRouter,
  auth: authRouter,
});

export type AppRouter = typeof appRouter;

import { authRouter } from './auth.router.ts';
import { accessRulesRouter } from './modules/access-rules/access-rules.router.ts';
import { apiKeysRouter } from './modules/api-keys/api-keys.router.ts';
import {
  createApplicationProcedure,
  eventsRouter,
  keyApplicationProcedures,
} from './modules/application-setup/application-setup.router.ts';
import { applicationProcedures } from './modules/applications/applications.router.ts';
import { authzRouter } from './modules/authz/authz.router.ts';
import { billingRouter } from './modules/billing/billing.router.ts';
import { domainsRouter } from './modules/domains/domains.router.ts';
import { userFactorsRouter } from './modules/factors/factors.router.ts';
import { messagesRouter } from './modules/messages/messages.router.ts';
import { providersRouter } from './modules/oauth/oauth.router.ts';
import { oauth2Router, userGrantsRouter } from './modules/oauth2/oauth2.router.ts';
import { organizationsRouter } from './modules/organizations/organizations.router.ts';
import { samlRouter } from './modules/saml/saml.router.ts';
import { revokeUserSessionsProcedure } from './modules/sessions/sessions.router.ts';
import { signingKeysRouter } from './modules/signing-keys/signing-keys.router.ts';
import { statsRouter } from './modules/stats/stats.router.ts';
import { templatesRouter } from './modules/templates/templates.router.ts';
import { userProcedures } from './modules/users/users.router.ts';
import { webhooksRouter } from './modules/webhooks/webhooks.router.ts';
import { router } from './trpc.ts';

/**
 * The composition root: the one place that sees every module. A namespace can gather procedures from several
 * layers (users.factors comes from the factors module above users), so no module imports one above it.
 */
export const appRouter = router({
  applications: router({ create: createApplicationProcedure, ...applicationProcedures, ...keyApplicationProcedures }),
  apiKeys: apiKeysRouter,
  users: router({
    ...userProcedures,
    revokeSessions: revokeUserSessionsProcedure,
    factors: userFactorsRouter,
    grants: userGrantsRouter,
  }),
  organizations: organizationsRouter,
  events: eventsRouter,
  signingKeys: signingKeysRouter,
  stats: statsRouter,
  templates: templatesRouter,
  messages: messagesRouter,
  saml: samlRouter,
  providers: providersRouter,
  webhooks: webhooksRouter,
  domains: domainsRouter,
  authz: authzRouter,
  billing: billingRouter,
  access: accessRulesRouter,
  oauth2: oauth2Router,
  auth: authRouter,
});

export type AppRouter = typeof appRouter;

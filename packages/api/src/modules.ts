import { type DatabaseConfig, type Orm, openOrm } from './db/orm.ts';
import { kernelModule } from './lib/kernel.module.ts';
import { composeModules } from './lib/modules.ts';
import { accessRulesModule } from './modules/access-rules/access-rules.module.ts';
import { apiKeysModule } from './modules/api-keys/api-keys.module.ts';
import { applicationSetupModule } from './modules/application-setup/application-setup.module.ts';
import { applicationsModule } from './modules/applications/applications.module.ts';
import { auditLogsModule } from './modules/audit-logs/audit-logs.module.ts';
import { authzModule } from './modules/authz/authz.module.ts';
import { billingModule } from './modules/billing/billing.module.ts';
import { consentModule } from './modules/consent/consent.module.ts';
import { directoriesModule } from './modules/directories/directories.module.ts';
import { domainsModule } from './modules/domains/domains.module.ts';
import { eventsModule } from './modules/events/events.module.ts';
import { factorsModule } from './modules/factors/factors.module.ts';
import { invitationsModule } from './modules/invitations/invitations.module.ts';
import { messagesModule } from './modules/messages/messages.module.ts';
import { mfaModule } from './modules/mfa/mfa.module.ts';
import { oauthModule } from './modules/oauth/oauth.module.ts';
import { oauth2Module } from './modules/oauth2/oauth2.module.ts';
import { operatorsModule } from './modules/operators/operators.module.ts';
import { organizationDomainsModule } from './modules/organization-domains/organization-domains.module.ts';
import { organizationsModule } from './modules/organizations/organizations.module.ts';
import { passkeysModule } from './modules/passkeys/passkeys.module.ts';
import { portalModule } from './modules/portal/portal.module.ts';
import { samlModule } from './modules/saml/saml.module.ts';
import { sessionsModule } from './modules/sessions/sessions.module.ts';
import { signInModule } from './modules/sign-in/sign-in.module.ts';
import { signingKeysModule } from './modules/signing-keys/signing-keys.module.ts';
import { statsModule } from './modules/stats/stats.module.ts';
import { templatesModule } from './modules/templates/templates.module.ts';
import { usersModule } from './modules/users/users.module.ts';
import { webhooksModule } from './modules/webhooks/webhooks.module.ts';

/**
 * The composition root: every module, listed once. The tables, the router's namespaces, the OpenAPI tags (in this
 * order) and the registries (merge steps, purge steps, sign-in checks, …) are all derived from this list; a name
 * declared twice anywhere throws here, at start. A new module adds its declaration (`<module>.module.ts`) here.
 */
export const service = composeModules([
  kernelModule,
  applicationsModule,
  applicationSetupModule,
  apiKeysModule,
  signingKeysModule,
  usersModule,
  sessionsModule,
  organizationsModule,
  eventsModule,
  statsModule,
  webhooksModule,
  domainsModule,
  authzModule,
  billingModule,
  accessRulesModule,
  templatesModule,
  messagesModule,
  consentModule,
  signInModule,
  mfaModule,
  passkeysModule,
  factorsModule,
  samlModule,
  oauthModule,
  oauth2Module,
  invitationsModule,
  organizationDomainsModule,
  auditLogsModule,
  portalModule,
  directoriesModule,
  operatorsModule,
]);

/** The service's database: the kernel's ORM over every module's entities. */
export const createOrm = (db: DatabaseConfig): Promise<Orm> => openOrm(db, service.entities);

import { createServices as createKernelServices, type ServicesOptions } from './context.ts';
import type { Orm } from './db/orm.ts';
import { purgeExpired as purge } from './lib/housekeeping.ts';
import { service } from './modules.ts';

export type { Context, OAuthConfig, RequestInfo, Services } from './context.ts';
export { createContext } from './context.ts';
export {
  embeddedTemplateFor,
  isPrefixOf,
  type MigrationDigest,
  migrationDigests,
  writeEmbeddedTemplate,
} from './db/embedded-template.ts';
export { type DatabaseConfig, migrate, type Orm, openPglite, pendingMigrations } from './db/orm.ts';
export { AppError, ERROR_CODES, type ErrorBody, type ErrorCode } from './errors.ts';
export {
  ACTOR_TYPES,
  type Actor,
  type ActorType,
  actingScope,
  type RequestOrigin,
  withActor,
  withRequest,
} from './lib/acting.ts';
export { constantTimeEqual, SecretBox, sha256 } from './lib/crypto.ts';
export { runHousekeeping } from './lib/housekeeping.ts';
export { isUuid } from './lib/ids.ts';
export { DatabaseOutage, databaseUnavailable, isDatabaseUnreachable, OUTAGE_RETRY_AFTER_S } from './lib/outage.ts';
export { MAX_BODY_DEPTH, tooDeep } from './lib/schemas.ts';
export { checkOutboundUrl, guardedRequest, isAllowedAddress, OutboundBlockedError } from './lib/ssrf.ts';
export type { Application } from './modules/applications/application.entity.ts';
export type { ApplicationSettings } from './modules/applications/applications.schema.ts';
export { applicationById, hasProductionApplications, settingsOf } from './modules/applications/applications.service.ts';
export { applicationOfVerifiedDomain, CORS_ALLOWED_HEADERS, ownOrigin, preflightAllowed } from './modules/applications/cors.ts';
export { type StoredLogo, storedLogo } from './modules/applications/logo.service.ts';
export { verifiedDomainChecks } from './modules/directories/directories.hooks.ts';
export {
  handleScimRequest,
  type ScimAnswer,
  ScimError,
  type ScimRequest,
} from './modules/directories/scim.service.ts';
export { MailWorker } from './modules/messages/mail-outbox.ts';
export { BUILT_IN_PROVIDERS, OAUTH_PROVIDERS, type OAuthProviderName, providerLabel } from './modules/oauth/oauth.providers.ts';
export { enabledOAuthProviders } from './modules/oauth/oauth.service.ts';
export { relayRedirect } from './modules/oauth/oauth-flow.service.ts';
export {
  denyHostedInteraction,
  finishConsent,
  finishLogin,
  type HostedInteraction,
  interactionFor,
  type ProviderBrowser,
  type SessionFit,
} from './modules/oauth2/oauth2.hosted.ts';
export { ACR_AAL1, ACR_AAL2, handleProviderRequest } from './modules/oauth2/oauth2.provider.ts';
export {
  addFirstOperator,
  type ConsoleSession,
  consoleClient,
  consoleSession,
  consoleSetupLink,
  consoleSetupTokenValid,
} from './modules/operators/operators.console.ts';
export { ensureConsoleApplication, hasOperators, syncConsoleApplication } from './modules/operators/operators.service.ts';
export { organizationsOfUser } from './modules/organizations/organizations.service.ts';
export {
  PORTAL_AUDIT_ACTIONS,
  PORTAL_AUDIT_PAGE,
  type PortalAuditLogQuery,
  PortalAuditLogQuerySchema,
  portalAuditLog,
  portalAuditLogExport,
} from './modules/portal/portal.audit-log.ts';
export {
  PORTAL_DIRECTORY_PROVIDERS,
  type PortalDirectoryProvider,
  portalCreateDirectory,
  portalDirectories,
  portalDirectory,
  portalRotateDirectoryToken,
  portalUpdateDirectory,
} from './modules/portal/portal.directory.ts';
export {
  portalAddDomain,
  portalDomain,
  portalDomains,
  portalRemoveDomain,
  portalSetDomainPolicies,
  portalVerifyDomain,
} from './modules/portal/portal.domains.ts';
export type { PortalIntent } from './modules/portal/portal.schema.ts';
export {
  endPortalSession,
  findPortalSession,
  openPortalLink,
  PORTAL_SESSION_TTL_S,
  type PortalSession,
  portalPath,
} from './modules/portal/portal.service.ts';
export {
  isDraft,
  PORTAL_IDPS,
  type PortalContext,
  type PortalIdp,
  portalSsoCollectTest,
  portalSsoConfigure,
  portalSsoConnection,
  portalSsoConnections,
  portalSsoCreateDraft,
  portalSsoSetEnabled,
  portalSsoStartTest,
} from './modules/portal/portal.sso.ts';
export { samlMetadata } from './modules/saml/saml.service.ts';
export { acceptSamlResponse, hasSsoConnection } from './modules/saml/sso.service.ts';
export {
  attachBrowserSession,
  type BrowserSession,
  browserAccessToken,
  browserSessionCookie,
  browserTokenFrom,
  clearedBrowserSessionCookie,
  endBrowserSession,
  findBrowserSession,
} from './modules/sessions/browser-sessions.ts';
export {
  DEFAULT_WEBHOOK_RETRY_SCHEDULE_S,
  WebhookWorker,
  type WebhookWorkerOptions,
} from './modules/webhooks/webhook-worker.ts';
export { createOrm } from './modules.ts';
/** Every event kind's payload schema, as the module that emits it declares it (what a kind's `data` must match). */
export const eventPayloadSchemas = service.events;
/**
 * The OpenAPI document of the router. Its generator (trpc-to-openapi with zod-openapi, openapi3-ts and yaml) loads on
 * the first call, not at every start: a server builds the document when it is first asked for.
 */
export const loadOpenApiDocument = async (baseUrl: string) => (await import('./openapi.ts')).buildOpenApiDocument(baseUrl);
export { callProcedure, procedureTypes, type RestRoute, restRoutes } from './rest.ts';
export { type AppRouter, appRouter } from './router.ts';
export { describeError, errorBody, type Meta } from './trpc.ts';

/** The process's services, with the registries of every module. */
export const createServices = (options: Omit<ServicesOptions, 'hooks'>) =>
  createKernelServices({ ...options, hooks: service.hooks });
/** Every purge step of every module (housekeeping's first half): how many rows went. */
export const purgeExpired = (orm: Orm) => purge(orm, service.hooks);

import type { AppRouter } from '@gatehouse/api';
import type { AnyProcedure, inferProcedureInput, inferProcedureOutput, inferRouterOutputs } from '@trpc/server';
import {
  type AuditLogEntry,
  type AuditLogExportFormat,
  type AuditLogFilters,
  downloadAuditLogs,
  exportAuditLogs,
} from './audit-logs.ts';
import { createTransport, type ProcedurePath } from './transport.ts';

export type { AuditLogEntry, AuditLogExportFormat, AuditLogFilters } from './audit-logs.ts';

export {
  type AcceptConsentInput,
  type AcceptedInvitation,
  type BackupCodes,
  type ClientSession,
  type ConfirmTotpInput,
  type CurrentUser,
  createGatehouseClient,
  type Deleted,
  type EnrollTotpInput,
  type GatehouseBrowserClient,
  type GatehouseClientOptions,
  type Grant,
  type InvitationPreview,
  type LinkedIdentity,
  type ListRelationsInput,
  type MagicLinkOutcome,
  type MagicLinkStarted,
  type MagicLinkWaitOptions,
  type MfaFactor,
  type OAuth2Interaction,
  type OAuth2InteractionOutcome,
  type OAuthCallbackOptions,
  type OAuthProvider,
  type OAuthRedirectOptions,
  type Passkey,
  type PasskeySignInOptions,
  type RegisterPasskeyInput,
  type RelationPage,
  type SignInResult,
  type SsoStarted,
  type StartMagicLinkInput,
  type StartSsoInput,
  type StepUp,
  type TokenStorage,
  type Tokens,
  type TotpEnrollment,
  type UpdateMeInput,
  type UserSession,
  type VerifyMagicLinkInput,
  type WebAuthnCeremonies,
} from './client.ts';
export { GatehouseError, type GatehouseErrorCode, type GatehouseErrorDetail } from './errors.ts';
export { type AccessTokenClaims, type VerifyTokenOptions, verifyToken } from './verify.ts';
export {
  verifyWebhook,
  type WebhookEvent,
  type WebhookEventType,
  type WebhookHeaders,
  WebhookVerificationError,
} from './webhooks.ts';

type Call<P extends AnyProcedure> =
  undefined extends inferProcedureInput<P>
    ? (input?: inferProcedureInput<P>) => Promise<inferProcedureOutput<P>>
    : (input: inferProcedureInput<P>) => Promise<inferProcedureOutput<P>>;

/** The router's procedures as plain async methods: `gatehouse.users.create({ primary_email })`. */
export type Methods<TRecord> = {
  [K in keyof TRecord]: TRecord[K] extends AnyProcedure ? Call<TRecord[K]> : Methods<TRecord[K]>;
};
type RouterMethods = Methods<AppRouter['_def']['record']>;

/** The audit log: a page (`list`), or every entry as it streams (`export`), or the raw NDJSON/CSV body (`download`). */
export interface AuditLogMethods {
  list: RouterMethods['auditLogs']['list'];
  /**
   * Every entry under the filters, newest first, from the streamed export (memory for one entry at a time):
   * `for await (const entry of gatehouse.auditLogs.export({ action: 'user.*' })) …`.
   */
  export(filters?: AuditLogFilters): AsyncGenerator<AuditLogEntry>;
  /** The export's body as it streams (`format`: `ndjson`, the default, or `csv`), e.g. to write to a file. */
  download(input?: AuditLogFilters & { format?: AuditLogExportFormat }): Promise<ReadableStream<Uint8Array>>;
}

export type GatehouseClient = Omit<RouterMethods, 'auditLogs'> & { auditLogs: AuditLogMethods };

type Outputs = inferRouterOutputs<AppRouter>;
export type Application = Outputs['applications']['get'];
/** A person who signs in to the console, with their roles per application (`operators.*`, operator token). */
export type Operator = Outputs['operators']['list']['operators'][number];
export type ApiKey = Outputs['apiKeys']['list'][number];
export type User = Outputs['users']['get'];
export type WebhookEndpoint = Outputs['webhooks']['get'];
export type WebhookDelivery = Outputs['webhooks']['deliveries']['get'];
/** A user's passkey or second factor, as support sees it (`users.factors.list`). */
export type UserFactor = Outputs['users']['factors']['list'][number];
/** An organization, as create, get, update and the list answer it: with its live subscription (null when none). */
export type Organization = Outputs['organizations']['get'];
/** @deprecated The same as `Organization` (every organization answer has one shape now). */
export type OrganizationDetail = Organization;
export type OrganizationMember = Outputs['organizations']['members']['add'];
/** An invitation to an organization (never its token: that travels only in the mail). */
export type OrganizationInvitation = Outputs['organizations']['invitations']['create'];
/** A domain an organization claims, with its TXT challenge and policies (`organizations.domains.*`). */
export type OrganizationDomain = Outputs['organizations']['domains']['add'];
/** An organization's SCIM directory (its `token` only in the answers of create and rotate-token). */
export type Directory = Outputs['organizations']['directories']['get'];
export type Event = Outputs['events']['list']['events'][number];
export type TemplateCatalogEntry = Outputs['templates']['catalog'][number];
export type Template = Outputs['templates']['get'];
export type Message = Outputs['messages']['list']['messages'][number];
export type RotatedSigningKeys = Outputs['signingKeys']['rotate'];
export type SamlConnection = Outputs['saml']['connections']['get'];
/** A custom domain with the DNS records to publish (`domains.add|list|verify|delete`). */
export type CustomDomain = Outputs['domains']['add'];
/** `object`, `relation`, `subject` (`user:<id>` or `namespace:id#relation`) and `created_at`. */
export type RelationshipTuple = Outputs['authz']['tuples']['list']['tuples'][number];
export type AuthzCheckResult = Outputs['authz']['check'];
export type AuthzExpandResult = Outputs['authz']['expand'];
export type AuthzLookupPage = Outputs['authz']['lookup'];
export type Plan = Outputs['billing']['plans']['get'];
export type Subscription = Outputs['billing']['subscriptions']['get'];
export type HostGroup = Outputs['access']['hostGroups']['list'][number];
export type Host = Outputs['access']['hosts']['list'][number];
export type AccessRule = Outputs['access']['rules']['list'][number];
export type AccessCheck = Outputs['access']['check'];
export type OAuthProviderSetting = Outputs['providers']['list'][number];
/** A third-party app registered to sign users in with the application (`oauth2.clients.*`). */
export type OAuth2Client = Outputs['oauth2']['clients']['get'];

export interface GatehouseOptions {
  /** Where the service runs, e.g. `http://localhost:4000`. */
  baseUrl: string;
  /** The application every call is scoped to (sent as `x-application-id`). */
  applicationId?: string;
  /** A secret API key (`sk_test_…`/`sk_live_…`): for your server only, never in a browser. */
  secretKey?: string;
  /** The operator token, for managing applications (`applications.create|list|delete`). */
  operatorToken?: string;
  fetch?: typeof fetch;
  /** Per attempt, in milliseconds (default 30 000); a slower call fails with `timeout`. */
  timeoutMs?: number;
  /**
   * Retries of reads (and creates, with their Idempotency-Key) after a network error, a timeout, 429 (honouring
   * `retry-after`) or a 5xx (default 2; 0 = none).
   */
  maxRetries?: number;
}

/**
 * The server-side client: every procedure of the API, typed from the router, over `/trpc`. Failures reject with a
 * `GatehouseError` carrying the same `code` and `status` as the REST API.
 */
export function createGatehouse(options: GatehouseOptions): GatehouseClient {
  const token = options.secretKey ?? options.operatorToken;
  const call = createTransport({
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    timeoutMs: options.timeoutMs,
    maxRetries: options.maxRetries,
    userAgent: true,
    headers: () => ({
      ...(options.applicationId ? { 'x-application-id': options.applicationId } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    }),
  });
  const exportOptions = { ...options, secretKey: token };
  // The export is a REST stream, not a tRPC call.
  const streamed: Record<string, (input: never) => unknown> = {
    'auditLogs.export': (input: AuditLogFilters | undefined) => exportAuditLogs(exportOptions, input),
    'auditLogs.download': (input: Parameters<typeof downloadAuditLogs>[1] | undefined) =>
      downloadAuditLogs(exportOptions, input ?? {}),
  };
  const proxy = (path: string[]): unknown =>
    new Proxy(() => undefined, {
      get: (_target, key) => (typeof key === 'string' && key !== 'then' ? proxy([...path, key]) : undefined),
      apply: (_target, _this, args: unknown[]) => {
        const name = path.join('.');
        const stream = streamed[name];
        return stream ? stream(args[0] as never) : call(name as ProcedurePath, args[0]);
      },
    });
  return proxy([]) as GatehouseClient;
}

import type { AppRouter } from '@gatehouse/api';
import type { AnyProcedure, inferProcedureInput, inferProcedureOutput, inferRouterOutputs } from '@trpc/server';
import { createTransport, type ProcedurePath } from './transport.ts';

export {
  type AcceptConsentInput,
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
export type GatehouseClient = Methods<AppRouter['_def']['record']>;

type Outputs = inferRouterOutputs<AppRouter>;
export type Application = Outputs['applications']['get'];
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
  /** Retries of reads after a network error, a timeout, 429 (honouring `retry-after`) or a 5xx (default 2; 0 = none). */
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
  const proxy = (path: string[]): unknown =>
    new Proxy(() => undefined, {
      get: (_target, key) => (typeof key === 'string' && key !== 'then' ? proxy([...path, key]) : undefined),
      apply: (_target, _this, args: unknown[]) => call(path.join('.') as ProcedurePath, args[0]),
    });
  return proxy([]) as GatehouseClient;
}

import type { Context } from '../../context.ts';
import { type EntityManager, preparedQuery } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { newId } from '../../lib/ids.ts';
import { checkOutboundUrl } from '../../lib/ssrf.ts';
import type { Application } from '../applications/application.entity.ts';
import { ownApplication } from '../applications/applications.service.ts';
import type { TenantContext } from '../applications/contexts.ts';
import {
  defaultScopes,
  INSECURE_OIDC_SETTING,
  issuerProblem,
  OAUTH_PROVIDERS,
  type OAuthProviderName,
  type ProviderClient,
  providerLabel,
  usesNonce,
} from './oauth.providers.ts';
import type { OAuthProviderSetting } from './oauth.schema.ts';
import { type OAuthProvider, OAuthProviderEntity } from './oauth-provider.entity.ts';

/** The client secret is bound to its application and provider: a sealed value copied elsewhere does not open. */
const secretContext = (applicationId: string, provider: string) => `oauth_provider:${applicationId}:${provider}`;

/** The redirect URI every provider client registers: the service's own, which sends the browser on to the app. */
export const providerRedirectUri = (baseUrl: string) => `${baseUrl}/v1/auth/oauth/redirect`;

const envName = (provider: string) => `GATEHOUSE_SHARED_OAUTH_${provider.toUpperCase()}_CLIENT_ID`;

function toRecord(provider: OAuthProviderName, row: OAuthProvider | undefined): OAuthProviderSetting {
  return {
    provider,
    client_id: row?.clientId ?? null,
    enabled: row?.enabled ?? false,
    has_secret: !!row?.clientSecretSealed,
    scopes: row?.scopes ?? defaultScopes(provider),
    use_shared_dev_credentials: row?.useSharedDevCredentials ?? false,
    issuer: row?.issuer ?? null,
    updated_at: row ? row.updatedAt.toISOString() : null,
  };
}

/** S3: every provider, configured or not (unconfigured ones are disabled, without a secret). */
export async function listOAuthProviders(ctx: TenantContext, id: string): Promise<OAuthProviderSetting[]> {
  const application = ownApplication(ctx, id);
  const rows = await ctx.em.find(OAuthProviderEntity, { application: application.id });
  const byName = new Map(rows.map((row) => [row.provider, row]));
  return OAUTH_PROVIDERS.map((provider) => toRecord(provider, byName.get(provider)));
}

/**
 * The providers a person may sign in with on the application's hosted pages (enabled ones, in the catalog's order):
 * a button each. Nothing secret is read.
 */
export async function enabledOAuthProviders(em: EntityManager, applicationId: string): Promise<OAuthProviderName[]> {
  const rows = await em.execute<Array<{ provider: string }>>(
    'select provider from oauth_providers where application_id = ? and enabled',
    [applicationId],
  );
  const enabled = new Set(rows.map((row) => row.provider));
  return OAUTH_PROVIDERS.filter((provider) => enabled.has(provider));
}

const invalid = (path: string, message: string) => new AppError('validation_failed', message, [{ path, message }]);

export async function putOAuthProvider(
  ctx: TenantContext,
  input: {
    id: string;
    provider: OAuthProviderName;
    client_id?: string;
    client_secret?: string;
    enabled: boolean;
    scopes?: string[];
    use_shared_dev_credentials?: boolean;
    issuer?: string;
  },
): Promise<OAuthProviderSetting> {
  const application = ownApplication(ctx, input.id);
  const { provider } = input;
  if (input.issuer !== undefined && provider !== 'oidc') throw invalid('issuer', 'issuer applies to the oidc provider only');
  if (input.issuer !== undefined) {
    const policy = { allowInsecure: ctx.services.oauth.allowInsecureIssuers, insecureSetting: INSECURE_OIDC_SETTING };
    checkOutboundUrl(input.issuer, policy, 'issuer');
    // Loaded now (no transaction is open), so a broken issuer is the developer's 422, not a person's failed sign-in.
    const problem = await issuerProblem(ctx.services.oauth, input.issuer);
    if (problem) {
      throw new AppError('invalid_url', `The issuer cannot be used: ${problem}`, [{ path: 'issuer', message: problem }]);
    }
  }
  let row = await ctx.em.findOne(OAuthProviderEntity, { application: application.id, provider });
  const shared = input.use_shared_dev_credentials ?? row?.useSharedDevCredentials ?? false;
  if (shared) {
    // The consent screen would show the operator's client to real users: production apps register their own.
    if (application.environment !== 'development') {
      throw invalid(
        'use_shared_dev_credentials',
        `Shared development credentials are for development applications only. Register your own ${providerLabel(provider)} OAuth client (redirect URI ${providerRedirectUri(ctx.services.baseUrl)}) and set client_id and client_secret.`,
      );
    }
    if (provider === 'oidc' || !ctx.services.oauth.sharedCredentials[provider]) {
      throw invalid(
        'use_shared_dev_credentials',
        provider === 'oidc'
          ? 'The oidc provider has no shared credentials: set issuer, client_id and client_secret.'
          : `This server has no shared ${providerLabel(provider)} credentials (the operator sets ${envName(provider)} and its _SECRET); set client_id and client_secret instead.`,
      );
    }
  }
  const clientId = input.client_id ?? row?.clientId ?? null;
  const hasSecret = input.client_secret !== undefined || !!row?.clientSecretSealed;
  const issuer = input.issuer ?? row?.issuer ?? null;
  if (input.enabled && !shared) {
    if (!clientId || !hasSecret) {
      throw invalid(
        clientId ? 'client_secret' : 'client_id',
        'Enabling a provider needs client_id and client_secret, or use_shared_dev_credentials: true (development applications)',
      );
    }
    if (provider === 'oidc' && !issuer) throw invalid('issuer', 'The oidc provider needs its issuer URL');
  }
  // An OpenID Connect sign-in without `openid` would get no ID token to verify.
  if (input.scopes && usesNonce(provider) && provider !== 'apple' && !input.scopes.includes('openid')) {
    throw invalid('scopes', `${providerLabel(provider)} signs in with OpenID Connect: scopes must include openid`);
  }
  const now = new Date();
  row ??= ctx.em.create(OAuthProviderEntity, {
    id: newId(),
    application: application.id,
    provider,
    clientId: null,
    clientSecretSealed: null,
    issuer: null,
    enabled: false,
    scopes: defaultScopes(provider),
    useSharedDevCredentials: false,
  });
  row.clientId = clientId;
  if (input.client_secret !== undefined) {
    row.clientSecretSealed = ctx.services.secretBox.encrypt(input.client_secret, secretContext(application.id, provider));
  }
  row.issuer = issuer;
  row.enabled = input.enabled;
  if (input.scopes) row.scopes = [...new Set(input.scopes)];
  row.useSharedDevCredentials = shared;
  row.updatedAt = now;
  await ctx.em.flush();
  return toRecord(provider, row);
}

/** DELETE: back to unconfigured (the secret is gone; linked identities stay and sign in again once re-enabled). */
export async function resetOAuthProvider(ctx: TenantContext, input: { id: string; provider: OAuthProviderName }) {
  const application = ownApplication(ctx, input.id);
  await ctx.em.nativeDelete(OAuthProviderEntity, { application: application.id, provider: input.provider });
  return { id: input.provider, deleted: true as const };
}

/** An application's setting of one provider as its row (`row_to_json`): what signing in reads of it. */
export interface ProviderSettingRow {
  enabled: boolean;
  client_id: string | null;
  client_secret_sealed: string | null;
  issuer: string | null;
  scopes: string[];
  use_shared_dev_credentials: boolean;
}

/** The setting row of (application, provider) as JSON, `?` the application id and the provider. */
export const PROVIDER_SETTING_SQL = 'select row_to_json(p) from oauth_providers p where p.application_id = ? and p.provider = ?';

/**
 * The client an application signs in with: its own credentials, or (development applications only) the operator's
 * shared ones. A provider that is not enabled is 404 for the browser, as if it did not exist. `row`: the setting when
 * the caller read it already (the callback reads it with the state it spends), else it is read here.
 */
export async function providerClient(
  ctx: Context,
  application: Application,
  provider: OAuthProviderName,
  row?: ProviderSettingRow | null,
): Promise<ProviderClient> {
  if (row === undefined) {
    const [found] = await preparedQuery<{ p: ProviderSettingRow }>(
      ctx.em,
      'oauth_provider_setting',
      `select (${PROVIDER_SETTING_SQL}) as p`,
      [application.id, provider],
    );
    row = found?.p ?? null;
  }
  if (!row?.enabled) throw notFound(`The ${providerLabel(provider)} provider of this application`);
  const redirectUri = providerRedirectUri(ctx.services.baseUrl);
  if (row.use_shared_dev_credentials) {
    const shared = ctx.services.oauth.sharedCredentials[provider];
    if (application.environment !== 'development' || !shared || provider === 'oidc') {
      throw notFound(`Shared ${providerLabel(provider)} credentials for this application`);
    }
    return { provider, ...shared, scopes: row.scopes, issuer: null, redirectUri };
  }
  if (!row.client_id || !row.client_secret_sealed) throw notFound(`The ${providerLabel(provider)} provider of this application`);
  return {
    provider,
    clientId: row.client_id,
    clientSecret: ctx.services.secretBox.decrypt(row.client_secret_sealed, secretContext(application.id, provider)),
    scopes: row.scopes,
    issuer: row.issuer ?? null,
    redirectUri,
  };
}

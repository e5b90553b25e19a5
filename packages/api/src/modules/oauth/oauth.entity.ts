import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';
import { IdentityEntity } from '../users/identity.entity.ts';
import { UserEntity } from '../users/user.entity.ts';

/**
 * One application's setting of one OAuth provider (S3). A provider without a row is unconfigured (`enabled: false`).
 * The client secret is sealed with the master key (SECURITY 9), bound to the application and provider.
 */
export const OAuthProviderEntity = defineEntity({
  name: 'OAuthProvider',
  tableName: 'oauth_providers',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    provider: p.string().length(32),
    clientId: p.string().length(512).nullable(),
    clientSecretSealed: p.text().nullable(),
    /** The generic `oidc` provider only: the issuer whose discovery document names the endpoints. */
    issuer: p.string().length(2048).nullable(),
    enabled: p.boolean(),
    scopes: p.json<string[]>(),
    useSharedDevCredentials: p.boolean(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ name: 'oauth_providers_application_provider_unique', properties: ['application', 'provider'] }],
});
export type OAuthProvider = InferEntity<typeof OAuthProviderEntity>;

/**
 * A started authorization (RFC 9700): the `state` (SHA-256), the PKCE verifier and OIDC nonce (sealed), where the
 * browser goes back to, and what it is for (a sign-in, or linking to `user`). In the database so that any process can
 * finish it; consumed once by a conditional update; 10 minutes.
 */
export const OAuthStateEntity = defineEntity({
  name: 'OAuthState',
  tableName: 'oauth_states',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    provider: p.string().length(32),
    stateHash: p.string().length(64).unique(),
    /** `sign_in`, or `link` (then `user` is who links). */
    purpose: p.string().length(16),
    user: () => p.manyToOne(UserEntity).mapToPk().deleteRule('cascade').nullable(),
    /** `{verifier, nonce}` sealed: with a stolen code they would finish someone else's sign-in. */
    secretsSealed: p.text(),
    redirectUri: p.string().length(2048),
    /** Sign-in: the host named at the start (host access rules), carried to the session. */
    hostId: p.uuid().nullable(),
    expiresAt: p.datetime(),
    consumedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [{ properties: ['expiresAt'] }],
});

/** The provider's tokens of an OAuth identity, kept only when `settings.oauth.store_provider_tokens` (sealed). */
export const OAuthProviderTokenEntity = defineEntity({
  name: 'OAuthProviderToken',
  tableName: 'oauth_provider_tokens',
  properties: {
    id: p.uuid().primary(),
    identity: () => p.manyToOne(IdentityEntity).mapToPk().deleteRule('cascade').unique(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    tokensSealed: p.text(),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { EditableTenantRowEntity } from '../applications/tenant-row.entity.ts';

/**
 * One application's setting of one OAuth provider (S3). A provider without a row is unconfigured (`enabled: false`).
 * The client secret is sealed with the master key (SECURITY 9), bound to the application and provider.
 */
export const OAuthProviderEntity = defineEntity({
  name: 'OAuthProvider',
  tableName: 'oauth_providers',
  extends: EditableTenantRowEntity,
  properties: {
    provider: p.string().length(32),
    clientId: p.string().length(512).nullable(),
    clientSecretSealed: p.text().nullable(),
    /** The generic `oidc` provider only: the issuer whose discovery document names the endpoints. */
    issuer: p.string().length(2048).nullable(),
    enabled: p.boolean(),
    scopes: p.json<string[]>(),
    useSharedDevCredentials: p.boolean(),
  },
  uniques: [{ name: 'oauth_providers_application_provider_unique', properties: ['application', 'provider'] }],
});
export type OAuthProvider = InferEntity<typeof OAuthProviderEntity>;

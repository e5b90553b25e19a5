import { defineEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';
import { IdentityEntity } from '../users/identity.entity.ts';

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

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';
import { OAuth2GrantEntity } from './oauth2-grant.entity.ts';

/**
 * Everything else the provider stores (`kind`: AuthorizationCode, AccessToken, RefreshToken, ClientCredentials,
 * Session, Interaction, RegistrationAccessToken, ReplayDetection, …): the columns the service queries by, and the
 * provider's record in `payload`. Expiry and consumption are judged by the database clock; consumption is one
 * conditional update (SECURITY 3).
 */
export const OAuth2ArtifactEntity = defineEntity({
  name: 'OAuth2Artifact',
  tableName: 'oauth2_artifacts',
  properties: {
    id: p.string().length(128).primary(),
    kind: p.string().length(40),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    grant: () => p.manyToOne(OAuth2GrantEntity).mapToPk().nullable().deleteRule('cascade'),
    uid: p.string().length(128).nullable(),
    accountId: p.string().length(64).nullable(),
    clientId: p.string().length(64).nullable(),
    payload: p.json<Record<string, unknown>>(),
    expiresAt: p.datetime(),
    consumedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [
    { properties: ['grant'] },
    // Only sessions and interactions have a `uid` (`findByUid`): codes and tokens add no entries.
    {
      name: 'oauth2_artifacts_uid_index',
      expression: `create index "oauth2_artifacts_uid_index" on "oauth2_artifacts" ("uid") where "uid" is not null`,
    },
    { properties: ['expiresAt'] },
  ],
});
export type OAuth2Artifact = InferEntity<typeof OAuth2ArtifactEntity>;

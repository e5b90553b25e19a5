import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';
import { UserEntity } from '../users/user.entity.ts';

/**
 * A third-party app (or CLI, or AI agent) that signs users in with an application. Its `client_id` is the row id. A
 * confidential client's secret is stored as SHA-256 only (it is shown once): the provider compares hashes.
 */
export const OAuth2ClientEntity = defineEntity({
  name: 'OAuth2Client',
  tableName: 'oauth2_clients',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    name: p.string().length(200),
    /** `public` (PKCE only, no secret: SPAs, native apps, CLIs, agents) or `confidential` (a server with a secret). */
    type: p.string().length(16),
    redirectUris: p.json<string[]>(),
    scopes: p.json<string[]>(),
    logoUrl: p.string().length(2048).nullable(),
    secretHash: p.string().length(64).nullable(),
    /** Registered by the client itself (RFC 7591) rather than by the developer. */
    dynamic: p.boolean().default(false),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [{ properties: ['application', 'createdAt', 'id'] }],
});
export type OAuth2Client = InferEntity<typeof OAuth2ClientEntity>;

/**
 * What a user authorized a client to do (S6). The id is the provider's grant id; `payload` is the provider's own
 * Grant record (scopes per resource, claims). Deleting the row revokes every token issued under it (the artifacts
 * reference it with `on delete cascade`).
 */
export const OAuth2GrantEntity = defineEntity({
  name: 'OAuth2Grant',
  tableName: 'oauth2_grants',
  properties: {
    id: p.string().length(64).primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    user: () => p.manyToOne(UserEntity).mapToPk().deleteRule('cascade'),
    client: () => p.manyToOne(OAuth2ClientEntity).mapToPk().deleteRule('cascade'),
    scopes: p.json<string[]>(),
    payload: p.json<Record<string, unknown>>(),
    expiresAt: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [{ properties: ['user', 'client'] }, { properties: ['application', 'createdAt', 'id'] }],
});
export type OAuth2Grant = InferEntity<typeof OAuth2GrantEntity>;

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

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { EditableTenantRowEntity } from '../applications/tenant-row.entity.ts';

/**
 * A third-party app (or CLI, or AI agent) that signs users in with an application. Its `client_id` is the row id. A
 * confidential client's secret is stored as SHA-256 only (it is shown once): the provider compares hashes.
 */
export const OAuth2ClientEntity = defineEntity({
  name: 'OAuth2Client',
  tableName: 'oauth2_clients',
  extends: EditableTenantRowEntity,
  properties: {
    name: p.string().length(200),
    /** `public` (PKCE only, no secret: SPAs, native apps, CLIs, agents) or `confidential` (a server with a secret). */
    type: p.string().length(16),
    redirectUris: p.json<string[]>(),
    scopes: p.json<string[]>(),
    /** Where RP-initiated logout may send the browser back to (exact match); null reads as none. */
    postLogoutRedirectUris: p.json<string[]>().nullable(),
    logoUrl: p.string().length(2048).nullable(),
    secretHash: p.string().length(64).nullable(),
    /** Registered by the client itself (RFC 7591) rather than by the developer. */
    dynamic: p.boolean().default(false),
  },
  indexes: [{ properties: ['application', 'createdAt', 'id'] }],
});
export type OAuth2Client = InferEntity<typeof OAuth2ClientEntity>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';
import { OrganizationEntity } from '../organizations/organization.entity.ts';
import { UserEntity } from '../users/user.entity.ts';
import { OAuth2ClientEntity } from './oauth2-client.entity.ts';

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
    /** The organization active when the user signed in for this grant (the `organization` scope's claims). */
    organization: () => p.manyToOne(OrganizationEntity).mapToPk().nullable().deleteRule('set null'),
    scopes: p.json<string[]>(),
    payload: p.json<Record<string, unknown>>(),
    expiresAt: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [{ properties: ['user', 'client'] }, { properties: ['application', 'createdAt', 'id'] }],
});
export type OAuth2Grant = InferEntity<typeof OAuth2GrantEntity>;

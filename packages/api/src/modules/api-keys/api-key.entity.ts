import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';

export const ApiKeyEntity = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    name: p.string().length(200),
    scopes: p.json<string[]>(),
    prefix: p.string().length(16),
    /** SHA-256 of the secret; the secret itself is never stored. */
    secretHash: p.string().length(64).unique(),
    createdAt: p.datetime().onCreate(() => new Date()),
    lastUsedAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['application', 'createdAt'] }],
});
export type ApiKey = InferEntity<typeof ApiKeyEntity>;

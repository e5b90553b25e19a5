import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';

export const ApiKeyEntity = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  extends: TenantRowEntity,
  properties: {
    name: p.string().length(200),
    scopes: p.json<string[]>(),
    prefix: p.string().length(16),
    /** SHA-256 of the secret; the secret itself is never stored. */
    secretHash: p.string().length(64).unique(),
    lastUsedAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['application', 'createdAt'] }],
});
export type ApiKey = InferEntity<typeof ApiKeyEntity>;

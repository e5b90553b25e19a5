import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { EditableTenantRowEntity } from '../applications/tenant-row.entity.ts';

export const UserEntity = defineEntity({
  name: 'User',
  tableName: 'users',
  extends: EditableTenantRowEntity,
  properties: {
    /** As the caller wrote it (trimmed). */
    primaryEmail: p.string().length(320).nullable(),
    /** Trimmed and lower-cased: the tenant-scoped unique key. */
    emailNormalized: p.string().length(320).nullable(),
    emailVerified: p.boolean().default(false),
    status: p.string().length(16).default('active'),
    profile: p.json<Record<string, unknown>>(),
    mergedInto: p.uuid().nullable(),
  },
  uniques: [{ name: 'users_application_email_unique', properties: ['application', 'emailNormalized'] }],
  indexes: [
    { properties: ['application', 'createdAt', 'id'] },
    {
      name: 'users_email_trgm',
      expression: 'create index "users_email_trgm" on "users" using gin ("email_normalized" gin_trgm_ops)',
    },
  ],
});
export type User = InferEntity<typeof UserEntity>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { EditableTenantRowEntity } from '../applications/tenant-row.entity.ts';
import { UserEntity } from '../users/user.entity.ts';
import { DirectoryEntity } from './directory.entity.ts';

/**
 * A user as one directory provisioned it: the Gatehouse user it is linked to (whose id is its SCIM `id`), the SCIM
 * attributes the identity provider sent (`resource`, answered back as they came), and the columns filters and
 * uniqueness use.
 */
export const DirectoryUserEntity = defineEntity({
  name: 'DirectoryUser',
  tableName: 'directory_users',
  extends: EditableTenantRowEntity,
  properties: {
    directory: () => p.manyToOne(DirectoryEntity).mapToPk().deleteRule('cascade'),
    user: () => p.manyToOne(UserEntity).mapToPk().deleteRule('cascade'),
    userName: p.string().length(320),
    /** Lower-cased `userName` (SCIM's `userName` is case-insensitive): unique per directory. */
    userNameNormalized: p.string().length(320),
    externalId: p.string().length(320).nullable(),
    active: p.boolean(),
    /** The SCIM resource as stored (without `id` and `meta`). */
    resource: p.json<Record<string, unknown>>(),
  },
  uniques: [
    { name: 'directory_users_directory_user_name_unique', properties: ['directory', 'userNameNormalized'] },
    { name: 'directory_users_directory_user_unique', properties: ['directory', 'user'] },
  ],
  indexes: [
    { properties: ['directory', 'createdAt', 'id'] },
    { properties: ['directory', 'externalId'] },
    { properties: ['user'] },
  ],
});
export type DirectoryUser = InferEntity<typeof DirectoryUserEntity>;

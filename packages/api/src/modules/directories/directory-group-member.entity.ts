import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';
import { DirectoryEntity } from './directory.entity.ts';
import { DirectoryGroupEntity } from './directory-group.entity.ts';
import { DirectoryUserEntity } from './directory-user.entity.ts';

/** One member of a directory group: a user of the same directory (removed with the group or the directory user). */
export const DirectoryGroupMemberEntity = defineEntity({
  name: 'DirectoryGroupMember',
  tableName: 'directory_group_members',
  extends: TenantRowEntity,
  properties: {
    directory: () => p.manyToOne(DirectoryEntity).mapToPk().deleteRule('cascade'),
    group: () => p.manyToOne(DirectoryGroupEntity).mapToPk().deleteRule('cascade'),
    directoryUser: () => p.manyToOne(DirectoryUserEntity).mapToPk().deleteRule('cascade'),
  },
  uniques: [{ name: 'directory_group_members_group_user_unique', properties: ['group', 'directoryUser'] }],
  indexes: [{ properties: ['directoryUser'] }],
});
export type DirectoryGroupMember = InferEntity<typeof DirectoryGroupMemberEntity>;

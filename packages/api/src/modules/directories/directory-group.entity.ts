import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { EditableTenantRowEntity } from '../applications/tenant-row.entity.ts';
import { DirectoryEntity } from './directory.entity.ts';

/** A group one directory pushed; its `displayName` is what `group_role_mappings` name. */
export const DirectoryGroupEntity = defineEntity({
  name: 'DirectoryGroup',
  tableName: 'directory_groups',
  extends: EditableTenantRowEntity,
  properties: {
    directory: () => p.manyToOne(DirectoryEntity).mapToPk().deleteRule('cascade'),
    displayName: p.string().length(320),
    externalId: p.string().length(320).nullable(),
  },
  indexes: [{ properties: ['directory', 'createdAt', 'id'] }, { properties: ['directory', 'displayName'] }],
});
export type DirectoryGroup = InferEntity<typeof DirectoryGroupEntity>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';

/** A named set of hosts that rules can target together. */
export const HostGroupEntity = defineEntity({
  name: 'HostGroup',
  tableName: 'host_groups',
  extends: TenantRowEntity,
  properties: {
    name: p.string().length(200),
  },
  uniques: [{ name: 'host_groups_application_name_unique', properties: ['application', 'name'] }],
  indexes: [{ properties: ['application', 'createdAt', 'id'] }],
});
export type HostGroup = InferEntity<typeof HostGroupEntity>;

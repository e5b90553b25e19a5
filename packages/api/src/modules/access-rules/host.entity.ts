import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';
import { HostGroupEntity } from './host-group.entity.ts';

/** One of the developer's machines or services that people sign in to; the service assigns its id. */
export const HostEntity = defineEntity({
  name: 'Host',
  tableName: 'hosts',
  extends: TenantRowEntity,
  properties: {
    name: p.string().length(200),
    hostGroup: () => p.manyToOne(HostGroupEntity).mapToPk().nullable().deleteRule('set null'),
  },
  uniques: [{ name: 'hosts_application_name_unique', properties: ['application', 'name'] }],
  indexes: [{ properties: ['application', 'createdAt', 'id'] }, { properties: ['hostGroup'] }],
});
export type Host = InferEntity<typeof HostEntity>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { EditableTenantRowEntity } from '../applications/tenant-row.entity.ts';
import { UserEntity } from '../users/user.entity.ts';
import { OrganizationEntity } from './organization.entity.ts';

export const MembershipEntity = defineEntity({
  name: 'Membership',
  tableName: 'organization_members',
  extends: EditableTenantRowEntity,
  properties: {
    organization: () => p.manyToOne(OrganizationEntity).mapToPk().deleteRule('cascade'),
    user: () => p.manyToOne(UserEntity).mapToPk().deleteRule('cascade'),
    role: p.string().length(64),
  },
  uniques: [{ name: 'organization_members_org_user_unique', properties: ['organization', 'user'] }],
  indexes: [{ properties: ['organization', 'createdAt', 'id'] }, { properties: ['user'] }],
});
export type Membership = InferEntity<typeof MembershipEntity>;

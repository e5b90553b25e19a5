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
    /** `active`, or `suspended` by the directory that provisioned it (CONTRACT §3). */
    status: p.string().length(16).default('active'),
    /** How the membership came to be: `manual`, `invitation`, `domain` or `directory`. */
    source: p.string().length(16).default('manual'),
  },
  uniques: [{ name: 'organization_members_org_user_unique', properties: ['organization', 'user'] }],
  indexes: [{ properties: ['organization', 'createdAt', 'id'] }, { properties: ['user'] }],
});
export type Membership = InferEntity<typeof MembershipEntity>;

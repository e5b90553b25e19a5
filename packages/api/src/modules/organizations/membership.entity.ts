import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';
import { UserEntity } from '../users/user.entity.ts';
import { OrganizationEntity } from './organization.entity.ts';

export const MembershipEntity = defineEntity({
  name: 'Membership',
  tableName: 'organization_members',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    organization: () => p.manyToOne(OrganizationEntity).mapToPk().deleteRule('cascade'),
    user: () => p.manyToOne(UserEntity).mapToPk().deleteRule('cascade'),
    role: p.string().length(64),
    createdAt: p.datetime().onCreate(() => new Date()),
    /** Set by the service that changes the row, so the answer and the event carry the stored value. */
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ name: 'organization_members_org_user_unique', properties: ['organization', 'user'] }],
  indexes: [{ properties: ['organization', 'createdAt', 'id'] }, { properties: ['user'] }],
});
export type Membership = InferEntity<typeof MembershipEntity>;

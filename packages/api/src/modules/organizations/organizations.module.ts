import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { mergeSteps } from '../users/users.merge.ts';
import { MembershipEntity } from './membership.entity.ts';
import { OrganizationEntity } from './organization.entity.ts';
import { organizationProcedures, userOrganizationsProcedure } from './organizations.router.ts';
import {
  DeletedMembershipEventSchema,
  DeletedOrganizationEventSchema,
  MembershipEventSchema,
  OrganizationSchema,
} from './organizations.schema.ts';
import { mergeMemberships } from './organizations.service.ts';

/** The events this module emits, with their payload schemas. */
const events = {
  'organization.created': OrganizationSchema,
  'organization.updated': OrganizationSchema,
  'organization.deleted': DeletedOrganizationEventSchema,
  'organization_membership.created': MembershipEventSchema,
  'organization_membership.updated': MembershipEventSchema,
  'organization_membership.deleted': DeletedMembershipEventSchema,
} satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/** Organizations and their members; owns the member-add checks and the subscription summary billing fills. */
export const organizationsModule = defineModule({
  name: 'organizations',
  entities: [OrganizationEntity, MembershipEntity],
  procedures: { organizations: organizationProcedures, users: { organizations: userOrganizationsProcedure } },
  tag: {
    name: 'Organizations',
    description: 'Organizations and their members with roles.',
  },
  hooks: [mergeSteps.entry('organization_memberships', mergeMemberships)],
  events,
});

import { defineModule } from '../../lib/modules.ts';
import { mergeSteps } from '../users/users.merge.ts';
import { MembershipEntity } from './membership.entity.ts';
import { OrganizationEntity } from './organization.entity.ts';
import { organizationsRouter } from './organizations.router.ts';
import { mergeMemberships } from './organizations.service.ts';

/** Organizations and their members; owns the member-add checks and the subscription summary billing fills. */
export const organizationsModule = defineModule({
  name: 'organizations',
  entities: [OrganizationEntity, MembershipEntity],
  procedures: { organizations: organizationsRouter },
  tag: {
    name: 'Organizations',
    description: 'Organizations and their members with roles.',
  },
  hooks: [mergeSteps.entry('organization_memberships', mergeMemberships)],
});

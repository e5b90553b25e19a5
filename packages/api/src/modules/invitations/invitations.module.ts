import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { signUpAllowances } from '../users/users.hooks.ts';
import { InvitationEntity } from './invitation.entity.ts';
import { endUserInvitationsRouter, invitationsRouter } from './invitations.router.ts';
import { InvitationSchema } from './invitations.schema.ts';
import { hasPendingInvitationFor } from './invitations.service.ts';

/** The events this module emits, with their payload schemas (the invitation record, never its token). */
const events = {
  'organization_invitation.created': InvitationSchema,
  'organization_invitation.accepted': InvitationSchema,
  'organization_invitation.revoked': InvitationSchema,
} satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/** Invitations to organizations: mailed links, accepted by the invited address once signed in. */
export const invitationsModule = defineModule({
  name: 'invitations',
  entities: [InvitationEntity],
  procedures: { organizations: { invitations: invitationsRouter }, auth: { invitations: endUserInvitationsRouter } },
  hooks: [signUpAllowances.entry('pending_invitation', hasPendingInvitationFor)],
  events,
});

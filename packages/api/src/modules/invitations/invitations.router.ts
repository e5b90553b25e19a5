import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import { endUserProcedure } from '../applications/callers.ts';
import { signedInProcedure } from '../sessions/signed-in.ts';
import {
  AcceptedInvitationSchema,
  CreateInvitationInputSchema,
  InvitationPageSchema,
  InvitationParamsSchema,
  InvitationPreviewSchema,
  InvitationSchema,
  InvitationTokenInputSchema,
  ListInvitationsInputSchema,
} from './invitations.schema.ts';
import {
  acceptInvitation,
  createInvitation,
  listInvitations,
  lookupInvitation,
  resendInvitation,
  revokeInvitation,
} from './invitations.service.ts';

const tags = ['Organizations'];

/** `organizations.invitations.*`: the application's server invites, lists, revokes and resends (SK). */
export const invitationsRouter = router({
  create: secretKeyProcedure('organizations:write')
    .meta({
      idempotent: true,
      successStatus: 201,
      openapi: { method: 'POST', path: '/v1/organizations/{id}/invitations', tags, summary: 'Invite an email address' },
    })
    .input(CreateInvitationInputSchema)
    .output(InvitationSchema)
    .mutation(({ ctx, input }) => createInvitation(ctx, input)),
  list: secretKeyProcedure('organizations:read')
    .meta({
      openapi: { method: 'GET', path: '/v1/organizations/{id}/invitations', tags, summary: 'List invitations, newest first' },
    })
    .input(ListInvitationsInputSchema)
    .output(InvitationPageSchema)
    .query(({ ctx, input }) => listInvitations(ctx, input)),
  revoke: secretKeyProcedure('organizations:write')
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/organizations/{id}/invitations/{invitation_id}/revoke',
        tags,
        summary: 'Revoke an invitation (its link stops at once)',
      },
    })
    .input(InvitationParamsSchema)
    .output(InvitationSchema)
    .mutation(({ ctx, input }) => revokeInvitation(ctx, input)),
  resend: secretKeyProcedure('organizations:write')
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/organizations/{id}/invitations/{invitation_id}/resend',
        tags,
        summary: 'Mail a new link (the old one stops working)',
      },
    })
    .input(InvitationParamsSchema)
    .output(InvitationSchema)
    .mutation(({ ctx, input }) => resendInvitation(ctx, input)),
});

// The end-user surface's tag (owned by the sign-in module).
const endUserTags = ['End-user sign-in'];

/** `auth.invitations.*`: the invited person's browser. */
export const endUserInvitationsRouter = router({
  accept: signedInProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/auth/invitations/accept',
        tags: endUserTags,
        summary: 'Accept an invitation as the signed-in user',
      },
    })
    .input(InvitationTokenInputSchema)
    .output(AcceptedInvitationSchema)
    .mutation(({ ctx, input }) => acceptInvitation(ctx, input)),
  lookup: endUserProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/auth/invitations/lookup',
        tags: endUserTags,
        summary: 'What a pending invitation is for (consumes nothing)',
      },
    })
    .input(InvitationTokenInputSchema)
    .output(InvitationPreviewSchema)
    .mutation(({ ctx, input }) => lookupInvitation(ctx, input)),
});

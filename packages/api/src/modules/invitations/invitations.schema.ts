import { z } from 'zod';
import { listQuerySchema, pageOf } from '../../lib/pagination.ts';
import { RedirectUrlSchema, text } from '../../lib/schemas.ts';
import { MemberSchema, RoleSchema } from '../organizations/organizations.schema.ts';
import { EmailSchema } from '../users/users.schema.ts';

/** CONTRACT §3: derived from the invitation's timestamps, by the database clock. */
export const INVITATION_STATUSES = ['pending', 'accepted', 'revoked', 'expired'] as const;
export type InvitationStatus = (typeof INVITATION_STATUSES)[number];

export const DEFAULT_INVITATION_TTL_S = 7 * 24 * 3600;
export const MIN_INVITATION_TTL_S = 300;
export const MAX_INVITATION_TTL_S = 30 * 24 * 3600;

/** The invitation as every answer and event shows it (never its token, which travels only in the mail). */
export const InvitationSchema = z
  .object({
    id: z.uuid(),
    organization_id: z.uuid(),
    email: text().meta({ description: 'Lower-case' }),
    role: text(),
    status: z.enum(INVITATION_STATUSES),
    expires_at: z.iso.datetime(),
    accepted_at: z.iso.datetime().nullable(),
    revoked_at: z.iso.datetime().nullable(),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'OrganizationInvitation' });
export type InvitationRecord = z.infer<typeof InvitationSchema>;

export const CreateInvitationInputSchema = z.strictObject({
  id: z.uuid().meta({ description: 'Organization id' }),
  email: EmailSchema,
  role: RoleSchema.default('member'),
  redirect_url: RedirectUrlSchema.optional().meta({
    description: 'Where the hosted invitation page sends the person once they accepted; its origin must be an allowed origin',
  }),
  expires_in_s: z
    .number()
    .int()
    .min(MIN_INVITATION_TTL_S)
    .max(MAX_INVITATION_TTL_S)
    .default(DEFAULT_INVITATION_TTL_S)
    .meta({ description: 'Lifetime of the link in seconds: 300 to 2592000 (30 days), default 604800 (7 days)' }),
});

export const ListInvitationsInputSchema = listQuerySchema({
  id: z.uuid().meta({ description: 'Organization id' }),
  status: z.enum(INVITATION_STATUSES).optional(),
});
export const InvitationPageSchema = pageOf('invitations', InvitationSchema).meta({ id: 'OrganizationInvitationPage' });

export const InvitationParamsSchema = z.strictObject({ id: z.uuid(), invitation_id: z.uuid() });

export const InvitationTokenInputSchema = z.strictObject({ token: text().min(1).max(200) });

export const AcceptedInvitationSchema = z
  .object({
    organization_id: z.uuid(),
    role: text(),
    membership: MemberSchema,
    redirect_url: text()
      .nullable()
      .meta({ description: "The invitation's redirect_url (where the hosted page goes next), null when it has none" }),
  })
  .meta({ id: 'AcceptedInvitation' });

/** What the invitation page shows before anything is accepted (the token's holder is the invitee). */
export const InvitationPreviewSchema = z
  .object({
    organization_id: z.uuid(),
    organization_name: text(),
    email: text(),
    role: text(),
    expires_at: z.iso.datetime(),
  })
  .meta({ id: 'InvitationPreview' });

import { z } from 'zod';
import { listQuerySchema, PageQuerySchema, pageOf } from '../../lib/pagination.ts';
import { text } from '../../lib/schemas.ts';
import { USER_STATUSES } from '../users/users.schema.ts';

export const SlugSchema = text()
  .min(1)
  .max(100)
  .regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/, 'lower-case letters, digits and single hyphens');

/** `owner`, `admin`, `member`, or an application-defined role key. */
export const RoleSchema = text().regex(/^[a-z][a-z0-9_:-]{0,63}$/, 'a role key: [a-z][a-z0-9_:-]{0,63}');

/** The organization's live subscription (filled by billing; null without one). */
export const SubscriptionSummarySchema = z
  .object({
    id: z.uuid(),
    plan_id: z.uuid(),
    plan_key: text(),
    status: z.enum(['trialing', 'active', 'past_due', 'canceled']),
    seats: z.number().int(),
    current_period_end: z.iso.datetime(),
    canceled_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'OrganizationSubscriptionSummary' });
export type SubscriptionSummary = z.infer<typeof SubscriptionSummarySchema>;

/** One shape wherever an organization is answered: create, get, update, their events, and the items of S10. */
export const OrganizationSchema = z
  .object({
    id: z.uuid(),
    name: text(),
    slug: text(),
    member_count: z.number().int(),
    subscription: SubscriptionSummarySchema.nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Organization' });
export type OrganizationRecord = z.infer<typeof OrganizationSchema>;

/** An organization a user belongs to, as `GET /v1/users/{id}/organizations` lists them. */
export const UserOrganizationSchema = z.object({ id: z.uuid(), name: text(), role: RoleSchema }).meta({ id: 'UserOrganization' });

export const CreateOrganizationInputSchema = z.strictObject({
  name: text().trim().min(1).max(200),
  slug: SlugSchema.optional().meta({ description: 'Generated from the name when absent' }),
});

export const UpdateOrganizationInputSchema = z.strictObject({
  id: z.uuid(),
  name: text().trim().min(1).max(200).optional(),
  slug: SlugSchema.optional(),
});

export const ListOrganizationsInputSchema = listQuerySchema({
  search: text().max(200).optional().meta({ description: 'Case-insensitive literal match on name or slug' }),
});

export const OrganizationPageSchema = pageOf('organizations', OrganizationSchema).meta({ id: 'OrganizationPage' });

/** A membership's state (CONTRACT §3): a directory suspends the memberships it provisioned. */
export const MEMBER_STATUSES = ['active', 'suspended'] as const;
export type MemberStatus = (typeof MEMBER_STATUSES)[number];
/** How a membership came to be (CONTRACT §3). */
export const MEMBER_SOURCES = ['manual', 'invitation', 'domain', 'directory'] as const;
export type MemberSource = (typeof MEMBER_SOURCES)[number];

export const MemberSchema = z
  .object({
    user_id: z.uuid(),
    email: text().nullable(),
    role: text(),
    user_status: z.enum(USER_STATUSES),
    status: z.enum(MEMBER_STATUSES).meta({ description: '`suspended` while the directory that provisioned it has it inactive' }),
    source: z.enum(MEMBER_SOURCES),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'OrganizationMember' });
export type MemberRecord = z.infer<typeof MemberSchema>;

export const AddMemberInputSchema = z.strictObject({
  id: z.uuid().meta({ description: 'Organization id' }),
  user_id: z.uuid(),
  role: RoleSchema.default('member'),
});

export const ListMembersInputSchema = PageQuerySchema.extend({ id: z.uuid() }).strict();
export const MemberPageSchema = pageOf('members', MemberSchema).meta({ id: 'OrganizationMemberPage' });

export const MemberParamsSchema = z.strictObject({ id: z.uuid(), user_id: z.uuid() });
export const UpdateMemberInputSchema = MemberParamsSchema.extend({ role: RoleSchema }).strict();

/** The `data` of `organization.deleted`. */
export const DeletedOrganizationEventSchema = z.object({ id: z.uuid() });
/** The `data` of `organization_membership.created` and `.updated`: the member, with its organization. */
export const MembershipEventSchema = MemberSchema.extend({ organization_id: z.uuid() });
/** The `data` of `organization_membership.deleted`. */
export const DeletedMembershipEventSchema = z.object({ organization_id: z.uuid(), user_id: z.uuid() });

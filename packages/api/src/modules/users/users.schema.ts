import { z } from 'zod';
import { listQuerySchema, pageOf } from '../../lib/pagination.ts';
import { FreeFormJsonSchema, text } from '../../lib/schemas.ts';

export const USER_STATUSES = ['active', 'banned', 'merged'] as const;

const ProfileSchema = FreeFormJsonSchema.meta({
  description: 'Free-form JSON object (at most 8 KiB serialized, 10 levels deep)',
});

export const EmailSchema = text().trim().max(320).pipe(z.email());

export const UserSchema = z
  .object({
    id: z.uuid(),
    primary_email: text().nullable(),
    email_verified: z.boolean(),
    status: z.enum(USER_STATUSES),
    profile: z.record(text(), z.unknown()),
    merged_into: z.uuid().nullable().meta({ description: 'The target user, when status is merged' }),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'User' });
export type UserRecord = z.infer<typeof UserSchema>;

/**
 * S21: the signed-in user (a User), plus what the current session asks of them: `mfa_enrollment_required` when the
 * application requires a second factor and the user has none yet — send them to enrol.
 */
export const CurrentUserSchema = UserSchema.extend({
  mfa_enrollment_required: z.boolean().meta({ description: 'The session was opened without a required second factor' }),
}).meta({ id: 'CurrentUser' });

export const CreateUserInputSchema = z.strictObject({
  primary_email: EmailSchema.optional(),
  email_verified: z.boolean().default(false),
  profile: ProfileSchema.default({}),
});

export const UpdateUserInputSchema = z.strictObject({
  id: z.uuid(),
  profile: ProfileSchema.optional(),
  status: z.enum(['active', 'banned']).optional(),
  email_verified: z.boolean().optional(),
});

export const ListUsersInputSchema = listQuerySchema({
  search: text().max(320).optional().meta({ description: 'Case-insensitive literal match within the email' }),
});

export const UserPageSchema = pageOf('users', UserSchema).meta({ id: 'UserPage' });

export const UpdateMeInputSchema = z.strictObject({ profile: ProfileSchema });

export const MergeUsersInputSchema = z.strictObject({ source_user_id: z.uuid(), target_user_id: z.uuid() });

/** The `data` of `user.deleted`. */
export const DeletedUserEventSchema = z.object({ id: z.uuid() });
/** The `data` of `user.merged`: the source user now resolves to the target. */
export const MergedUsersEventSchema = z.object({ source_user_id: z.uuid(), target_user_id: z.uuid() });

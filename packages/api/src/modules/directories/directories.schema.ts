import { z } from 'zod';
import { text } from '../../lib/schemas.ts';
import { RoleSchema } from '../organizations/organizations.schema.ts';

/** Which identity provider pushes to the directory (CONTRACT §3): it names the setup guide, nothing else differs. */
export const DIRECTORY_PROVIDERS = ['okta', 'entra', 'google', 'generic'] as const;
/** A disabled directory answers 403 to every SCIM request and changes nothing. */
export const DIRECTORY_STATUSES = ['active', 'disabled'] as const;

export const GroupRoleMappingSchema = z
  .strictObject({
    group: text().trim().min(1).max(320).meta({ description: "The directory group's `displayName` (compared exactly)" }),
    role: RoleSchema,
  })
  .meta({ id: 'DirectoryGroupRoleMapping' });

/** The role mappings in priority order: a user in several mapped groups gets the role of the first that matches. */
const GroupRoleMappingsSchema = z.array(GroupRoleMappingSchema).max(100);

/** One shape wherever a directory is answered (CONTRACT §8). */
export const DirectorySchema = z
  .object({
    id: z.uuid(),
    organization_id: z.uuid(),
    name: text(),
    provider: z.enum(DIRECTORY_PROVIDERS),
    status: z.enum(DIRECTORY_STATUSES),
    scim_base_url: text().meta({ description: '`{GATEHOUSE_BASE_URL}/scim/v2/{id}`: what the identity provider is given' }),
    group_role_mappings: z.array(GroupRoleMappingSchema),
    user_count: z.number().int(),
    group_count: z.number().int(),
    last_request_at: z.iso.datetime().nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Directory' });
export type DirectoryRecord = z.infer<typeof DirectorySchema>;

const TokenSchema = text().meta({ description: 'The SCIM bearer token (`scim_…`): shown now only, stored hashed' });

export const CreatedDirectorySchema = DirectorySchema.extend({ token: TokenSchema }).meta({ id: 'CreatedDirectory' });
export const RotatedTokenSchema = z.object({ token: TokenSchema }).meta({ id: 'DirectoryToken' });

export const CreateDirectoryInputSchema = z.strictObject({
  id: z.uuid().meta({ description: 'Organization id' }),
  name: text().trim().min(1).max(200),
  provider: z.enum(DIRECTORY_PROVIDERS),
  group_role_mappings: GroupRoleMappingsSchema.optional(),
});

export const OrganizationParamSchema = z.strictObject({ id: z.uuid().meta({ description: 'Organization id' }) });
export const DirectoryParamsSchema = z.strictObject({ id: z.uuid(), directory_id: z.uuid() });

export const UpdateDirectoryInputSchema = DirectoryParamsSchema.extend({
  name: text().trim().min(1).max(200).optional(),
  status: z.enum(DIRECTORY_STATUSES).optional(),
  group_role_mappings: GroupRoleMappingsSchema.optional(),
}).strict();

/** What every directory event carries about where it happened. */
const Where = { directory_id: z.uuid(), organization_id: z.uuid() };

/** The `data` of `directory_user.created`, `.updated`, `.deactivated`, `.reactivated`. */
export const DirectoryUserEventSchema = z.object({
  ...Where,
  id: z.uuid().meta({ description: 'The Gatehouse user id (the SCIM `id`)' }),
  user_name: text(),
  external_id: text().nullable(),
  email: text().nullable(),
  first_name: text().nullable(),
  last_name: text().nullable(),
  active: z.boolean(),
  role: text().nullable().meta({ description: 'The member role it has in the organization (null when not a member)' }),
});
/** The `data` of `directory_user.deleted`. */
export const DeletedDirectoryUserEventSchema = z.object({ ...Where, id: z.uuid(), user_name: text() });
/** The `data` of `directory_group.created`, `.updated`. */
export const DirectoryGroupEventSchema = z.object({
  ...Where,
  id: z.uuid(),
  display_name: text(),
  external_id: text().nullable(),
});
/** The `data` of `directory_group.deleted`. */
export const DeletedDirectoryGroupEventSchema = z.object({ ...Where, id: z.uuid(), display_name: text() });
/** The `data` of `directory_group.user_added` and `.user_removed`. */
export const DirectoryGroupUserEventSchema = z.object({ ...Where, group_id: z.uuid(), user_id: z.uuid() });

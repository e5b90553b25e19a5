import { DeletedSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import {
  CreateDirectoryInputSchema,
  CreatedDirectorySchema,
  DirectoryParamsSchema,
  DirectorySchema,
  OrganizationParamSchema,
  RotatedTokenSchema,
  UpdateDirectoryInputSchema,
} from './directories.schema.ts';
import {
  createDirectory,
  deleteDirectory,
  getDirectory,
  listDirectories,
  rotateDirectoryToken,
  updateDirectory,
} from './directories.service.ts';

const tags = ['Directories'];
const base = '/v1/organizations/{id}/directories';

/** `organizations.directories.*`: an organization's SCIM directories and their tokens (CONTRACT §8). */
export const directoriesRouter = router({
  create: secretKeyProcedure('directories:write')
    .meta({
      idempotent: true,
      successStatus: 201,
      openapi: { method: 'POST', path: base, tags, summary: 'Create a SCIM directory (answers its token, shown this once)' },
    })
    .input(CreateDirectoryInputSchema)
    .output(CreatedDirectorySchema)
    .mutation(({ ctx, input }) => createDirectory(ctx, input)),
  list: secretKeyProcedure('directories:read')
    .meta({ openapi: { method: 'GET', path: base, tags, summary: "List an organization's directories, newest first" } })
    .input(OrganizationParamSchema)
    .output(DirectorySchema.array())
    .query(({ ctx, input }) => listDirectories(ctx, input.id)),
  get: secretKeyProcedure('directories:read')
    .meta({ openapi: { method: 'GET', path: `${base}/{directory_id}`, tags, summary: 'Get a directory' } })
    .input(DirectoryParamsSchema)
    .output(DirectorySchema)
    .query(({ ctx, input }) => getDirectory(ctx, input)),
  update: secretKeyProcedure('directories:write')
    .meta({
      openapi: {
        method: 'PATCH',
        path: `${base}/{directory_id}`,
        tags,
        summary: 'Rename, disable or enable a directory, or change its group role mappings',
      },
    })
    .input(UpdateDirectoryInputSchema)
    .output(DirectorySchema)
    .mutation(({ ctx, input }) => updateDirectory(ctx, input)),
  rotateToken: secretKeyProcedure('directories:write')
    .meta({
      openapi: {
        method: 'POST',
        path: `${base}/{directory_id}/rotate-token`,
        tags,
        summary: 'Rotate the SCIM token (the old one stops at once)',
      },
    })
    .input(DirectoryParamsSchema)
    .output(RotatedTokenSchema)
    .mutation(({ ctx, input }) => rotateDirectoryToken(ctx, input)),
  delete: secretKeyProcedure('directories:write')
    .meta({
      openapi: {
        method: 'DELETE',
        path: `${base}/{directory_id}`,
        tags,
        summary: 'Delete a directory with its users and groups (the memberships it made stay)',
      },
    })
    .input(DirectoryParamsSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => deleteDirectory(ctx, input)),
});

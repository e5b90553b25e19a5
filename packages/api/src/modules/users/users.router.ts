import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { router, secretKeyProcedure } from '../../trpc.ts';
import { RevokedSessionsSchema } from '../sessions/sessions.schema.ts';
import { listUserFactors, removeUserFactor } from './user-factors.service.ts';
import {
  CreateUserInputSchema,
  ListUsersInputSchema,
  MergeUsersInputSchema,
  RemovedFactorSchema,
  UpdateUserInputSchema,
  UserFactorParamsSchema,
  UserFactorSchema,
  UserPageSchema,
  UserSchema,
} from './users.schema.ts';
import { createUser, deleteUser, getUser, listUsers, mergeUsers, revokeSessionsOfUser, updateUser } from './users.service.ts';

const tags = ['Users'];

export const usersRouter = router({
  create: secretKeyProcedure('users:write')
    .meta({ successStatus: 201, openapi: { method: 'POST', path: '/v1/users', tags, summary: 'Create a user' } })
    .input(CreateUserInputSchema)
    .output(UserSchema)
    .mutation(({ ctx, input }) => createUser(ctx, input)),
  list: secretKeyProcedure('users:read')
    .meta({ openapi: { method: 'GET', path: '/v1/users', tags, summary: 'List users, newest first' } })
    .input(ListUsersInputSchema)
    .output(UserPageSchema)
    .query(({ ctx, input }) => listUsers(ctx, input)),
  get: secretKeyProcedure('users:read')
    .meta({ openapi: { method: 'GET', path: '/v1/users/{id}', tags, summary: 'Get a user' } })
    .input(IdParamSchema)
    .output(UserSchema)
    .query(({ ctx, input }) => getUser(ctx, input.id)),
  update: secretKeyProcedure('users:write')
    .meta({ openapi: { method: 'PATCH', path: '/v1/users/{id}', tags, summary: 'Update a user' } })
    .input(UpdateUserInputSchema)
    .output(UserSchema)
    .mutation(({ ctx, input }) => updateUser(ctx, input)),
  delete: secretKeyProcedure('users:write')
    .meta({ openapi: { method: 'DELETE', path: '/v1/users/{id}', tags, summary: 'Delete a user' } })
    .input(IdParamSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => deleteUser(ctx, input.id)),
  revokeSessions: secretKeyProcedure('users:write')
    .meta({ openapi: { method: 'POST', path: '/v1/users/{id}/sessions/revoke', tags, summary: 'Sign the user out everywhere' } })
    .input(IdParamSchema)
    .output(RevokedSessionsSchema)
    .mutation(({ ctx, input }) => revokeSessionsOfUser(ctx, input.id)),
  merge: secretKeyProcedure('users:write')
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/users/merge',
        tags,
        summary: 'Merge the source user into the target',
        description: 'Tombstones the source (status merged); the target keeps everything. Answers the target user.',
      },
    })
    .input(MergeUsersInputSchema)
    .output(UserSchema)
    .mutation(({ ctx, input }) => mergeUsers(ctx, input)),
  factors: router({
    list: secretKeyProcedure('users:read')
      .meta({ openapi: { method: 'GET', path: '/v1/users/{id}/factors', tags, summary: "A user's passkeys and second factors" } })
      .input(IdParamSchema)
      .output(z.array(UserFactorSchema))
      .query(({ ctx, input }) => listUserFactors(ctx, input.id)),
    remove: secretKeyProcedure('users:write')
      .meta({
        openapi: {
          method: 'DELETE',
          path: '/v1/users/{id}/factors/{factor_id}',
          tags,
          summary: 'Remove a passkey or second factor (support)',
          description: 'Also revokes every session of the user, and tells them by mail.',
        },
      })
      .input(UserFactorParamsSchema)
      .output(RemovedFactorSchema)
      .mutation(({ ctx, input }) => removeUserFactor(ctx, input.id, input.factor_id)),
  }),
});

import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { secretKeyInStatementProcedure, secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import {
  CreateUserInputSchema,
  ListUsersInputSchema,
  MergeUsersInputSchema,
  UpdateUserInputSchema,
  UserPageSchema,
  UserSchema,
} from './users.schema.ts';
import { createUser, deleteUser, getUser, listUsers, mergeUsers, updateUser } from './users.service.ts';

const tags = ['Users'];

/** The users namespace; the root router adds what modules above contribute to it (sessions, factors). */
export const userProcedures = {
  create: secretKeyProcedure('users:write')
    .meta({
      idempotent: true,
      successStatus: 201,
      openapi: { method: 'POST', path: '/v1/users', tags, summary: 'Create a user' },
    })
    .input(CreateUserInputSchema)
    .output(UserSchema)
    .mutation(({ ctx, input }) => createUser(ctx, input)),
  list: secretKeyProcedure('users:read')
    .meta({ openapi: { method: 'GET', path: '/v1/users', tags, summary: 'List users, newest first' } })
    .input(ListUsersInputSchema)
    .output(UserPageSchema)
    .query(({ ctx, input }) => listUsers(ctx, input)),
  get: secretKeyInStatementProcedure('users:read')
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
};

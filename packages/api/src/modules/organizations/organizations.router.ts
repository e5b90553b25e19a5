import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import {
  AddMemberInputSchema,
  CreateOrganizationInputSchema,
  ListMembersInputSchema,
  ListOrganizationsInputSchema,
  MemberPageSchema,
  MemberParamsSchema,
  MemberSchema,
  OrganizationPageSchema,
  OrganizationSchema,
  UpdateMemberInputSchema,
  UpdateOrganizationInputSchema,
  UserOrganizationSchema,
} from './organizations.schema.ts';
import {
  addMember,
  createOrganization,
  deleteOrganization,
  getOrganization,
  listMembers,
  listOrganizations,
  organizationsOfTenantUser,
  removeMember,
  updateMember,
  updateOrganization,
} from './organizations.service.ts';

const tags = ['Organizations'];

const membersRouter = router({
  add: secretKeyProcedure('organizations:write')
    .meta({
      idempotent: true,
      successStatus: 201,
      openapi: { method: 'POST', path: '/v1/organizations/{id}/members', tags, summary: 'Add a member' },
    })
    .input(AddMemberInputSchema)
    .output(MemberSchema)
    .mutation(({ ctx, input }) => addMember(ctx, input)),
  list: secretKeyProcedure('organizations:read')
    .meta({ openapi: { method: 'GET', path: '/v1/organizations/{id}/members', tags, summary: 'List members, newest first' } })
    .input(ListMembersInputSchema)
    .output(MemberPageSchema)
    .query(({ ctx, input }) => listMembers(ctx, input)),
  update: secretKeyProcedure('organizations:write')
    .meta({
      openapi: { method: 'PATCH', path: '/v1/organizations/{id}/members/{user_id}', tags, summary: "Change a member's role" },
    })
    .input(UpdateMemberInputSchema)
    .output(MemberSchema)
    .mutation(({ ctx, input }) => updateMember(ctx, input)),
  remove: secretKeyProcedure('organizations:write')
    .meta({ openapi: { method: 'DELETE', path: '/v1/organizations/{id}/members/{user_id}', tags, summary: 'Remove a member' } })
    .input(MemberParamsSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => removeMember(ctx, input)),
});

/** `users.organizations` (in the users namespace): the organizations a user belongs to, with their role. */
export const userOrganizationsProcedure = secretKeyProcedure('organizations:read')
  .meta({
    openapi: {
      method: 'GET',
      path: '/v1/users/{id}/organizations',
      tags: ['Users'],
      summary: 'The organizations a user belongs to',
    },
  })
  .input(IdParamSchema)
  .output(z.array(UserOrganizationSchema))
  .query(({ ctx, input }) => organizationsOfTenantUser(ctx, input.id));

/** The organizations namespace; modules above add to it (directories). */
export const organizationProcedures = {
  create: secretKeyProcedure('organizations:write')
    .meta({
      idempotent: true,
      successStatus: 201,
      openapi: { method: 'POST', path: '/v1/organizations', tags, summary: 'Create an organization' },
    })
    .input(CreateOrganizationInputSchema)
    .output(OrganizationSchema)
    .mutation(({ ctx, input }) => createOrganization(ctx, input)),
  list: secretKeyProcedure('organizations:read')
    .meta({ openapi: { method: 'GET', path: '/v1/organizations', tags, summary: 'List organizations, newest first' } })
    .input(ListOrganizationsInputSchema)
    .output(OrganizationPageSchema)
    .query(({ ctx, input }) => listOrganizations(ctx, input)),
  get: secretKeyProcedure('organizations:read')
    .meta({ openapi: { method: 'GET', path: '/v1/organizations/{id}', tags, summary: 'Get an organization' } })
    .input(IdParamSchema)
    .output(OrganizationSchema)
    .query(({ ctx, input }) => getOrganization(ctx, input.id)),
  update: secretKeyProcedure('organizations:write')
    .meta({ openapi: { method: 'PATCH', path: '/v1/organizations/{id}', tags, summary: 'Update an organization' } })
    .input(UpdateOrganizationInputSchema)
    .output(OrganizationSchema)
    .mutation(({ ctx, input }) => updateOrganization(ctx, input)),
  delete: secretKeyProcedure('organizations:write')
    .meta({
      openapi: { method: 'DELETE', path: '/v1/organizations/{id}', tags, summary: 'Delete an organization and its memberships' },
    })
    .input(IdParamSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => deleteOrganization(ctx, input.id)),
  members: membersRouter,
};

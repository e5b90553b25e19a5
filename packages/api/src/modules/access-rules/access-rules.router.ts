import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import {
  AccessCheckInputSchema,
  AccessCheckSchema,
  AccessRuleSchema,
  CreateAccessRuleInputSchema,
  CreateHostGroupInputSchema,
  CreateHostInputSchema,
  HostGroupSchema,
  HostSchema,
} from './access-rules.schema.ts';
import {
  checkAccess,
  createAccessRule,
  createHost,
  createHostGroup,
  deleteAccessRule,
  deleteHost,
  deleteHostGroup,
  listAccessRules,
  listHostGroups,
  listHosts,
} from './access-rules.service.ts';

const tags = ['Host access rules'];
const NoInput = z.strictObject({}).optional();

const hostGroupsRouter = router({
  create: secretKeyProcedure('access_rules:write')
    .meta({
      idempotent: true,
      successStatus: 201,
      openapi: { method: 'POST', path: '/v1/os/host-groups', tags, summary: 'Create a host group' },
    })
    .input(CreateHostGroupInputSchema)
    .output(HostGroupSchema)
    .mutation(({ ctx, input }) => createHostGroup(ctx, input)),
  list: secretKeyProcedure('access_rules:read')
    .meta({ openapi: { method: 'GET', path: '/v1/os/host-groups', tags, summary: 'List host groups, newest first' } })
    .input(NoInput)
    .output(z.array(HostGroupSchema))
    .query(({ ctx }) => listHostGroups(ctx)),
  delete: secretKeyProcedure('access_rules:write')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/v1/os/host-groups/{id}',
        tags,
        summary: 'Delete a host group and the rules that target it (its hosts stay, in no group)',
      },
    })
    .input(IdParamSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => deleteHostGroup(ctx, input.id)),
});

const hostsRouter = router({
  create: secretKeyProcedure('access_rules:write')
    .meta({
      idempotent: true,
      successStatus: 201,
      openapi: { method: 'POST', path: '/v1/os/hosts', tags, summary: 'Register a host' },
    })
    .input(CreateHostInputSchema)
    .output(HostSchema)
    .mutation(({ ctx, input }) => createHost(ctx, input)),
  list: secretKeyProcedure('access_rules:read')
    .meta({ openapi: { method: 'GET', path: '/v1/os/hosts', tags, summary: 'List hosts, newest first' } })
    .input(NoInput)
    .output(z.array(HostSchema))
    .query(({ ctx }) => listHosts(ctx)),
  delete: secretKeyProcedure('access_rules:write')
    .meta({
      openapi: { method: 'DELETE', path: '/v1/os/hosts/{id}', tags, summary: 'Delete a host and the rules that target it' },
    })
    .input(IdParamSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => deleteHost(ctx, input.id)),
});

const rulesRouter = router({
  create: secretKeyProcedure('access_rules:write')
    .meta({
      idempotent: true,
      successStatus: 201,
      openapi: { method: 'POST', path: '/v1/os/access-rules', tags, summary: 'Create an access rule' },
    })
    .input(CreateAccessRuleInputSchema)
    .output(AccessRuleSchema)
    .mutation(({ ctx, input }) => createAccessRule(ctx, input)),
  list: secretKeyProcedure('access_rules:read')
    .meta({ openapi: { method: 'GET', path: '/v1/os/access-rules', tags, summary: 'List access rules, newest first' } })
    .input(NoInput)
    .output(z.array(AccessRuleSchema))
    .query(({ ctx }) => listAccessRules(ctx)),
  delete: secretKeyProcedure('access_rules:write')
    .meta({ openapi: { method: 'DELETE', path: '/v1/os/access-rules/{id}', tags, summary: 'Delete an access rule' } })
    .input(IdParamSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => deleteAccessRule(ctx, input.id)),
});

export const accessRulesRouter = router({
  hostGroups: hostGroupsRouter,
  hosts: hostsRouter,
  rules: rulesRouter,
  check: secretKeyProcedure('access_rules:read')
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/os/access-check',
        tags,
        summary: 'May this user sign in to this host? (a matching deny wins; no matching allow is deny)',
      },
    })
    .input(AccessCheckInputSchema)
    .output(AccessCheckSchema)
    .mutation(({ ctx, input }) => checkAccess(ctx, input)),
});

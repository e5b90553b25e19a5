import { LockMode } from '@mikro-orm/core';
import type { Services } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { notFound } from '../../errors.ts';
import { randomSecret, sha256 } from '../../lib/crypto.ts';
import { newId } from '../../lib/ids.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { recordEvent } from '../events/events.service.ts';
import { OrganizationEntity } from '../organizations/organization.entity.ts';
import type { MergeStep } from '../users/users.merge.ts';
import type { DirectoryRecord } from './directories.schema.ts';
import { type Directory, DirectoryEntity, type GroupRoleMapping } from './directory.entity.ts';
import { syncDirectoryRoles } from './scim.members.ts';

/** A new SCIM bearer token: `scim_` and 43 base62 characters (256 bits), kept only as its SHA-256. */
const newToken = () => randomSecret('scim_');

export const scimBaseUrl = (services: Pick<Services, 'baseUrl'>, directoryId: string) =>
  `${services.baseUrl}/scim/v2/${directoryId}`;

async function counts(em: EntityManager, ids: string[]) {
  if (!ids.length) return new Map<string, { users: number; groups: number }>();
  const rows = await em.execute<Array<{ id: string; users: string | number; groups: string | number }>>(
    `select d.id,
            (select count(*) from directory_users u where u.directory_id = d.id) as users,
            (select count(*) from directory_groups g where g.directory_id = d.id) as groups
       from directories d where d.id = any(?::uuid[])`,
    [`{${ids.join(',')}}`],
  );
  return new Map(rows.map((r) => [r.id, { users: Number(r.users), groups: Number(r.groups) }]));
}

function toRecord(services: Services, d: Directory, count = { users: 0, groups: 0 }): DirectoryRecord {
  return {
    id: d.id,
    organization_id: d.organization,
    name: d.name,
    // the entity types these columns as strings; only the schema's values are ever written to them.
    provider: d.provider as DirectoryRecord['provider'],
    // the entity types the column as string; only the schema's values are ever written to it.
    status: d.status as DirectoryRecord['status'],
    scim_base_url: scimBaseUrl(services, d.id),
    group_role_mappings: d.groupRoleMappings,
    user_count: count.users,
    group_count: count.groups,
    last_request_at: d.lastRequestAt ? d.lastRequestAt.toISOString() : null,
    created_at: d.createdAt.toISOString(),
    updated_at: d.updatedAt.toISOString(),
  };
}

async function findOrganization(ctx: TenantContext, id: string) {
  const org = await ctx.em.findOne(OrganizationEntity, { id, application: ctx.application.id });
  if (!org) throw notFound('Organization');
  return org;
}

async function findDirectory(ctx: TenantContext, organizationId: string, id: string) {
  const directory = await ctx.em.findOne(DirectoryEntity, {
    id,
    organization: organizationId,
    application: ctx.application.id,
  });
  if (!directory) throw notFound('Directory');
  return directory;
}

async function answer(ctx: TenantContext, directory: Directory) {
  return toRecord(ctx.services, directory, (await counts(ctx.em, [directory.id])).get(directory.id));
}

export async function createDirectory(
  ctx: TenantContext,
  input: { id: string; name: string; provider: string; group_role_mappings?: GroupRoleMapping[] },
) {
  const org = await findOrganization(ctx, input.id);
  const token = newToken();
  const directory = ctx.em.create(DirectoryEntity, {
    id: newId(),
    application: ctx.application.id,
    organization: org.id,
    name: input.name,
    provider: input.provider,
    status: 'active',
    tokenHash: sha256(token),
    groupRoleMappings: input.group_role_mappings ?? [],
    lastRequestAt: null,
  });
  const record = toRecord(ctx.services, directory);
  recordEvent(ctx.em, ctx.application.id, 'directory.created', record);
  await ctx.em.flush();
  return { ...record, token };
}

export async function listDirectories(ctx: TenantContext, organizationId: string) {
  const org = await findOrganization(ctx, organizationId);
  const rows = await ctx.em.find(DirectoryEntity, { organization: org.id }, { orderBy: { createdAt: 'desc', id: 'desc' } });
  const byId = await counts(
    ctx.em,
    rows.map((d) => d.id),
  );
  return rows.map((d) => toRecord(ctx.services, d, byId.get(d.id)));
}

export async function getDirectory(ctx: TenantContext, input: { id: string; directory_id: string }) {
  return answer(ctx, await findDirectory(ctx, input.id, input.directory_id));
}

export async function updateDirectory(
  ctx: TenantContext,
  input: { id: string; directory_id: string; name?: string; status?: string; group_role_mappings?: GroupRoleMapping[] },
) {
  return ctx.em.transactional(async (em) => {
    const directory = await em.findOne(
      DirectoryEntity,
      { id: input.directory_id, organization: input.id, application: ctx.application.id },
      // one mapping change at a time
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (!directory) throw notFound('Directory');
    if (input.name !== undefined) directory.name = input.name;
    if (input.status !== undefined) directory.status = input.status;
    directory.updatedAt = new Date();
    await em.flush();
    if (input.group_role_mappings !== undefined) {
      directory.groupRoleMappings = input.group_role_mappings;
      await em.flush();
      // New mappings give every member the directory provisioned the role they now decide.
      await syncDirectoryRoles(ctx.services.hooks, em, directory, null);
    }
    const record = toRecord(ctx.services, directory, (await counts(em, [directory.id])).get(directory.id));
    recordEvent(em, ctx.application.id, 'directory.updated', record);
    await em.flush();
    return record;
  });
}

export async function rotateDirectoryToken(ctx: TenantContext, input: { id: string; directory_id: string }) {
  const directory = await findDirectory(ctx, input.id, input.directory_id);
  const token = newToken();
  directory.tokenHash = sha256(token);
  directory.updatedAt = new Date();
  recordEvent(ctx.em, ctx.application.id, 'directory.token_rotated', await answer(ctx, directory));
  await ctx.em.flush();
  return { token };
}

/**
 * Deletes a directory with its users, groups and members. The organization memberships it made stay (the people keep
 * their access until someone removes them): deleting the connection is not deprovisioning.
 */
export async function deleteDirectory(ctx: TenantContext, input: { id: string; directory_id: string }) {
  const directory = await findDirectory(ctx, input.id, input.directory_id);
  recordEvent(ctx.em, ctx.application.id, 'directory.deleted', await answer(ctx, directory));
  ctx.em.remove(directory);
  await ctx.em.flush();
  return { id: directory.id, deleted: true as const };
}

/**
 * Merge: the source's directory users follow it to the target (the SCIM id the identity provider holds becomes the
 * target's), except in a directory where the target is provisioned already: there the source's goes.
 */
export const mergeDirectoryUsers: MergeStep = async (em, { sourceUserId, targetUserId }) => {
  await em.execute(
    `delete from directory_users s where s.user_id = ?
        and exists (select 1 from directory_users t where t.directory_id = s.directory_id and t.user_id = ?)`,
    [sourceUserId, targetUserId],
  );
  await em.execute('update directory_users set user_id = ?, updated_at = now() where user_id = ?', [targetUserId, sourceUserId]);
};

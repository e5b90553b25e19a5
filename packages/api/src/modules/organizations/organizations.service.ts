import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { Context } from '../../context.ts';
import { type EntityManager, preparedQuery } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { randomBase62 } from '../../lib/crypto.ts';
import { newId } from '../../lib/ids.ts';
import type { Hooks } from '../../lib/modules.ts';
import { escapeLike, type PageQuery } from '../../lib/pagination.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { recordEvent } from '../events/events.service.ts';
import { type User, UserEntity } from '../users/user.entity.ts';
import type { MergeStep } from '../users/users.merge.ts';
import { findUser } from '../users/users.service.ts';
import { type Membership, MembershipEntity } from './membership.entity.ts';
import { type Organization, OrganizationEntity } from './organization.entity.ts';
import { memberSuspendSteps, runMemberAddChecks, subscriptionSummaries } from './organizations.hooks.ts';
import type {
  MemberRecord,
  MemberSource,
  MemberStatus,
  OrganizationRecord,
  SubscriptionSummary,
} from './organizations.schema.ts';

/**
 * The organizations a user of the application belongs to, by name, with their role (the hosted pages' organization
 * picker lists them; `auth.session.switchOrganization` checks the membership again when one is chosen).
 */
export async function organizationsOfUser(
  em: EntityManager,
  applicationId: string,
  userId: string,
): Promise<Array<{ id: string; name: string; role: string }>> {
  return em.execute<Array<{ id: string; name: string; role: string }>>(
    `select o.id, o.name, m.role from organization_members m
       join organizations o on o.id = m.organization_id and o.application_id = m.application_id
      where m.application_id = ? and m.user_id = ? and m.status = 'active' order by o.name, o.id`,
    [applicationId, userId],
  );
}

/** `organizationsOfUser` for a user of the caller's application (404 for anyone else's, or no one). */
export async function organizationsOfTenantUser(ctx: TenantContext, userId: string) {
  const user = await findUser(ctx, userId);
  return organizationsOfUser(ctx.em, ctx.application.id, user.id);
}

/** A URL-safe slug from a display name: ASCII-folded, lower-case, hyphen-separated, ≤ 100 characters. */
export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 100)
    .replace(/-+$/, '');
  return slug || 'org';
}

/** An organization as every answer and event shows it: its record with its live subscription, if any. */
const toOrganizationRecord = (
  org: Organization,
  memberCount: number,
  subscription: SubscriptionSummary | null,
): OrganizationRecord => ({
  id: org.id,
  name: org.name,
  slug: org.slug,
  member_count: memberCount,
  subscription,
  created_at: org.createdAt.toISOString(),
  updated_at: org.updatedAt.toISOString(),
});

const subscriptionOf = async (ctx: Context, organizationId: string) =>
  (await subscriptionSummaries(ctx.services.hooks, ctx.em, [organizationId])).get(organizationId) ?? null;

export const toMemberRecord = (m: Membership, user: User): MemberRecord => ({
  user_id: user.id,
  email: user.primaryEmail ?? null,
  role: m.role,
  // the entity types the column as string; only the schema's values are ever written to it.
  user_status: user.status as MemberRecord['user_status'],
  // the entity types the column as string; only the schema's values are ever written to it.
  status: m.status as MemberRecord['status'],
  // the entity types the column as string; only the schema's values are ever written to it.
  source: m.source as MemberRecord['source'],
  created_at: m.createdAt.toISOString(),
  updated_at: m.updatedAt.toISOString(),
});

async function findOrganization(ctx: TenantContext, id: string): Promise<Organization> {
  const org = await ctx.em.findOne(OrganizationEntity, { id, application: ctx.application.id });
  if (!org) throw notFound('Organization');
  return org;
}

const countMembers = (em: EntityManager, organizationId: string) => em.count(MembershipEntity, { organization: organizationId });

const isSlugViolation = (error: unknown) =>
  error instanceof UniqueConstraintViolationException && error.message.includes('organizations_application_slug_unique');

export async function createOrganization(ctx: TenantContext, input: { name: string; slug?: string }) {
  const applicationId = ctx.application.id;
  // A generated slug that is taken gets a short random suffix; an explicit one is the caller's choice: 409.
  for (let attempt = 0; ; attempt++) {
    const base = input.slug ?? slugify(input.name);
    const slug = input.slug || attempt === 0 ? base : `${base.slice(0, 93).replace(/-+$/, '')}-${randomBase62(6).toLowerCase()}`;
    try {
      // Each attempt in a transaction of its own (a savepoint in the request's, under an Idempotency-Key): a taken slug
      // undoes only the attempt.
      return await ctx.em.transactional(async (em) => {
        const org = em.create(OrganizationEntity, { id: newId(), application: applicationId, name: input.name, slug });
        const record = toOrganizationRecord(org, 0, null);
        recordEvent(em, applicationId, 'organization.created', record);
        await em.flush();
        return record;
      });
    } catch (error) {
      if (!isSlugViolation(error)) throw error;
      if (input.slug || attempt >= 4) throw new AppError('slug_taken', 'An organization with this slug already exists');
    }
  }
}

/**
 * The application's organizations, newest first, with each one's member count (`GET /v1/organizations`); `search` is
 * a literal, case-insensitive substring of the name or the slug. The page and its `total` come in one round trip: the
 * page walks the (application, created_at, id) index newest first, a search's total counts through the trigram indexes
 * of name and slug. Only the plain page is a prepared statement: a generic plan cannot see a search's pattern, and the
 * pattern decides between the indexes.
 */
export async function listOrganizations(ctx: TenantContext, input: PageQuery & { search?: string }) {
  const search = input.search?.trim();
  const pattern = search ? `%${escapeLike(search)}%` : null;
  const filter = pattern ? ' and (o.name ilike ? or o.slug ilike ?)' : '';
  const params = pattern ? [ctx.application.id, pattern, pattern] : [ctx.application.id];
  type Row = { total: string | number; page: OrganizationRow[] | null };
  const sql = `select (select count(*) from organizations o where o.application_id = ?${filter}) as total,
            (select json_agg(p order by p.created_at desc, p.id desc) from (
               select o.id, o.name, o.slug, o.created_at, o.updated_at,
                      (select count(*) from organization_members m where m.organization_id = o.id) as member_count
                 from organizations o where o.application_id = ?${filter}
                order by o.created_at desc, o.id desc limit ? offset ?
             ) p) as page`;
  const values = [...params, ...params, input.limit, input.offset];
  const [row] = pattern
    ? await ctx.em.execute<Row[]>(sql, values)
    : await preparedQuery<Row>(ctx.em, 'organizations_page', sql, values);
  const page = row?.page ?? [];
  const subscriptions = await subscriptionSummaries(
    ctx.services.hooks,
    ctx.em,
    page.map((o) => o.id),
  );
  return {
    organizations: page.map((o) => ({
      id: o.id,
      name: o.name,
      slug: o.slug,
      member_count: Number(o.member_count),
      subscription: subscriptions.get(o.id) ?? null,
      created_at: new Date(o.created_at).toISOString(),
      updated_at: new Date(o.updated_at).toISOString(),
    })),
    total: Number(row?.total ?? 0),
    limit: input.limit,
    offset: input.offset,
  };
}

interface OrganizationRow {
  id: string;
  name: string;
  slug: string;
  created_at: string;
  updated_at: string;
  member_count: number;
}

export async function getOrganization(ctx: TenantContext, id: string) {
  const org = await findOrganization(ctx, id);
  return toOrganizationRecord(org, await countMembers(ctx.em, org.id), await subscriptionOf(ctx, org.id));
}

export async function updateOrganization(ctx: TenantContext, input: { id: string; name?: string; slug?: string }) {
  const org = await findOrganization(ctx, input.id);
  if (input.name !== undefined) org.name = input.name;
  if (input.slug !== undefined) org.slug = input.slug;
  org.updatedAt = new Date();
  const record = toOrganizationRecord(org, await countMembers(ctx.em, org.id), await subscriptionOf(ctx, org.id));
  recordEvent(ctx.em, org.application, 'organization.updated', record);
  try {
    await ctx.em.flush();
  } catch (error) {
    if (isSlugViolation(error)) throw new AppError('slug_taken', 'An organization with this slug already exists');
    throw error;
  }
  return record;
}

export async function deleteOrganization(ctx: TenantContext, id: string) {
  const org = await findOrganization(ctx, id);
  recordEvent(ctx.em, org.application, 'organization.deleted', { id });
  ctx.em.remove(org);
  await ctx.em.flush();
  return { id, deleted: true as const };
}

export async function addMember(ctx: TenantContext, input: { id: string; user_id: string; role: string }) {
  const org = await findOrganization(ctx, input.id);
  const user = await ctx.em.findOne(UserEntity, { id: input.user_id, application: org.application });
  if (!user) throw new AppError('user_not_found', 'No such user in this application');
  return ctx.em.transactional((em) =>
    insertMembership(ctx.services.hooks, em, { organizationId: org.id, user, role: input.role, source: 'manual' }),
  );
}

/**
 * The one way a membership is made (member add, an accepted invitation, a domain's automatic join, a directory):
 * inside the caller's transaction `em`, the checks of the modules above (the seat limit) lock what they judge by,
 * then the insert and its `organization_membership.created` event. A member already there is 409 `already_member`
 * — concurrent adds on any number of processes are decided by the (organization, user) unique key.
 */
export async function insertMembership(
  hooks: Hooks,
  em: EntityManager,
  input: { organizationId: string; user: User; role: string; source: MemberSource },
): Promise<MemberRecord> {
  const { user } = input;
  if (user.status === 'merged') throw new AppError('user_merged', 'This user was merged into another user');
  if (await em.count(MembershipEntity, { organization: input.organizationId, user: user.id })) {
    throw new AppError('already_member', 'The user is already a member');
  }
  await runMemberAddChecks(hooks, em, { applicationId: user.application, organizationId: input.organizationId });
  const membership = em.create(MembershipEntity, {
    id: newId(),
    application: user.application,
    organization: input.organizationId,
    user: user.id,
    role: input.role,
    source: input.source,
  });
  const record = toMemberRecord(membership, user);
  recordEvent(em, user.application, 'organization_membership.created', { organization_id: input.organizationId, ...record });
  try {
    await em.flush();
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException) throw new AppError('already_member', 'The user is already a member');
    throw error;
  }
  return record;
}

export async function listMembers(ctx: TenantContext, input: PageQuery & { id: string }) {
  const org = await findOrganization(ctx, input.id);
  const [rows, total] = await ctx.em.findAndCount(
    MembershipEntity,
    { organization: org.id },
    { orderBy: { createdAt: 'desc', id: 'desc' }, limit: input.limit, offset: input.offset },
  );
  const users = await ctx.em.find(UserEntity, { id: { $in: rows.map((m) => m.user) } });
  const byId = new Map(users.map((u) => [u.id, u]));
  return {
    // A user deleted between the two reads (their memberships go with them) is left out.
    members: rows.flatMap((m) => {
      const user = byId.get(m.user);
      return user ? [toMemberRecord(m, user)] : [];
    }),
    total,
    limit: input.limit,
    offset: input.offset,
  };
}

async function findMembership(ctx: TenantContext, organizationId: string, userId: string) {
  const org = await findOrganization(ctx, organizationId);
  const membership = await ctx.em.findOne(MembershipEntity, { organization: org.id, user: userId });
  if (!membership) throw notFound('Membership');
  const user = await ctx.em.findOneOrFail(UserEntity, { id: userId });
  return { org, membership, user };
}

export async function updateMember(ctx: TenantContext, input: { id: string; user_id: string; role: string }) {
  const { org, membership, user } = await findMembership(ctx, input.id, input.user_id);
  membership.role = input.role;
  membership.updatedAt = new Date();
  const record = toMemberRecord(membership, user);
  recordEvent(ctx.em, org.application, 'organization_membership.updated', { organization_id: org.id, ...record });
  await ctx.em.flush();
  return record;
}

export async function removeMember(ctx: TenantContext, input: { id: string; user_id: string }) {
  const { org, membership } = await findMembership(ctx, input.id, input.user_id);
  recordEvent(ctx.em, org.application, 'organization_membership.deleted', { organization_id: org.id, user_id: input.user_id });
  ctx.em.remove(membership);
  await ctx.em.flush();
  return { id: input.user_id, deleted: true as const };
}

/**
 * A membership's role or status changed by a module that governs it (a directory), inside the caller's transaction
 * `em`, with its `organization_membership.updated` event; suspending it runs the suspend steps (sessions: the sessions
 * whose active organization it is are revoked). Answers null when there is no such membership, or nothing changed.
 */
export async function changeMembership(
  hooks: Hooks,
  em: EntityManager,
  input: { organizationId: string; user: User; role?: string; status?: MemberStatus },
): Promise<MemberRecord | null> {
  const membership = await em.findOne(MembershipEntity, { organization: input.organizationId, user: input.user.id });
  if (!membership) return null;
  const suspending = input.status === 'suspended' && membership.status !== 'suspended';
  const changed =
    (input.role !== undefined && input.role !== membership.role) ||
    (input.status !== undefined && input.status !== membership.status);
  if (!changed) return null;
  if (input.role !== undefined) membership.role = input.role;
  if (input.status !== undefined) membership.status = input.status;
  membership.updatedAt = new Date();
  const record = toMemberRecord(membership, input.user);
  recordEvent(em, input.user.application, 'organization_membership.updated', {
    organization_id: input.organizationId,
    ...record,
  });
  await em.flush();
  if (suspending) {
    const target = { applicationId: input.user.application, organizationId: input.organizationId, userId: input.user.id };
    for (const step of hooks.get(memberSuspendSteps)) await step(em, target);
  }
  return record;
}

/** Removes a membership (when there is one) with its `organization_membership.deleted` event, in the caller's `em`. */
export async function deleteMembership(
  em: EntityManager,
  input: { applicationId: string; organizationId: string; userId: string },
) {
  const membership = await em.findOne(MembershipEntity, { organization: input.organizationId, user: input.userId });
  if (!membership) return false;
  recordEvent(em, input.applicationId, 'organization_membership.deleted', {
    organization_id: input.organizationId,
    user_id: input.userId,
  });
  em.remove(membership);
  await em.flush();
  return true;
}

/** Merge: the source's memberships move to the target, except where the target is already a member. */
export const mergeMemberships: MergeStep = async (em, { sourceUserId, targetUserId }) => {
  await em.execute(
    `delete from organization_members s where s.user_id = ?
        and exists (select 1 from organization_members t where t.organization_id = s.organization_id and t.user_id = ?)`,
    [sourceUserId, targetUserId],
  );
  await em.nativeUpdate(MembershipEntity, { user: sourceUserId }, { user: targetUserId, updatedAt: new Date() });
};

import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { newId } from '../../lib/ids.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { OrganizationEntity } from '../organizations/organization.entity.ts';
import type { SignInCheck } from '../sign-in/sign-in.service.ts';
import { UserEntity } from '../users/user.entity.ts';
import { type AccessRule, AccessRuleEntity } from './access-rule.entity.ts';
import type { AccessCheckRecord, AccessRuleRecord, HostGroupRecord, HostRecord } from './access-rules.schema.ts';
import { type Host, HostEntity } from './host.entity.ts';
import { type HostGroup, HostGroupEntity } from './host-group.entity.ts';

const toHostGroupRecord = (g: HostGroup): HostGroupRecord => ({ id: g.id, name: g.name, created_at: g.createdAt.toISOString() });
const toHostRecord = (h: Host): HostRecord => ({
  id: h.id,
  name: h.name,
  host_group_id: h.hostGroup ?? null,
  created_at: h.createdAt.toISOString(),
});
const toRuleRecord = (r: AccessRule): AccessRuleRecord => ({
  id: r.id,
  effect: r.effect as AccessRuleRecord['effect'],
  subject_kind: r.subjectKind as AccessRuleRecord['subject_kind'],
  subject_id: r.subjectId,
  target_kind: r.targetKind as AccessRuleRecord['target_kind'],
  target_id: r.targetId,
  created_at: r.createdAt.toISOString(),
});

const newestFirst = { orderBy: { createdAt: 'desc', id: 'desc' } } as const;

async function flushUnique(em: EntityManager, what: string) {
  try {
    await em.flush();
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException)
      throw new AppError('conflict', `A ${what} with this name already exists`);
    throw error;
  }
}

async function findGroup(em: EntityManager, applicationId: string, id: string) {
  const group = await em.findOne(HostGroupEntity, { id, application: applicationId });
  if (!group) throw notFound('Host group');
  return group;
}

async function findHost(em: EntityManager, applicationId: string, id: string) {
  const host = await em.findOne(HostEntity, { id, application: applicationId });
  if (!host) throw notFound('Host');
  return host;
}

export async function createHostGroup(ctx: TenantContext, input: { name: string }) {
  const em = ctx.em.fork({ keepTransactionContext: true });
  const group = em.create(HostGroupEntity, { id: newId(), application: ctx.application.id, name: input.name });
  await flushUnique(em, 'host group');
  return toHostGroupRecord(group);
}

export async function listHostGroups(ctx: TenantContext) {
  return (await ctx.em.find(HostGroupEntity, { application: ctx.application.id }, newestFirst)).map(toHostGroupRecord);
}

/** The group goes with the rules that target it; its hosts stay, in no group. */
export async function deleteHostGroup(ctx: TenantContext, id: string) {
  const group = await findGroup(ctx.em, ctx.application.id, id);
  await ctx.em.transactional(async (em) => {
    await em.nativeDelete(AccessRuleEntity, { application: group.application, targetKind: 'host_group', targetId: group.id });
    await em.nativeDelete(HostGroupEntity, { id: group.id });
  });
  return { id, deleted: true as const };
}

export async function createHost(ctx: TenantContext, input: { name: string; host_group_id?: string }) {
  const applicationId = ctx.application.id;
  if (input.host_group_id) await findGroup(ctx.em, applicationId, input.host_group_id);
  const em = ctx.em.fork({ keepTransactionContext: true });
  const host = em.create(HostEntity, {
    id: newId(),
    application: applicationId,
    name: input.name,
    hostGroup: input.host_group_id ?? null,
  });
  await flushUnique(em, 'host');
  return toHostRecord(host);
}

export async function listHosts(ctx: TenantContext) {
  return (await ctx.em.find(HostEntity, { application: ctx.application.id }, newestFirst)).map(toHostRecord);
}

/** The host goes with the rules that target it. */
export async function deleteHost(ctx: TenantContext, id: string) {
  const host = await findHost(ctx.em, ctx.application.id, id);
  await ctx.em.transactional(async (em) => {
    await em.nativeDelete(AccessRuleEntity, { application: host.application, targetKind: 'host', targetId: host.id });
    await em.nativeDelete(HostEntity, { id: host.id });
  });
  return { id, deleted: true as const };
}

/** Subjects and targets must exist in this application (another application's ids are 404, like unknown ones). */
export async function createAccessRule(
  ctx: TenantContext,
  input: {
    effect: 'allow' | 'deny';
    subject_kind: 'user' | 'organization';
    subject_id: string;
    target_kind: 'host' | 'host_group';
    target_id: string;
  },
) {
  const applicationId = ctx.application.id;
  const subject =
    input.subject_kind === 'user'
      ? await ctx.em.findOne(UserEntity, { id: input.subject_id, application: applicationId })
      : await ctx.em.findOne(OrganizationEntity, { id: input.subject_id, application: applicationId });
  if (!subject) throw notFound(input.subject_kind === 'user' ? 'User' : 'Organization');
  if (input.target_kind === 'host') await findHost(ctx.em, applicationId, input.target_id);
  else await findGroup(ctx.em, applicationId, input.target_id);
  const em = ctx.em.fork({ keepTransactionContext: true });
  const rule = em.create(AccessRuleEntity, {
    id: newId(),
    application: applicationId,
    effect: input.effect,
    subjectKind: input.subject_kind,
    subjectId: input.subject_id,
    targetKind: input.target_kind,
    targetId: input.target_id,
  });
  await em.flush();
  return toRuleRecord(rule);
}

/** S19: newest first. */
export async function listAccessRules(ctx: TenantContext) {
  return (await ctx.em.find(AccessRuleEntity, { application: ctx.application.id }, newestFirst)).map(toRuleRecord);
}

export async function deleteAccessRule(ctx: TenantContext, id: string) {
  const deleted = await ctx.em.nativeDelete(AccessRuleEntity, { id, application: ctx.application.id });
  if (!deleted) throw notFound('Access rule');
  return { id, deleted: true as const };
}

/**
 * The decision for one user and one host, in one statement: the rules whose subject is the user or an organization
 * the user belongs to, and whose target is the host or its group. A matching deny wins over any allow; with no
 * matching allow the answer is deny (`rule_id` null). Null when the host is not one of the application's.
 */
async function decide(em: EntityManager, applicationId: string, userId: string, hostId: string) {
  const [row] = await em.execute<Array<{ rule_id: string | null; effect: string | null }>>(
    `select r.id as rule_id, r.effect
       from hosts h
       left join lateral (
         select r.id, r.effect from access_rules r
          where r.application_id = h.application_id
            and ((r.target_kind = 'host' and r.target_id = h.id) or (r.target_kind = 'host_group' and r.target_id = h.host_group_id))
            and ((r.subject_kind = 'user' and r.subject_id = ?)
              or (r.subject_kind = 'organization'
                  and r.subject_id in (select m.organization_id from organization_members m where m.user_id = ?)))
          order by r.effect = 'deny' desc, r.created_at desc, r.id desc
          limit 1
       ) r on true
      where h.id = ? and h.application_id = ?`,
    [userId, userId, hostId, applicationId],
  );
  if (!row) return null;
  return { allowed: row.effect === 'allow', rule_id: row.effect ? row.rule_id : null } satisfies AccessCheckRecord;
}

export async function checkAccess(ctx: TenantContext, input: { user_id: string; host_id: string }): Promise<AccessCheckRecord> {
  const applicationId = ctx.application.id;
  if (!(await ctx.em.count(UserEntity, { id: input.user_id, application: applicationId }))) throw notFound('User');
  const decision = await decide(ctx.em, applicationId, input.user_id, input.host_id);
  if (!decision) throw notFound('Host');
  return decision;
}

/**
 * Sign-in honours the rules: a sign-in that names a host is refused unless the rules allow this user on it (an unknown
 * host is refused too, without saying so). A sign-in that names no host is not a host sign-in: no rule applies.
 */
export const hostAccessCheck: SignInCheck = {
  appliesTo: ({ hostId }) => hostId !== null,
  async check(em, application, user, { hostId }) {
    if (hostId === null) return null;
    const decision = await decide(em, application.id, user.id, hostId);
    if (!decision) return { reason: 'unknown_host', rule_id: null };
    return decision.allowed ? null : { reason: decision.rule_id ? 'denied_by_rule' : 'no_allow_rule', rule_id: decision.rule_id };
  },
};

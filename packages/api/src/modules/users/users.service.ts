import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import { type EntityManager, onlyRow, positional, preparedQuery } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { newId } from '../../lib/ids.ts';
import { escapeLike, type PageQuery } from '../../lib/pagination.ts';
import { iso } from '../../lib/time.ts';
import { type PresentedKeyRow, type SecretKeyInStatementContext, secretKeyInStatement } from '../api-keys/api-keys.service.ts';
import { markTraffic } from '../applications/applications.service.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { recordEvent } from '../events/events.service.ts';
import { type Identity, IdentityEntity } from './identity.entity.ts';
import { type User, UserEntity } from './user.entity.ts';
import { runBanSteps, runDeleteSteps } from './users.hooks.ts';
import { runMergeSteps } from './users.merge.ts';
import type { UserRecord } from './users.schema.ts';

/** The unique key of an email: trimmed and lower-cased. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

export const toUserRecord = (user: User): UserRecord => ({
  id: user.id,
  primary_email: user.primaryEmail ?? null,
  email_verified: user.emailVerified,
  // the entity types the column as string; only the schema's values are ever written to it.
  status: user.status as UserRecord['status'],
  profile: user.profile,
  merged_into: user.mergedInto ?? null,
  created_at: user.createdAt.toISOString(),
  updated_at: iso(user.updatedAt) ?? user.createdAt.toISOString(),
});

/** A user as a plain record from its row (`row_to_json` or `select *`): for hot paths that only read. */
export const userFromRow = (u: Record<string, any>): User => ({
  id: u.id,
  application: u.application_id,
  primaryEmail: u.primary_email,
  emailNormalized: u.email_normalized,
  emailVerified: u.email_verified,
  status: u.status,
  profile: u.profile,
  mergedInto: u.merged_into,
  createdAt: new Date(u.created_at),
  updatedAt: new Date(u.updated_at),
});

/** A user of the caller's application, or 404 (another application's id is indistinguishable from none). */
/**
 * A sign-in identity an outside party vouches for (`saml`, `oauth`): none of a passkey's fields. The caller flushes, so
 * (application, kind, subject) stays unique in its transaction.
 */
export function createExternalIdentity(
  em: EntityManager,
  input: { application: string; user: string; kind: 'saml' | 'oauth'; subject: string; name: string },
): Identity {
  return em.create(IdentityEntity, {
    id: newId(),
    ...input,
    name: input.name.slice(0, 200),
    publicKey: null,
    signCount: null,
    userHandle: null,
    transports: null,
    aaguid: null,
    backupEligible: null,
    backedUp: null,
    lastUsedAt: new Date(),
  });
}

export async function findUser(ctx: TenantContext, id: string): Promise<User> {
  const user = await ctx.em.findOne(UserEntity, { id, application: ctx.application.id });
  if (!user) throw notFound('User');
  return user;
}

export async function createUser(
  ctx: TenantContext,
  input: { primary_email?: string; email_verified: boolean; profile: Record<string, unknown> },
) {
  const email = input.primary_email?.trim();
  const user = ctx.em.create(UserEntity, {
    id: newId(),
    application: ctx.application.id,
    primaryEmail: email ?? null,
    emailNormalized: email ? normalizeEmail(email) : null,
    emailVerified: input.email_verified,
    status: 'active',
    profile: input.profile,
    mergedInto: null,
  });
  const record = toUserRecord(user);
  recordEvent(ctx.em, user.application, 'user.created', record);
  try {
    await ctx.em.transactional(async (em) => {
      await markTraffic(em, ctx.application);
      await em.flush();
    });
  } catch (error) {
    // The unique index decides races: of 20 concurrent creates of one email, exactly one wins.
    if (error instanceof UniqueConstraintViolationException)
      throw new AppError('email_taken', 'A user with this email already exists');
    throw error;
  }
  return record;
}

export async function listUsers(ctx: TenantContext, input: PageQuery & { search?: string }) {
  const search = input.search?.trim();
  const where = {
    application: ctx.application.id,
    ...(search ? { emailNormalized: { $like: `%${escapeLike(search.toLowerCase())}%` } } : {}),
  };
  const [rows, total] = await ctx.em.findAndCount(UserEntity, where, {
    orderBy: { createdAt: 'desc', id: 'desc' },
    limit: input.limit,
    offset: input.offset,
  });
  return { users: rows.map(toUserRecord), total, limit: input.limit, offset: input.offset };
}

/**
 * `GET /v1/users/{id}` checks the secret key inside its statement ($1 the presented application, $2 the key's hash, $3
 * the scopes granting `users:read`): the key's row and the user ($4, of that application) in one round trip, the user
 * read only for a live key with the scope. The key's row is judged (`accept`) before the user is looked at.
 */
const KEY = secretKeyInStatement('$1', '$2', '$3');
const KEYED_USER = positional(
  `with ${KEY.cte}
  select presented_key.*,
         (select row_to_json(u) from users u where u.id = $4::uuid and u.application_id = $1 and ${KEY.valid}) as user_row
    from (select 1) as one left join presented_key on true`,
);

export async function getUser(ctx: SecretKeyInStatementContext, id: string) {
  const key = ctx.keyInStatement;
  if (key.notAKey) {
    // Another credential than a secret key (a console operator's token) is settled by its own query first.
    const { application } = await key.authenticate();
    const user = await ctx.em.findOne(UserEntity, { id, application: application.id });
    if (!user) throw notFound('User');
    return toUserRecord(user);
  }
  const row = onlyRow(
    await preparedQuery<({ id: null } | PresentedKeyRow) & { user_row: Record<string, unknown> | null }>(
      ctx.em,
      'users_keyed_get',
      KEYED_USER.sql,
      KEYED_USER.params([key.applicationId, key.hash, key.scopes, id]),
    ),
  );
  await key.accept(row.id === null ? undefined : row);
  if (!row.user_row) throw notFound('User');
  return toUserRecord(userFromRow(row.user_row));
}

export async function updateUser(
  ctx: TenantContext,
  input: { id: string; profile?: Record<string, unknown>; status?: 'active' | 'banned'; email_verified?: boolean },
) {
  return ctx.em.transactional(async (em) => {
    const user = await em.findOne(UserEntity, { id: input.id, application: ctx.application.id });
    if (!user) throw notFound('User');
    if (user.status === 'merged') throw new AppError('user_merged', 'This user was merged into another user');
    const banning = input.status === 'banned' && user.status !== 'banned';
    if (input.profile !== undefined) user.profile = input.profile;
    if (input.status !== undefined) user.status = input.status;
    if (input.email_verified !== undefined) user.emailVerified = input.email_verified;
    user.updatedAt = new Date();
    const record = toUserRecord(user);
    recordEvent(em, user.application, 'user.updated', record);
    await em.flush();
    if (banning) await runBanSteps(ctx.services.hooks, em, user);
    return record;
  });
}

export async function deleteUser(ctx: TenantContext, id: string) {
  await ctx.em.transactional(async (em) => {
    const user = await em.findOne(UserEntity, { id, application: ctx.application.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!user) throw notFound('User');
    await runDeleteSteps(ctx.services.hooks, em, user);
    recordEvent(em, user.application, 'user.deleted', { id });
    em.remove(user);
  });
  return { id, deleted: true as const };
}

/**
 * Merges the source user into the target in one transaction. Both rows are locked in id order, so A→B and B→A
 * running at once serialize: the second finds a merged user and fails, and no cycle can form.
 */
export async function mergeUsers(ctx: TenantContext, input: { source_user_id: string; target_user_id: string }) {
  const { source_user_id: sourceId, target_user_id: targetId } = input;
  if (sourceId === targetId) throw new AppError('cannot_merge_into_self', 'A user cannot be merged into itself');
  const applicationId = ctx.application.id;
  const target = await ctx.em.transactional(async (em) => {
    const locked = await em.find(
      UserEntity,
      { id: { $in: [sourceId, targetId] }, application: applicationId },
      { orderBy: { id: 'asc' }, lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    const source = locked.find((u) => u.id === sourceId);
    const target = locked.find((u) => u.id === targetId);
    if (!source || !target) throw notFound('User');
    if (source.status === 'merged' || target.status === 'merged') {
      throw new AppError('user_merged', 'The source or target user was already merged');
    }
    await runMergeSteps(ctx.services.hooks, em, { applicationId, sourceUserId: sourceId, targetUserId: targetId });
    source.status = 'merged';
    source.mergedInto = targetId;
    source.updatedAt = new Date();
    recordEvent(em, applicationId, 'user.merged', { source_user_id: sourceId, target_user_id: targetId });
    return target;
  });
  return toUserRecord(target);
}

import { createHmac } from 'node:crypto';
import { type Context, header, type Services } from '../../context.ts';
import { type EntityManager, preparedQuery } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { actAs, actingScope } from '../../lib/acting.ts';
import { base62Of, randomSecret, sha256 } from '../../lib/crypto.ts';
import { deleteInBatches, type PurgeStep, retentionDays } from '../../lib/housekeeping.ts';
import { isUuid, newId } from '../../lib/ids.ts';
import type { Application } from '../applications/application.entity.ts';
import { ApplicationSettingsSchema } from '../applications/applications.schema.ts';
import { settingsOf, versionedApplication } from '../applications/applications.service.ts';
import { bearer, type EndUserInStatementContext, resolveApplication } from '../applications/callers.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { allowOrigin } from '../applications/cors.ts';
import { EVENT_COLUMNS, recordEvent } from '../events/events.service.ts';
import { MembershipEntity } from '../organizations/membership.entity.ts';
import type { MemberSuspendStep } from '../organizations/organizations.hooks.ts';
import { type AccessTokenClaims, signAccessToken, verifyAccessToken } from '../signing-keys/signing-keys.service.ts';
import type { User } from '../users/user.entity.ts';
import type { BanStep } from '../users/users.hooks.ts';
import type { MergeStep } from '../users/users.merge.ts';
import { findUser, userFromRow } from '../users/users.service.ts';
import type { SignedInContext } from './contexts.ts';
import { RefreshTokenEntity } from './refresh-token.entity.ts';
import { type Session, SessionEntity } from './session.entity.ts';
import type { SessionRecord, Tokens } from './sessions.schema.ts';

const newRefreshToken = () => randomSecret('rt_');

export interface NewSession {
  session: Session;
  refreshToken: string;
}

export interface SessionOptions {
  aal: number;
  /** The authentication methods used (RFC 8176 values; `amrOf` in the sign-in module). */
  amr: string[];
  ip: string;
  userAgent: string | undefined;
  mfaEnrollmentRequired: boolean;
  hostId?: string | null;
}

/**
 * The CTEs `s`, `r` and `e` of a statement that opens a session for the user of `account` (a CTE answering that user's
 * `id`; when it answers no row, nothing is opened): the session, its first refresh token and its `session.created`
 * event. They join the caller's statement, so the session is written with whatever else it writes, in one round trip.
 */
export function sessionOpening(application: Application, account: string, options: SessionOptions) {
  const refreshToken = newRefreshToken();
  const now = new Date();
  const session = {
    id: newId(),
    application: application.id,
    aal: options.aal,
    amr: options.amr,
    organization: null,
    refreshTokenHash: sha256(refreshToken),
    browserTokenHash: null,
    mfaEnrollmentRequired: options.mfaEnrollmentRequired,
    hostId: options.hostId ?? null,
    userAgent: options.userAgent?.slice(0, 512) ?? null,
    ip: options.ip.slice(0, 64),
    createdAt: now,
    lastActiveAt: now,
    expiresAt: new Date(now.getTime() + settingsOf(application).session.absolute_timeout_s * 1000),
    revokedAt: null,
  };
  const acting = actingScope();
  return {
    session,
    refreshToken,
    ctes: `s as (
       insert into sessions (id, application_id, user_id, aal, amr, refresh_token_hash, mfa_enrollment_required, host_id,
                             user_agent, ip, created_at, last_active_at, expires_at)
       select ?, ?, ${account}.id, ?, ?::jsonb, ?, ?, ?, ?, ?, ?, ?, ? from ${account}
       returning id, user_id, aal
     ), r as (
       insert into refresh_tokens (token_hash, session_id, created_at) select ?, s.id, ? from s
     ), e as (
       insert into events (${EVENT_COLUMNS})
       select ?, ?, 'session.created', jsonb_build_object('id', s.id, 'user_id', s.user_id, 'aal', s.aal), ?,
              ?, coalesce(?::text, s.user_id::text), ?, ?, null, 'session', s.id::text from s
     )`,
    params: [
      session.id,
      session.application,
      session.aal,
      JSON.stringify(session.amr),
      session.refreshTokenHash,
      session.mfaEnrollmentRequired,
      session.hostId,
      session.userAgent,
      session.ip,
      now,
      now,
      session.expiresAt,
      session.refreshTokenHash,
      now,
      newId(),
      application.id,
      now,
      // The audit columns (as `auditValues` answers them for session.created): the user who signed in acted, unless
      // an authenticated caller did; the id null here is theirs, filled by the statement.
      ...(acting.actor.type === 'system' ? ['user', null] : [acting.actor.type, acting.actor.id]),
      acting.ip,
      acting.userAgent,
    ],
  };
}

/**
 * Opens a session for `user` (flushed already) in one statement, atomic on its own, joining the caller's transaction:
 * `sessionOpening`'s rows, and `also` (CTEs of the caller's, `name as (…)`, written with them).
 */
export async function openSession(
  em: EntityManager,
  application: Application,
  user: User,
  options: SessionOptions,
  also?: { sql: string; params: unknown[] },
): Promise<NewSession> {
  const opening = sessionOpening(application, 'account', options);
  const sql = `with account as (select ?::uuid as id), ${opening.ctes}${also ? `, ${also.sql}` : ''} select 1 from s`;
  const params = [user.id, ...opening.params, ...(also?.params ?? [])];
  await (also ? em.execute(sql, params) : preparedQuery(em, 'open_session', sql, params));
  return { session: { ...opening.session, user: user.id }, refreshToken: opening.refreshToken };
}

async function organizationRole(em: EntityManager, session: Pick<Session, 'organization' | 'user'>) {
  if (!session.organization) return null;
  const membership = await em.findOne(MembershipEntity, { organization: session.organization, user: session.user });
  // A membership its directory suspended gives no organization claims.
  return membership?.status === 'active' ? membership.role : null;
}

/** What an access token is signed from. */
type TokenSession = Pick<Session, 'id' | 'user' | 'aal' | 'organization' | 'hostId'>;

/** Signs the access token for a session and pairs it with the refresh token just issued. */
export async function issueTokens(
  em: EntityManager,
  services: Services,
  application: Application,
  session: TokenSession,
  refreshToken: string,
): Promise<Tokens> {
  return signTokens(em, services, application, session, await organizationRole(em, session), refreshToken);
}

async function signTokens(
  em: EntityManager,
  services: Services,
  application: Application,
  session: TokenSession,
  role: string | null,
  refreshToken: string,
): Promise<Tokens> {
  const ttl = settingsOf(application).session.access_token_ttl_s;
  const accessToken = await signAccessToken(
    em,
    services,
    application.id,
    {
      sub: session.user,
      sid: session.id,
      aal: session.aal,
      org: role ? (session.organization ?? null) : null,
      org_role: role,
      ...(session.hostId ? { host: session.hostId } : {}),
    },
    ttl,
  );
  return {
    access_token: accessToken,
    refresh_token: refreshToken,
    token_type: 'Bearer',
    expires_in: ttl,
    aal: session.aal,
    session_id: session.id,
  };
}

/**
 * How often a session's use is recorded as activity: a session used again within this many seconds of its last
 * recorded activity is not written (every page and every authorization request of a signed-in browser reads it, and
 * a client may refresh often; an idle timeout is minutes long, so the idle clock is at most this late).
 */
export const TOUCH_EVERY_S = 30;

const invalidRefresh = () => new AppError('invalid_token', 'The refresh token is invalid, expired or already used');

/**
 * The refresh token that rotating `presented` issues: a keyed hash of it (HMAC-SHA256 with a key derived from the
 * master key), so it is as unguessable as a random one, and presenting the same token again yields the same successor.
 * That is what makes the grace safe: a replay is answered the very pair the first use was, never a second, independent
 * token (CONTRACT additions: refresh-token grace).
 */
const successorOf = (services: Services, presented: string): string =>
  `rt_${base62Of(createHmac('sha256', services.secretBox.deriveKey('refresh-token-successor')).update(presented).digest())}`;

/**
 * `settings.session.idle_timeout_s` of the application row `alias`, in SQL (its default where the stored settings lack
 * it, as `settingsOf` reads them): one parameter, `DEFAULT_IDLE_TIMEOUT_S`.
 */
const IDLE_TIMEOUT_SQL = (alias: string) => `coalesce((${alias}.settings #>> '{session,idle_timeout_s}')::int, ?)`;
const DEFAULT_IDLE_TIMEOUT_S = ApplicationSettingsSchema.parse({}).session.idle_timeout_s;

type RotatedRow = {
  id: string;
  user_id: string;
  aal: number;
  organization_id: string | null;
  host_id: string | null;
  org_role: string | null;
};

/**
 * Rotates a refresh token. The session's current hash is swapped in one conditional UPDATE (judged by the database
 * clock), so of concurrent uses exactly one rotates. A token that was issued for the session but is no longer its
 * current one is reuse — a stolen token or a replay — and revokes the whole session (SECURITY 3), except within the
 * grace (`Services.refreshGraceS`): the token rotated last, presented again while its successor is still unused and
 * the rotation is younger than the grace, answers that same successor with a fresh access token (a client whose
 * answer was lost, or concurrent uses of one token, which all get the one rotation's pair).
 */
export async function refreshSession(ctx: EndUserInStatementContext, refreshToken: string): Promise<Tokens> {
  const presented = sha256(refreshToken);
  const next = successorOf(ctx.services, refreshToken);
  const nextHash = sha256(next);
  const { id: applicationId, origin } = ctx.applicationInStatement;
  const versioned = versionedApplication(ctx.services, applicationId);
  // The hot path is one statement, atomic on its own: read the application (its origin gates the rotation), rotate the
  // hash, record the issued one for reuse detection, and read the organization role for the token — one round trip,
  // no transaction to open and commit, no unit of work. The session is found through the presented token's row in
  // refresh_tokens (its primary key): no index on sessions covers the hash, and activity is written only every
  // TOUCH_EVERY_S, so a rotation changes no indexed column and PostgreSQL updates the row in place (a HOT update:
  // no new entry in the table's five indexes).
  const [row] = await preparedQuery<RotatedRow & { application: Record<string, unknown> | null; application_version: string }>(
    ctx.em,
    'refresh_session',
    `with a as (select *, xmin, ctid from applications where id = ?), rotated as (
       update sessions s set refresh_token_hash = ?,
              last_active_at = case when s.last_active_at < now() - interval '${TOUCH_EVERY_S} seconds' then now()
                                    else s.last_active_at end
         from refresh_tokens t, users u, a
        where t.token_hash = ? and s.id = t.session_id and s.refresh_token_hash = t.token_hash
          and s.application_id = a.id and s.revoked_at is null and ${origin.sql('a')}
          and s.expires_at > now() and s.last_active_at > now() - make_interval(secs => ${IDLE_TIMEOUT_SQL('a')})
          and u.id = s.user_id and u.status = 'active'
        returning s.id, s.user_id, s.aal, s.organization_id, s.host_id
     ), issued as (
       insert into refresh_tokens (token_hash, session_id, created_at) select ?, id, now() from rotated
     )
     select ${versioned.sql('a')}, r.id, r.user_id, r.aal, r.organization_id, r.host_id,
            (select m.role from organization_members m where m.organization_id = r.organization_id and m.user_id = r.user_id
                and m.status = 'active') as org_role
       from a left join rotated r on true`,
    [applicationId, nextHash, presented, ...origin.params, DEFAULT_IDLE_TIMEOUT_S, nextHash, ...versioned.params],
  );
  const application = ctx.applicationInStatement.accept(row && versioned.resolve(row));
  const rotated = row?.id ? row : await withinGrace(ctx, application, presented, nextHash);
  if (!rotated) {
    await detectReuse(ctx.em, application, presented);
    throw invalidRefresh();
  }
  const session = {
    id: rotated.id,
    user: rotated.user_id,
    aal: rotated.aal,
    organization: rotated.organization_id,
    hostId: rotated.host_id,
  };
  return signTokens(ctx.em, ctx.services, application, session, rotated.org_role, next);
}

/**
 * The session whose current refresh token is the successor of the presented one, when that rotation is younger than
 * the grace and the session is still live (not revoked, not expired, not idle, its user active): a read, nothing
 * changes. The presented token must be one this session issued (it is, if its successor is current: the check costs
 * nothing and keeps the rule plain).
 */
async function withinGrace(
  ctx: Context,
  application: Application,
  presented: string,
  successorHash: string,
): Promise<RotatedRow | undefined> {
  const graceS = ctx.services.refreshGraceS;
  if (graceS <= 0) return undefined;
  const { idle_timeout_s } = settingsOf(application).session;
  const [row] = await preparedQuery<RotatedRow>(
    ctx.em,
    'refresh_session_grace',
    `select s.id, s.user_id, s.aal, s.organization_id, s.host_id,
            (select m.role from organization_members m where m.organization_id = s.organization_id and m.user_id = s.user_id) as org_role
       from refresh_tokens issued
       join sessions s on s.id = issued.session_id and s.refresh_token_hash = issued.token_hash
       join users u on u.id = s.user_id and u.status = 'active'
       join refresh_tokens spent on spent.token_hash = ? and spent.session_id = s.id
      where issued.token_hash = ? and s.application_id = ? and s.revoked_at is null
        and s.expires_at > now() and s.last_active_at > now() - make_interval(secs => ?)
        and issued.created_at > now() - make_interval(secs => ?)`,
    [presented, successorHash, application.id, idle_timeout_s, graceS],
  );
  return row;
}

/**
 * A refresh token this session issued but has since replaced is reuse — a stolen token or a replay — and revokes the
 * session. (A current token refused for idleness, expiry or a ban is not reuse, and revokes nothing.)
 */
async function detectReuse(em: EntityManager, application: Application, presented: string): Promise<void> {
  await em.transactional(async (tx) => {
    const known = await tx.findOne(RefreshTokenEntity, { tokenHash: presented });
    const session = known ? await tx.findOne(SessionEntity, { id: known.session, application: application.id }) : null;
    if (session && !session.revokedAt && session.refreshTokenHash !== presented) {
      await revokeWhere(tx, application.id, { id: session.id }, 'refresh_token_reuse');
    }
  });
}

/**
 * Revokes the live sessions matching `where` and writes their `session.revoked` events in one transaction (joining
 * the caller's, if any): a revocation is never half done. Answers how many were live.
 */
async function revokeWhere(
  em: EntityManager,
  applicationId: string,
  where: { id?: string; user?: string; organization?: string },
  reason: string,
) {
  return em.transactional(async (tx) => {
    const live = await tx.find(SessionEntity, { ...where, application: applicationId, revokedAt: null });
    if (!live.length) return 0;
    await tx.nativeUpdate(SessionEntity, { id: { $in: live.map((s) => s.id) }, revokedAt: null }, { revokedAt: new Date() });
    for (const s of live) recordEvent(tx, applicationId, 'session.revoked', { id: s.id, user_id: s.user, reason });
    await tx.flush();
    return live.length;
  });
}

/** Revokes one session of the application (when live), with its `session.revoked` event. */
export const revokeSession = (em: EntityManager, applicationId: string, id: string, reason: string) =>
  revokeWhere(em, applicationId, { id }, reason);

export const revokeUserSessions = (em: EntityManager, applicationId: string, userId: string, reason: string) =>
  revokeWhere(em, applicationId, { user: userId }, reason);

export async function revokeSessionsOfUser(ctx: TenantContext, id: string) {
  const user = await findUser(ctx, id);
  return { user_id: user.id, revoked: await revokeUserSessions(ctx.em, user.application, user.id, 'revoked_by_admin') };
}

export async function signOut(ctx: SignedInContext) {
  await revokeWhere(ctx.em, ctx.application.id, { id: ctx.session.id }, 'sign_out');
  return { id: ctx.session.id, deleted: true as const };
}

/**
 * The user's sessions that can still be used: not revoked, not past their absolute lifetime, and still refreshable
 * within the idle timeout — or the caller's own, which its access token proves alive.
 */
export async function listSessions(ctx: SignedInContext) {
  const { idle_timeout_s } = settingsOf(ctx.application).session;
  const idleSince = Date.now() - idle_timeout_s * 1000;
  const rows = await ctx.em.find(
    SessionEntity,
    { application: ctx.application.id, user: ctx.session.user, revokedAt: null, expiresAt: { $gt: new Date() } },
    { orderBy: { createdAt: 'desc', id: 'desc' } },
  );
  return rows
    .filter((s) => s.id === ctx.session.id || s.lastActiveAt.getTime() > idleSince)
    .map((s) => toSessionRecord(s, ctx.session.id));
}

/**
 * Support's view of a user's live sessions (the same rule as the user's own list), newest first; `current` is always
 * false: no session is the caller's. 404 for a user of another application, or none.
 */
export async function listUserSessions(ctx: TenantContext, userId: string): Promise<SessionRecord[]> {
  const user = await findUser(ctx, userId);
  const { idle_timeout_s } = settingsOf(ctx.application).session;
  const rows = await ctx.em.find(
    SessionEntity,
    {
      application: ctx.application.id,
      user: user.id,
      revokedAt: null,
      expiresAt: { $gt: new Date() },
      lastActiveAt: { $gt: new Date(Date.now() - idle_timeout_s * 1000) },
    },
    { orderBy: { createdAt: 'desc', id: 'desc' } },
  );
  return rows.map((s) => toSessionRecord(s, ''));
}

/** Support signs a user out of one session (its `session.revoked` event says `revoked_by_admin`); 404 otherwise. */
export async function revokeUserSession(ctx: TenantContext, userId: string, sessionId: string) {
  const user = await findUser(ctx, userId);
  const session = await ctx.em.findOne(SessionEntity, { id: sessionId, application: ctx.application.id, user: user.id });
  if (!session || session.revokedAt) throw notFound('Session');
  await revokeWhere(ctx.em, ctx.application.id, { id: session.id }, 'revoked_by_admin');
  return { id: session.id, deleted: true as const };
}

const toSessionRecord = (s: Session, currentId: string): SessionRecord => ({
  id: s.id,
  aal: s.aal,
  organization_id: s.organization ?? null,
  user_agent: s.userAgent ?? null,
  ip: s.ip ?? null,
  created_at: s.createdAt.toISOString(),
  last_active_at: s.lastActiveAt.toISOString(),
  expires_at: s.expiresAt.toISOString(),
  current: s.id === currentId,
  mfa_enrollment_required: s.mfaEnrollmentRequired,
});

/** The caller's own session (verified with its access token): where `mfa_enrollment_required` is read. */
export const getCurrentSession = (ctx: SignedInContext): SessionRecord => toSessionRecord(ctx.session, ctx.session.id);

/** The user now has a second factor: none of their sessions still has to ask them to enroll one. */
export async function clearMfaEnrollmentRequired(em: EntityManager, applicationId: string, userId: string) {
  await em.nativeUpdate(
    SessionEntity,
    { application: applicationId, user: userId, mfaEnrollmentRequired: true },
    { mfaEnrollmentRequired: false },
  );
}

/** A signed-in user revokes one of their own sessions; anyone else's id is 404. */
export async function revokeOwnSession(ctx: SignedInContext, id: string) {
  const own = await ctx.em.findOne(SessionEntity, { id, application: ctx.application.id, user: ctx.session.user });
  if (!own) throw notFound('Session');
  await revokeWhere(ctx.em, ctx.application.id, { id }, 'revoked_by_user');
  return { id, deleted: true as const };
}

/**
 * Makes an organization the session's active one (or none) and answers fresh tokens carrying `org`/`org_role`.
 * Only an organization the user belongs to can be chosen; any other id is 404.
 */
export async function switchOrganization(ctx: SignedInContext, organizationId: string | null) {
  const session = ctx.session;
  if (organizationId) {
    const membership = await ctx.em.findOne(MembershipEntity, {
      organization: organizationId,
      user: session.user,
      application: ctx.application.id,
    });
    if (!membership) throw notFound('Organization');
    if (membership.status !== 'active') {
      throw new AppError('access_denied', 'Your membership of this organization is suspended by its directory');
    }
  }
  const next = newRefreshToken();
  await ctx.em.transactional(async (em) => {
    await em.nativeUpdate(
      SessionEntity,
      { id: session.id },
      { organization: organizationId, refreshTokenHash: sha256(next), lastActiveAt: new Date() },
    );
    em.create(RefreshTokenEntity, { tokenHash: sha256(next), session: session.id });
  });
  return issueTokens(ctx.em, ctx.services, ctx.application, { ...session, organization: organizationId }, next);
}

/**
 * Authenticates a signed-in (ES★) request. The hot path is one signature check against a cached key and one
 * indexed read that returns the session (live by the database clock), its user (still active: a ban ends access at
 * once) and the application together — so sign-out and revocation take effect at once on every process. On any
 * failure the slow path answers in the contract's order: the application first, then its origin, then the token.
 */
export async function authenticateSignedIn(ctx: Context): Promise<{ application: Application; session: Session; user: User }> {
  const applicationId = header(ctx, 'x-application-id') ?? '';
  const authorization = header(ctx, 'authorization');
  const refuse = async (error: AppError): Promise<never> => {
    allowOrigin(ctx, await resolveApplication(ctx));
    throw error;
  };
  if (!isUuid(applicationId)) return refuse(new AppError('application_not_resolved', 'Unknown or missing x-application-id'));
  if (!authorization) return refuse(new AppError('missing_credentials', 'An access token is required'));
  const token = bearer(authorization);
  if (!token) return refuse(new AppError('invalid_token', 'The access token is invalid or expired'));
  let claims: AccessTokenClaims;
  try {
    claims = await verifyAccessToken(ctx, applicationId, token);
  } catch (error) {
    return refuse(error instanceof AppError ? error : new AppError('invalid_token', 'The access token is invalid or expired'));
  }
  const versioned = versionedApplication(ctx.services, applicationId);
  const [row] = await preparedQuery<{ s: JsonRow; u: JsonRow; application: JsonRow | null; application_version: string }>(
    ctx.em,
    'signed_in_session',
    `select row_to_json(s) as s, row_to_json(u) as u, ${versioned.sql('a')}
       from sessions s join users u on u.id = s.user_id join applications a on a.id = s.application_id
      where s.id = ? and s.application_id = ? and s.user_id = ? and s.revoked_at is null and s.expires_at > now()
        and u.status = 'active'`,
    [...versioned.params, claims.sid, applicationId, claims.sub],
  );
  if (!row) return refuse(new AppError('invalid_token', 'The session has ended'));
  // Plain records, not managed entities: this path only reads, and mapping three entities per request was a third
  // of its cost. Writes on signed-in routes go through native statements or load what they change.
  const application = versioned.resolve(row);
  allowOrigin(ctx, application);
  const user = userFromRow(row.u);
  actAs({ type: 'user', id: user.id });
  // The token's own level bounds the session's: a token issued before a step-up raised the session stays at its aal
  // (the step-up answers new tokens; the earlier ones keep what they said until they expire).
  const session = sessionFromRow(row.s);
  return { application, session: { ...session, aal: Math.min(session.aal, claims.aal) }, user };
}

type JsonRow = Record<string, any>;
const date = (value: string) => new Date(value);
const dateOrNull = (value: string | null) => (value === null ? null : new Date(value));

const sessionFromRow = (s: JsonRow): Session => ({
  id: s.id,
  application: s.application_id,
  user: s.user_id,
  aal: s.aal,
  amr: s.amr,
  organization: s.organization_id,
  refreshTokenHash: s.refresh_token_hash,
  browserTokenHash: s.browser_token_hash,
  mfaEnrollmentRequired: s.mfa_enrollment_required,
  hostId: s.host_id,
  userAgent: s.user_agent,
  ip: s.ip,
  createdAt: date(s.created_at),
  lastActiveAt: date(s.last_active_at),
  expiresAt: date(s.expires_at),
  revokedAt: dateOrNull(s.revoked_at),
});

/** Merge: the source's sessions are revoked (its identities now sign in the target). */
export const mergeSessions: MergeStep = async (em, { applicationId, sourceUserId }) => {
  await revokeUserSessions(em, applicationId, sourceUserId, 'user_merged');
};

/** A ban signs the user out everywhere, in the ban's transaction: never banned-but-still-signed-in. */
export const revokeSessionsOnBan: BanStep = async (em, user) => {
  await revokeUserSessions(em, user.application, user.id, 'user_banned');
};

/** A membership suspended by its directory ends the sessions whose active organization it is. */
export const revokeSessionsOnSuspend: MemberSuspendStep = async (em, { applicationId, organizationId, userId }) => {
  await revokeWhere(em, applicationId, { user: userId, organization: organizationId }, 'membership_suspended');
};

/** A session that ended (revoked, or past its absolute expiry). */
const ENDED = (alias: string, age: string) =>
  `((${alias}.revoked_at is not null and ${alias}.revoked_at < now() - ${age}) or ${alias}.expires_at < now() - ${age})`;

/**
 * Retention. Rotated refresh-token hashes serve reuse detection, which matters only while the session lives: they go
 * a day after it ended. The ended session itself stays in the user's history `settings.retention.ended_sessions_days`
 * (default 30).
 */
export const purgeRefreshTokens: PurgeStep = (em) =>
  deleteInBatches(
    em,
    'refresh_tokens',
    `exists (select 1 from sessions s where s.id = t.session_id and ${ENDED('s', "interval '1 day'")})`,
  );
export const purgeSessions: PurgeStep = (em) =>
  deleteInBatches(em, 'sessions', ENDED('t', `make_interval(days => ${retentionDays('ended_sessions_days', 30)})`));

import type { Context } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { AppError, invalidPendingToken } from '../../errors.ts';
import { randomSecret, sha256 } from '../../lib/crypto.ts';
import { deleteInBatches, registerPurgeStep, SPENT_ONE_TIME_ROWS } from '../../lib/housekeeping.ts';
import { newId } from '../../lib/ids.ts';
import type { Application } from '../applications/application.entity.ts';
import { markTraffic, settingsOf } from '../applications/applications.service.ts';
import { missingConsents } from '../consent/consent.service.ts';
import { createSession, issueTokens, type NewSession } from '../sessions/sessions.service.ts';
import { type User, UserEntity } from '../users/user.entity.ts';
import { toUserRecord } from '../users/users.service.ts';
import { PendingTokenEntity } from './pending-token.entity.ts';
import { MFA_METHODS, type MfaMethod, type SignInResult } from './sign-in.schema.ts';

const PENDING_TOKEN_TTL_MS = 10 * 60_000;

/** Who is signing in, as a first factor (or a resumed step) established it. */
export interface SignInSubject {
  user: User;
  /** 1 for a single factor; 2 for a multi-factor authenticator or after a second factor. */
  aal: 1 | 2;
  firstFactor: string;
}

/** Extra checks before anyone signs in (host access rules plug in here); they throw 403 `access_denied`. */
export type SignInCheck = (em: EntityManager, application: Application, user: User) => Promise<void>;
/** The second factors a user has; each capability that provides one registers a source. */
export type SecondFactorSource = (em: EntityManager, user: User) => Promise<MfaMethod[]>;

const checks: SignInCheck[] = [];
const secondFactorSources: SecondFactorSource[] = [];
export const registerSignInCheck = (check: SignInCheck) => void checks.push(check);
export const registerSecondFactorSource = (source: SecondFactorSource) => void secondFactorSources.push(source);

export async function secondFactorMethods(em: EntityManager, user: User): Promise<MfaMethod[]> {
  const found = new Set<MfaMethod>();
  for (const source of secondFactorSources) for (const method of await source(em, user)) found.add(method);
  return MFA_METHODS.filter((method) => found.has(method));
}

/** Follows `merged_into` to the user who now owns a tombstoned user's identities. */
export async function resolveMerged(em: EntityManager, user: User): Promise<User> {
  let current = user;
  for (let hops = 0; current.status === 'merged' && current.mergedInto && hops < 10; hops++) {
    current = await em.findOneOrFail(UserEntity, { id: current.mergedInto, application: current.application });
  }
  return current;
}

async function pending(em: EntityManager, application: Application, subject: SignInSubject, stage: 'consent' | 'mfa') {
  const token = randomSecret('pt_');
  em.create(PendingTokenEntity, {
    id: newId(),
    application: application.id,
    user: subject.user.id,
    tokenHash: sha256(token),
    stage,
    aal: subject.aal,
    firstFactor: subject.firstFactor,
    failedAttempts: 0,
    expiresAt: new Date(Date.now() + PENDING_TOKEN_TTL_MS),
    consumedAt: null,
  });
  return token;
}

type Decision = { result: SignInResult } | { session: NewSession; user: User };

/** The state machine of CONTRACT §4, inside the transaction that consumed the step that led here. */
async function decide(ctx: Context, em: EntityManager, application: Application, subject: SignInSubject): Promise<Decision> {
  const user = await resolveMerged(em, subject.user);
  if (user.status !== 'active') throw new AppError('access_denied', 'Sign-in is not allowed for this account');
  for (const check of checks) await check(em, application, user);
  const resolved = { ...subject, user };

  const missing = await missingConsents(em, application, user.id);
  if (missing.length) {
    const token = await pending(em, application, resolved, 'consent');
    return { result: { status: 'consent_required', pending_token: token, consent_documents: missing } };
  }
  // At aal 2 a second factor was just used (or the first factor was one): nothing to ask, nothing to enrol.
  const methods = subject.aal < 2 ? await secondFactorMethods(em, user) : [];
  if (methods.length) {
    const token = await pending(em, application, resolved, 'mfa');
    return { result: { status: 'mfa_required', pending_token: token, mfa: { methods, pending_token: token } } };
  }
  await markTraffic(em, application);
  const session = createSession(em, application, user, {
    aal: subject.aal,
    ip: ctx.ip,
    userAgent: typeof ctx.headers['user-agent'] === 'string' ? ctx.headers['user-agent'] : undefined,
    mfaEnrollmentRequired: subject.aal < 2 && settingsOf(application).mfa === 'required' && methods.length === 0,
  });
  return { session, user };
}

/**
 * Every first factor (magic link, passkey, OAuth, SAML) and every resumed step ends here. `step` runs inside one
 * transaction with the state machine: it consumes its one-time secret and says who signs in, so a failure anywhere
 * consumes nothing. Tokens are signed after the commit (never holding a transaction across key loading).
 */
export async function completeSignIn(
  ctx: Context,
  application: Application,
  step: (em: EntityManager) => Promise<SignInSubject>,
): Promise<SignInResult> {
  const decision = await ctx.em.transactional(async (em) => {
    const outcome = await decide(ctx, em, application, await step(em));
    await em.flush();
    return outcome;
  });
  if ('result' in decision) return decision.result;
  const { session, refreshToken } = decision.session;
  const tokens = await issueTokens(ctx.em, ctx.services, application, session, refreshToken);
  return { status: 'complete', tokens, user: toUserRecord(decision.user) };
}

interface PendingRow {
  id: string;
  user_id: string;
  aal: number;
  first_factor: string;
}

/** A pending token as the client presents it, or by id when a WebAuthn `state` bound to it was presented instead. */
export type PendingRef = { token: string } | { id: string };
const pendingWhere = (ref: PendingRef) => ('token' in ref ? { tokenHash: sha256(ref.token) } : { id: ref.id });

/**
 * Consumes a pending token of the given stage, atomically and once (expiry by the database clock); an unknown,
 * expired, used or wrong-stage token is 401 `invalid_pending_token`.
 */
export async function consumePendingToken(
  em: EntityManager,
  application: Application,
  ref: PendingRef,
  stage: 'consent' | 'mfa',
): Promise<SignInSubject> {
  const [column, value] = 'token' in ref ? ['token_hash', sha256(ref.token)] : ['id', ref.id];
  const rows = await em.execute<PendingRow[]>(
    `update pending_tokens set consumed_at = now()
      where ${column} = ? and application_id = ? and stage = ? and consumed_at is null and expires_at > now()
      returning id, user_id, aal, first_factor`,
    [value, application.id, stage],
  );
  const row = rows[0];
  if (!row) throw invalidPendingToken();
  const user = await em.findOneOrFail(UserEntity, { id: row.user_id });
  return { user, aal: row.aal === 2 ? 2 : 1, firstFactor: row.first_factor };
}

/** Reads a live pending token without consuming it (to validate a request before acting on it). */
export async function peekPendingToken(em: EntityManager, application: Application, ref: PendingRef, stage: 'consent' | 'mfa') {
  const row = await em.findOne(PendingTokenEntity, {
    ...pendingWhere(ref),
    application: application.id,
    stage,
    consumedAt: null,
  });
  if (!row || row.expiresAt.getTime() <= Date.now()) throw invalidPendingToken();
  return row;
}

registerPurgeStep('pending_tokens', (em) => deleteInBatches(em, 'pending_tokens', SPENT_ONE_TIME_ROWS));

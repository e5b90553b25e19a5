import { randomInt } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { Services } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { AppError, assertionFailed, invalidPendingToken, notFound, stepUpRequired } from '../../errors.ts';
import { sha256 } from '../../lib/crypto.ts';
import { newId } from '../../lib/ids.ts';
import type { Limit } from '../../lib/rate-limit.ts';
import { iso } from '../../lib/time.ts';
import type { TenantContext } from '../applications/contexts.ts';
import type { SignedInContext } from '../sessions/contexts.ts';
import { clearMfaEnrollmentRequired } from '../sessions/sessions.service.ts';
import type { SignInResult } from '../sign-in/sign-in.schema.ts';
import {
  completeSignIn,
  consumePendingToken,
  type PendingRef,
  releaseSecondFactorAttempt,
  reserveSecondFactorAttempt,
  type SecondFactorKind,
  type SecondFactorSource,
  type Statement,
  secondFactorMethods,
} from '../sign-in/sign-in.service.ts';
import { sendSecurityNotice } from '../templates/templates.service.ts';
import type { MergeStep } from '../users/users.merge.ts';
import type { MfaFactorKind, MfaFactorRecord } from './mfa.schema.ts';
import { MfaBackupCodeEntity } from './mfa-backup-code.entity.ts';
import { type MfaFactor, MfaFactorEntity } from './mfa-factor.entity.ts';

/** RFC 6238 as every authenticator app implements it. */
const TOTP_OPTIONS = { algorithm: 'SHA1', digits: 6, period: 30 } as const;
/** ±1 step (SECURITY 4): tolerates 30 s of clock drift either way, and no more. */
const TOTP_WINDOW = 1;
/** A pending sign-in dies after this many wrong second factors (SECURITY 6). */
const MAX_FAILED_ATTEMPTS = 5;
/**
 * Failures across sign-ins, so that fresh pending tokens do not buy fresh guesses: per user (an attacker who has
 * the first factor) and per client address (one client guessing for many users).
 */
const failureLimits = (applicationId: string, userId: string, ip: string): Limit[] => [
  { name: 'mfa_failures_user', key: `${applicationId}:${userId}`, points: 20, windowS: 900 },
  { name: 'mfa_failures_address', key: `${applicationId}:${ip}`, points: 100, windowS: 900 },
];
const BACKUP_CODE_COUNT = 10;
/** Crockford's base32 (no i, l, o, u): 10 characters are 50 bits, read aloud or typed without ambiguity. */
const BACKUP_CODE_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const BACKUP_CODE_LENGTH = 10;
const TOTP_NAME = 'Authenticator app';
const BACKUP_CODES_NAME = 'Backup codes';

export const toFactorRecord = (factor: MfaFactor): MfaFactorRecord => ({
  id: factor.id,
  // the entity types the column as string; only MFA factor kinds are ever written to it.
  kind: factor.kind as MfaFactorKind,
  name: factor.name,
  created_at: factor.createdAt.toISOString(),
  last_used_at: iso(factor.lastUsedAt),
});

function signedIn(ctx: SignedInContext) {
  return { application: ctx.application, session: ctx.session, user: ctx.user };
}

const confirmedFactors = (em: EntityManager, userId: string) =>
  em.find(MfaFactorEntity, { user: userId, confirmedAt: { $ne: null } }, { orderBy: { createdAt: 'desc', id: 'desc' } });

/**
 * Adding a factor when the user already has one needs a session at aal 2: otherwise whoever holds only the first
 * factor (a mailbox, a stolen aal 1 session) could enroll an authenticator of their own and pass every later
 * second-factor check. Every registered source counts (passkeys too), and so does any confirmed factor of ours,
 * even a set of backup codes that is used up.
 */
export async function requireStepUpWhenEnrolled(ctx: SignedInContext) {
  const { session, user } = signedIn(ctx);
  if (session.aal >= 2) return;
  if ((await secondFactorMethods(ctx.services.hooks, ctx.em, user)).length || (await confirmedFactors(ctx.em, user.id)).length) {
    throw stepUpRequired();
  }
}

/** The time step a code belongs to within ±1 step of now, or null. The seed is decrypted only for this check. */
function matchingStep(services: Services, factor: Pick<MfaFactor, 'id' | 'secretSealed'>, code: string): number | null {
  if (!factor.secretSealed) return null;
  const now = services.totpClock();
  const seed = services.secretBox.decrypt(factor.secretSealed, `totp:${factor.id}`);
  const totp = new TOTP({ ...TOTP_OPTIONS, secret: Secret.fromBase32(seed) });
  const delta = totp.validate({ token: code, timestamp: now, window: TOTP_WINDOW });
  return delta === null ? null : totp.counter({ timestamp: now }) + delta;
}

/**
 * Accepts a time step once: the factor's last accepted step moves forward in one conditional UPDATE, so the same
 * code twice — even twenty times at once, on any number of processes — is accepted once (SECURITY 3).
 */
const stepGate = (factorId: string, step: number, used: boolean): Statement => ({
  sql: `update mfa_factors set last_used_step = ?${used ? ', last_used_at = now()' : ''}
         where id = ? and (last_used_step is null or last_used_step < ?)
         returning id`,
  params: [step, factorId, step],
});

async function acceptStep(em: EntityManager, factorId: string, step: number, used: boolean): Promise<boolean> {
  const gate = stepGate(factorId, step, used);
  return (await em.execute<Array<{ id: string }>>(gate.sql, gate.params)).length === 1;
}

// ---------------------------------------------------------------------------------------------------------------
// Enrollment and management (signed in)

export async function enrollTotp(ctx: SignedInContext, input: { name?: string } | undefined) {
  const { application, user } = signedIn(ctx);
  await requireStepUpWhenEnrolled(ctx);
  const id = newId();
  const secret = new Secret({ size: 20 });
  const totp = new TOTP({ ...TOTP_OPTIONS, issuer: application.name, label: user.primaryEmail ?? user.id, secret });
  await ctx.em.transactional(async (em) => {
    // One enrollment in progress at a time: a new one replaces an unconfirmed one.
    await em.nativeDelete(MfaFactorEntity, { user: user.id, kind: 'totp', confirmedAt: null });
    em.create(MfaFactorEntity, {
      id,
      application: application.id,
      user: user.id,
      kind: 'totp',
      name: input?.name ?? TOTP_NAME,
      secretSealed: ctx.services.secretBox.encrypt(secret.base32, `totp:${id}`),
      lastUsedStep: null,
      confirmedAt: null,
      lastUsedAt: null,
    });
    await em.flush();
  });
  return { factor_id: id, secret: secret.base32, otpauth_uri: totp.toString() };
}

/**
 * A first code proves the authenticator holds the seed; the factor then counts. Its step is spent, so the same code
 * cannot sign in afterwards. Confirming replaces an authenticator the user already had (a new phone): that needs
 * aal 2 like any addition when a factor exists.
 */
export async function confirmTotp(ctx: SignedInContext, input: { factor_id: string; code: string }) {
  const { application, user } = signedIn(ctx);
  const factor = await ctx.em.findOne(MfaFactorEntity, {
    id: input.factor_id,
    application: application.id,
    user: user.id,
    kind: 'totp',
    confirmedAt: null,
  });
  if (!factor) throw notFound('Factor');
  await requireStepUpWhenEnrolled(ctx);
  const step = matchingStep(ctx.services, factor, input.code);
  if (step === null) throw assertionFailed();
  const replaced = await ctx.em.transactional(async (em) => {
    const previous = await em.find(MfaFactorEntity, { user: user.id, kind: 'totp', confirmedAt: { $ne: null } });
    if (previous.length) await em.nativeDelete(MfaFactorEntity, { id: { $in: previous.map((f) => f.id) } });
    if (!(await acceptStep(em, factor.id, step, false))) throw assertionFailed();
    const confirmed = await em.nativeUpdate(MfaFactorEntity, { id: factor.id, confirmedAt: null }, { confirmedAt: new Date() });
    if (!confirmed) throw notFound('Factor');
    await clearMfaEnrollmentRequired(em, application.id, user.id);
    return previous;
  });
  for (const old of replaced) await sendSecurityNotice(ctx, user, 'mfa_factor_removed', old.name);
  await sendSecurityNotice(ctx, user, 'mfa_factor_added', factor.name);
  return toFactorRecord(factor);
}

const randomBackupCode = () => {
  let code = '';
  for (let i = 0; i < BACKUP_CODE_LENGTH; i++) code += BACKUP_CODE_ALPHABET[randomInt(BACKUP_CODE_ALPHABET.length)];
  return `${code.slice(0, 5)}-${code.slice(5)}`;
};

/** The canonical form of a code: case, spaces and hyphens ignored; o, i and l read as 0, 1 and 1. */
const canonicalBackupCode = (code: string) =>
  code
    .toLowerCase()
    .replace(/[\s-]+/g, '')
    .replace(/o/g, '0')
    .replace(/[il]/g, '1');

/** The canonical form of a typed code, or null when it cannot be one. */
function normalizeBackupCode(code: string): string | null {
  const canonical = canonicalBackupCode(code);
  return canonical.length === BACKUP_CODE_LENGTH && [...canonical].every((c) => BACKUP_CODE_ALPHABET.includes(c))
    ? canonical
    : null;
}

/** Salted with the set's id, so one precomputed table cannot crack every user's codes at once. */
const backupCodeHash = (factorId: string, canonical: string) => sha256(`${factorId}:${canonical}`);

/** 201: ten new codes, shown this once. The previous set (used or not) is void from the same commit on. */
export async function createBackupCodes(ctx: SignedInContext) {
  const { application, user } = signedIn(ctx);
  await requireStepUpWhenEnrolled(ctx);
  const codes = new Set<string>();
  while (codes.size < BACKUP_CODE_COUNT) codes.add(randomBackupCode());
  const id = newId();
  await ctx.em.transactional(async (em) => {
    // Two generations at once serialize on the user's row: the later one's set is the live one.
    await em.execute('select id from users where id = ? for update', [user.id]);
    await em.nativeDelete(MfaFactorEntity, { user: user.id, kind: 'backup_code' });
    em.create(MfaFactorEntity, {
      id,
      application: application.id,
      user: user.id,
      kind: 'backup_code',
      name: BACKUP_CODES_NAME,
      secretSealed: null,
      lastUsedStep: null,
      confirmedAt: new Date(),
      lastUsedAt: null,
    });
    for (const code of codes) {
      em.create(MfaBackupCodeEntity, {
        id: newId(),
        application: application.id,
        user: user.id,
        factor: id,
        codeHash: backupCodeHash(id, canonicalBackupCode(code)),
        usedAt: null,
      });
    }
    await em.flush();
    await clearMfaEnrollmentRequired(em, application.id, user.id);
  });
  await sendSecurityNotice(ctx, user, 'mfa_factor_added', BACKUP_CODES_NAME);
  return { codes: [...codes] };
}

export async function listFactors(ctx: SignedInContext) {
  const { user } = signedIn(ctx);
  return (await confirmedFactors(ctx.em, user.id)).map(toFactorRecord);
}

/** Removal always needs aal 2: an aal 1 session must not be able to strip the factor that protects the account. */
export async function deleteFactor(ctx: SignedInContext, id: string) {
  const { application, session, user } = signedIn(ctx);
  const factor = await ctx.em.findOne(MfaFactorEntity, {
    id,
    application: application.id,
    user: user.id,
    confirmedAt: { $ne: null },
  });
  if (!factor) throw notFound('Factor');
  if (session.aal < 2) throw stepUpRequired();
  // The backup codes of a set go with it (foreign key cascade).
  if (!(await ctx.em.nativeDelete(MfaFactorEntity, { id: factor.id }))) throw notFound('Factor');
  await sendSecurityNotice(ctx, user, 'mfa_factor_removed', factor.name);
  return { id, deleted: true as const };
}

// ---------------------------------------------------------------------------------------------------------------
// Second factor during sign-in

/** How one kind of second factor checks an attempt. */
export interface SecondFactor {
  /** Which second factor this is (the session's `amr`). */
  kind: SecondFactorKind;
  /** A query of the factor the attempt is checked against; it may refer to the pending user as `p.user_id`. */
  lookup: Statement;
  /**
   * Checks the attempt against the factor's row (JSON; null when there is none) and `via`'s row, with no database
   * effect: null when wrong, else the conditional UPDATEs that spend the one-time secret (run with the pending token's
   * consumption) and what to do if one of them finds the secret spent meanwhile.
   */
  check: (
    factor: Record<string, any> | null,
    via: Record<string, any> | null,
  ) => Promise<{ gates: Statement[]; refused?: () => Promise<void> } | null>;
}

/**
 * Runs one second-factor attempt against a pending token. Each attempt takes one of the token's five attempts
 * (a conditional UPDATE that also reads the factor) *before* its code is checked, and counts against the per-user and
 * per-address failure limits: twenty guesses fired at once cannot all be checked before the failures are counted.
 * On success one statement spends the secret (the factor's gates) and consumes the pending token, the sign-in
 * continues at aal 2 and the limits get their point back; on failure nothing is consumed (the transaction rolls back)
 * but the failure stays counted, and the fifth one kills the token. The path is 8 PostgreSQL round trips: application,
 * reservation, limits, the sign-in transaction (begin, gates and token, session, commit), refund.
 */
export async function secondFactorAttempt(ctx: TenantContext, ref: PendingRef, factor: SecondFactor): Promise<SignInResult> {
  const application = ctx.application;
  const reserved = await reserveSecondFactorAttempt(ctx.em, application, ref, MAX_FAILED_ATTEMPTS, factor.lookup);
  if (!reserved) throw invalidPendingToken();
  const limits = failureLimits(application.id, reserved.userId, ctx.ip);
  try {
    await ctx.services.rateLimits.consume(limits, ctx.response.headers);
  } catch (error) {
    // A refused attempt counts nowhere: not against the limits, not against the token.
    await releaseSecondFactorAttempt(ctx.em, reserved.pendingId);
    throw error;
  }
  let checked: Awaited<ReturnType<SecondFactor['check']>> = null;
  try {
    checked = await factor.check(reserved.factor, reserved.via);
    const gates = checked?.gates;
    if (!gates) throw assertionFailed();
    const result = await completeSignIn(ctx, application, async (em) => ({
      ...(await consumePendingToken(em, application, { id: reserved.pendingId }, 'mfa', gates)),
      aal: 2,
      secondFactor: factor.kind,
    }));
    await ctx.services.rateLimits.refund(limits);
    return result;
  } catch (error) {
    if (error instanceof AppError && error.code === 'assertion_failed') {
      await checked?.refused?.();
      // Outside the rolled-back transaction: the fifth failure makes the token unusable.
      await ctx.em.execute(
        'update pending_tokens set consumed_at = now() where id = ? and consumed_at is null and failed_attempts >= ?',
        [reserved.pendingId, MAX_FAILED_ATTEMPTS],
      );
    }
    throw error;
  }
}

/** The user's confirmed factor of a kind, as the attempt's lookup. */
const confirmedFactorLookup = (applicationId: string, kind: MfaFactorKind): Statement => ({
  sql: `select * from mfa_factors f
         where f.application_id = ? and f.user_id = p.user_id and f.kind = ? and f.confirmed_at is not null`,
  params: [applicationId, kind],
});

export function verifyTotp(ctx: TenantContext, input: { pending_token: string; code: string }) {
  return secondFactorAttempt(
    ctx,
    { token: input.pending_token },
    {
      kind: 'totp',
      lookup: confirmedFactorLookup(ctx.application.id, 'totp'),
      check: async (factor) => {
        const step = factor
          ? matchingStep(ctx.services, { id: factor.id, secretSealed: factor.secret_sealed }, input.code)
          : null;
        return factor && step !== null ? { gates: [stepGate(factor.id, step, true)] } : null;
      },
    },
  );
}

export function verifyBackupCode(ctx: TenantContext, input: { pending_token: string; code: string }) {
  const canonical = normalizeBackupCode(input.code);
  return secondFactorAttempt(
    ctx,
    { token: input.pending_token },
    {
      kind: 'backup_code',
      lookup: confirmedFactorLookup(ctx.application.id, 'backup_code'),
      check: async (set) => {
        if (!set || !canonical) return null;
        return {
          gates: [
            // Single use (SECURITY 3): of concurrent uses of one code, one UPDATE finds it unused.
            {
              sql: 'update mfa_backup_codes set used_at = now() where factor_id = ? and code_hash = ? and used_at is null returning id',
              params: [set.id, backupCodeHash(set.id, canonical)],
            },
            { sql: 'update mfa_factors set last_used_at = now() where id = ? returning id', params: [set.id] },
          ],
        };
      },
    },
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Extension points: the sign-in state machine and user merges

/** `mfa_required` lists TOTP when confirmed, and backup codes while an unused one remains. */
export const mfaSecondFactors: SecondFactorSource = `select f.kind as method from mfa_factors f
    where f.user_id = ? and f.confirmed_at is not null
      and (f.kind = 'totp' or exists (select 1 from mfa_backup_codes c where c.factor_id = f.id and c.used_at is null))`;

/**
 * Merge: the source's factors move to the target. A kind the target already has wins (its TOTP, its set of backup
 * codes); the source's enrollments still in progress are dropped.
 */
export const mergeMfaFactors: MergeStep = async (em, { sourceUserId, targetUserId }) => {
  await em.execute(
    `delete from mfa_factors s where s.user_id = ?
       and (s.confirmed_at is null
            or exists (select 1 from mfa_factors t where t.user_id = ? and t.kind = s.kind and t.confirmed_at is not null))`,
    [sourceUserId, targetUserId],
  );
  await em.nativeUpdate(MfaBackupCodeEntity, { user: sourceUserId }, { user: targetUserId });
  await em.nativeUpdate(MfaFactorEntity, { user: sourceUserId }, { user: targetUserId });
};

// ---------------------------------------------------------------------------------------------------------------
// Support (secret key): the factors of any user of the application

export async function factorsOfUser(em: EntityManager, userId: string): Promise<MfaFactorRecord[]> {
  return (await confirmedFactors(em, userId)).map(toFactorRecord);
}

/** Removes a factor of the user (a set of backup codes with its codes) inside the caller's transaction. */
export async function removeFactorOfUser(em: EntityManager, userId: string, id: string): Promise<MfaFactorRecord | null> {
  const factor = await em.findOne(MfaFactorEntity, { id, user: userId });
  if (!factor) return null;
  await em.nativeDelete(MfaFactorEntity, { id: factor.id });
  return toFactorRecord(factor);
}

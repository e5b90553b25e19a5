import type { Context } from '../../context.ts';
import { type EntityManager, preparedQuery } from '../../db/orm.ts';
import { AppError, assertionFailed, invalidPendingToken } from '../../errors.ts';
import { randomSecret, sha256 } from '../../lib/crypto.ts';
import { deleteInBatches, type PurgeStep, SPENT_ONE_TIME_ROWS } from '../../lib/housekeeping.ts';
import { newId } from '../../lib/ids.ts';
import { type Hooks, Registry } from '../../lib/modules.ts';
import type { Application } from '../applications/application.entity.ts';
import { markTraffic, settingsOf } from '../applications/applications.service.ts';
import { missingConsents } from '../consent/consent.service.ts';
import { recordEvent } from '../events/events.service.ts';
import { issueTokens, openSession, sessionOpening } from '../sessions/sessions.service.ts';
import { type User, UserEntity } from '../users/user.entity.ts';
import { toUserRecord, userFromRow } from '../users/users.service.ts';
import { PendingTokenEntity } from './pending-token.entity.ts';
import { type AccessDeniedEvent, MFA_METHODS, type MfaMethod, type SignInResult } from './sign-in.schema.ts';

const PENDING_TOKEN_TTL_MS = 10 * 60_000;

/** Who is signing in, as a first factor (or a resumed step) established it. */
export interface SignInSubject {
  user: User;
  /** 1 for a single factor; 2 for a multi-factor authenticator or after a second factor. */
  aal: 1 | 2;
  firstFactor: string;
  /** The second factor just used (the step that raised the sign-in to aal 2 after its first factor). */
  secondFactor?: SecondFactorKind;
  /** The host the person signs in to, when the first factor's start named one (carried through every later step). */
  hostId?: string | null;
  /** The user's second factors, when the first factor read them with the user (`secondFactorsSql`). */
  secondFactors?: string[];
  /**
   * What records the first factor's use (an OAuth identity's last use), as CTEs (`name as (…)`) written with the
   * decision (the session or the pending token), so a refused sign-in leaves no trace.
   */
  used?: Statement;
}

/** The second factors a sign-in can continue with. */
export type SecondFactorKind = 'totp' | 'backup_code' | 'passkey';

/**
 * RFC 8176 authentication method references of a sign-in, as the session records them and the OpenID provider's
 * tokens carry them (`amr`). RFC 8176 has no value for a link sent by email: a magic link is `email` (not registered,
 * but the value Okta and others use; RFC 8176 asks relying parties to ignore values they do not know, and `otp`
 * would claim a one-time-password device). A passkey is `pop` (proof of possession of a key: whether it lives in
 * hardware or syncs in software is not known) with `user` (the authenticator verified the person: a PIN or a
 * biometric, RFC 8176 cannot say which without knowing) — multi-factor on its own (`mfa`). OAuth and SAML sign-ins
 * are `fed`; a TOTP code and a backup code are `otp`. Two factors add `mfa`.
 */
export function amrOf(firstFactor: string, secondFactor?: SecondFactorKind): string[] {
  const first: Record<string, string[]> = {
    magic_link: ['email'],
    passkey: ['pop', 'user', 'mfa'],
    oauth: ['fed'],
    saml: ['fed'],
  };
  const second: Record<SecondFactorKind, string[]> = { totp: ['otp'], backup_code: ['otp'], passkey: ['pop', 'user'] };
  const methods = [...(first[firstFactor] ?? []), ...(secondFactor ? [...second[secondFactor], 'mfa'] : [])];
  return [...new Set(methods)];
}

/** Why a sign-in check refused: its part of the `access.denied` event's data (never shown to the caller). */
export type SignInDenial = Pick<AccessDeniedEvent, 'reason' | 'rule_id'>;

/** What a sign-in attempt says beyond its user. */
export interface SignInAttempt {
  hostId: string | null;
}

/**
 * Extra checks before anyone signs in (host access rules plug in here): a denial refuses the sign-in with 403
 * `access_denied`, and is recorded as an `access.denied` event. `appliesTo` says which attempts the check concerns
 * (the others need not ask it: a returning person's sign-in can then be one statement).
 */
export interface SignInCheck {
  appliesTo: (attempt: SignInAttempt) => boolean;
  check: (em: EntityManager, application: Application, user: User, attempt: SignInAttempt) => Promise<SignInDenial | null>;
}

export const signInChecks = new Registry<SignInCheck>('sign-in check');

/** A refused sign-in: its transaction rolls back (nothing is consumed or created), then its event is written. */
class SignInDenied extends AppError {
  readonly event: AccessDeniedEvent;
  constructor(message: string, event: AccessDeniedEvent) {
    super('access_denied', message);
    this.event = event;
  }
}

/**
 * The second factors a user has; each capability that provides one declares a source: a query answering a `method`
 * row per method the user has, whose one `?` is the user's id. All of them run as one statement.
 */
export type SecondFactorSource = string;

export const secondFactorSources = new Registry<SecondFactorSource>('second factor source');

/**
 * The second factors of the user `userId` names (a column, or `?`) as one SQL expression answering an array of
 * methods: a first factor that reads its user in one statement reads these with it (`SignInSubject.secondFactors`).
 */
export function secondFactorsSql(hooks: Hooks, userId: string): string {
  const sources = hooks.get(secondFactorSources);
  if (!sources.length) return "'{}'::text[]";
  return `array(${sources.map((source) => `(${source.replaceAll('?', userId)})`).join(' union all ')})`;
}

/** A session opened at aal 1 by a user with no second factor, where the application requires one, must enrol one. */
const enrollmentRequired = (application: Application, aal: number, methods: readonly string[]) =>
  aal < 2 && settingsOf(application).mfa === 'required' && methods.length === 0;

const inOrder = (found: string[]): MfaMethod[] => MFA_METHODS.filter((method) => found.includes(method));

export async function secondFactorMethods(hooks: Hooks, em: EntityManager, user: User): Promise<MfaMethod[]> {
  const [row] = await preparedQuery<{ methods: string[] }>(
    em,
    'second_factor_methods',
    `select ${secondFactorsSql(hooks, '?')} as methods`,
    hooks.get(secondFactorSources).map(() => user.id),
  );
  return inOrder(row?.methods ?? []);
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
    hostId: subject.hostId ?? null,
    failedAttempts: 0,
    expiresAt: new Date(Date.now() + PENDING_TOKEN_TTL_MS),
    consumedAt: null,
  });
  return token;
}

type Decision =
  | { result: SignInResult }
  | { open: { user: User; aal: number; amr: string[]; mfaEnrollmentRequired: boolean; hostId: string | null } };

/** The state machine of CONTRACT §4, inside the transaction that consumed the step that led here. */
async function decide(hooks: Hooks, em: EntityManager, application: Application, subject: SignInSubject): Promise<Decision> {
  const user = await resolveMerged(em, subject.user);
  const hostId = subject.hostId ?? null;
  const denied = { user_id: user.id, host_id: hostId, first_factor: subject.firstFactor };
  if (user.status !== 'active') {
    throw new SignInDenied('Sign-in is not allowed for this account', { ...denied, reason: `user_${user.status}` });
  }
  const attempt = { hostId };
  for (const { appliesTo, check } of hooks.get(signInChecks)) {
    if (!appliesTo(attempt)) continue;
    const denial = await check(em, application, user, attempt);
    if (denial) throw new SignInDenied('Sign-in is not allowed here', { ...denied, ...denial });
  }
  const resolved = { ...subject, user };

  const missing = await missingConsents(em, application, user.id);
  if (missing.length) {
    const token = await pending(em, application, resolved, 'consent');
    return { result: { status: 'consent_required', pending_token: token, consent_documents: missing } };
  }
  // At aal 2 a second factor was just used (or the first factor was one): nothing to ask, nothing to enrol.
  const known = user === subject.user ? subject.secondFactors : undefined;
  const methods = subject.aal >= 2 ? [] : known ? inOrder(known) : await secondFactorMethods(hooks, em, user);
  if (methods.length) {
    const token = await pending(em, application, resolved, 'mfa');
    return { result: { status: 'mfa_required', pending_token: token, mfa: { methods, pending_token: token } } };
  }
  await markTraffic(em, application);
  return {
    open: {
      user,
      aal: subject.aal,
      amr: amrOf(subject.firstFactor, subject.secondFactor),
      mfaEnrollmentRequired: enrollmentRequired(application, subject.aal, methods),
      hostId,
    },
  };
}

/**
 * Every first factor (magic link, passkey, OAuth, SAML) and every resumed step ends here. `step` runs inside one
 * transaction with the state machine: it consumes its one-time secret and says who signs in, so a failure anywhere
 * consumes nothing. A first factor that has nothing to write before the decision (its secret is spent already, the
 * user exists) passes the subject instead: then every statement is atomic on its own (the decision only reads, and
 * writes one row: the pending token, or the session with its refresh token and event), with no transaction to open.
 * Tokens are signed after the commit (never holding a transaction across key loading).
 */
export async function completeSignIn(
  ctx: Context,
  application: Application,
  step: ((em: EntityManager) => Promise<SignInSubject>) | SignInSubject,
): Promise<SignInResult> {
  const open = async (em: EntityManager, subject: SignInSubject) => {
    const decision = await decide(ctx.services.hooks, em, application, subject);
    await em.flush();
    if ('result' in decision) {
      if (subject.used) await em.execute(`with ${subject.used.sql} select 1`, subject.used.params);
      return decision;
    }
    const { user, aal, amr, mfaEnrollmentRequired, hostId } = decision.open;
    const options = { aal, amr, ip: ctx.ip, userAgent: userAgentOf(ctx), mfaEnrollmentRequired, hostId };
    return { user, ...(await openSession(em, application, user, options, subject.used)) };
  };
  const opened = await (typeof step === 'function'
    ? ctx.em.transactional(async (em) => open(em, await step(em)))
    : open(ctx.em, step)
  ).catch(async (error: unknown) => {
    if (error instanceof SignInDenied) {
      const em = ctx.em.fork();
      recordEvent(em, application.id, 'access.denied', error.event);
      await em.flush();
    }
    throw error;
  });
  if ('result' in opened) return opened.result;
  const tokens = await issueTokens(ctx.em, ctx.services, application, opened.session, opened.refreshToken);
  return { status: 'complete', tokens, user: toUserRecord(opened.user) };
}

/** One SQL statement and its parameters (`?` placeholders). */
export interface Statement {
  sql: string;
  params: unknown[];
}

const userAgentOf = (ctx: Context) => (typeof ctx.headers['user-agent'] === 'string' ? ctx.headers['user-agent'] : undefined);

/**
 * A returning person, as a first factor finds them: `who` answers at most one row, with their `user_id` (and what
 * `used` needs); `used` records the factor's use, a statement over `signed` (who's row, when the sign-in goes on).
 * `name` names the prepared statements built from them.
 */
export interface ReturningSignIn {
  name: string;
  who: Statement;
  used: Statement;
  firstFactor: string;
  hostId: string | null;
}

/**
 * `completeSignIn` for a returning person a first factor has found (nothing of theirs to write before the decision),
 * in one statement when nothing before the session can refuse or ask (no check applies to the attempt, no consent
 * documents, the application's first traffic marked): the user and their second factors read, and when the user is
 * active with no second factor, the session opened and the factor's use recorded. Otherwise (or when that statement
 * opened nothing) the decision runs as for every first factor. Null when `who` finds nobody.
 */
export async function completeReturningSignIn(
  ctx: Context,
  application: Application,
  returning: ReturningSignIn,
): Promise<SignInResult | null> {
  const { name, who, used, firstFactor, hostId } = returning;
  const settings = settingsOf(application);
  const direct =
    application.firstTrafficAt !== null &&
    !settings.consent_documents.length &&
    !ctx.services.hooks.get(signInChecks).some(({ appliesTo }) => appliesTo({ hostId }));
  const found = `who as (${who.sql}),
     u as (select u.*, ${secondFactorsSql(ctx.services.hooks, 'u.id')} as second_factors from users u join who on u.id = who.user_id)`;
  // The statement opens a session only for a user with no second factor (`ok`), at aal 1.
  const options = {
    aal: 1,
    amr: amrOf(firstFactor),
    ip: ctx.ip,
    userAgent: userAgentOf(ctx),
    mfaEnrollmentRequired: enrollmentRequired(application, 1, []),
    hostId,
  };
  const opening = direct ? sessionOpening(application, 'ok', options) : null;
  const [row] = await preparedQuery<{ u: Record<string, any>; opened: boolean }>(
    ctx.em,
    `${name}_${opening ? 'sign_in' : 'read'}`,
    opening
      ? `with ${found},
           ok as (select id from u where status = 'active' and cardinality(second_factors) = 0),
           ${opening.ctes},
           signed as (select who.* from who where exists (select 1 from s)),
           used as (${used.sql})
         select row_to_json(u) as u, exists (select 1 from s) as opened from u`
      : `with ${found} select row_to_json(u) as u, false as opened from u`,
    opening ? [...who.params, ...opening.params, ...used.params] : who.params,
  );
  if (!row) return null;
  const user = userFromRow(row.u);
  if (opening && row.opened) {
    const session = { ...opening.session, user: user.id };
    const tokens = await issueTokens(ctx.em, ctx.services, application, session, opening.refreshToken);
    return { status: 'complete', tokens, user: toUserRecord(user) };
  }
  return completeSignIn(ctx, application, {
    user,
    aal: 1,
    firstFactor,
    hostId,
    secondFactors: row.u.second_factors,
    used: {
      sql: `who as (${who.sql}), signed as (select * from who), used as (${used.sql})`,
      params: [...who.params, ...used.params],
    },
  });
}

/**
 * A pending token as the client presents it; by id; or through `via`, a statement that spends something bound to it
 * (a WebAuthn state) and returns `pending_token_id`, run as part of the statement that reserves the attempt.
 */
export type PendingRef = { token: string } | { id: string } | { via: Statement };
const pendingWhere = (ref: { token: string } | { id: string }) =>
  'token' in ref ? { tokenHash: sha256(ref.token) } : { id: ref.id };
const pendingColumn = (ref: { token: string } | { id: string }): [string, string] =>
  'token' in ref ? ['token_hash', sha256(ref.token)] : ['id', ref.id];

/**
 * Consumes a pending token of the given stage, atomically and once (expiry by the database clock); an unknown,
 * expired, used or wrong-stage token is 401 `invalid_pending_token`. `gates` are conditional UPDATEs of the step's own
 * one-time secret (a TOTP step, a backup code, a passkey counter) run in the same statement: the token is consumed only
 * if each of them changed a row, else 401 `assertion_failed` (the caller's transaction rolls back whatever they did).
 * The user comes back with it: one round trip.
 */
export async function consumePendingToken(
  em: EntityManager,
  application: Application,
  ref: { token: string } | { id: string },
  stage: 'consent' | 'mfa',
  gates: Statement[] = [],
): Promise<SignInSubject> {
  const [column, value] = pendingColumn(ref);
  const passed = gates.map((_, i) => `exists (select 1 from gate${i})`).join(' and ') || 'true';
  const [row] = await em.execute<
    Array<{ passed: boolean; aal: number | null; first_factor: string | null; host_id: string | null; u: object | null }>
  >(
    `with ${gates.map((gate, i) => `gate${i} as (${gate.sql}), `).join('')}consumed as (
       update pending_tokens set consumed_at = now()
        where ${column} = ? and application_id = ? and stage = ? and consumed_at is null and expires_at > now() and ${passed}
        returning user_id, aal, first_factor, host_id
     )
     select ${passed} as passed, c.aal, c.first_factor, c.host_id, row_to_json(u) as u
       from (select 1) as one left join consumed c on true left join users u on u.id = c.user_id`,
    [...gates.flatMap((gate) => gate.params), value, application.id, stage],
  );
  if (!row?.passed) throw assertionFailed();
  // A consumed token has its user and first factor (not null columns); the join leaves them null for none.
  if (!row.u || row.first_factor === null) throw invalidPendingToken();
  return { user: userFromRow(row.u), aal: row.aal === 2 ? 2 : 1, firstFactor: row.first_factor, hostId: row.host_id };
}

/**
 * Takes one of a pending sign-in's five second-factor attempts (SECURITY 6) before its code is checked, and reads
 * what the check needs in the same round trip: `lookup`, a query of the factor that may refer to the pending user as
 * `p.user_id`, answered as JSON. Null when the token is unknown, expired, spent or out of attempts (or `via` found
 * nothing); `via`'s returned row comes back as `via`.
 */
export async function reserveSecondFactorAttempt(
  em: EntityManager,
  application: Application,
  ref: PendingRef,
  maxAttempts: number,
  lookup: Statement,
): Promise<{ pendingId: string; userId: string; factor: Record<string, any> | null; via: Record<string, any> | null } | null> {
  const via = 'via' in ref ? ref.via : null;
  const [column, value] = 'via' in ref ? ['id', null] : pendingColumn(ref);
  const [row] = await em.execute<Array<{ id: string; user_id: string; factor: object | null; via: object | null }>>(
    `with ${via ? `via as (${via.sql}), ` : ''}p as (
       update pending_tokens set failed_attempts = failed_attempts + 1
        where ${via ? 'id = (select pending_token_id from via)' : `${column} = ?`} and application_id = ? and stage = 'mfa'
          and consumed_at is null and expires_at > now() and failed_attempts < ?
        returning id, user_id
     )
     select p.id, p.user_id, (select row_to_json(f) from (${lookup.sql}) f limit 1) as factor,
            ${via ? '(select row_to_json(via) from via)' : 'null'} as via
       from p`,
    [...(via ? via.params : [value]), application.id, maxAttempts, ...lookup.params],
  );
  return row ? { pendingId: row.id, userId: row.user_id, factor: row.factor, via: row.via } : null;
}

/** Gives back an attempt `reserveSecondFactorAttempt` took (the attempt was refused before it was checked). */
export async function releaseSecondFactorAttempt(em: EntityManager, pendingId: string): Promise<void> {
  await em.execute('update pending_tokens set failed_attempts = failed_attempts - 1 where id = ? and failed_attempts > 0', [
    pendingId,
  ]);
}

/** Reads a live pending token without consuming it (to validate a request before acting on it). */
export async function peekPendingToken(
  em: EntityManager,
  application: Application,
  ref: { token: string } | { id: string },
  stage: 'consent' | 'mfa',
) {
  const row = await em.findOne(PendingTokenEntity, {
    ...pendingWhere(ref),
    application: application.id,
    stage,
    consumedAt: null,
  });
  if (!row || row.expiresAt.getTime() <= Date.now()) throw invalidPendingToken();
  return row;
}

export const purgePendingTokens: PurgeStep = (em) => deleteInBatches(em, 'pending_tokens', SPENT_ONE_TIME_ROWS);

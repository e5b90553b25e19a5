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
import { EVENT_COLUMNS, recordEvent } from '../events/events.service.ts';
import type { SignedInContext } from '../sessions/contexts.ts';
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
  /** A step that resumes a pending sign-in (consent, a second factor): its first factor was judged when it was presented. */
  resumed?: boolean;
  /** For an enterprise (SAML) first factor: the organization the connection belongs to, if any. */
  ssoOrganizationId?: string | null;
  /**
   * A step-up's pending token (`startStepUp`): the live session it is bound to. Its second factor raises that session
   * to aal 2 (`raiseSession`) instead of opening a new one.
   */
  stepUpSessionId?: string | null;
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
  firstFactor: string;
  /** A resumed step (consent, second factor) rather than a first factor presented now. */
  resumed: boolean;
  /** The organization of the SAML connection that vouched for the person (SAML first factors only). */
  ssoOrganizationId: string | null;
}

/**
 * Extra checks before anyone signs in (host access rules plug in here): a denial refuses the sign-in with 403
 * `access_denied`, and is recorded as an `access.denied` event. `appliesTo` says which attempts the check concerns
 * (the others need not ask it: a returning person's sign-in can then be one statement).
 */
export interface SignInCheck {
  appliesTo: (attempt: SignInAttempt) => boolean;
  /** A denial, or null; a check may also throw an `AppError` of its own (an SSO policy's 403 `sso_required`). */
  check: (em: EntityManager, application: Application, user: User, attempt: SignInAttempt) => Promise<SignInDenial | null>;
  /**
   * A SQL condition over the user's row `u` (no parameters) that holds when the check has nothing to say about this
   * user for any first factor: a check that declares one keeps a returning person's sign-in one statement (it opens
   * a session only when the condition holds, and runs the check otherwise).
   */
  clearSql?: string;
}

export const signInChecks = new Registry<SignInCheck>('sign-in check');

/**
 * What happens when a sign-in completes (a session is opened), after its commit: a verified domain's automatic
 * join. `run` must not throw for a reason of its own (the person is signed in by then); `dueSql` is a SQL condition
 * over the user's row `u` (no parameters) that holds when `run` has something to do, so a returning person's
 * one-statement sign-in asks nothing more of the others.
 */
export interface SignInCompletion {
  dueSql: string;
  run: (em: EntityManager, hooks: Hooks, application: Application, user: User) => Promise<void>;
}

export const signInCompletions = new Registry<SignInCompletion>('sign-in completion');

/** The organization that verified an address's domain, and whether it requires its SSO. */
export interface DomainOwner {
  organizationId: string;
  ssoRequired: boolean;
}

/**
 * Which organization verified an email address's domain (filled by the module of organization domains; none without
 * it). The magic link refuses an address whose organization requires SSO at once, `sso/start` sends it to that
 * organization's SAML connection, and an organization's own connection vouches for the addresses of its domains.
 */
export type DomainOwnerSource = (em: EntityManager, applicationId: string, email: string) => Promise<DomainOwner | null>;

export const domainOwners = new Registry<DomainOwnerSource>('domain owner', { single: true });

export async function domainOwnerOf(hooks: Hooks, em: EntityManager, applicationId: string, email: string) {
  const [source] = hooks.get(domainOwners);
  return source ? source(em, applicationId, email) : null;
}

/** The organization whose SSO an address must sign in through (`sso_policy: required`), else null. */
export async function ssoRequiredFor(hooks: Hooks, em: EntityManager, applicationId: string, email: string) {
  const owner = await domainOwnerOf(hooks, em, applicationId, email);
  return owner?.ssoRequired ? owner.organizationId : null;
}

/** 403 `sso_required` (CONTRACT §1): `details.organization_id` names the organization whose SSO is the way in. */
export const ssoRequired = (organizationId: string) =>
  new AppError(
    'sso_required',
    'This email address signs in through its organization\u2019s single sign-on: start with POST /v1/auth/sso/start',
    { organization_id: organizationId },
  );

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
    session: null,
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
  const attempt: SignInAttempt = {
    hostId,
    firstFactor: subject.firstFactor,
    resumed: subject.resumed === true,
    ssoOrganizationId: subject.ssoOrganizationId ?? null,
  };
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
    if (subject.stepUpSessionId)
      return { raised: true, ...(await raiseSession(em, application, subject, subject.stepUpSessionId)) };
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
  // A step-up raised a session the person was signed in with already: no sign-in completes (nothing to join).
  if (!('raised' in opened))
    for (const { run } of ctx.services.hooks.get(signInCompletions))
      await run(ctx.em, ctx.services.hooks, application, opened.user);
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
  /**
   * False: when the one statement opens nothing (or cannot run), answer null instead of deciding with the subject
   * found, so that the caller takes its own transactional path (a magic link, whose consumption must roll back with a
   * refused sign-in, and whose `who` locks it).
   */
  fallback?: boolean;
  /**
   * A person `who` finds with no user yet (`who.user_id` null) signs up in the same statement: `row` is a CTE body over
   * `who` answering the new `users` row (every column, in the table's order), `event` a `select` of `EVENT_COLUMNS`
   * over `created` (that row once inserted) answering its `user.created` event. Both are written only when the
   * statement opens the session. Concurrent first sign-ins of one person collide on the users' unique key: the loser's
   * statement fails whole (a unique violation, nothing written), and the caller's retry finds the user.
   */
  signUp?: { row: Statement; event: Statement };
}

/**
 * `completeSignIn` for a returning person a first factor has found (nothing of theirs to write before the decision),
 * in one statement when nothing before the session can refuse or ask (no check applies to the attempt, no consent
 * documents, the application's first traffic marked): the user and their second factors read, and when the user is
 * active with no second factor, the session opened and the factor's use recorded — with `signUp`, a person `who` finds
 * without a user is created there too. Otherwise (or when that statement opened nothing) the decision runs as for
 * every first factor. Null when `who` finds nobody.
 */
export async function completeReturningSignIn(
  ctx: Context,
  application: Application,
  returning: ReturningSignIn,
): Promise<SignInResult | null> {
  const { name, who, used, firstFactor, hostId } = returning;
  const settings = settingsOf(application);
  const hooks = ctx.services.hooks;
  const attempt: SignInAttempt = { hostId, firstFactor, resumed: false, ssoOrganizationId: null };
  const applying = hooks.get(signInChecks).filter(({ appliesTo }) => appliesTo(attempt));
  const completions = hooks.get(signInCompletions);
  const direct =
    application.firstTrafficAt !== null &&
    !settings.consent_documents.length &&
    applying.every(({ clearSql }) => clearSql !== undefined);
  // The checks that apply have nothing to say about this user (else the statement opens nothing and they run).
  const clear = applying.map(({ clearSql }) => ` and (${clearSql})`).join('');
  const due = completions.map(({ dueSql }, i) => `, (select ${dueSql} from u) as due${i}`).join('');
  const found = (signUp?: ReturningSignIn['signUp']) => `who as (${who.sql}),${signUp ? ` fresh as (${signUp.row.sql}),` : ''}
     u as (select u.*, ${secondFactorsSql(ctx.services.hooks, 'u.id')} as second_factors from users u join who on u.id = who.user_id${
       signUp ? ` union all select f.*, '{}'::text[] from fresh f` : ''
     })`;
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
  if (!opening && returning.fallback === false) return null;
  // A new person signs up only in the statement that opens their session (a user is created with its session).
  const signUp = opening ? returning.signUp : undefined;
  const [row] = await preparedQuery<{ u: Record<string, any>; opened: boolean } & Record<string, unknown>>(
    ctx.em,
    `${name}_${opening ? (signUp ? 'sign_in_or_up' : 'sign_in') : 'read'}`,
    opening
      ? `with ${found(signUp)},
           ok as (select id from u where status = 'active' and cardinality(second_factors) = 0${clear}),
           ${opening.ctes},${
             signUp
               ? `
           created as (insert into users select f.* from fresh f join ok on ok.id = f.id returning *),
           user_created as (insert into events (${EVENT_COLUMNS}) ${signUp.event.sql}),`
               : ''
           }
           signed as (select who.* from who where exists (select 1 from s)),
           used as (${used.sql})
         select row_to_json(u) as u, exists (select 1 from s) as opened${due} from u`
      : `with ${found()} select row_to_json(u) as u, false as opened from u`,
    opening
      ? [...who.params, ...(signUp?.row.params ?? []), ...opening.params, ...(signUp?.event.params ?? []), ...used.params]
      : who.params,
  );
  if (!row) return null;
  const user = userFromRow(row.u);
  if (opening && row.opened) {
    const session = { ...opening.session, user: user.id };
    for (const [i, { run }] of completions.entries()) if (row[`due${i}`] === true) await run(ctx.em, hooks, application, user);
    const tokens = await issueTokens(ctx.em, ctx.services, application, session, opening.refreshToken);
    return { status: 'complete', tokens, user: toUserRecord(user) };
  }
  if (returning.fallback === false) return null;
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
    Array<{
      passed: boolean;
      aal: number | null;
      first_factor: string | null;
      host_id: string | null;
      session_id: string | null;
      u: object | null;
    }>
  >(
    `with ${gates.map((gate, i) => `gate${i} as (${gate.sql}), `).join('')}consumed as (
       update pending_tokens set consumed_at = now()
        where ${column} = ? and application_id = ? and stage = ? and consumed_at is null and expires_at > now() and ${passed}
        returning user_id, aal, first_factor, host_id, session_id
     )
     select ${passed} as passed, c.aal, c.first_factor, c.host_id, c.session_id, row_to_json(u) as u
       from (select 1) as one left join consumed c on true left join users u on u.id = c.user_id`,
    [...gates.flatMap((gate) => gate.params), value, application.id, stage],
  );
  if (!row?.passed) throw assertionFailed();
  // A consumed token has its user and first factor (not null columns); the join leaves them null for none.
  if (!row.u || row.first_factor === null) throw invalidPendingToken();
  return {
    user: userFromRow(row.u),
    aal: row.aal === 2 ? 2 : 1,
    firstFactor: row.first_factor,
    hostId: row.host_id,
    resumed: true,
    stepUpSessionId: row.session_id,
  };
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

// ---------------------------------------------------------------------------------------------------------------
// Step-up: a second factor for a live session

/** A step-up is asked for and answered within this (a sign-in's pending token lives 10 minutes). */
const STEP_UP_TTL_MS = 5 * 60_000;

/** 409 `no_second_factor`: a step-up needs a second factor the user has (contract additions). */
const noSecondFactor = () =>
  new AppError('no_second_factor', 'This account has no second factor to verify: enroll one first (it then counts at once)');

/**
 * `POST /v1/auth/step-up`: opens an `mfa` pending token bound to the caller's own session (stored hashed, 5 minutes,
 * single use), for a user who has a second factor and a session still at aal 1. Its second factor (TOTP, a backup
 * code, a passkey: the procedures of a sign-in's second factor) then raises this session to aal 2 and rotates its
 * refresh token (`raiseSession`), instead of opening a new session. A new step-up spends the session's earlier ones:
 * one is live at a time. 409 `conflict` at aal 2 already, 409 `no_second_factor` without a second factor.
 */
export async function startStepUp(ctx: SignedInContext) {
  const { application, session, user } = ctx;
  if (session.aal >= 2) throw new AppError('conflict', 'This session is at aal 2 already: nothing to step up');
  const methods = await secondFactorMethods(ctx.services.hooks, ctx.em, user);
  if (!methods.length) throw noSecondFactor();
  const token = randomSecret('pt_');
  const expiresAt = new Date(Date.now() + STEP_UP_TTL_MS);
  await ctx.em.transactional(async (em) => {
    await em.execute(
      "update pending_tokens set consumed_at = now() where session_id = ? and stage = 'mfa' and consumed_at is null",
      [session.id],
    );
    em.create(PendingTokenEntity, {
      id: newId(),
      application: application.id,
      user: user.id,
      tokenHash: sha256(token),
      stage: 'mfa',
      aal: 1,
      firstFactor: 'step_up',
      hostId: null,
      session: session.id,
      failedAttempts: 0,
      expiresAt,
      consumedAt: null,
    });
    await em.flush();
  });
  return {
    status: 'mfa_required' as const,
    pending_token: token,
    mfa: { methods, pending_token: token },
    session_id: session.id,
    expires_at: expiresAt.toISOString(),
  };
}

/**
 * A step-up's second factor, inside the transaction that consumed its pending token with the factor's one-time
 * secret: the bound session goes to aal 2 (its `amr` gains the factor and `mfa`, after the methods it had) and gets a new refresh token (the
 * previous one is spent: presenting it later is reuse), with its `session.stepped_up` event — one conditional UPDATE,
 * so of concurrent verifications one raises. The session must still be live (not revoked, not expired, not idle) and
 * at aal 1, its user active: else nothing is raised (401 `invalid_pending_token`, or 403 `access_denied` for a user
 * who is not active) and the transaction rolls back.
 */
async function raiseSession(em: EntityManager, application: Application, subject: SignInSubject, sessionId: string) {
  const user = subject.user;
  if (user.status !== 'active') {
    throw new SignInDenied('Sign-in is not allowed for this account', {
      user_id: user.id,
      host_id: subject.hostId ?? null,
      first_factor: subject.firstFactor,
      reason: `user_${user.status}`,
    });
  }
  const method = subject.secondFactor ?? 'totp';
  const refreshToken = randomSecret('rt_');
  const { idle_timeout_s } = settingsOf(application).session;
  const added = amrOf('', method);
  const [row] = await em.execute<
    Array<{ id: string; user_id: string; aal: number; organization_id: string | null; host_id: string | null; amr: string[] }>
  >(
    `with raised as (
       update sessions s
          set aal = 2, refresh_token_hash = ?, last_active_at = now(),
              amr = (select coalesce(jsonb_agg(x.m order by x.i), '[]'::jsonb)
                       from (select t.m, min(t.i) as i
                               from jsonb_array_elements_text(coalesce(s.amr, '[]'::jsonb) || ?::jsonb)
                                    with ordinality as t(m, i)
                              group by t.m) x)
         from users u
        where s.id = ? and s.application_id = ? and s.user_id = ? and s.aal < 2 and s.revoked_at is null
          and s.expires_at > now() and s.last_active_at > now() - make_interval(secs => ?)
          and u.id = s.user_id and u.status = 'active'
        returning s.id, s.user_id, s.aal, s.organization_id, s.host_id, s.amr
     ), issued as (
       insert into refresh_tokens (token_hash, session_id, created_at) select ?, id, now() from raised
     )
     select * from raised`,
    [sha256(refreshToken), JSON.stringify(added), sessionId, application.id, user.id, idle_timeout_s, sha256(refreshToken)],
  );
  if (!row) throw invalidPendingToken();
  recordEvent(em, application.id, 'session.stepped_up', {
    id: row.id,
    user_id: row.user_id,
    aal: row.aal,
    method,
    amr: row.amr,
  });
  await em.flush();
  return {
    user,
    session: { id: row.id, user: row.user_id, aal: row.aal, organization: row.organization_id, hostId: row.host_id },
    refreshToken,
  };
}

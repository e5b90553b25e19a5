import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { Context } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { AppError, assertionFailed, invalidPendingToken, notFound, stepUpRequired } from '../../errors.ts';
import { randomSecret, sha256 } from '../../lib/crypto.ts';
import { deleteInBatches, type PurgeStep, SPENT_ONE_TIME_ROWS } from '../../lib/housekeeping.ts';
import { newId } from '../../lib/ids.ts';
import { iso } from '../../lib/time.ts';
import type { Application } from '../applications/application.entity.ts';
import { settingsOf } from '../applications/applications.service.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { recordEvent } from '../events/events.service.ts';
import { requireStepUpWhenEnrolled, secondFactorAttempt } from '../mfa/mfa.service.ts';
import type { SignedInContext } from '../sessions/contexts.ts';
import { clearMfaEnrollmentRequired } from '../sessions/sessions.service.ts';
import type { SignInResult } from '../sign-in/sign-in.schema.ts';
import { completeSignIn, peekPendingToken, type SecondFactorSource, type Statement } from '../sign-in/sign-in.service.ts';
import { sendSecurityNotice } from '../templates/templates.service.ts';
import { type Identity, IdentityEntity } from '../users/identity.entity.ts';
import { UserEntity } from '../users/user.entity.ts';
import type { AssertionCredential, PasskeyRecord, RegistrationCredential } from './passkeys.schema.ts';
import { WebauthnChallengeEntity } from './webauthn-challenge.entity.ts';

/**
 * @simplewebauthn/server (with its ASN.1 and X.509 libraries, a tenth of the server's modules) loads on the first
 * passkey ceremony, not at start: most deployments see few of them.
 */
const webauthn = () => import('@simplewebauthn/server');

/** SECURITY 4: a ceremony must finish within 5 minutes; the browser is told the same. */
const CHALLENGE_TTL_MS = 5 * 60_000;
/** Starting a ceremony writes a row and needs no credential: bounded per client address. */
const CEREMONY_STARTS = { name: 'passkey_starts_address', points: 100, windowS: 300 };
const DEFAULT_NAME = 'Passkey';
const NO_AAGUID = '00000000-0000-0000-0000-000000000000';

type Ceremony = 'registration' | 'sign_in' | 'mfa';

interface RelyingParty {
  id: string;
  name: string;
  origins: string[];
}

/**
 * The relying party of CONTRACT §5: `settings.passkeys.rp_id`, else the host of the first allowed origin; the
 * origins a response may come from are exactly `allowed_origins` (scheme, host and port).
 */
function relyingParty(application: Application): RelyingParty {
  const origins = application.allowedOrigins;
  const [first] = origins;
  if (!first) {
    throw new AppError('validation_failed', 'Passkeys need the web origin of the application in its allowed_origins', [
      { path: 'allowed_origins', message: 'empty' },
    ]);
  }
  const settings = settingsOf(application).passkeys;
  return { id: settings.rp_id ?? new URL(first).hostname, name: settings.rp_name ?? application.name, origins };
}

/** The WebAuthn user handle: the user id's 16 bytes (no personal data, stable for the user). */
const userHandleOf = (userId: string) => new Uint8Array(Buffer.from(userId.replaceAll('-', ''), 'hex'));

const toPasskeyRecord = (passkey: Identity): PasskeyRecord => ({
  id: passkey.id,
  name: passkey.name,
  aaguid: passkey.aaguid ?? NO_AAGUID,
  transports: passkey.transports ?? [],
  backed_up: passkey.backedUp ?? false,
  created_at: passkey.createdAt.toISOString(),
  last_used_at: iso(passkey.lastUsedAt),
});

const passkeysOf = (em: EntityManager, userId: string) =>
  em.find(IdentityEntity, { user: userId, kind: 'passkey' }, { orderBy: { createdAt: 'desc', id: 'desc' } });

function signedIn(ctx: SignedInContext) {
  return { application: ctx.application, session: ctx.session, user: ctx.user };
}

// ---------------------------------------------------------------------------------------------------------------
// Ceremonies: a challenge bound to a state, single use

interface CeremonyBinding {
  user?: string;
  session?: string;
  pendingToken?: string;
  /** Sign-in: the host the start named (host access rules). */
  hostId?: string;
}

async function openCeremony(
  ctx: Context,
  application: Application,
  ceremony: Ceremony,
  challenge: string,
  binding: CeremonyBinding,
): Promise<string> {
  const state = randomSecret('wst_');
  const em = ctx.em.fork();
  em.create(WebauthnChallengeEntity, {
    id: newId(),
    application: application.id,
    ceremony,
    stateHash: sha256(state),
    challenge,
    user: binding.user ?? null,
    session: binding.session ?? null,
    pendingToken: binding.pendingToken ?? null,
    hostId: binding.hostId ?? null,
    expiresAt: new Date(Date.now() + CHALLENGE_TTL_MS),
    consumedAt: null,
  });
  await em.flush();
  return state;
}

interface CeremonyRow {
  challenge: string;
  user_id: string | null;
  session_id: string | null;
  pending_token_id: string | null;
  host_id: string | null;
}

/**
 * Spends a state before its response is verified (SECURITY 3): of twenty concurrent finishes one gets the challenge,
 * and a failed attempt has used it up. Unknown, expired, spent or of another ceremony: 401 `invalid_pending_token`.
 */
async function consumeCeremony(ctx: Context, application: Application, state: string, ceremony: Ceremony) {
  const rows = await ctx.em.execute<CeremonyRow[]>(
    `update webauthn_challenges set consumed_at = now()
      where state_hash = ? and application_id = ? and ceremony = ? and consumed_at is null and expires_at > now()
      returning challenge, user_id, session_id, pending_token_id, host_id`,
    [sha256(state), application.id, ceremony],
  );
  if (!rows[0]) throw invalidPendingToken();
  return rows[0];
}

// ---------------------------------------------------------------------------------------------------------------
// Registration (signed in)

export async function startRegistration(ctx: SignedInContext) {
  const { application, session, user } = signedIn(ctx);
  const rp = relyingParty(application);
  await requireStepUpWhenEnrolled(ctx);
  const existing = await passkeysOf(ctx.em, user.id);
  const displayName = typeof user.profile.name === 'string' ? user.profile.name : undefined;
  const options = await (await webauthn()).generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userID: userHandleOf(user.id),
    userName: user.primaryEmail ?? user.id,
    userDisplayName: displayName ?? user.primaryEmail ?? '',
    timeout: CHALLENGE_TTL_MS,
    attestationType: 'none',
    // The same authenticator is not registered twice: the browser refuses these before asking the person.
    excludeCredentials: existing.map((p) => ({ id: p.subject, transports: p.transports ?? undefined })),
    authenticatorSelection: { residentKey: 'preferred', userVerification: 'required' },
  });
  const state = await openCeremony(ctx, application, 'registration', options.challenge, {
    user: user.id,
    session: session.id,
  });
  return { options, state };
}

export async function finishRegistration(
  ctx: SignedInContext,
  input: { credential: RegistrationCredential; state: string; name?: string },
) {
  const { application, session, user } = signedIn(ctx);
  const ceremony = await consumeCeremony(ctx, application, input.state, 'registration');
  // A state is good only for the session that started it: another session's (or user's) is unknown here.
  if (ceremony.session_id !== session.id || ceremony.user_id !== user.id) throw invalidPendingToken();
  const rp = relyingParty(application);
  await requireStepUpWhenEnrolled(ctx);
  const verification = await (await webauthn())
    .verifyRegistrationResponse({
      // our schema checks the fields we read; @simplewebauthn/server verifies the rest of the credential itself.
      response: input.credential as RegistrationResponseJSON,
      expectedChallenge: ceremony.challenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.id,
      requireUserVerification: true,
    })
    .catch(() => null);
  if (!verification?.verified) throw assertionFailed();
  const info = verification.registrationInfo;
  const passkey = ctx.em.create(IdentityEntity, {
    id: newId(),
    application: application.id,
    user: user.id,
    kind: 'passkey',
    subject: info.credential.id,
    name: input.name ?? DEFAULT_NAME,
    publicKey: Buffer.from(info.credential.publicKey).toString('base64url'),
    signCount: info.credential.counter,
    userHandle: Buffer.from(userHandleOf(user.id)).toString('base64url'),
    transports: info.credential.transports ?? [],
    aaguid: info.aaguid,
    backupEligible: info.credentialDeviceType === 'multiDevice',
    backedUp: info.credentialBackedUp,
    lastUsedAt: null,
  });
  try {
    await ctx.em.transactional(async (em) => {
      await em.flush();
      await clearMfaEnrollmentRequired(em, application.id, user.id);
    });
  } catch (error) {
    // The unique index decides: one credential is one identity, however many times it is sent.
    if (error instanceof UniqueConstraintViolationException) {
      throw new AppError('conflict', 'This passkey is already registered');
    }
    throw error;
  }
  await sendSecurityNotice(ctx, user, 'passkey_added', passkey.name);
  return toPasskeyRecord(passkey);
}

// ---------------------------------------------------------------------------------------------------------------
// Assertions: first factor and second factor

/** What an assertion is checked against: a passkey identity, as an entity or as its row. */
interface StoredPasskey {
  id: string;
  user: string;
  subject: string;
  publicKey?: string | null;
  userHandle?: string | null;
  transports?: string[] | null;
  signCount?: number | null;
}

const storedPasskeyFromRow = (row: Record<string, any>): StoredPasskey => ({
  id: row.id,
  user: row.user_id,
  subject: row.subject,
  publicKey: row.public_key,
  userHandle: row.user_handle,
  transports: row.transports,
  signCount: Number(row.sign_count),
});

/**
 * Checks an assertion against a stored passkey (no database effect): the challenge, an allowed origin, the rpIdHash,
 * user presence and verification, the signature, and the user handle. Then the counter: when either the stored or the
 * reported value is non-zero it must grow (a regression suggests a cloned authenticator). Answers the conditional
 * UPDATE that advances the counter — the one-time part, run by the caller, so that two assertions carrying the same
 * counter cannot both pass — and what to record (`passkey.counter_regression`) when that UPDATE finds the counter did
 * not advance. 401 `assertion_failed` when it does not verify.
 */
async function checkAssertion(
  ctx: Context,
  application: Application,
  challenge: string,
  credential: AssertionCredential,
  passkey: StoredPasskey | null,
  userId?: string,
): Promise<{ gate: Statement; refused: () => Promise<void> }> {
  const rp = relyingParty(application);
  if (!passkey?.publicKey) throw assertionFailed();
  // Discoverable sign-in names the user only through the handle: it must be the one this credential was made for.
  const handle = credential.response.userHandle;
  if (handle ? handle !== passkey.userHandle : !userId) throw assertionFailed();
  const verification = await (await webauthn())
    .verifyAuthenticationResponse({
      // our schema checks the fields we read; @simplewebauthn/server verifies the rest of the credential itself.
      response: credential as AuthenticationResponseJSON,
      expectedChallenge: challenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.id,
      expectedType: 'webauthn.get',
      requireUserVerification: true,
      // The counter rule (and its record) is ours, below; the library is given no counter to compare.
      credential: {
        id: passkey.subject,
        publicKey: new Uint8Array(Buffer.from(passkey.publicKey, 'base64url')),
        counter: 0,
        // the stored transports are the values @simplewebauthn/server reported at registration.
        transports: (passkey.transports ?? undefined) as never,
      },
    })
    .catch(() => null);
  if (!verification?.verified) throw assertionFailed();
  const reported = verification.authenticationInfo.newCounter;
  return {
    gate: {
      sql: `update identities set sign_count = ?, backed_up = ?, last_used_at = now()
             where id = ? and ((sign_count = 0 and ? = 0) or sign_count < ?)
             returning id`,
      params: [reported, verification.authenticationInfo.credentialBackedUp, passkey.id, reported, reported],
    },
    refused: async () => {
      const em = ctx.em.fork();
      recordEvent(em, application.id, 'passkey.counter_regression', {
        passkey_id: passkey.id,
        user_id: passkey.user,
        stored_counter: passkey.signCount ?? null,
        reported_counter: reported,
      });
      await em.flush();
      ctx.log.warn({ passkeyId: passkey.id, userId: passkey.user }, 'passkey counter regression refused');
    },
  };
}

async function limitStarts(ctx: Context, application: Application) {
  await ctx.services.rateLimits.consume([{ ...CEREMONY_STARTS, key: `${application.id}:${ctx.ip}` }], ctx.response.headers);
}

/** First factor: any discoverable passkey of this relying party; the browser lets the person choose. */
export async function startSignIn(ctx: TenantContext, input: { host_id?: string } = {}) {
  const application = ctx.application;
  const rp = relyingParty(application);
  await limitStarts(ctx, application);
  const options = await (await webauthn()).generateAuthenticationOptions({
    rpID: rp.id,
    userVerification: 'required',
    timeout: CHALLENGE_TTL_MS,
  });
  const binding = input.host_id ? { hostId: input.host_id } : {};
  return { options, state: await openCeremony(ctx, application, 'sign_in', options.challenge, binding) };
}

/** A verified passkey with user verification is two factors in one: the sign-in continues at aal 2. */
export async function finishSignIn(ctx: TenantContext, input: { credential: AssertionCredential; state: string }) {
  const application = ctx.application;
  const ceremony = await consumeCeremony(ctx, application, input.state, 'sign_in');
  const passkey = await ctx.em.findOne(IdentityEntity, {
    application: application.id,
    kind: 'passkey',
    subject: input.credential.id,
  });
  if (!passkey) throw assertionFailed();
  const { gate, refused } = await checkAssertion(ctx, application, ceremony.challenge, input.credential, passkey);
  if (!(await ctx.em.execute(gate.sql, gate.params)).length) {
    await refused();
    throw assertionFailed();
  }
  return completeSignIn(ctx, application, async (em) => ({
    user: await em.findOneOrFail(UserEntity, { id: passkey.user }),
    aal: 2,
    firstFactor: 'passkey',
    hostId: ceremony.host_id,
  }));
}

/** Second factor: only this user's passkeys are allowed; the state is bound to the pending sign-in. */
export async function startMfa(ctx: TenantContext, input: { pending_token: string }) {
  const application = ctx.application;
  const rp = relyingParty(application);
  await limitStarts(ctx, application);
  const pending = await peekPendingToken(ctx.em, application, { token: input.pending_token }, 'mfa');
  const passkeys = await passkeysOf(ctx.em, pending.user);
  if (!passkeys.length) throw notFound('Passkey');
  const options = await (await webauthn()).generateAuthenticationOptions({
    rpID: rp.id,
    userVerification: 'required',
    timeout: CHALLENGE_TTL_MS,
    allowCredentials: passkeys.map((p) => ({ id: p.subject, transports: p.transports ?? undefined })),
  });
  const state = await openCeremony(ctx, application, 'mfa', options.challenge, {
    user: pending.user,
    pendingToken: pending.id,
  });
  return { options, state };
}

/**
 * S5. The state is spent first; the attempt then counts like a wrong code (five kill the pending token) unless the
 * assertion verifies for the pending user, which consumes the pending token and completes at aal 2.
 */
export async function finishMfa(
  ctx: TenantContext,
  input: { credential: AssertionCredential; state: string },
): Promise<SignInResult> {
  const application = ctx.application;
  // The state is spent in the statement that reserves the attempt: one round trip, whatever follows.
  const via: Statement = {
    sql: `update webauthn_challenges set consumed_at = now()
           where state_hash = ? and application_id = ? and ceremony = 'mfa' and consumed_at is null and expires_at > now()
           returning challenge, pending_token_id`,
    params: [sha256(input.state), application.id],
  };
  return secondFactorAttempt(
    ctx,
    { via },
    {
      kind: 'passkey',
      lookup: {
        sql: `select * from identities i
             where i.application_id = ? and i.kind = 'passkey' and i.subject = ? and i.user_id = p.user_id`,
        params: [application.id, input.credential.id],
      },
      check: async (row, ceremony) => {
        // The ceremony's row is there: the attempt was reserved through it.
        if (!ceremony) return null;
        try {
          const passkey = row ? storedPasskeyFromRow(row) : null;
          const { gate, refused } = await checkAssertion(
            ctx,
            application,
            ceremony.challenge,
            input.credential,
            passkey,
            passkey?.user,
          );
          return { gates: [gate], refused };
        } catch (error) {
          if (error instanceof AppError && error.code === 'assertion_failed') return null;
          throw error;
        }
      },
    },
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Management

export async function listPasskeys(ctx: SignedInContext) {
  return (await passkeysOf(ctx.em, signedIn(ctx).user.id)).map(toPasskeyRecord);
}

/** S16. Another user's (or application's) passkey is 404; removing one always needs aal 2. */
export async function deletePasskey(ctx: SignedInContext, id: string) {
  const { application, session, user } = signedIn(ctx);
  const passkey = await ctx.em.findOne(IdentityEntity, { id, application: application.id, user: user.id, kind: 'passkey' });
  if (!passkey) throw notFound('Passkey');
  if (session.aal < 2) throw stepUpRequired();
  if (!(await ctx.em.nativeDelete(IdentityEntity, { id: passkey.id }))) throw notFound('Passkey');
  await sendSecurityNotice(ctx, user, 'passkey_removed', passkey.name);
  return { id, deleted: true as const };
}

// ---------------------------------------------------------------------------------------------------------------
// Support (secret key): the factors of any user of the application

export async function passkeysOfUser(em: EntityManager, userId: string): Promise<PasskeyRecord[]> {
  return (await passkeysOf(em, userId)).map(toPasskeyRecord);
}

/** Removes a passkey of the user inside the caller's transaction. */
export async function removePasskeyOfUser(em: EntityManager, userId: string, id: string): Promise<PasskeyRecord | null> {
  const passkey = await em.findOne(IdentityEntity, { id, user: userId, kind: 'passkey' });
  if (!passkey) return null;
  await em.nativeDelete(IdentityEntity, { id: passkey.id });
  return toPasskeyRecord(passkey);
}

// ---------------------------------------------------------------------------------------------------------------
// Extension points

export const passkeySecondFactors: SecondFactorSource = `select 'passkey' as method from identities where user_id = ? and kind = 'passkey' limit 1`;

/** Ceremony starts need no credential, so their rows must not pile up. */
export const purgeWebauthnChallenges: PurgeStep = (em) => deleteInBatches(em, 'webauthn_challenges', SPENT_ONE_TIME_ROWS);

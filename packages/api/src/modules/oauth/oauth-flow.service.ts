import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { Context } from '../../context.ts';
import { type EntityManager, preparedQuery } from '../../db/orm.ts';
import { AppError, notFound, stepUpRequired } from '../../errors.ts';
import { randomBase62, sha256 } from '../../lib/crypto.ts';
import { deleteInBatches, type PurgeStep, SPENT_ONE_TIME_ROWS } from '../../lib/housekeeping.ts';
import { newId } from '../../lib/ids.ts';
import type { Hooks } from '../../lib/modules.ts';
import type { Application } from '../applications/application.entity.ts';
import { applicationFromRow, settingsOf } from '../applications/applications.service.ts';
import type { EndUserInStatementContext } from '../applications/callers.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { isHostedPageOf } from '../applications/cors.ts';
import { EVENT_COLUMNS, EVENT_VALUES, eventRow, recordEvent } from '../events/events.service.ts';
import type { SignedInContext } from '../sessions/contexts.ts';
import {
  completeReturningSignIn,
  completeSignIn,
  type ReturningSignIn,
  type SignInSubject,
  secondFactorMethods,
  secondFactorsSql,
} from '../sign-in/sign-in.service.ts';
import { type Identity, IdentityEntity } from '../users/identity.entity.ts';
import type { User } from '../users/user.entity.ts';
import { findUser, normalizeEmail, toUserRecord, userFromRow } from '../users/users.service.ts';
import {
  authorizationUrl,
  codeVerifier,
  type ExchangeResult,
  exchangeCode,
  type OAuthProviderName,
  type ProviderClient,
  ProviderFailure,
  providerLabel,
  unreachable,
  usesNonce,
} from './oauth.providers.ts';
import type { IdentityRecord } from './oauth.schema.ts';
import { PROVIDER_SETTING_SQL, type ProviderSettingRow, providerClient } from './oauth.service.ts';
import { OAuthStateEntity } from './oauth-state.entity.ts';

const STATE_TTL_MS = 10 * 60_000;
const LINKABLE_KINDS = ['oauth', 'saml'];
const stateContext = (applicationId: string, stateHash: string) => `oauth_state:${applicationId}:${stateHash}`;
const tokenContext = (applicationId: string, identityId: string) => `oauth_tokens:${applicationId}:${identityId}`;

type Purpose = 'sign_in' | 'link';

/** An OAuth identity's subject: per provider (and, for `oidc`, per issuer), the provider's own user id. */
const subjectOf = (client: ProviderClient, sub: string) =>
  client.provider === 'oidc' ? `oidc:${client.issuer}#${sub}` : `${client.provider}:${sub}`;
const providerOfSubject = (subject: string) => subject.slice(0, subject.indexOf(':'));

export function toIdentityRecord(identity: Identity): IdentityRecord {
  return {
    id: identity.id,
    // the entity types the column as string; only the schema's values are ever written to it.
    kind: identity.kind as IdentityRecord['kind'],
    provider: identity.kind === 'oauth' ? providerOfSubject(identity.subject) : null,
    name: identity.name,
    created_at: identity.createdAt.toISOString(),
    last_used_at: identity.lastUsedAt ? identity.lastUsedAt.toISOString() : null,
  };
}

/**
 * Starts an authorization (RFC 9700): a fresh `state`, a PKCE S256 verifier, and for OIDC a `nonce`, stored in the
 * database (any process can finish) bound to the application, provider, purpose and, for linking, the user.
 */
async function start(
  ctx: TenantContext,
  input: { provider: OAuthProviderName; redirect_uri: string; host_id?: string },
  purpose: Purpose,
  user: User | null,
): Promise<{ authorization_url: string }> {
  const application = ctx.application;
  await ctx.services.rateLimits.consume(
    [{ name: 'oauth_start', key: `${application.id}:${ctx.ip}`, points: 100, windowS: 300 }],
    ctx.response.headers,
  );
  // SECURITY 10: the browser only ever returns to an allowed origin, compared exactly, or to the application's own
  // hosted pages (their social sign-in buttons).
  const target = new URL(input.redirect_uri);
  if (
    !application.allowedOrigins.includes(target.origin) &&
    !(await isHostedPageOf(ctx.em, ctx.services, application.id, target))
  ) {
    throw new AppError('invalid_url', 'redirect_uri must be on one of the application\u2019s allowed origins', [
      { path: 'redirect_uri', message: 'origin not allowed' },
    ]);
  }
  const client = await providerClient(ctx, application, input.provider);
  const secrets = {
    state: randomBase62(43),
    verifier: await codeVerifier(),
    nonce: usesNonce(input.provider) ? randomBase62(32) : null,
  };
  let url: URL;
  try {
    url = await authorizationUrl(ctx.services.oauth, client, secrets);
  } catch (error) {
    throw providerError(ctx, client, error instanceof ProviderFailure ? error : unreachable(String(error)));
  }
  const stateHash = sha256(secrets.state);
  ctx.em.create(OAuthStateEntity, {
    id: newId(),
    application: application.id,
    provider: input.provider,
    stateHash,
    purpose,
    user: user?.id ?? null,
    secretsSealed: ctx.services.secretBox.encrypt(
      JSON.stringify({ verifier: secrets.verifier, nonce: secrets.nonce }),
      stateContext(application.id, stateHash),
    ),
    redirectUri: input.redirect_uri,
    hostId: input.host_id ?? null,
    expiresAt: new Date(Date.now() + STATE_TTL_MS),
    consumedAt: null,
  });
  await ctx.em.flush();
  return { authorization_url: url.toString() };
}

/**
 * A failed provider step as the person sees it: 401 when the provider refused this attempt; 503 naming the provider
 * when it could not be reached or answered what no sign-in could use (its outage, or its misconfiguration: not
 * something the person did, and worth trying again later).
 */
function providerError(ctx: Context, client: ProviderClient, failure: ProviderFailure): AppError {
  ctx.log.warn({ provider: client.provider, reason: failure.message }, 'OAuth provider step refused');
  if (!failure.unavailable) return new AppError('invalid_verification', failure.hint);
  const issuerHost = client.issuer ? ` (${new URL(client.issuer).host})` : '';
  return new AppError(
    'service_unavailable',
    `Sign-in with ${providerLabel(client.provider)}${issuerHost} is unavailable: ${failure.hint}`,
    undefined,
    { 'retry-after': '30' },
  );
}

const PROVIDER_ERRORS: Record<string, string> = {
  access_denied: 'The person declined, or the provider did not allow this app (access_denied).',
  consent_required: 'The provider needs the person\u2019s consent first (consent_required).',
  login_required: 'The person is not signed in at the provider (login_required).',
  interaction_required: 'The provider needs the person to interact (interaction_required).',
  temporarily_unavailable: 'The provider is temporarily unavailable (temporarily_unavailable).',
  server_error: 'The provider had an internal error (server_error).',
};

/**
 * Spends a state once (a conditional update: of 20 concurrent callbacks with it, one wins), bound to this
 * application, provider and purpose (and user, when linking), and reads the provider setting in the same statement
 * (a setting changed or disabled since the start counts). The sign-in callback reads its application there too
 * (`ctx.applicationInStatement`): the state is spent only for an application that allows the caller's origin. Then
 * redeems the code outside any transaction.
 */
async function finish(
  ctx: TenantContext | EndUserInStatementContext,
  input: { provider: OAuthProviderName; code?: string; state: string; error?: string },
  purpose: Purpose,
  user: User | null,
): Promise<{ application: Application; client: ProviderClient; result: ExchangeResult; hostId: string | null }> {
  const deferred = 'applicationInStatement' in ctx ? ctx.applicationInStatement : undefined;
  const applicationId = 'applicationInStatement' in ctx ? ctx.applicationInStatement.id : ctx.application.id;
  const origin = deferred?.origin ?? { sql: () => 'true', params: [] };
  const stateHash = sha256(input.state);
  const [row] = await preparedQuery<{
    application: Record<string, unknown>;
    secrets_sealed: string | null;
    host_id: string | null;
    setting: ProviderSettingRow | null;
  }>(
    ctx.em,
    `oauth_state_spend${deferred ? '_by_end_user' : ''}`,
    `with a as (select * from applications where id = ?), spent as (
       update oauth_states set consumed_at = now()
        where state_hash = ? and application_id = (select id from a) and provider = ? and purpose = ?
          and user_id is not distinct from ? and consumed_at is null and expires_at > now()
          and (select ${origin.sql('a')} from a)
        returning secrets_sealed, host_id
     )
     select row_to_json(a) as application, spent.secrets_sealed, spent.host_id,
            (${PROVIDER_SETTING_SQL}) as setting
       from a left join spent on true`,
    [applicationId, stateHash, input.provider, purpose, user?.id ?? null, ...origin.params, applicationId, input.provider],
  );
  const application =
    'applicationInStatement' in ctx
      ? ctx.applicationInStatement.accept(row ? applicationFromRow(row.application) : undefined)
      : ctx.application;
  if (!row?.secrets_sealed) {
    throw new AppError(
      'invalid_verification',
      'This sign-in attempt is unknown, expired (10 minutes) or already finished. Start again from the sign-in button.',
    );
  }
  // The input schema lets exactly one of `code` and `error` through.
  const { code } = input;
  if (input.error !== undefined || code === undefined) {
    throw new AppError(
      'invalid_verification',
      `${PROVIDER_ERRORS[input.error ?? ''] ?? 'The provider did not sign the person in.'} Start again to retry.`,
    );
  }
  const { verifier, nonce } = JSON.parse(
    ctx.services.secretBox.decrypt(row.secrets_sealed, stateContext(application.id, stateHash)),
  );
  const client = await providerClient(ctx, application, input.provider, row.setting);
  try {
    return {
      application,
      client,
      result: await exchangeCode(ctx.services.oauth, client, { code, state: input.state, verifier, nonce }),
      hostId: row.host_id,
    };
  } catch (error) {
    // exchangeCode turns every failure into a ProviderFailure (classify), and catch binds unknown.
    throw providerError(ctx, client, error as ProviderFailure);
  }
}

/**
 * Links a new OAuth identity to `userId`, with `before` (the user's own change, if any) and their events, in one
 * statement. The unique keys (the identity's; a new user's email) make a concurrent first link of the same account
 * wait for the other's transaction, then fail with a unique violation. Answers the identity's record.
 */
async function linkNew(
  em: EntityManager,
  application: Application,
  userId: string,
  client: ProviderClient,
  result: ExchangeResult,
  before: { sql: string; params: unknown[]; event: ReturnType<typeof eventRow> } | null,
): Promise<IdentityRecord> {
  const label = providerLabel(client.provider);
  const now = new Date();
  const record: IdentityRecord = {
    id: newId(),
    kind: 'oauth',
    provider: client.provider,
    name: (result.profile.email ? `${label} (${result.profile.email})` : label).slice(0, 200),
    created_at: now.toISOString(),
    last_used_at: now.toISOString(),
  };
  const events = [
    ...(before ? [before.event] : []),
    eventRow(application.id, 'user.identity_linked', { user_id: userId, identity: record }),
  ];
  await em.execute(
    `with ${before ? `changed as (${before.sql}), ` : ''}linked as (
       insert into identities (id, application_id, user_id, kind, subject, name, created_at, last_used_at)
       values (?, ?, ?, 'oauth', ?, ?, ?, ?)
     )
     insert into events (${EVENT_COLUMNS}) values ${events.map(() => EVENT_VALUES).join(', ')}`,
    [
      ...(before?.params ?? []),
      record.id,
      application.id,
      userId,
      subjectOf(client, result.profile.subject),
      record.name,
      now,
      now,
      ...events.flat(),
    ],
  );
  return record;
}

/** The provider's tokens, only when the application asked for them (`settings.oauth.store_provider_tokens`), sealed. */
async function keepTokens(ctx: Context, em: EntityManager, application: Application, identityId: string, result: ExchangeResult) {
  if (!settingsOf(application).oauth.store_provider_tokens) return;
  const sealed = ctx.services.secretBox.encrypt(JSON.stringify(result.tokens), tokenContext(application.id, identityId));
  await em.execute(
    `insert into oauth_provider_tokens (id, identity_id, application_id, tokens_sealed, updated_at) values (?, ?, ?, ?, now())
      on conflict (identity_id) do update set tokens_sealed = excluded.tokens_sealed, updated_at = now()`,
    [newId(), identityId, application.id, sealed],
  );
}

/**
 * Who an OAuth identity signs in: the user linked to (provider, subject); else the user with the provider's email
 * when the provider says it is verified (then linked); else a new user. An unverified email that matches an account
 * is refused: linking it would hand that account to whoever controls the provider account (account takeover).
 */
async function signInByOAuth(
  ctx: Context,
  em: EntityManager,
  application: Application,
  client: ProviderClient,
  result: ExchangeResult,
): Promise<SignInSubject> {
  const known = await useIdentity(ctx.services.hooks, em, application, subjectOf(client, result.profile.subject));
  const { user, identityId, secondFactors } = known ?? (await firstSignIn(em, application, client, result));
  await keepTokens(ctx, em, application, identityId, result);
  return { user, aal: 1, firstFactor: 'oauth', secondFactors };
}

async function firstSignIn(
  em: EntityManager,
  application: Application,
  client: ProviderClient,
  result: ExchangeResult,
): Promise<{ user: User; identityId: string; secondFactors?: string[] }> {
  const label = providerLabel(client.provider);
  const { email, emailVerified } = result.profile;
  const normalized = email ? normalizeEmail(email) : null;
  const [existing] = normalized
    ? await em.execute<Array<{ u: Record<string, unknown> }>>(
        'select row_to_json(u) as u from users u where application_id = ? and email_normalized = ?',
        [application.id, normalized],
      )
    : [];
  if (existing && !emailVerified) {
    throw new AppError(
      'email_taken',
      `An account with this email already exists, and ${label} does not say the address is verified. Sign in to that account another way first, then link ${label} from the account's settings.`,
    );
  }
  const now = new Date();
  if (existing) {
    let user = userFromRow(existing.u);
    let verify = null;
    if (!user.emailVerified && user.status === 'active') {
      user = { ...user, emailVerified: true, updatedAt: now };
      verify = {
        sql: 'update users set email_verified = true, updated_at = ? where id = ?',
        params: [now, user.id],
        event: eventRow(application.id, 'user.updated', toUserRecord(user)),
      };
    }
    return { user, identityId: (await linkNew(em, application, user.id, client, result, verify)).id };
  }
  if (settingsOf(application).sign_up !== 'open') throw new AppError('access_denied', 'Sign-up is closed for this application');
  // An unverified address is not claimed: it would reserve someone else's email for this account (pre-hijacking).
  const claimed = emailVerified ? email : null;
  const profile: Record<string, unknown> = {};
  if (result.profile.name) profile.name = result.profile.name.slice(0, 200);
  if (result.profile.picture) profile.picture = result.profile.picture.slice(0, 2048);
  const user: User = {
    id: newId(),
    application: application.id,
    primaryEmail: claimed,
    emailNormalized: claimed ? normalizeEmail(claimed) : null,
    emailVerified: !!claimed,
    status: 'active',
    profile,
    mergedInto: null,
    createdAt: now,
    updatedAt: now,
  };
  const create = {
    sql: `insert into users (id, application_id, primary_email, email_normalized, email_verified, status, profile, merged_into,
                             created_at, updated_at)
          values (?, ?, ?, ?, ?, 'active', ?, null, ?, ?)`,
    params: [
      user.id,
      user.application,
      user.primaryEmail,
      user.emailNormalized,
      user.emailVerified,
      JSON.stringify(profile),
      now,
      now,
    ],
    event: eventRow(application.id, 'user.created', toUserRecord(user)),
  };
  return { user, identityId: (await linkNew(em, application, user.id, client, result, create)).id };
}

// ---------------------------------------------------------------------------------------------------------------
// Sign-in (ES)

export const startOAuth = (ctx: TenantContext, input: { provider: OAuthProviderName; redirect_uri: string; host_id?: string }) =>
  start(ctx, input, 'sign_in', null);

export async function oauthCallback(
  ctx: EndUserInStatementContext,
  input: { provider: OAuthProviderName; code?: string; state: string; error?: string },
) {
  const { application, client, result, hostId } = await finish(ctx, input, 'sign_in', null);
  // Provider tokens, when kept, are written with the sign-in in its transaction: then every pass is the full step.
  const lean = !settingsOf(application).oauth.store_provider_tokens;
  const subject = subjectOf(client, result.profile.subject);
  const step = async (em: EntityManager) => ({ ...(await signInByOAuth(ctx, em, application, client, result)), hostId });
  for (let retried = false; ; retried = true) {
    const returning = lean ? await completeReturningSignIn(ctx, application, returningBy(application, subject, hostId)) : null;
    if (returning) return returning;
    try {
      return await completeSignIn(ctx, application, step);
    } catch (error) {
      // Two first sign-ins of one person at once: the loser's new user or identity collides with the winner's. Those
      // rows exist now, so one more pass signs in the user the winner created.
      if (retried || !(error instanceof UniqueConstraintViolationException)) throw error;
    }
  }
}

/** A returning person by their OAuth identity, marked used when the sign-in goes on (a refused one leaves no trace). */
const returningBy = (application: Application, subject: string, hostId: string | null): ReturningSignIn => ({
  name: 'oauth_identity',
  who: {
    sql: "select id, user_id from identities where application_id = ? and kind = 'oauth' and subject = ?",
    params: [application.id, subject],
  },
  used: { sql: 'update identities i set last_used_at = now() from signed where i.id = signed.id', params: [] },
  firstFactor: 'oauth',
  hostId,
});

/**
 * A returning person inside the step's transaction (a first sign-in's, or one that keeps provider tokens), in one
 * statement: the identity found and marked used (undone with the transaction when the sign-in is refused), its user
 * and the user's second factors read.
 */
async function useIdentity(
  hooks: Hooks,
  em: EntityManager,
  application: Application,
  subject: string,
): Promise<{ user: User; identityId: string; secondFactors: string[] } | null> {
  const [row] = await preparedQuery<{ id: string; u: Record<string, unknown>; second_factors: string[] }>(
    em,
    'oauth_identity_use',
    `with used as (
       update identities set last_used_at = now() where application_id = ? and kind = 'oauth' and subject = ?
        returning id, user_id
     )
     select used.id, row_to_json(u) as u, ${secondFactorsSql(hooks, 'u.id')} as second_factors
       from used join users u on u.id = used.user_id`,
    [application.id, subject],
  );
  return row ? { user: userFromRow(row.u), identityId: row.id, secondFactors: row.second_factors } : null;
}

/**
 * `GET|POST /v1/auth/oauth/redirect` (the redirect URI registered at every provider; Apple posts a form): sends the
 * browser on to the `redirect_uri` its state was started with, carrying `code` (or `error`), `state` and `provider`. Nothing is
 * spent here: the app's callback does that. An unknown or spent state goes nowhere (no open redirect).
 */
export async function relayRedirect(ctx: Context, params: Record<string, unknown>): Promise<{ location: string }> {
  const state = typeof params.state === 'string' ? params.state : '';
  const row = state
    ? await ctx.em.findOne(OAuthStateEntity, { stateHash: sha256(state), consumedAt: null, expiresAt: { $gt: new Date() } })
    : null;
  if (!row) {
    throw new AppError('invalid_verification', 'This sign-in attempt is unknown, expired or already finished. Start again.');
  }
  const url = new URL(row.redirectUri);
  url.searchParams.set('state', state);
  // Which callback to post to (the SDK's `handleCallback` reads it); the state is bound to it anyway.
  url.searchParams.set('provider', row.provider);
  for (const name of ['code', 'error'] as const) {
    const value = params[name];
    if (typeof value === 'string' && value.length <= 2048) url.searchParams.set(name, value);
  }
  return { location: url.toString() };
}

// ---------------------------------------------------------------------------------------------------------------
// Linking (ES★)

function signedIn(ctx: SignedInContext) {
  return { application: ctx.application, session: ctx.session, user: ctx.user };
}

export const startLink = (ctx: SignedInContext, input: { provider: OAuthProviderName; redirect_uri: string }) =>
  start(ctx, input, 'link', signedIn(ctx).user);

/** Adds the provider account to the signed-in user; one already linked to someone else is 409. */
export async function linkCallback(
  ctx: SignedInContext,
  input: { provider: OAuthProviderName; code?: string; state: string; error?: string },
): Promise<IdentityRecord> {
  const { application, user } = signedIn(ctx);
  const { client, result } = await finish(ctx, input, 'link', user);
  return ctx.em.transactional(async (em) => {
    const subject = subjectOf(client, result.profile.subject);
    const identity = await em.findOne(IdentityEntity, { application: application.id, kind: 'oauth', subject });
    if (identity && identity.user !== user.id) {
      throw new AppError('conflict', `This ${providerLabel(client.provider)} account is already linked to another user`);
    }
    const record = identity ? toIdentityRecord(identity) : await linkNew(em, application, user.id, client, result, null);
    await keepTokens(ctx, em, application, record.id, result);
    return record;
  });
}

export async function listIdentities(ctx: SignedInContext): Promise<IdentityRecord[]> {
  const { application, user } = signedIn(ctx);
  return identitiesOf(ctx.em, application.id, user.id);
}

/** Support's view (secret key): a user's linked OAuth and SAML accounts, newest first. */
export async function listUserIdentities(ctx: TenantContext, userId: string): Promise<IdentityRecord[]> {
  const user = await findUser(ctx, userId);
  return identitiesOf(ctx.em, ctx.application.id, user.id);
}

async function identitiesOf(em: EntityManager, applicationId: string, userId: string): Promise<IdentityRecord[]> {
  const rows = await em.find(
    IdentityEntity,
    { application: applicationId, user: userId, kind: { $in: LINKABLE_KINDS } },
    { orderBy: { createdAt: 'desc', id: 'desc' } },
  );
  return rows.map(toIdentityRecord);
}

/**
 * Unlinks an OAuth or SAML identity: needs aal 2 when the user has a second factor, and is refused (409) when it is
 * the last way left to sign in (no email, no passkey, no other link). The user row is locked so two concurrent
 * unlinks cannot both pass that check.
 */
export async function unlinkIdentity(ctx: SignedInContext, id: string) {
  const { application, session, user } = signedIn(ctx);
  const record = await ctx.em.transactional((em) =>
    unlinkOf(em, application.id, user, id, async () => {
      if (session.aal < 2 && (await secondFactorMethods(ctx.services.hooks, em, user)).length) throw stepUpRequired();
    }),
  );
  return { id: record.id, deleted: true as const };
}

/**
 * Support unlinks a user's OAuth or SAML identity (secret key, `users:write`): the same last-way rule (409) and event
 * as the user's own unlink; the caller's own second factor is the console's concern (a write needs aal 2 there).
 */
export async function unlinkUserIdentity(ctx: TenantContext, userId: string, identityId: string) {
  const user = await findUser(ctx, userId);
  const record = await ctx.em.transactional((em) => unlinkOf(em, ctx.application.id, user, identityId, async () => {}));
  return { id: record.id, deleted: true as const };
}

async function unlinkOf(
  em: EntityManager,
  applicationId: string,
  user: User,
  id: string,
  mayUnlink: () => Promise<void>,
): Promise<IdentityRecord> {
  await em.execute('select id from users where id = ? for update', [user.id]);
  const identity = await em.findOne(IdentityEntity, {
    id,
    application: applicationId,
    user: user.id,
    kind: { $in: LINKABLE_KINDS },
  });
  if (!identity) throw notFound('Identity');
  await mayUnlink();
  const others = await em.count(IdentityEntity, { user: user.id, id: { $ne: identity.id } });
  if (!user.primaryEmail && others === 0) {
    throw new AppError(
      'conflict',
      'This is the only way left to sign in to this account. Add an email, a passkey or another provider first.',
    );
  }
  await em.nativeDelete(IdentityEntity, { id: identity.id });
  const unlinked = toIdentityRecord(identity);
  recordEvent(em, applicationId, 'user.identity_unlinked', { user_id: user.id, identity: unlinked });
  await em.flush();
  return unlinked;
}

export const purgeOAuthStates: PurgeStep = (em) => deleteInBatches(em, 'oauth_states', SPENT_ONE_TIME_ROWS);

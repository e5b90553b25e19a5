import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { Context } from '../../../context.ts';
import type { EntityManager } from '../../../db/orm.ts';
import { AppError } from '../../../errors.ts';
import { randomSecret, sha256 } from '../../../lib/crypto.ts';
import { deleteInBatches, type PurgeStep, SPENT_ONE_TIME_ROWS } from '../../../lib/housekeeping.ts';
import { newId } from '../../../lib/ids.ts';
import type { Hooks } from '../../../lib/modules.ts';
import type { Application } from '../../applications/application.entity.ts';
import { settingsOf } from '../../applications/applications.service.ts';
import type { TenantContext } from '../../applications/contexts.ts';
import { isOwnHostedPage } from '../../applications/cors.ts';
import { eventRow, recordEvent } from '../../events/events.service.ts';
import { sendTemplate } from '../../templates/templates.service.ts';
import { type User, UserEntity } from '../../users/user.entity.ts';
import { signUpAllowed } from '../../users/users.hooks.ts';
import { normalizeEmail, toUserRecord } from '../../users/users.service.ts';
import {
  completeReturningSignIn,
  completeSignIn,
  type ReturningSignIn,
  resolveMerged,
  type SignInSubject,
  ssoRequired,
  ssoRequiredFor,
} from '../sign-in.service.ts';
import { MagicLinkEntity } from './magic-link.entity.ts';

/**
 * The link's base: the request's `redirect_url` (on an allowed origin), the setting, else the application's hosted
 * magic-link page `{base}/a/{id}/magic-link` (then `hosted` is true: the starting device polls for the result). The application's own hosted pages
 * (`{base}/a/{id}/…`) may always be the base, and keep the polling: they sign in whichever device asked.
 */
function linkFor(ctx: Context, application: Application, token: string, redirectUrl: string | undefined) {
  const target = redirectUrl ? new URL(redirectUrl) : undefined;
  const ownPages = !!target && isOwnHostedPage(ctx.services, application.id, target);
  if (target && !ownPages && !application.allowedOrigins.includes(target.origin)) {
    throw new AppError('invalid_url', 'redirect_url must be on one of the application\u2019s allowed origins', [
      { path: 'redirect_url', message: 'origin not allowed' },
    ]);
  }
  const configured = redirectUrl ?? settingsOf(application).magic_link.redirect_url;
  // Built from configuration only, never from Host or X-Forwarded-Host (SECURITY 10).
  const url = new URL(configured ?? `${ctx.services.baseUrl}/a/${application.id}/magic-link`);
  url.searchParams.set('token', token);
  return { link: url.toString(), hosted: !configured || ownPages };
}

/**
 * S15. The answer is the same, in shape and in time, for known, unknown and banned emails: the same queries run
 * for everyone, a link row and a message row are always written, and the mail outbox sends after the answer.
 * Whether a mail is sent at all depends on whether that address could sign in.
 */
export async function startMagicLink(ctx: TenantContext, input: { email: string; redirect_url?: string; host_id?: string }) {
  const application = ctx.application;
  const settings = settingsOf(application);
  const email = input.email.trim();
  const normalized = normalizeEmail(email);
  const limits = settings.rate_limits;
  await ctx.services.rateLimits.consume(
    [
      {
        name: 'magic_link_address',
        key: `${application.id}:${ctx.ip}`,
        points: limits.magic_link_per_address,
        windowS: limits.window_s,
      },
      {
        name: 'magic_link_email',
        key: `${application.id}:${normalized}`,
        points: limits.magic_link_per_email,
        windowS: limits.window_s,
      },
    ],
    ctx.response.headers,
  );

  // An address whose organization requires SSO is refused at once (its domain's policy is public, like its MX records).
  const organization = await ssoRequiredFor(ctx.services.hooks, ctx.em, application.id, normalized);
  if (organization) throw ssoRequired(organization);

  const token = randomSecret('ml_');
  const { link, hosted } = linkFor(ctx, application, token, input.redirect_url);
  const pollSecret = hosted ? randomSecret('mlp_') : null;
  const found = await ctx.em.findOne(UserEntity, { application: application.id, emailNormalized: normalized });
  const user = found ? await resolveMerged(ctx.em, found) : null;
  const magicLink = ctx.em.create(MagicLinkEntity, {
    id: newId(),
    application: application.id,
    email,
    emailNormalized: normalized,
    tokenHash: sha256(token),
    redirectUrl: input.redirect_url ?? null,
    hostId: input.host_id ?? null,
    pollSecretHash: pollSecret ? sha256(pollSecret) : null,
    confirmedAt: null,
    expiresAt: new Date(Date.now() + settings.magic_link.ttl_s * 1000),
    consumedAt: null,
  });
  // While sign-up is closed, an allowance (a pending invitation) may open it for this address; asked for every address,
  // known or not, so that both answers do the same work.
  const allowed = settings.sign_up === 'open' || (await signUpAllowed(ctx.services.hooks, ctx.em, application.id, normalized));
  const canSignIn = user ? user.status === 'active' : allowed;
  // The mail is queued with the link, in one flush; for an address that cannot sign in it is queued suppressed, so
  // that both answers do the same work.
  await sendTemplate(
    ctx.em,
    ctx.services,
    application,
    'magic_link',
    email,
    { link, expires_in_minutes: String(Math.round(settings.magic_link.ttl_s / 60)) },
    { suppressed: !canSignIn },
  );
  await ctx.em.flush();
  return { verification_id: magicLink.id, poll_secret: pollSecret };
}

/**
 * Consumes the link (atomically, once, judged by the database clock) and signs in its owner; an unknown address
 * signs up here, on verify, when sign-up is open. Signing in by link proves the address: `email_verified` is set.
 */
export async function verifyMagicLink(ctx: TenantContext, input: { token: string }) {
  const application = ctx.application;
  const tokenHash = sha256(input.token);
  for (let retried = false; ; retried = true) {
    try {
      const returning = await completeReturningSignIn(ctx, application, byLink(application, tokenHash));
      if (returning) return returning;
      return await completeSignIn(ctx, application, async (em) => {
        const rows = await em.execute<LinkRow[]>(
          `update magic_links set consumed_at = now()
            where token_hash = ? and application_id = ? and consumed_at is null and expires_at > now()
            returning email, email_normalized, host_id`,
          [tokenHash, application.id],
        );
        return signInByLink(em, ctx.services.hooks, application, rows[0]);
      });
    } catch (error) {
      // Two first sign-ins of one address at once: the loser's new user collided with the winner's, and nothing of its
      // attempt was written (its link is unspent). The user exists now: one more pass signs them in as a returning person.
      if (retried || !(error instanceof UniqueConstraintViolationException)) throw error;
    }
  }
}

/**
 * A link signed in by one statement when nothing stands in the way (see `completeReturningSignIn`): a link for no host,
 * to the address of an active, verified, unmerged user — or of nobody yet, while sign-up is open: then the new user,
 * email verified, and their `user.created` event are written by that statement too. `who` locks the link
 * (`for update`), so a concurrent verify of the same link waits and then finds it consumed: the link signs in once.
 * Anything else (a link for a host, a merged or unverified user, a closed sign-up, a second factor, a check with
 * something to say) opens, creates and consumes nothing here, and the link takes the transactional path below.
 */
function byLink(application: Application, tokenHash: string): ReturningSignIn {
  return {
    name: 'magic_link',
    who: {
      // The link by its unique hash alone (a prepared statement's generic plan must not pick the application's index),
      // then its user, if any, by the unique (application, address).
      sql: `select l.id, l.email, l.email_normalized, u.id as user_id from magic_links l
              left join users u on (u.application_id, u.email_normalized) = (l.application_id, l.email_normalized)
             where l.id = (select id from magic_links where token_hash = ?) and l.application_id = ?
               and l.consumed_at is null and l.expires_at > now() and l.host_id is null
               and (u.id is null or (u.email_verified and u.merged_into is null))
               for update of l`,
      params: [tokenHash, application.id],
    },
    used: { sql: 'update magic_links l set consumed_at = now() from signed where l.id = signed.id', params: [] },
    firstFactor: 'magic_link',
    hostId: null,
    fallback: false,
    signUp: settingsOf(application).sign_up === 'open' ? signUpByLink(application) : undefined,
  };
}

/**
 * The user a link to an unknown address creates (`ReturningSignIn.signUp`): its address is the link's, verified, and
 * its `user.created` event carries the record the transactional path would write.
 */
function signUpByLink(application: Application): ReturningSignIn['signUp'] {
  const now = new Date();
  const user: User = {
    id: newId(),
    application: application.id,
    primaryEmail: null,
    emailNormalized: null,
    emailVerified: true,
    status: 'active',
    profile: {},
    mergedInto: null,
    createdAt: now,
    updatedAt: now,
  };
  // The record with the address left out: the statement adds the link's (`primary_email`).
  const [id, applicationId, type, data, createdAt, ...audit] = eventRow(application.id, 'user.created', toUserRecord(user));
  return {
    row: {
      sql: `select n.* from who cross join lateral json_populate_record(null::users, json_build_object(
              'id', ?::uuid, 'application_id', ?::uuid, 'primary_email', who.email, 'email_normalized', who.email_normalized,
              'email_verified', true, 'status', 'active', 'profile', '{}'::json, 'created_at', ?::timestamptz,
              'updated_at', ?::timestamptz)) n
             where who.user_id is null`,
      params: [user.id, application.id, now, now],
    },
    event: {
      sql: `select ?, ?, ?, ?::jsonb || jsonb_build_object('primary_email', c.primary_email), ?, ${audit.map(() => '?').join(', ')}
              from created c`,
      params: [id, applicationId, type, data, createdAt, ...audit],
    },
  };
}

/**
 * The hosted page's confirmation (cross-device mode): the person who opened the link says "yes, sign in the device
 * that asked". Nothing is signed in here — the page's own browser gets no session; the starting device collects it
 * with its poll secret. Mail scanners that only follow links confirm nothing (this is a POST).
 */
export async function confirmMagicLink(ctx: TenantContext, input: { token: string }) {
  const application = ctx.application;
  const rows = await ctx.em.execute<Array<{ id: string }>>(
    `update magic_links set confirmed_at = now()
      where token_hash = ? and application_id = ? and poll_secret_hash is not null
        and consumed_at is null and confirmed_at is null and expires_at > now()
      returning id`,
    [sha256(input.token), application.id],
  );
  if (!rows.length) throw new AppError('invalid_verification', 'The link is invalid, expired or already used');
  return { status: 'confirmed' as const };
}

/** A confirmed link can be collected this long after it expired (the person confirmed at the last moment). */
const COLLECT_GRACE = "interval '5 minutes'";

/**
 * The starting device's poll: `pending` until the link is confirmed, then the sign-in result — once (the link is
 * consumed by the poll that collects it; of concurrent polls exactly one does). `mfa_required` and `consent_required`
 * continue on this device. An unknown id, a wrong secret, an expired or already collected link are one answer.
 */
export async function pollMagicLink(ctx: TenantContext, input: { verification_id: string; poll_secret: string }) {
  const application = ctx.application;
  await ctx.services.rateLimits.consume(
    [{ name: 'magic_link_poll', key: `${application.id}:${ctx.ip}`, points: 600, windowS: 300 }],
    ctx.response.headers,
  );
  const refused = () => new AppError('invalid_verification', 'The sign-in request is invalid, expired or already used');
  const secretHash = sha256(input.poll_secret);
  const [link] = await ctx.em.execute<Array<{ confirmed: boolean }>>(
    `select confirmed_at is not null as confirmed from magic_links
      where id = ? and application_id = ? and poll_secret_hash = ? and consumed_at is null
        and (expires_at > now() or (confirmed_at is not null and expires_at > now() - ${COLLECT_GRACE}))`,
    [input.verification_id, application.id, secretHash],
  );
  if (!link) throw refused();
  if (!link.confirmed) return { status: 'pending' as const };
  return completeSignIn(ctx, application, async (em) => {
    const rows = await em.execute<LinkRow[]>(
      `update magic_links set consumed_at = now()
        where id = ? and application_id = ? and poll_secret_hash = ? and confirmed_at is not null and consumed_at is null
          and expires_at > now() - ${COLLECT_GRACE}
        returning email, email_normalized, host_id`,
      [input.verification_id, application.id, secretHash],
    );
    if (!rows[0]) throw refused();
    return signInByLink(em, ctx.services.hooks, application, rows[0]);
  });
}

interface LinkRow {
  email: string;
  email_normalized: string;
  host_id: string | null;
}

/**
 * Who a consumed link signs in: its address's user, or a new one when sign-up is open. Signing in by link proves the
 * address: `email_verified` is set.
 */
async function signInByLink(
  em: EntityManager,
  hooks: Hooks,
  application: Application,
  link: LinkRow | undefined,
): Promise<SignInSubject> {
  if (!link) throw new AppError('invalid_verification', 'The link is invalid, expired or already used');
  let user = await em.findOne(UserEntity, { application: application.id, emailNormalized: link.email_normalized });
  if (!user) {
    // A user created here has no second factor yet: the decision need not read them.
    const allowed =
      settingsOf(application).sign_up === 'open' || (await signUpAllowed(hooks, em, application.id, link.email_normalized));
    if (!allowed) throw new AppError('access_denied', 'Sign-up is closed for this application');
    user = em.create(UserEntity, {
      id: newId(),
      application: application.id,
      primaryEmail: link.email,
      emailNormalized: link.email_normalized,
      emailVerified: true,
      status: 'active',
      profile: {},
      mergedInto: null,
    });
    recordEvent(em, application.id, 'user.created', toUserRecord(user));
    return { user, aal: 1, firstFactor: 'magic_link', hostId: link.host_id, secondFactors: [] };
  } else {
    user = await resolveMerged(em, user);
    if (!user.emailVerified && user.emailNormalized === link.email_normalized && user.status === 'active') {
      user.emailVerified = true;
      user.updatedAt = new Date();
      recordEvent(em, application.id, 'user.updated', toUserRecord(user));
    }
  }
  return { user, aal: 1, firstFactor: 'magic_link', hostId: link.host_id };
}

export const purgeMagicLinks: PurgeStep = (em) => deleteInBatches(em, 'magic_links', SPENT_ONE_TIME_ROWS);

import type { Context } from '../../../context.ts';
import type { EntityManager } from '../../../db/orm.ts';
import { AppError } from '../../../errors.ts';
import { randomSecret, sha256 } from '../../../lib/crypto.ts';
import { deleteInBatches, type PurgeStep, SPENT_ONE_TIME_ROWS } from '../../../lib/housekeeping.ts';
import { newId } from '../../../lib/ids.ts';
import type { Application } from '../../applications/application.entity.ts';
import { settingsOf } from '../../applications/applications.service.ts';
import type { TenantContext } from '../../applications/contexts.ts';
import { isOwnHostedPage } from '../../applications/cors.ts';
import { recordEvent } from '../../events/events.service.ts';
import { sendTemplate } from '../../templates/templates.service.ts';
import { UserEntity } from '../../users/user.entity.ts';
import { normalizeEmail, toUserRecord } from '../../users/users.service.ts';
import { completeSignIn, resolveMerged, type SignInSubject } from '../sign-in.service.ts';
import { MagicLinkEntity } from './magic-link.entity.ts';

/**
 * The link's base: the request's `redirect_url` (on an allowed origin), the setting, else the hosted page (then
 * `hosted` is true: the starting device polls for the result). The application's own hosted pages
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
  const url = new URL(configured ?? `${ctx.services.baseUrl}/sign-in/verify`);
  if (!configured) url.searchParams.set('application_id', application.id);
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
  const canSignIn = user ? user.status === 'active' : settings.sign_up === 'open';
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
  return completeSignIn(ctx, application, async (em) => {
    const rows = await em.execute<LinkRow[]>(
      `update magic_links set consumed_at = now()
        where token_hash = ? and application_id = ? and consumed_at is null and expires_at > now()
        returning email, email_normalized, host_id`,
      [sha256(input.token), application.id],
    );
    return signInByLink(em, application, rows[0]);
  });
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
    return signInByLink(em, application, rows[0]);
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
async function signInByLink(em: EntityManager, application: Application, link: LinkRow | undefined): Promise<SignInSubject> {
  if (!link) throw new AppError('invalid_verification', 'The link is invalid, expired or already used');
  let user = await em.findOne(UserEntity, { application: application.id, emailNormalized: link.email_normalized });
  if (!user) {
    if (settingsOf(application).sign_up !== 'open') throw new AppError('access_denied', 'Sign-up is closed for this application');
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

import type { Context } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { randomSecret, sha256 } from '../../lib/crypto.ts';
import { newId } from '../../lib/ids.ts';
import type { PageQuery } from '../../lib/pagination.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { isOwnHostedPage } from '../applications/cors.ts';
import { recordEvent } from '../events/events.service.ts';
import { insertMembership } from '../organizations/organizations.service.ts';
import type { SignedInContext } from '../sessions/contexts.ts';
import { sendTemplate } from '../templates/templates.service.ts';
import { normalizeEmail } from '../users/users.service.ts';
import type { InvitationRecord, InvitationStatus } from './invitations.schema.ts';

/** The status of an invitation row `i`, derived by the database clock (CONTRACT §3). */
const STATUS = `case when i.accepted_at is not null then 'accepted' when i.revoked_at is not null then 'revoked'
  when i.expires_at <= now() then 'expired' else 'pending' end`;
const COLUMNS = `i.id, i.organization_id, i.email, i.role, ${STATUS} as status, i.expires_at, i.accepted_at, i.revoked_at,
  i.created_at, i.redirect_url, i.lifetime_s`;
/** The rows of each status, for the list's filter (the same rules as `STATUS`). */
const STATUS_FILTER: Record<InvitationStatus, string> = {
  pending: 'i.accepted_at is null and i.revoked_at is null and i.expires_at > now()',
  accepted: 'i.accepted_at is not null',
  revoked: 'i.accepted_at is null and i.revoked_at is not null',
  expired: 'i.accepted_at is null and i.revoked_at is null and i.expires_at <= now()',
};

interface InvitationRow {
  id: string;
  organization_id: string;
  email: string;
  role: string;
  status: InvitationStatus;
  expires_at: Date | string;
  accepted_at: Date | string | null;
  revoked_at: Date | string | null;
  created_at: Date | string;
  redirect_url: string | null;
  lifetime_s: number;
}

const iso = (value: Date | string) => new Date(value).toISOString();

const toRecord = (row: InvitationRow): InvitationRecord => ({
  id: row.id,
  organization_id: row.organization_id,
  email: row.email,
  role: row.role,
  status: row.status,
  expires_at: iso(row.expires_at),
  accepted_at: row.accepted_at ? iso(row.accepted_at) : null,
  revoked_at: row.revoked_at ? iso(row.revoked_at) : null,
  created_at: iso(row.created_at),
});

const invalidToken = () => new AppError('invalid_verification', 'The invitation is invalid, expired, revoked or already used');

/**
 * The invitation's `redirect_url` must be on one of the application's allowed origins, or one of its own hosted pages
 * (SECURITY 10: an invitation never sends anyone to a site the application does not own).
 */
function checkRedirectUrl(ctx: TenantContext, redirectUrl: string | undefined) {
  if (!redirectUrl) return;
  const url = new URL(redirectUrl);
  if (ctx.application.allowedOrigins.includes(url.origin) && !url.username && !url.password) return;
  if (isOwnHostedPage(ctx.services, ctx.application.id, url)) return;
  throw new AppError('invalid_url', 'redirect_url must be on one of the application\u2019s allowed origins', [
    { path: 'redirect_url', message: 'origin not allowed' },
  ]);
}

/** The link of the mail: the application's hosted invitation page, built from configuration only (SECURITY 10). */
const linkFor = (ctx: Context, applicationId: string, token: string) =>
  `${ctx.services.baseUrl}/a/${applicationId}/invitations/${encodeURIComponent(token)}`;

/** The organization, locked for the transaction: invitations to one address are decided one at a time. */
async function lockOrganization(em: EntityManager, applicationId: string, organizationId: string) {
  const [org] = await em.execute<Array<{ id: string; name: string }>>(
    'select id, name from organizations where id = ? and application_id = ? for update',
    [organizationId, applicationId],
  );
  if (!org) throw notFound('Organization');
  return org;
}

async function hasPendingInvitation(em: EntityManager, organizationId: string, email: string, except?: string) {
  const rows = await em.execute<unknown[]>(
    `select 1 from organization_invitations i where i.organization_id = ? and i.email = ? and ${STATUS_FILTER.pending}
       and i.id <> ? limit 1`,
    [organizationId, email, except ?? '00000000-0000-0000-0000-000000000000'],
  );
  return rows.length > 0;
}

async function sendInvitation(
  ctx: TenantContext,
  em: EntityManager,
  row: InvitationRow,
  organizationName: string,
  token: string,
): Promise<void> {
  await sendTemplate(em, ctx.services, ctx.application, 'organization_invitation', row.email, {
    organization_name: organizationName,
    link: linkFor(ctx, ctx.application.id, token),
    expires_at: iso(row.expires_at),
  });
}

/**
 * `POST /v1/organizations/{id}/invitations`. The address is refused when it is already a member (409
 * `already_member`) or already has a pending invitation to the organization (409 `invitation_pending`); both are
 * decided under a lock of the organization, so two concurrent invitations of one address cannot both be made. The
 * mail (with the only copy of the token) is queued in the same transaction as the invitation and its event.
 */
export async function createInvitation(
  ctx: TenantContext,
  input: { id: string; email: string; role: string; redirect_url?: string; expires_in_s: number },
) {
  checkRedirectUrl(ctx, input.redirect_url);
  const applicationId = ctx.application.id;
  const email = normalizeEmail(input.email);
  const token = randomSecret('inv_');
  return ctx.em.transactional(async (em) => {
    const org = await lockOrganization(em, applicationId, input.id);
    const members = await em.execute<unknown[]>(
      `select 1 from organization_members m join users u on u.id = m.user_id
        where m.organization_id = ? and u.application_id = ? and u.email_normalized = ? limit 1`,
      [org.id, applicationId, email],
    );
    if (members.length) throw new AppError('already_member', 'This address is already a member of the organization');
    if (await hasPendingInvitation(em, org.id, email)) {
      throw new AppError('invitation_pending', 'This address already has a pending invitation to the organization');
    }
    // The expiry is set by the database clock, which judges it (SECURITY 4).
    const [row] = await em.execute<InvitationRow[]>(
      `insert into organization_invitations as i
         (id, application_id, organization_id, email, role, token_hash, redirect_url, lifetime_s, expires_at, created_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, now() + make_interval(secs => ?::double precision), now())
       returning ${COLUMNS}`,
      [
        newId(),
        applicationId,
        org.id,
        email,
        input.role,
        sha256(token),
        input.redirect_url ?? null,
        input.expires_in_s,
        input.expires_in_s,
      ],
    );
    if (!row) throw new Error('the invitation insert answered no row');
    const record = toRecord(row);
    await sendInvitation(ctx, em, row, org.name, token);
    recordEvent(em, applicationId, 'organization_invitation.created', record);
    await em.flush();
    return record;
  });
}

/** `GET /v1/organizations/{id}/invitations`: newest first, optionally of one status. */
export async function listInvitations(ctx: TenantContext, input: PageQuery & { id: string; status?: InvitationStatus }) {
  const applicationId = ctx.application.id;
  const [org] = await ctx.em.execute<Array<{ id: string }>>('select id from organizations where id = ? and application_id = ?', [
    input.id,
    applicationId,
  ]);
  if (!org) throw notFound('Organization');
  const filter = input.status ? ` and ${STATUS_FILTER[input.status]}` : '';
  const where = `i.organization_id = ? and i.application_id = ?${filter}`;
  const [count] = await ctx.em.execute<Array<{ total: string | number }>>(
    `select count(*) as total from organization_invitations i where ${where}`,
    [org.id, applicationId],
  );
  const rows = await ctx.em.execute<InvitationRow[]>(
    `select ${COLUMNS} from organization_invitations i where ${where}
      order by i.created_at desc, i.id desc limit ? offset ?`,
    [org.id, applicationId, input.limit, input.offset],
  );
  return { invitations: rows.map(toRecord), total: Number(count?.total ?? 0), limit: input.limit, offset: input.offset };
}

/** One invitation of the organization, locked for the transaction (404 for another organization's or application's). */
async function lockInvitation(em: EntityManager, applicationId: string, input: { id: string; invitation_id: string }) {
  const [row] = await em.execute<InvitationRow[]>(
    `select ${COLUMNS} from organization_invitations i
      where i.id = ? and i.organization_id = ? and i.application_id = ? for update`,
    [input.invitation_id, input.id, applicationId],
  );
  if (!row) throw notFound('Invitation');
  return row;
}

/**
 * Revoke: the link stops at once. Revoking a revoked invitation answers it unchanged; an accepted one is 409
 * `conflict` (remove the member instead).
 */
export async function revokeInvitation(ctx: TenantContext, input: { id: string; invitation_id: string }) {
  const applicationId = ctx.application.id;
  return ctx.em.transactional(async (em) => {
    const current = await lockInvitation(em, applicationId, input);
    if (current.status === 'accepted') throw new AppError('conflict', 'The invitation was already accepted');
    if (current.status === 'revoked') return toRecord(current);
    const [row] = await em.execute<InvitationRow[]>(
      `update organization_invitations i set revoked_at = now() where i.id = ? returning ${COLUMNS}`,
      [current.id],
    );
    if (!row) throw notFound('Invitation');
    const record = toRecord(row);
    recordEvent(em, applicationId, 'organization_invitation.revoked', record);
    await em.flush();
    return record;
  });
}

/**
 * Resend: a new token and a new mail; the old link stops working. The new link lives as long as the invitation's
 * original lifetime, from now — so an expired invitation can be sent again (unless the address has been invited
 * anew since: 409 `invitation_pending`). An accepted or revoked one is 409 `conflict`.
 */
export async function resendInvitation(ctx: TenantContext, input: { id: string; invitation_id: string }) {
  const applicationId = ctx.application.id;
  const token = randomSecret('inv_');
  return ctx.em.transactional(async (em) => {
    const org = await lockOrganization(em, applicationId, input.id);
    const current = await lockInvitation(em, applicationId, input);
    if (current.status === 'accepted' || current.status === 'revoked') {
      throw new AppError('conflict', `The invitation was already ${current.status}`);
    }
    if (current.status === 'expired' && (await hasPendingInvitation(em, org.id, current.email, current.id))) {
      throw new AppError('invitation_pending', 'This address already has a pending invitation to the organization');
    }
    const [row] = await em.execute<InvitationRow[]>(
      `update organization_invitations i set token_hash = ?, expires_at = now() + make_interval(secs => i.lifetime_s)
        where i.id = ? returning ${COLUMNS}`,
      [sha256(token), current.id],
    );
    if (!row) throw notFound('Invitation');
    await sendInvitation(ctx, em, row, org.name, token);
    await em.flush();
    return toRecord(row);
  });
}

/**
 * `POST /v1/auth/invitations/accept` (signed in). The token is consumed by one conditional update — of any number of
 * concurrent accepts on any number of processes exactly one finds it pending — inside the transaction that makes the
 * membership: when the signed-in user's verified primary email is not the invited address (403
 * `invitation_email_mismatch`), the user is already a member (409 `already_member`) or the seats are taken (409
 * `seat_limit_reached`), everything rolls back and the invitation stays pending for the right person.
 */
export async function acceptInvitation(ctx: SignedInContext, input: { token: string }) {
  const applicationId = ctx.application.id;
  const { user } = ctx;
  return ctx.em.transactional(async (em) => {
    const [row] = await em.execute<InvitationRow[]>(
      `update organization_invitations i set accepted_at = now()
        where i.token_hash = ? and i.application_id = ? and i.accepted_at is null and i.revoked_at is null
          and i.expires_at > now()
        returning ${COLUMNS}`,
      [sha256(input.token), applicationId],
    );
    if (!row) throw invalidToken();
    // Only a proven address accepts: an unverified one could be anyone's (it was typed, never confirmed).
    if (!user.emailVerified || !user.primaryEmail || normalizeEmail(user.primaryEmail) !== row.email) {
      throw new AppError('invitation_email_mismatch', 'The invitation is for another email address');
    }
    const membership = await insertMembership(ctx.services.hooks, em, {
      organizationId: row.organization_id,
      user,
      role: row.role,
      source: 'invitation',
    });
    recordEvent(em, applicationId, 'organization_invitation.accepted', toRecord(row));
    await em.flush();
    return { organization_id: row.organization_id, role: row.role, membership, redirect_url: row.redirect_url };
  });
}

/**
 * `POST /v1/auth/invitations/lookup`: what a pending invitation is for (the organization, the address, the role), so
 * that a page can show it before the person signs in. It consumes nothing; an unknown, used, revoked or expired token
 * is 401 `invalid_verification`, as on accept.
 */
export async function lookupInvitation(ctx: TenantContext, input: { token: string }) {
  const [row] = await ctx.em.execute<Array<InvitationRow & { organization_name: string }>>(
    `select ${COLUMNS}, o.name as organization_name from organization_invitations i
       join organizations o on o.id = i.organization_id
      where i.token_hash = ? and i.application_id = ? and ${STATUS_FILTER.pending}`,
    [sha256(input.token), ctx.application.id],
  );
  if (!row) throw invalidToken();
  return {
    organization_id: row.organization_id,
    organization_name: row.organization_name,
    email: row.email,
    role: row.role,
    expires_at: iso(row.expires_at),
  };
}

/**
 * Sign-up allowance (the sign-in module's registry): an address with a pending invitation of the application may
 * sign up while `settings.sign_up` is `closed` — the invitation is the application's consent to that account.
 */
export async function hasPendingInvitationFor(em: EntityManager, applicationId: string, emailNormalized: string) {
  const rows = await em.execute<unknown[]>(
    `select 1 from organization_invitations i where i.application_id = ? and i.email = ? and ${STATUS_FILTER.pending} limit 1`,
    [applicationId, emailNormalized],
  );
  return rows.length > 0;
}

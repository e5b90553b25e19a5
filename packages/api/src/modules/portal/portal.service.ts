import type { EntityManager } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { randomSecret, sha256 } from '../../lib/crypto.ts';
import { deleteInBatches, type PurgeStep } from '../../lib/housekeeping.ts';
import { newId } from '../../lib/ids.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { OrganizationEntity } from '../organizations/organization.entity.ts';
import type { PortalIntent } from './portal.schema.ts';
import { PortalLinkEntity } from './portal-link.entity.ts';

/** A link opens once within 5 minutes (it travels in a redirect, never in a mail). */
export const PORTAL_LINK_TTL_MS = 5 * 60_000;
/** The portal session it starts: at most an hour, by the database clock. */
export const PORTAL_SESSION_TTL_S = 60 * 60;

/** Where a link opens: under the service's base URL, from configuration only (SECURITY 10). */
export const portalPath = '/portal';

/**
 * `POST /v1/organizations/{id}/portal-links`: a one-time link for the organization's IT administrator. Another
 * application's organization is 404; a `return_url` outside the application's allowed origins is 422 `invalid_url`.
 */
export async function createPortalLink(
  ctx: TenantContext,
  input: { id: string; intent: PortalIntent; return_url?: string },
): Promise<{ url: string; expires_at: string }> {
  const application = ctx.application;
  const organization = await ctx.em.findOne(OrganizationEntity, { id: input.id, application: application.id });
  if (!organization) throw notFound('Organization');
  if (input.return_url !== undefined) {
    const target = new URL(input.return_url);
    // An open redirect through the portal would lend the service's name to any site: exact allowed origins only.
    if (!application.allowedOrigins.includes(target.origin)) {
      throw new AppError('invalid_url', 'return_url must be on one of the application\u2019s allowed origins', [
        { path: 'return_url', message: 'origin not allowed' },
      ]);
    }
  }
  const token = randomSecret('portal_');
  const expiresAt = new Date(Date.now() + PORTAL_LINK_TTL_MS);
  ctx.em.create(PortalLinkEntity, {
    id: newId(),
    application: application.id,
    organization: organization.id,
    intent: input.intent,
    tokenHash: sha256(token),
    returnUrl: input.return_url ?? null,
    expiresAt,
    consumedAt: null,
    sessionHash: null,
    sessionExpiresAt: null,
  });
  await ctx.em.flush();
  const url = new URL(`${ctx.services.baseUrl}${portalPath}/open`);
  url.searchParams.set('token', token);
  return { url: url.toString(), expires_at: expiresAt.toISOString() };
}

/** A live portal session: the one organization and intent it reaches. */
export interface PortalSession {
  id: string;
  applicationId: string;
  organizationId: string;
  intent: PortalIntent;
  returnUrl: string | null;
  expiresAt: Date;
}

interface SessionRow {
  id: string;
  application_id: string;
  organization_id: string;
  intent: PortalIntent;
  return_url: string | null;
  session_expires_at: Date | string;
}

const toSession = (row: SessionRow): PortalSession => ({
  id: row.id,
  applicationId: row.application_id,
  organizationId: row.organization_id,
  intent: row.intent,
  returnUrl: row.return_url,
  expiresAt: new Date(row.session_expires_at),
});

/**
 * Opens a link: spends it (one conditional update — of 20 concurrent opens one wins; unknown, used and expired links
 * are one answer: undefined) and starts its session, whose token is answered once and stored as SHA-256.
 */
export async function openPortalLink(
  em: EntityManager,
  token: string,
): Promise<{ session: PortalSession; sessionToken: string } | undefined> {
  if (!token.startsWith('portal_') || token.length > 200) return undefined;
  const sessionToken = randomSecret('portal_session_');
  const rows = await em.execute<SessionRow[]>(
    `update portal_links set consumed_at = now(), session_hash = ?, session_expires_at = now() + interval '${PORTAL_SESSION_TTL_S} seconds'
      where token_hash = ? and consumed_at is null and expires_at > now()
      returning id, application_id, organization_id, intent, return_url, session_expires_at`,
    [sha256(sessionToken), sha256(token)],
  );
  const row = rows[0];
  return row ? { session: toSession(row), sessionToken } : undefined;
}

/** The live session of a cookie's token (by the database clock); undefined for anything else. */
export async function findPortalSession(em: EntityManager, token: string | undefined): Promise<PortalSession | undefined> {
  if (!token?.startsWith('portal_session_') || token.length > 200) return undefined;
  const rows = await em.execute<SessionRow[]>(
    `select id, application_id, organization_id, intent, return_url, session_expires_at from portal_links
      where session_hash = ? and session_expires_at > now()`,
    [sha256(token)],
  );
  return rows[0] ? toSession(rows[0]) : undefined;
}

/** Ends a portal session at once (the portal's "Done"). */
export async function endPortalSession(em: EntityManager, token: string): Promise<void> {
  await em.execute(`update portal_links set session_expires_at = now() where session_hash = ? and session_expires_at > now()`, [
    sha256(token),
  ]);
}

/** Links neither opened nor live a day after they could last be used. */
export const purgePortalLinks: PurgeStep = (em) =>
  deleteInBatches(
    em,
    'portal_links',
    `(t.expires_at < now() - interval '1 day' and (t.session_expires_at is null or t.session_expires_at < now() - interval '1 day'))`,
  );

import type { Services } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { randomSecret, sha256 } from '../../lib/crypto.ts';
import type { Application } from '../applications/application.entity.ts';
import { settingsOf } from '../applications/applications.service.ts';
import type { Tokens } from './sessions.schema.ts';
import { issueTokens, revokeSession } from './sessions.service.ts';

/**
 * Browser sessions of the hosted pages (CONTRACT §9): the hosted pages' cookie holds a random token (`bs_`, 256
 * bits) naming one session of the application, stored as SHA-256 in `sessions.browser_token_hash`. A session gets one
 * when the hosted pages sign someone in (`attachBrowserSession`); it is judged by the session's own rules (revoked,
 * absolute and idle timeouts, the user's status), so a sign-out, a revocation or a ban ends it at once, and each use
 * counts as activity. Never a refresh token in a cookie: refresh tokens rotate, and two tabs would look like reuse.
 */
/** The name of the cookie that holds an application's browser token (one per application on a browser). */
export const browserSessionCookie = (applicationId: string) => `gh_session_${applicationId}`;

export interface BrowserSession {
  id: string;
  userId: string;
  aal: number;
  /** When the person signed in (OpenID Connect `auth_time`). */
  authTime: Date;
  organizationId: string | null;
  hostId: string | null;
}

/**
 * Gives the session of a refresh token just issued (by a sign-in the hosted pages ran) a browser token, and answers
 * it. The refresh token is spent on the way: the browser session is the only way into that session, and presenting
 * the spent token later is reuse, which revokes it. Undefined when the session is no longer live.
 */
export async function attachBrowserSession(
  em: EntityManager,
  applicationId: string,
  refreshToken: string,
): Promise<string | undefined> {
  const token = randomSecret('bs_');
  const rows = await em.execute<Array<{ id: string }>>(
    `update sessions set browser_token_hash = ?, refresh_token_hash = ?, last_active_at = now()
      where application_id = ? and refresh_token_hash = ? and revoked_at is null and expires_at > now()
      returning id`,
    [sha256(token), sha256(randomSecret('rt_')), applicationId, sha256(refreshToken)],
  );
  return rows.length ? token : undefined;
}

/**
 * The live session a browser token names, its use recorded as activity (one statement). Undefined when the token is
 * unknown, the session was revoked, is past its absolute or idle timeout, or its user is no longer active.
 */
export async function findBrowserSession(
  em: EntityManager,
  application: Application,
  token: string,
): Promise<BrowserSession | undefined> {
  const { idle_timeout_s } = settingsOf(application).session;
  const [row] = await em.execute<
    Array<{
      id: string;
      user_id: string;
      aal: number;
      created_at: Date | string;
      organization_id: string | null;
      host_id: string | null;
    }>
  >(
    `update sessions s set last_active_at = now()
       from users u
      where s.application_id = ? and s.browser_token_hash = ? and s.revoked_at is null and s.expires_at > now()
        and s.last_active_at > now() - make_interval(secs => ?) and u.id = s.user_id and u.status = 'active'
      returning s.id, s.user_id, s.aal, s.created_at, s.organization_id, s.host_id`,
    [application.id, sha256(token), idle_timeout_s],
  );
  if (!row) return undefined;
  return {
    id: row.id,
    userId: row.user_id,
    aal: row.aal,
    authTime: new Date(row.created_at),
    organizationId: row.organization_id,
    hostId: row.host_id,
  };
}

/** An access token for a browser session (the account page calls the API with it); no refresh token comes with it. */
export async function browserAccessToken(
  em: EntityManager,
  services: Services,
  application: Application,
  session: BrowserSession,
): Promise<Omit<Tokens, 'refresh_token'>> {
  const { refresh_token: _none, ...tokens } = await issueTokens(
    em,
    services,
    application,
    { id: session.id, user: session.userId, aal: session.aal, organization: session.organizationId, hostId: session.hostId },
    '',
  );
  return tokens;
}

/** Signs the browser out: the session its token names is revoked (with its `session.revoked` event). */
export async function endBrowserSession(em: EntityManager, applicationId: string, token: string): Promise<void> {
  const [row] = await em.execute<Array<{ id: string }>>(
    'select id from sessions where application_id = ? and browser_token_hash = ? and revoked_at is null',
    [applicationId, sha256(token)],
  );
  if (row) await revokeSession(em, applicationId, row.id, 'sign_out');
}

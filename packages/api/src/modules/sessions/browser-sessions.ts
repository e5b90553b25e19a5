import type { Services } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { randomSecret, sha256 } from '../../lib/crypto.ts';
import type { Application } from '../applications/application.entity.ts';
import { settingsOf } from '../applications/applications.service.ts';
import type { Tokens } from './sessions.schema.ts';
import { issueTokens, revokeSession, TOUCH_EVERY_S } from './sessions.service.ts';

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
  /** The authentication methods used (RFC 8176; empty for a session opened before they were kept). */
  amr: string[];
  /** When the person signed in (OpenID Connect `auth_time`). */
  authTime: Date;
  organizationId: string | null;
  hostId: string | null;
}

/**
 * Gives the session of a refresh token just issued (by a sign-in the hosted pages ran) a browser token, and answers
 * it. The refresh token is spent on the way: the browser session is the only way into that session, and presenting
 * the spent token later is reuse, which revokes it. Undefined when the session is no longer live.
 *
 * `previous`, the browser token the browser presented (its cookie), if any: the session it names is revoked
 * (`replaced`) once the new one is attached. Every sign-in on the hosted pages makes a new session and a new cookie,
 * so a step-up to a second factor (or signing in as someone else) never keeps the old cookie's session alive: the
 * cookie is rotated whenever the assurance changes (no session fixation).
 */
export async function attachBrowserSession(
  em: EntityManager,
  applicationId: string,
  refreshToken: string,
  previous?: string,
): Promise<string | undefined> {
  const token = randomSecret('bs_');
  // The session found through the issued token's row (refresh_tokens' primary key): sessions keep no index on the hash.
  const rows = await em.execute<Array<{ id: string }>>(
    `update sessions s set browser_token_hash = ?, refresh_token_hash = ?, last_active_at = now()
       from refresh_tokens t
      where t.token_hash = ? and s.id = t.session_id and s.refresh_token_hash = t.token_hash and s.application_id = ?
        and s.revoked_at is null and s.expires_at > now()
      returning s.id`,
    [sha256(token), sha256(randomSecret('rt_')), sha256(refreshToken), applicationId],
  );
  if (!rows.length) return undefined;
  if (previous) await endBrowserSession(em, applicationId, previous, 'replaced');
  return token;
}

/** The columns of a browser session row (`browserSessionCtes`'s `found`). */
export interface BrowserSessionRow {
  id: string;
  user_id: string;
  aal: number;
  amr: string[] | null;
  created_at: Date | string;
  organization_id: string | null;
  host_id: string | null;
}

/**
 * The live session a browser token names, and its use recorded as activity, as two common table expressions: `found`
 * (the session: not revoked, within its absolute timeout and its idle timeout, its user active) and `touched` (its
 * `last_active_at` written when TOUCH_EVERY_S have passed). Parameters: the application id, the token's SHA-256.
 * `idleSeconds` is the SQL of the idle timeout in seconds (`?`, a parameter after those two, or an expression over the
 * session `s`); `also` a further condition on `s` (none by default). Shared by `findBrowserSession` and the provider's
 * authorization request, which reads it with the application (oauth2.adapter.ts, `applicationWithReads`).
 */
export const browserSessionCtes = (idleSeconds: string, also = 'true') => `found as (
        select s.id, s.user_id, s.aal, s.amr, s.created_at, s.organization_id, s.host_id, s.last_active_at
          from sessions s join users u on u.id = s.user_id and u.status = 'active'
         where s.application_id = ? and s.browser_token_hash = ? and s.revoked_at is null and s.expires_at > now()
           and s.last_active_at > now() - make_interval(secs => ${idleSeconds}) and (${also})),
      touched as (
        update sessions set last_active_at = now()
         where id = (select id from found) and last_active_at < now() - interval '${TOUCH_EVERY_S} seconds'
           and revoked_at is null)`;

/** A row of `browserSessionCtes`'s `found` (`created_at` may come as JSON text). */
export const browserSessionOfRow = (row: BrowserSessionRow): BrowserSession => ({
  id: row.id,
  userId: row.user_id,
  aal: row.aal,
  amr: row.amr ?? [],
  authTime: new Date(row.created_at),
  organizationId: row.organization_id,
  hostId: row.host_id,
});

/**
 * The live session a browser token names, its use recorded as activity (one statement; written at most every
 * TOUCH_EVERY_S). Undefined when the token is unknown, the session was revoked, is past its absolute or idle timeout,
 * or its user is no longer active.
 */
export async function findBrowserSession(
  em: EntityManager,
  application: Application,
  token: string,
): Promise<BrowserSession | undefined> {
  const { idle_timeout_s } = settingsOf(application).session;
  const [row] = await em.execute<BrowserSessionRow[]>(
    `with ${browserSessionCtes('?')}
      select id, user_id, aal, amr, created_at, organization_id, host_id from found`,
    [application.id, sha256(token), idle_timeout_s],
  );
  return row ? browserSessionOfRow(row) : undefined;
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

/**
 * Signs the browser out: the session its token names is revoked (with its `session.revoked` event, `reason`
 * `sign_out` unless told).
 */
export async function endBrowserSession(
  em: EntityManager,
  applicationId: string,
  token: string,
  reason = 'sign_out',
): Promise<void> {
  const [row] = await em.execute<Array<{ id: string }>>(
    'select id from sessions where application_id = ? and browser_token_hash = ? and revoked_at is null',
    [applicationId, sha256(token)],
  );
  if (row) await revokeSession(em, applicationId, row.id, reason);
}

/**
 * The `Set-Cookie` value that removes an application's browser session cookie (same name, path and attributes as
 * the one that set it).
 */
export const clearedBrowserSessionCookie = (applicationId: string, baseUrl: string) =>
  `${browserSessionCookie(applicationId)}=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax${
    baseUrl.startsWith('https:') ? '; Secure' : ''
  }`;

/** The browser token an HTTP `Cookie` header carries for the application, if any. */
export function browserTokenFrom(cookieHeader: string | undefined, applicationId: string): string | undefined {
  const name = browserSessionCookie(applicationId);
  for (const part of (cookieHeader ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim() || undefined;
  }
  return undefined;
}

import { createHmac, randomBytes } from 'node:crypto';
import { browserSessionCookie, constantTimeEqual, type Services } from '@gatehouse/api';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * What the hosted pages keep in the browser: the CSRF cookie (a random id; each form carries an HMAC of it and the
 * application), the browser session (the API's `gh_session_<id>` token), and the flow of a sign-in in progress
 * (sealed with the master key: which OAuth interaction it continues, the magic link this browser asked for and its
 * poll secret). All HttpOnly and SameSite=Lax; Secure when the service's base URL is https.
 */
const CSRF_COOKIE = 'gh_csrf';
const CSRF_ID = /^[A-Za-z0-9_-]{43}$/;
const FLOW_TTL_S = 15 * 60;

export interface Flow {
  /** The provider's interaction this sign-in answers (the login of an OpenID Connect client). */
  interaction?: string;
  /** The magic link this browser asked for: its poll collects the sign-in on this device. */
  verification_id?: string;
  poll_secret?: string;
  email?: string;
  /** The result of the last account action, shown once by the account page (a catalog key, `account.done.*`/`.failed.*`). */
  flash?: string;
  /** An authenticator app being enrolled: the seed is shown until a first code confirms it (account-totp.ts). */
  totp?: { factor_id: string; secret: string; otpauth_uri: string };
  /** An SSO hop this browser started: the secret in its redirect_uri (the code is spent only with it). */
  sso_hop?: string;
  /** A social sign-in this browser started: its provider and the SHA-256 of its state. */
  oauth_provider?: string;
  oauth_state_hash?: string;
  /** The name typed on the sign-up page, stored in the new account's profile once signed in. */
  name?: string;
  /** The organization picker comes before continuing (`organization=select`, or the client's `organization` scope). */
  organization?: 'select';
  /** The invitation page this sign-in started from (its token): the sign-in ends back there, to accept it. */
  invitation?: string;
}

const secure = (services: Services) => services.baseUrl.startsWith('https:');
const cookieOptions = (services: Services, path: string, maxAge?: number) => ({
  path,
  httpOnly: true,
  sameSite: 'lax' as const,
  secure: secure(services),
  ...(maxAge === undefined ? {} : { maxAge }),
});

const csrfMac = (services: Services, id: string, applicationId: string) =>
  createHmac('sha256', services.secretBox.deriveKey('hosted-csrf')).update(`${id}:${applicationId}`).digest('base64url');

/** The CSRF token of this browser for the application's forms (a CSRF cookie is set when the browser has none). */
export function csrfToken(services: Services, request: FastifyRequest, reply: FastifyReply, applicationId: string): string {
  let id = request.cookies[CSRF_COOKIE];
  if (!id || !CSRF_ID.test(id)) {
    id = randomBytes(32).toString('base64url');
    request.cookies[CSRF_COOKIE] = id;
    reply.setCookie(CSRF_COOKIE, id, cookieOptions(services, '/'));
  }
  return csrfMac(services, id, applicationId);
}

/**
 * A form post is the browser's own: its token matches this browser's CSRF cookie for this application, and its
 * `Origin`, when sent, is the service's. An attacker's page can make a browser post, but cannot read its cookie.
 */
export function csrfValid(services: Services, request: FastifyRequest, applicationId: string, sent: unknown): boolean {
  const origin = request.headers.origin;
  const base = new URL(services.baseUrl);
  // The pages' own origin: the service's, or the custom domain's the browser posts to (its Host, with the base URL's
  // scheme). A cross-site post names the attacker's origin, never the host it is sent to.
  const own = origin === base.origin || origin === `${base.protocol}//${request.headers.host ?? ''}`;
  if (origin !== undefined && !own) return false;
  const id = request.cookies[CSRF_COOKIE];
  if (!id || !CSRF_ID.test(id) || typeof sent !== 'string') return false;
  return constantTimeEqual(csrfMac(services, id, applicationId), sent);
}

export const browserToken = (request: FastifyRequest, applicationId: string): string | undefined =>
  request.cookies[browserSessionCookie(applicationId)];

/** Sets the browser session's cookie; it lives as long as the browser (the session's own timeouts end it). */
export function setBrowserToken(services: Services, reply: FastifyReply, applicationId: string, token: string) {
  reply.setCookie(browserSessionCookie(applicationId), token, cookieOptions(services, '/'));
}

export function clearBrowserToken(services: Services, reply: FastifyReply, applicationId: string) {
  reply.clearCookie(browserSessionCookie(applicationId), cookieOptions(services, '/'));
}

const flowCookie = (applicationId: string) => `gh_flow_${applicationId}`;
const flowContext = (applicationId: string) => `hosted-flow:${applicationId}`;

export function readFlow(services: Services, request: FastifyRequest, applicationId: string): Flow {
  const sealed = request.cookies[flowCookie(applicationId)];
  if (!sealed) return {};
  try {
    const { exp, ...flow } = JSON.parse(services.secretBox.decrypt(sealed, flowContext(applicationId))) as Flow & {
      exp: number;
    };
    return exp > Date.now() ? flow : {};
  } catch {
    // Tampered, from another key, or not ours: no flow.
    return {};
  }
}

export function writeFlow(services: Services, reply: FastifyReply, applicationId: string, flow: Flow) {
  const sealed = services.secretBox.encrypt(
    JSON.stringify({ ...flow, exp: Date.now() + FLOW_TTL_S * 1000 }),
    flowContext(applicationId),
  );
  reply.setCookie(flowCookie(applicationId), sealed, cookieOptions(services, '/', FLOW_TTL_S));
}

export function clearFlow(services: Services, reply: FastifyReply, applicationId: string) {
  reply.clearCookie(flowCookie(applicationId), cookieOptions(services, '/'));
}

/**
 * A value bound to this browser: an HMAC of it under this browser's CSRF cookie and the application (undefined when
 * the browser has no CSRF cookie). A passkey ceremony's state is handed out with its binding and accepted back only
 * with it: a state taken from another browser does not verify here.
 */
export function bindToBrowser(
  services: Services,
  request: FastifyRequest,
  applicationId: string,
  purpose: string,
  value: string,
): string | undefined {
  const id = request.cookies[CSRF_COOKIE];
  if (!id || !CSRF_ID.test(id)) return undefined;
  return createHmac('sha256', services.secretBox.deriveKey('hosted-binding'))
    .update(`${purpose}:${applicationId}:${id}:${value}`)
    .digest('base64url');
}

export function boundToBrowser(
  services: Services,
  request: FastifyRequest,
  applicationId: string,
  purpose: string,
  value: string,
  binding: unknown,
): boolean {
  const expected = bindToBrowser(services, request, applicationId, purpose, value);
  return expected !== undefined && typeof binding === 'string' && constantTimeEqual(expected, binding);
}

import { randomBytes } from 'node:crypto';
import type { Context } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { randomSecret, sha256 } from '../../lib/crypto.ts';
import { deleteInBatches, type PurgeStep, SPENT_ONE_TIME_ROWS } from '../../lib/housekeeping.ts';
import { isUuid, newId } from '../../lib/ids.ts';
import type { Hooks } from '../../lib/modules.ts';
import { type Application, ApplicationEntity } from '../applications/application.entity.ts';
import { settingsOf } from '../applications/applications.service.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { isHostedPageOf } from '../applications/cors.ts';
import { recordEvent } from '../events/events.service.ts';
import { completeSignIn, domainOwnerOf, type SignInSubject } from '../sign-in/sign-in.service.ts';
import { IdentityEntity } from '../users/identity.entity.ts';
import { UserEntity } from '../users/user.entity.ts';
import { createExternalIdentity, normalizeEmail, toUserRecord } from '../users/users.service.ts';
import {
  type AcceptedAssertion,
  authorizeUrl,
  decodeResponse,
  displayNameOf,
  emailOf,
  type ParsedResponse,
  parseResponse,
  peekInResponseTo,
  SamlRejection,
  validateResponse,
} from './saml.protocol.ts';
import { samlSubject, spConfigOf } from './saml.service.ts';
import { type SamlConnection, SamlConnectionEntity } from './saml-connection.entity.ts';
import { SamlRequestEntity } from './saml-request.entity.ts';

const REQUEST_TTL_MS = 10 * 60_000;
/** The code the ACS hands the browser: single use, one minute (SECURITY 4: an authorization code lives ≤ 1 minute). */
const CODE_TTL_MS = 60_000;

const usable = (c: SamlConnection | null): c is SamlConnection => !!c && c.enabled && !!c.idpCertificate;

/**
 * The SAML connection an email signs in through: when an organization verified the address's domain, that
 * organization's oldest usable connection (with `sso_policy: required` it alone may sign such a person in, so there
 * is no other answer); else an enabled connection of the application with an IdP certificate that names the domain
 * (`email_domain`). Null for none.
 */
async function connectionForEmail(
  hooks: Hooks,
  em: EntityManager,
  applicationId: string,
  email: string,
): Promise<SamlConnection | null> {
  const domain = normalizeEmail(email).split('@').pop() ?? '';
  if (!domain || !email.includes('@')) return null;
  const owner = await domainOwnerOf(hooks, em, applicationId, email);
  if (owner) {
    const own = await em.find(
      SamlConnectionEntity,
      { application: applicationId, organization: owner.organizationId, enabled: true },
      { orderBy: { createdAt: 'asc', id: 'asc' } },
    );
    const found = own.find(usable);
    if (found || owner.ssoRequired) return found ?? null;
  }
  const connections = await em.find(SamlConnectionEntity, { application: applicationId, emailDomain: domain, enabled: true });
  return connections.find(usable) ?? null;
}

/**
 * Whether an email signs in through SAML (`connectionForEmail` finds a connection). The hosted sign-in page asks
 * before it offers a magic link.
 */
export async function hasSsoConnection(hooks: Hooks, em: EntityManager, applicationId: string, email: string): Promise<boolean> {
  return (await connectionForEmail(hooks, em, applicationId, email)) !== null;
}

/**
 * `sso/start`: finds the connection (by id, or among enabled connections by the email's domain), stores the
 * AuthnRequest's ID with where to return, and answers the IdP URL carrying the request (HTTP-Redirect).
 */
export async function startSso(
  ctx: TenantContext,
  input: { email?: string; connection_id?: string; redirect_uri: string; host_id?: string },
) {
  const application = ctx.application;
  await ctx.services.rateLimits.consume(
    [{ name: 'sso_start', key: `${application.id}:${ctx.ip}`, points: 100, windowS: 300 }],
    ctx.response.headers,
  );
  // An allowed origin, or the application's own hosted pages (their sign-in form starts SSO too).
  const target = new URL(input.redirect_uri);
  if (
    !application.allowedOrigins.includes(target.origin) &&
    !(await isHostedPageOf(ctx.em, ctx.services, application.id, target))
  ) {
    throw new AppError('invalid_url', 'redirect_uri must be on one of the application\u2019s allowed origins', [
      { path: 'redirect_uri', message: 'origin not allowed' },
    ]);
  }
  const connection = input.connection_id
    ? await ctx.em.findOne(SamlConnectionEntity, { id: input.connection_id, application: application.id })
    : await connectionForEmail(ctx.services.hooks, ctx.em, application.id, input.email ?? '');
  // Disabled, certificate-less, unknown and other applications' connections are one answer.
  const sp = usable(connection) ? spConfigOf(ctx.services.baseUrl, connection) : null;
  if (!sp || !connection) throw notFound(input.connection_id ? 'SAML connection' : 'SAML connection for this email domain');
  const requestId = `_${randomBytes(20).toString('hex')}`;
  ctx.em.create(SamlRequestEntity, {
    id: requestId,
    application: application.id,
    connection: connection.id,
    redirectUri: input.redirect_uri,
    hostId: input.host_id ?? null,
    purpose: 'sign_in',
    expiresAt: new Date(Date.now() + REQUEST_TTL_MS),
    consumedAt: null,
  });
  await ctx.em.flush();
  return { redirect_url: await authorizeUrl(sp, requestId, requestId) };
}

/** What the ACS answers: a redirect to the app (`?code=` or `?error=`), or an error when there is nowhere to go. */
export interface AcsOutcome {
  location: string;
}

const withParam = (target: string, name: string, value: string) => {
  const url = new URL(target);
  url.searchParams.set(name, value);
  return url.toString();
};

/** A refusal that has somewhere to send the browser back to. */
class AcsRedirect extends Error {
  readonly location: string;

  constructor(location: string) {
    super('redirect');
    this.location = location;
  }
}

/** Where an IdP-initiated sign-in lands: a RelayState URL on an allowed origin, else the first allowed origin. */
function idpInitiatedTarget(application: Application, relayState: string | undefined): string | null {
  if (relayState) {
    try {
      const url = new URL(relayState);
      if (application.allowedOrigins.includes(url.origin) && !url.username && !url.password) return url.toString();
    } catch {
      // not a URL: ignored
    }
  }
  const origin = application.allowedOrigins[0];
  return origin ? `${origin}/` : null;
}

/**
 * `POST /v1/saml/acs/{connection_id}` (the IdP's form post). Validates the response (saml.protocol.ts), then, in one
 * transaction (one statement for an IdP-initiated response): consumes the AuthnRequest it answers (SP-initiated), records the assertion ID (replay cache shared by
 * every process: a unique insert, so of 20 concurrent posts one wins) and stores a one-minute code for `sso/complete`.
 * Nobody is signed in here: the browser's app collects the sign-in with the code, through `completeSignIn`.
 */
export async function acceptSamlResponse(
  ctx: Context,
  connectionId: string,
  form: { SAMLResponse?: unknown; RelayState?: unknown },
): Promise<AcsOutcome> {
  // The id is checked before it keys the limiter: any text of the path would otherwise reach the counter's write
  // (PostgreSQL refuses U+0000, and the limiter fails closed: a 503 for everyone's form posts to that key).
  if (!isUuid(connectionId)) throw notFound('SAML connection');
  await ctx.services.rateLimits.consume([{ name: 'saml_acs', key: `${connectionId}:${ctx.ip}`, points: 300, windowS: 300 }]);
  const connection = await ctx.em.findOne(SamlConnectionEntity, { id: connectionId });
  if (!connection) throw notFound('SAML connection');
  const application = await ctx.em.findOneOrFail(ApplicationEntity, { id: connection.application });
  const refused = () => new AppError('assertion_failed', 'The SAML response was refused');
  if (typeof form.SAMLResponse !== 'string' || !form.SAMLResponse) throw refused();
  const relayState = typeof form.RelayState === 'string' ? form.RelayState : undefined;

  let response: ParsedResponse;
  try {
    response = await parseResponse(decodeResponse(form.SAMLResponse));
  } catch (error) {
    // decodeResponse throws only SamlRejection (parseResponse returns its errors), and catch binds unknown.
    const rejection = error as SamlRejection;
    ctx.log.warn({ connection: connection.id, reason: rejection.reason }, 'SAML response refused');
    if (rejection.status === 413) throw new AppError('payload_too_large', 'The SAML response is larger than 256 KiB');
    throw refused();
  }
  // Where a failure is reported: the app that started the request the response names (a stored, allowed URL), or
  // for an unsolicited response, where an IdP-initiated sign-in would land. Nothing unsigned decides more than that.
  const claimed = peekInResponseTo(response);
  const pending = claimed
    ? await ctx.em.findOne(SamlRequestEntity, { id: claimed, connection: connection.id, consumedAt: null })
    : null;
  const failureTarget = pending?.redirectUri ?? (claimed ? null : idpInitiatedTarget(application, relayState));
  const failure = (reason: string, error = 'saml_response_invalid'): Error => {
    ctx.log.warn({ connection: connection.id, reason }, 'SAML response refused');
    return failureTarget ? new AcsRedirect(withParam(failureTarget, 'error', error)) : refused();
  };
  const fail = (reason: string, error?: string): never => {
    throw failure(reason, error);
  };

  try {
    const sp = spConfigOf(ctx.services.baseUrl, connection);
    if (!sp) return fail('the connection has no IdP certificate', 'access_denied');
    // A disabled connection answers only the portal's test (a request stored as one; the consumed row decides below).
    if (!connection.enabled && pending?.purpose !== 'test') return fail('the connection is disabled', 'access_denied');
    let assertion: AcceptedAssertion;
    try {
      assertion = await validateResponse(sp, response);
    } catch (error) {
      return fail(error instanceof SamlRejection ? error.reason : 'validation error');
    }
    if (!assertion.inResponseTo && !connection.allowIdpInitiated)
      return fail('IdP-initiated sign-in is not allowed', 'access_denied');
    const email = emailOf(assertion, connection.emailAttribute ?? null);
    if (email && email.length > 320) return fail('the email is longer than 320 characters');
    if (connection.emailDomain && (!email || !normalizeEmail(email).endsWith(`@${connection.emailDomain}`))) {
      return fail('the email is outside the connection’s email_domain', 'access_denied');
    }
    const code = randomSecret('sso_');
    // The assertion ID enters the replay cache (a unique insert: of 20 concurrent posts one wins) and the code is stored
    // by one statement: the code exists only if the assertion was new.
    const recordAssertion = async (em: EntityManager, hostId: string | null, redirectUri: string, purpose: string) => {
      const stored = await em.execute<Array<{ id: string }>>(
        `with fresh as (
           insert into saml_assertions (id, connection_id, assertion_id, expires_at, created_at)
           values (?, ?, ?, ?, now()) on conflict do nothing returning id)
         insert into saml_codes (id, application_id, connection_id, code_hash, name_id, email, display_name, host_id, redirect_uri, purpose, attributes, expires_at, created_at)
         select ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, now() from fresh returning id`,
        [
          newId(),
          connection.id,
          assertion.assertionId,
          assertion.validUntil,
          newId(),
          application.id,
          connection.id,
          sha256(code),
          assertion.nameId,
          email,
          displayNameOf(assertion, connection.nameAttribute ?? null),
          hostId,
          redirectUri,
          purpose,
          // Only a test keeps what the IdP sent (for the administrator to read); a sign-in keeps what it uses.
          purpose === 'test' ? JSON.stringify(assertion.attributes) : null,
          new Date(Date.now() + CODE_TTL_MS),
        ],
      );
      if (!stored[0]) throw new SamlRejection('assertion replayed');
    };
    let target: string;
    if (assertion.inResponseTo) {
      const inResponseTo = assertion.inResponseTo;
      // The request is consumed in the same transaction: a replayed assertion leaves it unconsumed.
      target = await ctx.em.transactional(async (em) => {
        const rows = await em.execute<Array<{ redirect_uri: string; host_id: string | null; purpose: string }>>(
          `update saml_requests set consumed_at = now()
            where id = ? and connection_id = ? and application_id = ? and consumed_at is null and expires_at > now()
            returning redirect_uri, host_id, purpose`,
          [inResponseTo, connection.id, application.id],
        );
        if (!rows[0]) throw new SamlRejection('InResponseTo names no live request of this connection');
        // The signed InResponseTo named a stored test: only then may a disabled connection answer.
        if (!connection.enabled && rows[0].purpose !== 'test') throw new SamlRejection('the connection is disabled');
        await recordAssertion(em, rows[0].host_id, rows[0].redirect_uri, rows[0].purpose);
        return rows[0].redirect_uri;
      });
    } else {
      const landing = idpInitiatedTarget(application, relayState);
      if (!landing) throw new SamlRejection('no allowed origin to land an IdP-initiated sign-in on');
      // An unsolicited response answers no start, so it names no host.
      await recordAssertion(ctx.em, null, landing, 'sign_in');
      target = landing;
    }
    return { location: withParam(target, 'code', code) };
  } catch (caught) {
    const error = caught instanceof SamlRejection ? failure(caught.reason) : caught;
    if (error instanceof AcsRedirect) return { location: error.location };
    throw error;
  }
}

interface CodeRow {
  connection_id: string;
  name_id: string;
  email: string | null;
  display_name: string | null;
  host_id: string | null;
}

/**
 * `sso/complete`: spends the ACS's code (once, within a minute, by the database clock) and signs the person in. With
 * a `redirect_uri`, only a code the ACS sent there is spent (the hosted pages put a secret of the browser's flow
 * cookie in theirs, so a code copied into another browser is refused there).
 */
export async function completeSso(ctx: TenantContext, input: { code: string; redirect_uri?: string }) {
  const application = ctx.application;
  return completeSignIn(ctx, application, async (em) => {
    const rows = await em.execute<CodeRow[]>(
      `update saml_codes set consumed_at = now()
        where code_hash = ? and application_id = ? and consumed_at is null and expires_at > now() and purpose = 'sign_in'
          and (?::text is null or redirect_uri = ?)
        returning connection_id, name_id, email, display_name, host_id`,
      [sha256(input.code), application.id, input.redirect_uri ?? null, input.redirect_uri ?? null],
    );
    const row = rows[0];
    if (!row) throw new AppError('invalid_verification', 'The sign-in code is invalid, expired or already used');
    const connection = await em.findOne(SamlConnectionEntity, { id: row.connection_id, application: application.id });
    if (!usable(connection)) throw new AppError('access_denied', 'This SSO connection is disabled');
    const owner = row.email ? await domainOwnerOf(ctx.services.hooks, em, application.id, row.email) : null;
    // An organization's own IdP vouches for the domains that organization verified, as for its `email_domain`.
    const ownsDomain = !!owner && !!connection.organization && owner.organizationId === connection.organization;
    return { ...(await signInBySaml(em, application, connection, row, ownsDomain)), hostId: row.host_id };
  });
}

/**
 * Who a SAML identity signs in: the user linked to (connection, NameID); else, on a first sign-in, the user with
 * the asserted email when the connection vouches for that domain (its `email_domain`, or `ownsDomain`: a domain its
 * organization verified), else a new user.
 */
async function signInBySaml(
  em: EntityManager,
  application: Application,
  connection: SamlConnection,
  row: CodeRow,
  ownsDomain: boolean,
): Promise<SignInSubject> {
  const subject = samlSubject(connection.id, row.name_id);
  const identity = await em.findOne(IdentityEntity, { application: application.id, kind: 'saml', subject });
  if (identity) {
    identity.lastUsedAt = new Date();
    return {
      user: await em.findOneOrFail(UserEntity, { id: identity.user }),
      aal: 1,
      firstFactor: 'saml',
      ssoOrganizationId: connection.organization ?? null,
    };
  }
  const normalized = row.email ? normalizeEmail(row.email) : null;
  // The IdP is authoritative for its customer's domain only: then its email is verified and may link an account.
  const vouched = !!normalized && ((!!connection.emailDomain && normalized.endsWith(`@${connection.emailDomain}`)) || ownsDomain);
  let user = normalized ? await em.findOne(UserEntity, { application: application.id, emailNormalized: normalized }) : null;
  if (user && !vouched) {
    throw new AppError(
      'access_denied',
      'This email belongs to an existing account; the connection does not vouch for its domain',
    );
  }
  if (!user) {
    if (settingsOf(application).sign_up !== 'open') throw new AppError('access_denied', 'Sign-up is closed for this application');
    user = em.create(UserEntity, {
      id: newId(),
      application: application.id,
      primaryEmail: row.email,
      emailNormalized: normalized,
      emailVerified: vouched,
      status: 'active',
      profile: row.display_name ? { name: row.display_name } : {},
      mergedInto: null,
    });
    recordEvent(em, application.id, 'user.created', toUserRecord(user));
  } else if (!user.emailVerified && user.status === 'active') {
    user.emailVerified = true;
    user.updatedAt = new Date();
    recordEvent(em, application.id, 'user.updated', toUserRecord(user));
  }
  createExternalIdentity(em, { application: application.id, user: user.id, kind: 'saml', subject, name: connection.name });
  return { user, aal: 1, firstFactor: 'saml', ssoOrganizationId: connection.organization ?? null };
}

// ——— The admin portal's connection test ———

/**
 * Starts a connection test: an AuthnRequest like `sso/start`'s, stored with purpose `test`, for a connection of the
 * application that has a certificate (enabled or not: a test comes before enabling). `redirectUri` is built by the
 * caller from configuration (the portal's own page), never taken from a request.
 */
export async function startSsoTest(ctx: TenantContext, connectionId: string, redirectUri: string) {
  const connection = await ctx.em.findOne(SamlConnectionEntity, { id: connectionId, application: ctx.application.id });
  const sp = connection ? spConfigOf(ctx.services.baseUrl, connection) : null;
  if (!sp || !connection) throw notFound('SAML connection');
  const requestId = `_${randomBytes(20).toString('hex')}`;
  ctx.em.create(SamlRequestEntity, {
    id: requestId,
    application: ctx.application.id,
    connection: connection.id,
    redirectUri,
    hostId: null,
    purpose: 'test',
    expiresAt: new Date(Date.now() + REQUEST_TTL_MS),
    consumedAt: null,
  });
  await ctx.em.flush();
  return { redirect_url: await authorizeUrl(sp, requestId, requestId) };
}

/** What a passed connection test received from the IdP (signed): shown to the administrator, nobody signed in. */
export interface SsoTestResult {
  connection_id: string;
  name_id: string;
  email: string | null;
  display_name: string | null;
  attributes: Record<string, string[]>;
}

/**
 * Spends a test's code (once, within a minute, by the database clock; only a `test` code, only with the redirect
 * URI it was issued for) and answers what the IdP asserted. A sign-in's code is never spent here, nor a test's by
 * `sso/complete`.
 */
export async function collectSsoTest(ctx: TenantContext, input: { code: string; redirect_uri: string }): Promise<SsoTestResult> {
  const rows = await ctx.em.execute<Array<CodeRow & { attributes: Record<string, string[]> | string | null }>>(
    `update saml_codes set consumed_at = now()
      where code_hash = ? and application_id = ? and consumed_at is null and expires_at > now() and purpose = 'test'
        and redirect_uri = ?
      returning connection_id, name_id, email, display_name, host_id, attributes`,
    [sha256(input.code), ctx.application.id, input.redirect_uri],
  );
  const row = rows[0];
  if (!row) throw new AppError('invalid_verification', 'The test code is invalid, expired or already used');
  // jsonb arrives parsed on PostgreSQL and as text on some drivers: both are the object the ACS stored.
  const attributes =
    // the ACS stored this column from a Record<string, string[]>: parsing it gives that back.
    typeof row.attributes === 'string' ? (JSON.parse(row.attributes) as Record<string, string[]>) : row.attributes;
  return {
    connection_id: row.connection_id,
    name_id: row.name_id,
    email: row.email,
    display_name: row.display_name,
    attributes: attributes ?? {},
  };
}

export const purgeSamlRequests: PurgeStep = (em) => deleteInBatches(em, 'saml_requests', SPENT_ONE_TIME_ROWS);
export const purgeSamlCodes: PurgeStep = (em) => deleteInBatches(em, 'saml_codes', SPENT_ONE_TIME_ROWS);
export const purgeSamlAssertions: PurgeStep = (em) =>
  deleteInBatches(em, 'saml_assertions', `t.expires_at < now() - interval '1 day'`);

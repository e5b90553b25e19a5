import { createHmac, createPublicKey, sign as signWithKey } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Provider from 'oidc-provider';
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import type { Services } from '../../context.ts';
import { sha256 } from '../../lib/crypto.ts';
import { isUuid, newId } from '../../lib/ids.ts';
import type { Application } from '../applications/application.entity.ts';
import { settingsOf } from '../applications/applications.service.ts';
import {
  type BrowserSession,
  browserTokenFrom,
  clearedBrowserSessionCookie,
  endBrowserSession,
  findBrowserSession,
} from '../sessions/browser-sessions.ts';
import { activeSigningKey, jwks } from '../signing-keys/signing-keys.service.ts';
import {
  adapterFor,
  applicationWithReads,
  findAccountRow,
  hostedSessionRead,
  inRequestScope,
  writeRotation,
} from './oauth2.adapter.ts';
import { loadOidcProvider, oidcProvider } from './oidc-library.ts';

/** The OpenID Connect scopes every provider offers; applications add theirs in `settings.oauth2.scopes`. */
export const STANDARD_SCOPES = ['openid', 'profile', 'email', 'organization', 'offline_access'] as const;

const DAY = 86_400;
/** Providers kept built per process; the least recently used goes first. */
const MAX_PROVIDERS = 200;

/**
 * The application's issuer: `{base}/oauth2/{id}`, or, on one of its verified custom domains (`domain`), the root of
 * that domain (`https://login.acme.com`, the base URL's scheme) — as the hosted pages live there.
 */
export const issuerOf = (services: Services, applicationId: string, domain?: string) =>
  domain ? `${new URL(services.baseUrl).protocol}//${domain}` : `${services.baseUrl}/oauth2/${applicationId}`;

/** The application's hosted sign-in page (on `domain`, at its root): the provider's login and consent when it has no `login_url` of its own. */
export const hostedSignInUrl = (services: Services, applicationId: string, domain?: string) =>
  domain ? `${issuerOf(services, applicationId, domain)}/sign-in` : `${services.baseUrl}/a/${applicationId}/sign-in`;

/**
 * Authentication context classes (`acr`, `acr_values`): the NIST SP 800-63B assurance level of the sign-in. A relying
 * party that needs a second factor sends `acr_values=urn:gatehouse:aal2`.
 */
export const ACR_AAL1 = 'urn:gatehouse:aal1';
export const ACR_AAL2 = 'urn:gatehouse:aal2';
export const acrOfAal = (aal: number) => (aal >= 2 ? ACR_AAL2 : ACR_AAL1);
export const aalOfAcr = (acr: unknown) => (acr === ACR_AAL2 ? 2 : 1);
/** The assurance level an authorization request asks for: 2 when `acr_values` names `urn:gatehouse:aal2`. */
export const requestedAal = (acrValues: unknown) =>
  typeof acrValues === 'string' && acrValues.split(' ').includes(ACR_AAL2) ? 2 : 1;

interface Built {
  provider: Provider;
  handle: ReturnType<Provider['callback']>;
  /** What the provider was built from: a new signing key or a settings change builds it again. */
  version: string;
}

const caches = new WeakMap<Services, Map<string, Built>>();

/** What a provider request reads with the application (`applicationWithReads`). */
export interface ProviderReads {
  /** The request's `Authorization` header. */
  authorization?: string;
  /** The code or token its form presents. */
  presented?: string;
  clientId?: string;
  /** The hosted session an authorization request's `gh_session_<id>` names. */
  browserToken?: string;
}

/**
 * The application's provider (for its issuer on `domain`, one of its verified custom domains, when given), built on
 * first use and kept (bounded) per process. The application row is read on every request, so a settings PATCH on
 * another process is picked up at once; a new signing key within the signing-key cache's 30 s. `reads`: the client,
 * artifact and hosted session the request names are read with the application (`applicationWithReads`).
 */
export async function providerFor(
  services: Services,
  applicationId: string,
  reads: ProviderReads = {},
  domain?: string,
): Promise<Built | undefined> {
  const em = services.orm.em.fork();
  const { authorization, presented, clientId, browserToken } = reads;
  const application = await applicationWithReads(em, applicationId, authorization, presented, clientId, browserToken);
  if (!application) return undefined;
  const signing = await activeSigningKey(em, services, applicationId);
  const version = `${signing.kid}/${application.updatedAt.getTime()}`;
  const cache = caches.get(services) ?? new Map<string, Built>();
  caches.set(services, cache);
  const key = domain ? `${applicationId}@${domain}` : applicationId;
  const cached = cache.get(key);
  if (cached?.version === version) {
    cache.delete(key);
    cache.set(key, cached);
    return cached;
  }
  await loadOidcProvider();
  const provider = buildProvider(services, application, signing, domain);
  const built = { provider, handle: provider.callback(), version };
  cache.delete(key);
  const oldest = cache.keys().next();
  if (cache.size >= MAX_PROVIDERS && !oldest.done) cache.delete(oldest.value);
  cache.set(key, built);
  return built;
}

/** Signs the provider's cookies: derived from the master key per application, so nothing new needs storing. */
const cookieKey = (services: Services, applicationId: string) =>
  createHmac('sha256', services.secretBox.deriveKey('oauth2-cookies')).update(applicationId).digest('base64url');

function buildProvider(
  services: Services,
  application: Application,
  signing: Awaited<ReturnType<typeof activeSigningKey>>,
  domain: string | undefined,
): Provider {
  const settings = settingsOf(application).oauth2;
  const { errors } = oidcProvider();
  const applicationId = application.id;
  const issuer = issuerOf(services, applicationId, domain);
  const customScopes = settings.scopes.map((s) => s.name);

  const configuration: Configuration = {
    adapter: adapterFor(services, applicationId),
    clients: [],
    jwks: { keys: [externalSigningKey(signing)] },
    scopes: [...STANDARD_SCOPES, ...customScopes],
    // `acr`, `amr` and `auth_time` go in every ID token: the sign-in's assurance level, methods and time. So do `org`
    // and `org_role` when the client was granted `organization` (the account's claims hold them only then): a relying
    // party reads the organization from the ID token as from the service's own tokens, with no userinfo call. Other
    // scope claims (`email`, `profile`) stay in userinfo when an access token is issued (OIDC Core 5.4).
    claims: {
      sid: null,
      openid: ['sub', 'acr', 'amr', 'auth_time', 'org', 'org_role'],
      email: ['email', 'email_verified'],
      profile: ['name', 'picture', 'updated_at'],
      organization: ['org', 'org_role'],
    },
    async findAccount(_ctx, id, token) {
      const user = await findAccountRow(services, applicationId, id);
      // A banned, merged or deleted user has no account: the provider refuses their tokens and sessions.
      if (!user) return undefined;
      // oidc-provider types grantId loosely; on a code or token it is the grant's string id.
      const grantId = token && 'grantId' in token && typeof token.grantId === 'string' ? token.grantId : undefined;
      return {
        accountId: user.id,
        claims: async (_use, scope) => ({
          sub: user.id,
          email: user.primary_email ?? undefined,
          email_verified: user.email_verified,
          name: typeof user.profile.name === 'string' ? user.profile.name : undefined,
          picture: typeof user.profile.picture === 'string' ? user.profile.picture : undefined,
          updated_at: Math.floor(new Date(user.updated_at).getTime() / 1000),
          // Read only when the client was granted `organization`: no statement for the others.
          ...(grantId && scope.split(' ').includes('organization')
            ? await grantOrganization(services, applicationId, grantId)
            : {}),
        }),
      };
    },
    acrValues: [ACR_AAL1, ACR_AAL2],
    interactions: {
      url: (_ctx, interaction) =>
        withQuery(settings.login_url ?? hostedSignInUrl(services, applicationId, domain), 'interaction', interaction.uid),
      policy: loginPolicy(services, application),
    },
    async loadExistingGrant(ctx) {
      // The provider asks only while authorizing a client.
      const clientId = ctx.oidc.client?.clientId;
      if (!clientId) return undefined;
      const grantId =
        ctx.oidc.result?.consent?.grantId ||
        ctx.oidc.session?.grantIdFor(clientId) ||
        (ctx.oidc.session?.accountId
          ? await latestGrantId(services, applicationId, ctx.oidc.session.accountId, clientId)
          : undefined);
      return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
    },
    // Every client uses PKCE, S256 only (RFC 9700 §2.1.1; plain is not offered).
    pkce: { required: () => true },
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post'],
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      id_token_signed_response_alg: 'EdDSA',
      token_endpoint_auth_method: 'none',
    },
    responseTypes: ['code'],
    // Self-registration (RFC 7591) makes public clients only: no secret, PKCE, code flow. The validator runs for
    // every client the provider constructs; `ctx` is set only for a registration request.
    extraClientMetadata: {
      properties: ['gatehouse_dynamic'],
      validator(ctx, _key, _value, metadata) {
        if (!ctx) return;
        if (metadata.token_endpoint_auth_method !== 'none' || metadata.client_secret !== undefined) {
          throw new errors.InvalidClientMetadata('only public clients (token_endpoint_auth_method none) may register');
        }
        // oidc-provider types client metadata loosely; it has validated grant_types as a string array.
        const grants = (metadata.grant_types as string[] | undefined) ?? [];
        if (grants.some((g) => g !== 'authorization_code' && g !== 'refresh_token')) {
          throw new errors.InvalidClientMetadata('only the authorization_code and refresh_token grants may be registered');
        }
      },
    },
    enabledJWA: {
      idTokenSigningAlgValues: ['EdDSA'],
      userinfoSigningAlgValues: ['EdDSA'],
      introspectionSigningAlgValues: ['EdDSA'],
      authorizationSigningAlgValues: ['EdDSA'],
      requestObjectSigningAlgValues: ['EdDSA'],
      clientAuthSigningAlgValues: ['EdDSA'],
    },
    cookies: {
      keys: [cookieKey(services, applicationId)],
      // The provider's session cookie is scoped to its issuer's path: every application's provider calls its cookie
      // `_session`, and two applications signed in on one browser must not overwrite each other's.
      long: { signed: true, httpOnly: true, sameSite: 'lax', path: new URL(issuer).pathname },
      short: { signed: true, httpOnly: true, sameSite: 'lax' },
    },
    // Codes ≤ 60 s (SECURITY 4); access and ID tokens 10 minutes like the service's own.
    ttl: {
      AuthorizationCode: 60,
      AccessToken: 600,
      ClientCredentials: 600,
      IdToken: 600,
      Interaction: 600,
      Session: 14 * DAY,
      Grant: 365 * DAY,
      RefreshToken: 30 * DAY,
      RegistrationAccessToken: 30 * DAY,
    },
    rotateRefreshToken: true,
    // OpenID Connect requests get a refresh token for `offline_access` (which OIDC honours only with prompt=consent);
    // plain OAuth 2.1 requests (CLIs, MCP clients) get one whenever the client may refresh.
    issueRefreshToken: (_ctx, client, code) =>
      client.grantTypeAllowed('refresh_token') && (code.scopes.has('offline_access') || !code.scopes.has('openid')),
    // `sid` names the grant (what the user revokes), `aal` the sign-in's assurance level (its `acr`) and `amr` its
    // methods. With them a resource server verifies these tokens with the SDK's `verifyToken` like its own users'.
    // With `organization` granted, `org` and `org_role` too (JWT access tokens for a resource server carry them; an
    // opaque one's introspection answers them), read when the token is issued: a refresh reads them again.
    extraTokenClaims: async (ctx, token) => {
      if (!('grantId' in token) || !token.grantId) return undefined;
      // The sign-in the token comes from: the code it was exchanged for, or the refresh token it was refreshed with.
      const from = ctx.oidc.entities.AuthorizationCode ?? ctx.oidc.entities.RefreshToken;
      // oidc-provider types grantId loosely; it is the grant's string id.
      const grantId = token.grantId as string;
      const claims: Record<string, unknown> = { sid: grantId, aal: aalOfAcr(from?.acr) };
      if (from?.amr?.length) claims.amr = from.amr;
      // The authorization asked for it (the code's or refresh token's scope) and the grant still holds it.
      const grant = ctx.oidc.entities.Grant;
      const granted = grant?.jti === grantId ? grant.getOIDCScope().split(' ') : [];
      const asked = typeof from?.scope === 'string' ? from.scope.split(' ') : [];
      if (asked.includes('organization') && granted.includes('organization')) {
        Object.assign(claims, await grantOrganization(services, applicationId, grantId));
      }
      return claims;
    },
    features: {
      devInteractions: { enabled: false },
      // The signing key is an ExternalSigningKey (`externalSigningKey`); the ack pins the experiment's version, so an
      // oidc-provider update that changes it fails at the provider's construction (in every test), not in production.
      externalSigningSupport: { enabled: true, ack: 'experimental-01' },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      userinfo: { enabled: true },
      rpInitiatedLogout: {
        enabled: true,
        // The provider's own pages, plain (the defaults load web fonts from a third party).
        logoutSource(ctx, form) {
          ctx.type = 'html';
          ctx.body = providerPage(
            'Sign out',
            `<h1>Sign out of ${escapeHtml(displayName(application))}?</h1>${form}
<button autofocus type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>
<button type="submit" form="op.logoutForm">No, stay signed in</button>`,
          );
        },
        postLogoutSuccessSource(ctx) {
          ctx.type = 'html';
          ctx.body = providerPage('Signed out', `<h1>You are signed out of ${escapeHtml(displayName(application))}.</h1>`);
        },
      },
      registration: {
        enabled: settings.dynamic_registration,
        idFactory: () => newId(),
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx, _client, oneOf) => oneOf ?? undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => {
          // Only the resource servers the application lists (RFC 8707): a token is bound to exactly one `aud`.
          if (!settings.resources.includes(resource)) throw new errors.InvalidTarget();
          return {
            scope: customScopes.join(' '),
            accessTokenFormat: 'jwt',
            accessTokenTTL: 600,
            jwt: { sign: { alg: 'EdDSA' } },
          };
        },
      },
    },
    renderError(ctx, out) {
      ctx.type = 'html';
      ctx.body = errorPage(out.error, out.error_description);
    },
  };

  const provider = new (oidcProvider().default)(issuer, configuration);
  // A refresh's rotation is written with the tokens it issues (oauth2.adapter.ts, `RequestScope`): at the latest here,
  // once the answer is built and before it is sent. Lost to another request, the answer is `invalid_grant` instead.
  provider.use(async (ctx, next) => {
    // The provider's pages (logout, errors, form posts) cannot be framed and load nothing from elsewhere; the script of
    // its auto-submitted forms is allowed by hash (oidc-provider adds it to script-src).
    ctx.set('content-security-policy', PROVIDER_CSP);
    ctx.set('x-frame-options', 'DENY');
    await next();
    if (ctx.oidc?.route === 'end_session_confirm' && ctx.status === 303 && ctx.oidc.params?.logout) {
      // The account signed out: the provider's session's, else the ID token hint's (the provider's session may be gone).
      const account = ctx.oidc.session?.accountId ?? ctx.oidc.entities?.IdTokenHint?.payload?.sub;
      await endHostedSession(services, application, ctx, typeof account === 'string' ? account : undefined);
    }
    try {
      await writeRotation();
    } catch (error) {
      if (!(error instanceof errors.InvalidGrant)) throw error;
      ctx.status = error.status;
      ctx.body = { error: error.error, error_description: error.error_description };
    }
  });
  // Links come from configuration, never from the request (SECURITY 10): the HTTP host sets the forwarded headers
  // from GATEHOUSE_BASE_URL on every request it hands over, and nothing else.
  provider.proxy = true;
  if (!settings.login_url) adoptHostedSession(services, application, provider);
  // A confidential client's secret is stored as SHA-256 only: compare hashes, in constant time.
  const compare = provider.Client.prototype.compareClientSecret;
  provider.Client.prototype.compareClientSecret = function (this: { clientSecret?: string }, actual: string) {
    return compare.call(this, sha256(actual));
  };
  return provider;
}

/**
 * The application's active Ed25519 key as oidc-provider's `ExternalSigningKey` (the library's hook for keys it does
 * not hold as a JWK): ID tokens and JWT access tokens are signed by node:crypto with the signing-key cache's KeyObject,
 * synchronously, as the service's own access tokens are (`signAccessToken`); a private JWK would go through jose's
 * WebCrypto path (a CryptoKey conversion and a queued job per token). Verification (an `id_token_hint`) uses the
 * public key.
 */
function externalSigningKey(signing: Awaited<ReturnType<typeof activeSigningKey>>) {
  const publicKey = createPublicKey(signing.key);
  return new (class extends oidcProvider().ExternalSigningKey {
    override get kid() {
      return signing.kid;
    }
    override get alg() {
      return 'EdDSA';
    }
    override keyObject() {
      return publicKey;
    }
    override sign(data: Uint8Array) {
      return signWithKey(null, data, signing.key);
    }
  })();
}

/**
 * The organization claims of a grant: the organization that was active when the user signed in for it, with their
 * role there, as long as they are still a member; `null` for both otherwise (as in the service's own tokens).
 */
async function grantOrganization(services: Services, applicationId: string, grantId: string) {
  const [row] = await services.orm.em.fork().execute<Array<{ organization_id: string; role: string }>>(
    `select m.organization_id, m.role from oauth2_grants g
      join organization_members m on m.organization_id = g.organization_id and m.user_id = g.user_id
        and m.application_id = g.application_id and m.status = 'active'
      where g.id = ? and g.application_id = ?`,
    [grantId, applicationId],
  );
  return { org: row?.organization_id ?? null, org_role: row?.role ?? null };
}

/**
 * oidc-provider's policy, plus what the hosted pages need (applications without a `login_url` of their own): the
 * provider's session counts only while the browser's hosted session (`gh_session_<id>`, browser-sessions.ts) is live
 * for the same account — a sign-out, a revocation or a ban ends single sign-on too; `acr_values` naming
 * `urn:gatehouse:aal2` asks for a sign-in at aal 2; and `prompt=select_account` (the page offers the signed-in account
 * or another). A login the page has just finished (`result.login`) satisfies them all: it decided.
 */
function loginPolicy(services: Services, application: Application) {
  const { Check, Prompt, base } = oidcProvider().interactionPolicy;
  const policy = base();
  const login = policy.get('login');
  const hosted = !settingsOf(application).oauth2.login_url;
  const justSignedIn = (ctx: KoaContextWithOIDC) => Boolean(ctx.oidc.result?.login);
  login?.checks.add(
    new Check('hosted_session', 'End-User authentication is required', 'login_required', async (ctx) => {
      const accountId = ctx.oidc.session?.accountId;
      if (!hosted || !accountId || justSignedIn(ctx)) return Check.NO_NEED_TO_PROMPT;
      const session = await hostedSessionOf(services, application, ctx);
      return session?.userId === accountId ? Check.NO_NEED_TO_PROMPT : Check.REQUEST_PROMPT;
    }),
  );
  login?.checks.add(
    new Check('acr_aal2', 'A second factor is required', 'login_required', (ctx) => {
      if (!ctx.oidc.session?.accountId || justSignedIn(ctx)) return Check.NO_NEED_TO_PROMPT;
      return requestedAal(ctx.oidc.params?.acr_values) > aalOfAcr(ctx.oidc.session.acr)
        ? Check.REQUEST_PROMPT
        : Check.NO_NEED_TO_PROMPT;
    }),
  );
  // When the interaction started, to the millisecond (its `iat` has whole seconds): a sign-in made since is fresh
  // (`prompt=login`), one made before is not (oauth2.hosted.ts, `sessionFit`).
  const started = () => ({ started_at: Date.now() });
  if (login) {
    const details = login.details;
    login.details = async (ctx) => ({ ...(await details(ctx)), ...started() });
  }
  // Requestable: its check (`select_account_prompt`) asks while the login result has not answered it.
  policy.add(new Prompt({ name: 'select_account', requestable: true }, started), 1);
  return policy;
}

/**
 * The browser's hosted session an authorization request carries, read once per request: with the application when
 * the request's first statement read it (`applicationWithReads`, a `GET /auth`), else by a statement of its own.
 */
const hostedSessions = new WeakMap<IncomingMessage, Promise<BrowserSession | undefined>>();
function hostedSessionOf(services: Services, application: Application, ctx: KoaContextWithOIDC) {
  let found = hostedSessions.get(ctx.req);
  if (!found) {
    const token = browserTokenFrom(ctx.get('cookie'), application.id);
    const read = token ? hostedSessionRead(sha256(token)) : undefined;
    found = read
      ? Promise.resolve(read.session)
      : token
        ? findBrowserSession(services.orm.em.fork(), application, token)
        : Promise.resolve(undefined);
    hostedSessions.set(ctx.req, found);
  }
  return found;
}

/**
 * A browser signed in on the hosted pages but not (or no longer) at the provider — the person signed in on the
 * sign-in page directly, or the provider's session cookie is gone — is signed in at the provider by its hosted session
 * when an authorization request arrives: the provider's session is opened with the hosted session's account,
 * assurance level (`acr`), methods (`amr`) and sign-in time (`auth_time`), as the sign-in page would have finished
 * the login. So single sign-on — `prompt=none` included — answers at once instead of `login_required`, and every
 * check of the request still applies to it (`max_age`, `prompt=login`, `acr_values`, the consent): the session is
 * what the sign-in page would have used. Only the authorization endpoint does this; the provider's session is saved
 * with the request, like any login.
 */
function adoptHostedSession(services: Services, application: Application, provider: Provider) {
  const Session = provider.Session;
  const get = Session.get.bind(Session);
  Session.get = async (ctx) => {
    const session = await get(ctx);
    // oidc-provider types the context loosely here; the authorization endpoint's has its `oidc` context with a route.
    const route = (ctx as Partial<KoaContextWithOIDC>).oidc?.route;
    if (session.accountId || route !== 'authorization') return session;
    // The context is a Koa context with the OIDC context set (checked just above).
    const hosted = await hostedSessionOf(services, application, ctx as KoaContextWithOIDC);
    if (!hosted) return session;
    session.loginAccount({
      accountId: hosted.userId,
      loginTs: Math.floor(hosted.authTime.getTime() / 1000),
      acr: acrOfAal(hosted.aal),
      ...(hosted.amr.length ? { amr: hosted.amr } : {}),
    });
    // Saved when the request ends, like a login the sign-in page finishes (the provider marks a session it must save
    // as touched; this one is not yet behind the proxy that would).
    Reflect.defineProperty(session, 'touched', { writable: true, value: true });
    return session;
  };
}

/**
 * RP-initiated logout signed `account` out of the provider: the browser's hosted session ends too (revoked, cookie
 * cleared) when it is that account's. Another account's is left alone: the provider also logs its session out when
 * the browser signs in as someone else (the previous account's session ends, then the new login resumes), and the
 * hosted session then is already the new account's.
 */
async function endHostedSession(
  services: Services,
  application: Application,
  ctx: { get(field: string): string; append(field: string, value: string): void },
  account: string | undefined,
) {
  const token = browserTokenFrom(ctx.get('cookie'), application.id);
  if (!token) return;
  const em = services.orm.em.fork();
  const session = await findBrowserSession(em, application, token);
  if (session && account !== undefined && session.userId !== account) return;
  await endBrowserSession(em, application.id, token);
  ctx.append('set-cookie', clearedBrowserSessionCookie(application.id, services.baseUrl));
}

async function latestGrantId(services: Services, applicationId: string, userId: string, clientId: string) {
  if (!isUuid(userId) || !isUuid(clientId)) return undefined;
  const [row] = await services.orm.em.fork().execute<Array<{ id: string }>>(
    `select id from oauth2_grants where application_id = ? and user_id = ? and client_id = ? and expires_at > now()
        order by updated_at desc limit 1`,
    [applicationId, userId, clientId],
  );
  return row?.id;
}

function withQuery(base: string, key: string, value: string): string {
  const url = new URL(base);
  url.searchParams.set(key, value);
  return url.toString();
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);

const PROVIDER_CSP =
  "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' https:; frame-ancestors 'none'; base-uri 'none'";

const displayName = (application: Application) => settingsOf(application).branding.display_name ?? application.name;

/** A page of the provider's own (`body` is markup built with every value escaped). */
const providerPage = (title: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;display:grid;place-items:center;min-height:100vh;margin:0}
main{max-width:26rem;padding:2rem}button{display:block;width:100%;margin-top:.75rem;padding:.6rem;font:inherit}</style></head>
<body><main>${body}</main></body></html>`;

const errorPage = (error: string, description?: string) =>
  providerPage(
    'Sign-in error',
    `<h1>This sign-in cannot continue</h1><p><code>${escapeHtml(error)}</code>${description ? ` — ${escapeHtml(description)}` : ''}</p>`,
  );

/** The form field that presents an artifact, by endpoint (and grant type at the token endpoint). */
const presentedField = (path: string, form: URLSearchParams): string | undefined => {
  if (path === '/token/introspection' || path === '/token/revocation') return 'token';
  if (path !== '/token') return undefined;
  const grantType = form.get('grant_type');
  return grantType === 'refresh_token' ? 'refresh_token' : grantType === 'authorization_code' ? 'code' : undefined;
};

/**
 * The code or token a form posted to the token, introspection or revocation endpoint presents, when the form has
 * arrived whole (a small form comes with its headers, by the time the HTTP host hands the request over), read without
 * taking it: the provider parses the form itself. Its artifact is then read with the application. A form still on its
 * way: undefined (the artifact is read when the provider asks for it).
 */
function presentedArtifact(req: IncomingMessage, path: string): string | undefined {
  const length = Number(req.headers['content-length']);
  if (req.method !== 'POST' || !path.startsWith('/token') || !(length > 0 && length <= 4096) || req.readableLength !== length)
    return undefined;
  // Readable.read is typed any; a stream without an encoding yields a Buffer (or null).
  const body = req.read(length) as Buffer | null;
  if (!body) return undefined;
  req.unshift(body);
  const form = new URLSearchParams(body.toString());
  const field = presentedField(path, form);
  return (field && form.get(field)) || undefined;
}

/**
 * What an authorization request (`GET /auth?…`) will have read first, to read it with the application: its client
 * (`client_id`), the provider session its `_session` cookie names, with the session's account, and the hosted browser
 * session its `gh_session_<id>` cookie names (the provider consults it on every authorization request of a hosted
 * application: to adopt it, or to check that the provider's session still has it). The provider checks the cookie's
 * signature and the client itself, and a read it does not use is dropped; the hosted session's use is recorded as
 * `findBrowserSession` records it, which the request would have done at its session's start.
 */
function authorizationReads(
  req: IncomingMessage,
  path: string,
  applicationId: string,
): { clientId?: string; session?: string; browserToken?: string } | undefined {
  if (req.method !== 'GET' || !(path === '/auth' || path.startsWith('/auth?'))) return undefined;
  const clientId = new URLSearchParams(path.slice(path.indexOf('?') + 1)).get('client_id') ?? undefined;
  let session: string | undefined;
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === '_session') session = part.slice(at + 1).trim() || undefined;
  }
  return { clientId, session, browserToken: browserTokenFrom(req.headers.cookie, applicationId) };
}

/**
 * Hands one HTTP request to the application's provider (a Koa app) — its issuer on `domain` when the request came to
 * one of the application's verified custom domains. `path` is what follows the issuer's path. The host headers are
 * replaced by the configured base URL's (or that domain), so every URL the provider writes (discovery, redirects,
 * `iss`) comes from configuration (SECURITY 10).
 */
export async function handleProviderRequest(
  services: Services,
  applicationId: string,
  path: string,
  req: IncomingMessage & { originalUrl?: string },
  res: ServerResponse,
  domain?: string,
): Promise<boolean> {
  return inRequestScope(async () => {
    const authorizing = authorizationReads(req, path, applicationId);
    const reads = {
      authorization: req.headers.authorization,
      presented: authorizing?.session ?? presentedArtifact(req, path),
      clientId: authorizing?.clientId,
      browserToken: authorizing?.browserToken,
    };
    const built = await providerFor(services, applicationId, reads, domain);
    if (!built) return false;
    if (path === '/jwks' && req.method === 'GET') {
      // One key set per application: the provider publishes the service's document (active and still-valid retired keys).
      res.writeHead(200, { 'content-type': 'application/jwk-set+json', 'cache-control': 'public, max-age=300' });
      res.end(JSON.stringify(await jwks(services.orm.em.fork(), applicationId)));
      return true;
    }
    const base = new URL(services.baseUrl);
    req.headers['x-forwarded-host'] = domain ?? base.host;
    req.headers['x-forwarded-proto'] = base.protocol.slice(0, -1);
    delete req.headers['x-forwarded-for'];
    delete req.headers.forwarded;
    req.originalUrl = `${new URL(issuerOf(services, applicationId, domain)).pathname.replace(/\/$/, '')}${path}`;
    req.url = path;
    await built.handle(req, res);
    return true;
  });
}

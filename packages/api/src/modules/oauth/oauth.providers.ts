import type { Apple, OAuth2Tokens } from 'arctic';
import { createRemoteJWKSet, decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose';
import type * as oidc from 'openid-client';
import type { OAuthConfig } from '../../context.ts';
import { errorMessage, errorName, fieldOf } from '../../errors.ts';
import { guardedRequest, OutboundBlockedError, type OutboundPolicy } from '../../lib/ssrf.ts';

/** CONTRACT §3's providers, plus the generic OpenID Connect provider `oidc` (any issuer, found by discovery). */
export const BUILT_IN_PROVIDERS = ['google', 'github', 'microsoft', 'apple', 'gitlab', 'discord', 'slack', 'linkedin'] as const;
export const OAUTH_PROVIDERS = [...BUILT_IN_PROVIDERS, 'oidc'] as const;
export type OAuthProviderName = (typeof OAUTH_PROVIDERS)[number];

/** What a provider says about the person, read from a verified ID token or the provider's user endpoint. */
export interface ProviderProfile {
  subject: string;
  email: string | null;
  /** Only when the provider itself vouches for the address (it may then link an existing account). */
  emailVerified: boolean;
  name: string | null;
  picture: string | null;
}

export interface ProviderTokens {
  access_token: string;
  refresh_token: string | null;
  expires_at: string | null;
  id_token: string | null;
}

/** A client as one application configured it (its own credentials or the operator's shared ones). */
export interface ProviderClient {
  provider: OAuthProviderName;
  clientId: string;
  clientSecret: string;
  scopes: string[];
  /** `oidc` only. */
  issuer: string | null;
  /** The redirect URI registered at the provider: the service's own `/v1/auth/oauth/redirect`. */
  redirectUri: string;
}

/** Why a provider step failed, in words for the log and for the person (never the provider's raw answer). */
export class ProviderFailure extends Error {
  readonly hint: string;
  /**
   * The provider could not be reached, or answered what no sign-in could use: an outage or a misconfiguration on
   * the provider's side (503), not a refusal of this person's attempt (401).
   */
  readonly unavailable: boolean;
  constructor(reason: string, hint: string, unavailable = false) {
    super(reason);
    this.hint = hint;
    this.unavailable = unavailable;
  }
}

const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

interface Endpoints {
  authorization: string;
  token: string;
  /** OIDC providers: their key set and issuer (`{tid}` stands for the tenant of a Microsoft token). */
  jwks?: string;
  issuer?: string;
  /** Plain OAuth 2.0 providers: the base of their user API. */
  api?: string;
}

/** Each provider's documented endpoints and defaults. `pkce`: the provider accepts S256 (RFC 7636). */
const CATALOG: Record<
  (typeof BUILT_IN_PROVIDERS)[number],
  { label: string; endpoints: Endpoints; scopes: string[]; pkce: boolean; idToken: boolean }
> = {
  google: {
    label: 'Google',
    endpoints: {
      authorization: 'https://accounts.google.com/o/oauth2/v2/auth',
      token: 'https://oauth2.googleapis.com/token',
      jwks: 'https://www.googleapis.com/oauth2/v3/certs',
      issuer: 'https://accounts.google.com',
    },
    scopes: ['openid', 'email', 'profile'],
    pkce: true,
    idToken: true,
  },
  github: {
    label: 'GitHub',
    endpoints: {
      authorization: 'https://github.com/login/oauth/authorize',
      token: 'https://github.com/login/oauth/access_token',
      api: 'https://api.github.com',
    },
    scopes: ['read:user', 'user:email'],
    pkce: true,
    idToken: false,
  },
  microsoft: {
    label: 'Microsoft',
    endpoints: {
      authorization: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
      token: 'https://login.microsoftonline.com/common/oauth2/v2.0/token',
      jwks: 'https://login.microsoftonline.com/common/discovery/v2.0/keys',
      issuer: 'https://login.microsoftonline.com/{tid}/v2.0',
    },
    scopes: ['openid', 'email', 'profile'],
    pkce: true,
    idToken: true,
  },
  apple: {
    label: 'Apple',
    endpoints: {
      authorization: 'https://appleid.apple.com/auth/authorize',
      token: 'https://appleid.apple.com/auth/token',
      jwks: 'https://appleid.apple.com/auth/keys',
      issuer: 'https://appleid.apple.com',
    },
    scopes: ['name', 'email'],
    pkce: false,
    idToken: true,
  },
  gitlab: {
    label: 'GitLab',
    endpoints: {
      authorization: 'https://gitlab.com/oauth/authorize',
      token: 'https://gitlab.com/oauth/token',
      jwks: 'https://gitlab.com/oauth/discovery/keys',
      issuer: 'https://gitlab.com',
    },
    scopes: ['openid', 'email', 'profile'],
    pkce: true,
    idToken: true,
  },
  discord: {
    label: 'Discord',
    endpoints: {
      authorization: 'https://discord.com/oauth2/authorize',
      token: 'https://discord.com/api/oauth2/token',
      api: 'https://discord.com/api',
    },
    scopes: ['identify', 'email'],
    pkce: true,
    idToken: false,
  },
  slack: {
    label: 'Slack',
    endpoints: {
      authorization: 'https://slack.com/openid/connect/authorize',
      token: 'https://slack.com/api/openid.connect.token',
      jwks: 'https://slack.com/openid/connect/keys',
      issuer: 'https://slack.com',
    },
    scopes: ['openid', 'email', 'profile'],
    pkce: false,
    idToken: true,
  },
  linkedin: {
    label: 'LinkedIn',
    endpoints: {
      authorization: 'https://www.linkedin.com/oauth/v2/authorization',
      token: 'https://www.linkedin.com/oauth/v2/accessToken',
      jwks: 'https://www.linkedin.com/oauth/openid/jwks',
      issuer: 'https://www.linkedin.com/oauth',
    },
    scopes: ['openid', 'profile', 'email'],
    pkce: false,
    idToken: true,
  },
};

export const providerLabel = (provider: OAuthProviderName): string =>
  provider === 'oidc' ? 'OpenID Connect' : CATALOG[provider].label;
export const defaultScopes = (provider: OAuthProviderName): string[] =>
  provider === 'oidc' ? ['openid', 'email', 'profile'] : CATALOG[provider].scopes;
/** Providers whose sign-in carries an ID token, so the authorization request carries a `nonce`. */
export const usesNonce = (provider: OAuthProviderName): boolean => provider === 'oidc' || CATALOG[provider].idToken;

/** The endpoints of a built-in provider: the documented ones, or a test's stand-in (`OAuthConfig.endpoints`). */
const endpointsOf = (config: OAuthConfig, provider: (typeof BUILT_IN_PROVIDERS)[number]): Endpoints => ({
  ...CATALOG[provider].endpoints,
  ...(config.endpoints[provider] ?? {}),
});

// ---------------------------------------------------------------------------------------------------------------
// Generic OpenID Connect: discovery through the SSRF guard (the issuer is the developer's say-so, SECURITY 8)

const DISCOVERY_TTL_MS = 10 * 60_000;

/** The setting that lets a generic issuer be http and loopback (development), named in the refusals it would lift. */
export const INSECURE_OIDC_SETTING = 'GATEHOUSE_ALLOW_INSECURE_OIDC';

/** arctic and openid-client: they load with the first social sign-in (or issuer check), not at every start. */
let libraries: Promise<{ arctic: typeof import('arctic'); oidc: typeof import('openid-client') }> | undefined;
const socialLibraries = () =>
  (libraries ??= Promise.all([import('arctic'), import('openid-client')]).then(([arctic, oidc]) => ({ arctic, oidc })));

/** A PKCE code verifier (RFC 7636: 32 random bytes, base64url), made by arctic. */
export const codeVerifier = async (): Promise<string> => (await socialLibraries()).arctic.generateCodeVerifier();

/** A discovered issuer's client, with what each callback reads of its metadata (`serverMetadata()` clones it all). */
interface Discovered {
  configuration: oidc.Configuration;
  issuer: string;
  /** RFC 9207: the issuer sends `iss` with its authorization responses. */
  issParameter: boolean;
}

/**
 * What a server learned from the providers: discovered issuers and their key sets, by URL. Per server (its
 * `OAuthConfig`), not per module: a process that runs several servers (the tests) must not lend one server's
 * discovery, made under its own outbound policy, or keys fetched from a stand-in that has since gone, to another.
 */
interface ProviderCaches {
  discovered: Map<string, { at: number; config: Promise<Discovered> }>;
  jwks: Map<string, ReturnType<typeof createRemoteJWKSet>>;
}
const providerCaches = new WeakMap<OAuthConfig, ProviderCaches>();
function cachesOf(config: OAuthConfig): ProviderCaches {
  let caches = providerCaches.get(config);
  if (!caches) {
    caches = { discovered: new Map(), jwks: new Map() };
    providerCaches.set(config, caches);
  }
  return caches;
}

/** openid-client's fetch, through the SSRF guard (resolve, refuse private addresses, pin, follow no redirects). */
const guardedFetch =
  (policy: OutboundPolicy): oidc.CustomFetch =>
  async (url, options) => {
    const response = await guardedRequest(url, {
      method: options.method,
      headers: options.headers,
      body: options.body === undefined || options.body === null ? undefined : String(options.body),
      timeoutMs: 10_000,
      keepBytes: 256 * 1024,
      ...policy,
      insecureSetting: INSECURE_OIDC_SETTING,
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(response.headers)) {
      if (typeof value === 'string') headers.set(name, value);
      else if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    }
    return new Response(response.status === 204 ? null : new Uint8Array(response.body), { status: response.status, headers });
  };

/** An issuer's discovery document, loaded through the SSRF guard, as openid-client's client of it. */
async function loadIssuer(
  config: OAuthConfig,
  issuer: string,
  clientId: string,
  clientSecret?: string,
): Promise<oidc.Configuration> {
  const { oidc } = await socialLibraries();
  const fetcher = guardedFetch({ allowInsecure: config.allowInsecureIssuers, dnsServers: config.dnsServers });
  return oidc
    .discovery(
      new URL(issuer),
      clientId,
      undefined,
      clientSecret === undefined ? undefined : oidc.ClientSecretBasic(clientSecret),
      {
        [oidc.customFetch]: fetcher,
        execute: config.allowInsecureIssuers ? [oidc.allowInsecureRequests] : [],
        timeout: 10,
      },
    )
    .then((configuration) => {
      configuration[oidc.customFetch] = fetcher;
      return configuration;
    });
}

const DISCOVERY_DOCUMENT = 'the issuer\u2019s discovery document (/.well-known/openid-configuration)';

/** Why an issuer's discovery failed, in words for the developer (the class of a refused address, never the address). */
function discoveryFailure(error: unknown): string {
  const cause = fieldOf(error, 'cause');
  const blocked = error instanceof OutboundBlockedError ? error : cause instanceof OutboundBlockedError ? cause : undefined;
  if (blocked) return `${DISCOVERY_DOCUMENT} could not be loaded: ${blocked.message}`;
  // openid-client's codes (oauth4webapi's, which it does not re-export).
  switch (fieldOf(error, 'code')) {
    case 'OAUTH_RESPONSE_IS_NOT_CONFORM':
      return `${DISCOVERY_DOCUMENT} answered HTTP ${fieldOf(cause, 'status') ?? 'with an error'}`;
    case 'OAUTH_RESPONSE_IS_NOT_JSON':
    case 'OAUTH_PARSE_ERROR':
      return `${DISCOVERY_DOCUMENT} is not JSON`;
    case 'OAUTH_INVALID_RESPONSE':
      return `${DISCOVERY_DOCUMENT} names no issuer`;
    case 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED': {
      const named = String(fieldOf(fieldOf(cause, 'body'), 'issuer') ?? '').slice(0, 200);
      return `${DISCOVERY_DOCUMENT} names another issuer (${named}): give the issuer exactly as the document names it`;
    }
  }
  const network = String(fieldOf(cause, 'code') ?? '');
  if (network === 'timeout') return `${DISCOVERY_DOCUMENT} did not answer within 10 seconds`;
  return `${DISCOVERY_DOCUMENT} could not be loaded (${network === 'ECONNREFUSED' ? 'connection refused' : 'no answer'})`;
}

/** What a sign-in needs of the issuer's metadata (the ID token's keys, where to send the person, where to redeem). */
const REQUIRED_METADATA = ['authorization_endpoint', 'token_endpoint', 'jwks_uri'] as const;

/**
 * Loads and checks a generic issuer as sign-in will use it (through the SSRF guard): why it cannot be used, in words
 * for the developer who saves it, or null. Saving checks it, so a broken issuer is found then, not at a person's
 * sign-in.
 */
export async function issuerProblem(config: OAuthConfig, issuer: string): Promise<string | null> {
  let metadata: oidc.ServerMetadata;
  try {
    // Discovery reads no client field: any client id serves to load the document.
    metadata = (await loadIssuer(config, issuer, 'gatehouse')).serverMetadata();
  } catch (error) {
    return discoveryFailure(error);
  }
  const missing = REQUIRED_METADATA.filter((field) => typeof metadata[field] !== 'string');
  return missing.length ? `${DISCOVERY_DOCUMENT} lacks ${missing.join(', ')}` : null;
}

function discover(config: OAuthConfig, client: ProviderClient): Promise<Discovered> {
  // A generic OIDC client always names its issuer (the setting requires it).
  if (!client.issuer) return Promise.reject(unreachable('discovery: no issuer'));
  const issuer = client.issuer;
  const key = JSON.stringify([client.issuer, client.clientId, client.clientSecret]);
  const { discovered } = cachesOf(config);
  const cached = discovered.get(key);
  if (cached && Date.now() - cached.at < DISCOVERY_TTL_MS) return cached.config;
  const pending = loadIssuer(config, issuer, client.clientId, client.clientSecret)
    .catch((error: unknown) => {
      throw unreachable(`discovery: ${discoveryFailure(error)}`);
    })
    .then((configuration) => {
      // guardedRequest bounds each exchange (10 s) and never reads a signal: no AbortSignal.timeout timer per call.
      configuration.timeout = 0;
      const metadata = configuration.serverMetadata();
      return {
        configuration,
        issuer: metadata.issuer,
        issParameter: Boolean(metadata.authorization_response_iss_parameter_supported),
      };
    });
  discovered.set(key, { at: Date.now(), config: pending });
  pending.catch(() => discovered.delete(key));
  return pending;
}

// ---------------------------------------------------------------------------------------------------------------
// The authorization request

export interface AuthorizationSecrets {
  state: string;
  verifier: string;
  nonce: string | null;
}

export async function authorizationUrl(config: OAuthConfig, client: ProviderClient, secrets: AuthorizationSecrets): Promise<URL> {
  const { arctic, oidc } = await socialLibraries();
  if (client.provider === 'oidc') {
    const { configuration } = await discover(config, client);
    return oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: client.redirectUri,
      scope: client.scopes.join(' '),
      state: secrets.state,
      ...(secrets.nonce ? { nonce: secrets.nonce } : {}),
      code_challenge: await oidc.calculatePKCECodeChallenge(secrets.verifier),
      code_challenge_method: 'S256',
    });
  }
  const entry = CATALOG[client.provider];
  let url: URL;
  if (client.provider === 'linkedin') {
    url = new arctic.LinkedIn(client.clientId, client.clientSecret, client.redirectUri).createAuthorizationURL(
      secrets.state,
      client.scopes,
    );
  } else if (client.provider === 'apple') {
    url = appleClient(arctic, client).createAuthorizationURL(secrets.state, client.scopes);
    // Apple posts the answer back when name or email is asked for (its documented requirement).
    url.searchParams.set('response_mode', 'form_post');
  } else {
    const oauth2 = new arctic.OAuth2Client(client.clientId, client.clientSecret, client.redirectUri);
    const endpoint = endpointsOf(config, client.provider).authorization;
    url = entry.pkce
      ? oauth2.createAuthorizationURLWithPKCE(
          endpoint,
          secrets.state,
          arctic.CodeChallengeMethod.S256,
          secrets.verifier,
          client.scopes,
        )
      : oauth2.createAuthorizationURL(endpoint, secrets.state, client.scopes);
  }
  if (secrets.nonce) url.searchParams.set('nonce', secrets.nonce);
  if (client.provider === 'google') url.searchParams.set('prompt', 'select_account');
  return url;
}

/**
 * Apple's client secret is a short-lived JWT signed with the developer's key: the setting's `client_secret` holds
 * `TEAM_ID:KEY_ID:<the .p8 private key, PEM>` and arctic signs a fresh one per exchange.
 */
function appleClient(arctic: typeof import('arctic'), client: ProviderClient): Apple {
  const [teamId, keyId, ...rest] = client.clientSecret.split(':');
  const pem = rest.join(':');
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  return new arctic.Apple(client.clientId, teamId ?? '', keyId ?? '', new Uint8Array(der), client.redirectUri);
}

// ---------------------------------------------------------------------------------------------------------------
// The callback: code → tokens → a verified profile

export interface ExchangeResult {
  profile: ProviderProfile;
  tokens: ProviderTokens;
}

const CODE_REFUSED =
  'The provider refused the authorization code (it expired, was already used, or was issued for another client). Start the sign-in again.';
const UNREACHABLE = 'The provider could not be reached or answered unexpectedly. Try again in a moment.';
/** The provider could not be reached or answered what no sign-in could use (`ProviderFailure.unavailable`). */
export const unreachable = (reason: string) => new ProviderFailure(reason, UNREACHABLE, true);
const TOKEN_REFUSED =
  'The provider\u2019s ID token did not verify (signature, issuer, audience or nonce). Start the sign-in again.';
const TOKEN_TIME =
  'The provider\u2019s ID token is expired or not yet valid. Check that this server\u2019s clock is correct, then start again.';

/** Any failure below, as a `ProviderFailure` whose hint is safe to show. */
function classify(error: unknown, { arctic, oidc }: Awaited<ReturnType<typeof socialLibraries>>): ProviderFailure {
  if (error instanceof ProviderFailure) return error;
  const code = fieldOf(error, 'code');
  if (error instanceof arctic.OAuth2RequestError) return new ProviderFailure(`token endpoint: ${error.code}`, CODE_REFUSED);
  if (
    code === 'ERR_JWT_EXPIRED' ||
    (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && /"(nbf|iat)"/.test(String(errorMessage(error))))
  )
    return new ProviderFailure(`id token time: ${errorMessage(error)}`, TOKEN_TIME);
  if (typeof code === 'string' && code.startsWith('ERR_J')) return new ProviderFailure(`id token: ${code}`, TOKEN_REFUSED);
  if (error instanceof oidc.ResponseBodyError) return new ProviderFailure(`token endpoint: ${error.error}`, CODE_REFUSED);
  // A 401 with a challenge: the provider refused this client's credentials for the code (a refusal, not an outage).
  if (error instanceof oidc.WWWAuthenticateChallengeError)
    return new ProviderFailure(`token endpoint: HTTP ${error.status} challenge`, CODE_REFUSED);
  if (error instanceof oidc.ClientError) {
    const message = String(error.message);
    if (/exp|iat|nbf|clock/i.test(message) && /timestamp|expired|future|clock/i.test(message))
      return new ProviderFailure(`oidc: ${message}`, TOKEN_TIME);
    if (/ID Token|JWT|nonce|"iss"|"aud"|signature|alg/i.test(message))
      return new ProviderFailure(`oidc: ${message}`, TOKEN_REFUSED);
    return unreachable(`oidc: ${message}`);
  }
  if (error instanceof OutboundBlockedError) return unreachable(`blocked: ${error.code}`);
  return unreachable(`provider: ${errorName(error) ?? 'error'} ${error instanceof Error ? error.message : ''}`);
}

const remoteKeys = (config: OAuthConfig, url: string) => {
  const { jwks } = cachesOf(config);
  let keys = jwks.get(url);
  if (!keys) {
    keys = createRemoteJWKSet(new URL(url), { timeoutDuration: 10_000 });
    jwks.set(url, keys);
  }
  return keys;
};

/** An endpoint that the provider's kind has in its catalog entry (an OIDC provider's key set and issuer, a plain one's API). */
function endpoint(endpoints: Endpoints, name: 'jwks' | 'issuer' | 'api'): string {
  const url = endpoints[name];
  if (!url) throw new ProviderFailure(`no ${name} endpoint`, TOKEN_REFUSED);
  return url;
}

/** RFC 8725: the key only from the provider's JWKS, an allowlist of asymmetric algorithms (`none` never), every claim. */
async function verifyIdToken(
  config: OAuthConfig,
  endpoints: Endpoints,
  client: ProviderClient,
  idToken: string,
  nonce: string | null,
): Promise<JWTPayload> {
  const header = decodeProtectedHeader(idToken);
  if (!header.alg || !ALGORITHMS.includes(header.alg)) throw new ProviderFailure(`id token alg ${header.alg}`, TOKEN_REFUSED);
  const { payload } = await jwtVerify(idToken, remoteKeys(config, endpoint(endpoints, 'jwks')), {
    algorithms: ALGORITHMS,
    audience: client.clientId,
    requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat'],
    clockTolerance: 60,
  });
  const expected = endpoint(endpoints, 'issuer');
  const issuer = expected.includes('{tid}')
    ? expected.replace('{tid}', typeof payload.tid === 'string' ? payload.tid : '\u0000')
    : expected;
  // Google documents both spellings of its issuer.
  const issuers = client.provider === 'google' ? [issuer, issuer.replace(/^https:\/\//, '')] : [issuer];
  if (!issuers.includes(String(payload.iss))) throw new ProviderFailure('id token iss', TOKEN_REFUSED);
  if (nonce !== null && payload.nonce !== nonce) throw new ProviderFailure('id token nonce', TOKEN_REFUSED);
  return payload;
}

const str = (value: unknown): string | null => (typeof value === 'string' && value ? value : null);
const verifiedClaim = (value: unknown) => value === true || value === 'true';

function profileFromClaims(provider: OAuthProviderName, claims: JWTPayload): ProviderProfile {
  const email = str(claims.email);
  // Microsoft's `email` claim is not verified by Microsoft unless `xms_edov` says the domain owner vouches for it.
  const verified = provider === 'microsoft' ? verifiedClaim(claims.xms_edov) : verifiedClaim(claims.email_verified);
  return {
    subject: String(claims.sub),
    email,
    emailVerified: !!email && verified,
    name: str(claims.name) ?? (str(claims.given_name) ? [claims.given_name, claims.family_name].filter(Boolean).join(' ') : null),
    picture: str(claims.picture),
  };
}

async function getJson(url: string, accessToken: string): Promise<any> {
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json', 'user-agent': 'Gatehouse' },
    redirect: 'manual',
    signal: AbortSignal.timeout(10_000),
  });
  if (!response.ok) throw unreachable(`user endpoint HTTP ${response.status}`);
  return response.json();
}

async function githubProfile(api: string, accessToken: string): Promise<ProviderProfile> {
  const [user, emails] = await Promise.all([getJson(`${api}/user`, accessToken), getJson(`${api}/user/emails`, accessToken)]);
  if (typeof user?.id !== 'number' && typeof user?.id !== 'string') throw unreachable('github user without id');
  const list: Array<{ email?: unknown; primary?: unknown; verified?: unknown }> = Array.isArray(emails) ? emails : [];
  // The primary address when GitHub has verified it; else any verified one; an unverified address never links.
  const primary = list.find((e) => e.primary === true && e.verified === true) ?? list.find((e) => e.verified === true);
  const fallback = list.find((e) => e.primary === true) ?? null;
  return {
    subject: String(user.id),
    email: str(primary?.email) ?? str(fallback?.email),
    emailVerified: !!str(primary?.email),
    name: str(user.name) ?? str(user.login),
    picture: str(user.avatar_url),
  };
}

async function discordProfile(api: string, accessToken: string): Promise<ProviderProfile> {
  const user = await getJson(`${api}/users/@me`, accessToken);
  if (!str(user?.id)) throw unreachable('discord user without id');
  const email = str(user.email);
  return {
    subject: user.id,
    email,
    emailVerified: !!email && user.verified === true,
    name: str(user.global_name) ?? str(user.username),
    picture: user.avatar ? `https://cdn.discordapp.com/avatars/${user.id}/${user.avatar}.png` : null,
  };
}

const tokensOf = (tokens: OAuth2Tokens): ProviderTokens => {
  const field = (key: string) => fieldOf(tokens.data, key);
  // GitHub answers a refused code with 200 and an `error` field.
  const refused = field('error');
  if (typeof refused === 'string') throw new ProviderFailure(`token endpoint: ${refused}`, CODE_REFUSED);
  const refreshToken = field('refresh_token');
  const idToken = field('id_token');
  return {
    access_token: tokens.accessToken(),
    refresh_token: typeof refreshToken === 'string' ? refreshToken : null,
    expires_at: typeof field('expires_in') === 'number' ? tokens.accessTokenExpiresAt().toISOString() : null,
    id_token: typeof idToken === 'string' ? idToken : null,
  };
};

/** Redeems the code (with the PKCE verifier) and reads who signed in. Every failure is a `ProviderFailure`. */
export async function exchangeCode(
  config: OAuthConfig,
  client: ProviderClient,
  input: { code: string; state: string; verifier: string; nonce: string | null },
): Promise<ExchangeResult> {
  const libraries = await socialLibraries();
  const { arctic, oidc } = libraries;
  try {
    if (client.provider === 'oidc') {
      const { configuration, issuer, issParameter } = await discover(config, client);
      const current = new URL(client.redirectUri);
      current.searchParams.set('code', input.code);
      current.searchParams.set('state', input.state);
      // RFC 9207's `iss` is not relayed by the app; mix-up is already impossible here: the state is bound to this one
      // provider setting in our database, and the code goes only to its token endpoint.
      if (issParameter) current.searchParams.set('iss', issuer);
      const response = await oidc.authorizationCodeGrant(configuration, current, {
        pkceCodeVerifier: input.verifier,
        expectedState: input.state,
        expectedNonce: input.nonce ?? undefined,
        idTokenExpected: true,
      });
      const claims = response.claims();
      if (!claims) throw new ProviderFailure('no id token', TOKEN_REFUSED);
      // A conforming issuer puts scope claims (email, name) in the UserInfo answer, not the ID token (OIDC Core 5.4).
      const userInfo = claims.email ? {} : await oidc.fetchUserInfo(configuration, response.access_token, claims.sub);
      return {
        profile: profileFromClaims('oidc', { ...userInfo, ...claims }),
        tokens: {
          access_token: response.access_token,
          refresh_token: response.refresh_token ?? null,
          expires_at:
            typeof response.expires_in === 'number' ? new Date(Date.now() + response.expires_in * 1000).toISOString() : null,
          id_token: response.id_token ?? null,
        },
      };
    }
    const entry = CATALOG[client.provider];
    const endpoints = endpointsOf(config, client.provider);
    let tokens: OAuth2Tokens;
    if (client.provider === 'linkedin') {
      tokens = await new arctic.LinkedIn(client.clientId, client.clientSecret, client.redirectUri).validateAuthorizationCode(
        input.code,
      );
    } else if (client.provider === 'apple') {
      tokens = await appleClient(arctic, client).validateAuthorizationCode(input.code);
    } else {
      tokens = await new arctic.OAuth2Client(client.clientId, client.clientSecret, client.redirectUri).validateAuthorizationCode(
        endpoints.token,
        input.code,
        entry.pkce ? input.verifier : null,
      );
    }
    const stored = tokensOf(tokens);
    let profile: ProviderProfile;
    if (entry.idToken) {
      if (!stored.id_token) throw new ProviderFailure('no id token', TOKEN_REFUSED);
      profile = profileFromClaims(client.provider, await verifyIdToken(config, endpoints, client, stored.id_token, input.nonce));
    } else if (client.provider === 'github') {
      profile = await githubProfile(endpoint(endpoints, 'api'), stored.access_token);
    } else {
      profile = await discordProfile(endpoint(endpoints, 'api'), stored.access_token);
    }
    return { profile, tokens: stored };
  } catch (error) {
    throw classify(error, libraries);
  }
}

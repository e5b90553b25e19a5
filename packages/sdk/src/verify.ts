import { createRemoteJWKSet, errors, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { GatehouseError } from './errors.ts';

/** The claims of a Gatehouse access token (an EdDSA-signed JWT of type `at+jwt`). */
export interface AccessTokenClaims {
  /** The service's base URL. */
  iss: string;
  /** The application id. */
  aud: string;
  /** The user id. */
  sub: string;
  /** The session id. */
  sid: string;
  /** Authenticator assurance level: 1, or 2 after a second factor or a passkey. */
  aal: number;
  /** The active organization and the user's role in it; null when none is active. */
  org: string | null;
  org_role: string | null;
  /** The host the session signed in to (host access rules): a host checks it is its own id; null otherwise. */
  host: string | null;
  /**
   * An OAuth access token the application issued to a third-party app (`issuer` `{baseUrl}/oauth2/{applicationId}`):
   * the approved scopes, space-separated (`"read:docs"`), and the client's id. Null on the application's own tokens.
   */
  scope: string | null;
  client_id: string | null;
  /** Issued-at and expiry, in seconds since the epoch. */
  iat: number;
  exp: number;
}

export interface VerifyTokenOptions {
  /** Where the service runs, e.g. `https://auth.example.com`; the key set is `{baseUrl}/v1/applications/{id}/jwks.json`. */
  baseUrl: string;
  /** The application whose users' tokens are accepted (the `aud` claim). */
  applicationId: string;
  /** The expected `iss`; default `baseUrl` (the service's `GATEHOUSE_BASE_URL`). */
  issuer?: string;
  /**
   * The expected `aud`; default `applicationId`. An OAuth access token the application issued to a third-party app
   * for a resource server (RFC 8707) names that resource: pass its URL, and `issuer` `{baseUrl}/oauth2/{applicationId}`.
   */
  audience?: string;
}

/** An access token lives at most an hour and is ~600 bytes: 10 000 remembered tokens stay under ~10 MB. */
const MAX_REMEMBERED_TOKENS = 10_000;
/** Longer than any token the service issues: anything bigger is refused before it is decoded. */
const MAX_TOKEN_LENGTH = 8192;

interface KeySet {
  getKey: JWTVerifyGetKey;
  /** Tokens that verified, by their exact text: the same string again needs no signature check until its `exp`. */
  verified: Map<string, Readonly<AccessTokenClaims>>;
}

/** The JWKS could not be fetched (network, timeout, a non-200 answer): the token was not judged, so it is not a 401. */
class KeySetUnavailable extends Error {}

const keySets = new Map<string, KeySet>();
/** The key set by the options exactly as given, so a repeated call skips normalizing the URL. */
const keySetsByOptions = new Map<string, { set: KeySet; issuer: string }>();

function keySetFor(jwksUrl: string): KeySet {
  let set = keySets.get(jwksUrl);
  if (!set) {
    const remote = createRemoteJWKSet(new URL(jwksUrl), {
      // The service answers `cache-control: max-age=300`.
      cacheMaxAge: 300_000,
      // An unknown `kid` (a key rotated in since the last fetch) reloads the set at most once a second: new tokens
      // verify about at once, and a stream of made-up kids costs the service one request a second per verifier.
      cooldownDuration: 1_000,
    });
    const getKey: JWTVerifyGetKey = async (header, token) => {
      // The key comes only from this application's set, by `kid`; `jku`, `jwk` and `x5u` headers are never read.
      if (typeof header.kid !== 'string') throw new errors.JWSInvalid('missing kid');
      try {
        return await remote(header, token);
      } catch (error) {
        if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) throw error;
        throw new KeySetUnavailable('the key set could not be fetched', { cause: error });
      }
    };
    set = { getKey, verified: new Map() };
    keySets.set(jwksUrl, set);
  }
  return set;
}

function resolve(options: VerifyTokenOptions): { set: KeySet; issuer: string } {
  const key = `${options.baseUrl}\n${options.applicationId}\n${options.issuer ?? ''}\n${options.audience ?? ''}`;
  let found = keySetsByOptions.get(key);
  if (!found) {
    const baseUrl = options.baseUrl.replace(/\/+$/, '');
    const set = keySetFor(`${baseUrl}/v1/applications/${encodeURIComponent(options.applicationId)}/jwks.json`);
    found = { set, issuer: options.issuer ?? baseUrl };
    // Bounded: a verifier uses a handful of option sets, but nothing stops a caller from passing new ones forever.
    if (keySetsByOptions.size >= 1_000) keySetsByOptions.clear();
    keySetsByOptions.set(key, found);
  }
  return found;
}

const invalidToken = (cause?: unknown) => {
  const error = new GatehouseError('invalid_token', 401, 'The access token is invalid or expired');
  if (cause !== undefined) error.cause = cause;
  return error;
};

const nullableString = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/**
 * Verifies a Gatehouse access token locally, for your backend (Node or any runtime with WebCrypto): the signature
 * against the application's JWKS (EdDSA only, the key chosen by `kid`), `typ: at+jwt`, `iss`, `aud` and `exp`.
 * The key set is fetched once per (baseUrl, applicationId), cached for 5 minutes, and fetched again when a token
 * names a key it does not hold (a rotation). A token string that verified before is answered from memory until its
 * `exp`, without another signature check.
 *
 * This is the stateless check: it cannot see that a session was signed out or revoked, which only the service knows.
 * Such a token stays valid here until it expires (10 minutes by default, `settings.session.access_token_ttl_s`);
 * where revocation must take effect at once, ask the service (e.g. `GET /v1/auth/me` with the token).
 *
 * The claims answered are frozen (a token seen before gets the same object). Throws `GatehouseError`:
 * `invalid_token` (401) for a token that is malformed, wrongly signed, expired, of another application or issuer, or
 * not an access token; `jwks_unavailable` (503) when the key set cannot be fetched, so the token could not be judged
 * (answer 503, not 401: the person should not be signed out over an outage).
 */
export async function verifyToken(token: string, options: VerifyTokenOptions): Promise<Readonly<AccessTokenClaims>> {
  if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH) throw invalidToken();
  const { set, issuer } = resolve(options);

  const seen = set.verified.get(token);
  if (seen) {
    // The signature and typ were checked when it was stored (the map is per application); time, issuer and audience vary.
    const expired = seen.exp <= Math.floor(Date.now() / 1000);
    if (!expired && seen.iss === issuer && seen.aud === (options.audience ?? options.applicationId)) return seen;
    if (expired) set.verified.delete(token);
    throw invalidToken();
  }

  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, set.getKey, {
      algorithms: ['EdDSA'],
      typ: 'at+jwt',
      issuer,
      audience: options.audience ?? options.applicationId,
      requiredClaims: ['iss', 'aud', 'sub', 'sid', 'iat', 'exp'],
    }));
  } catch (error) {
    if (error instanceof KeySetUnavailable) {
      const unavailable = new GatehouseError('jwks_unavailable', 503, 'The signing keys could not be fetched');
      unavailable.cause = error.cause;
      throw unavailable;
    }
    throw invalidToken(error);
  }
  if (typeof payload.sub !== 'string' || typeof payload.sid !== 'string' || typeof payload.aal !== 'number') {
    throw invalidToken();
  }
  const claims: Readonly<AccessTokenClaims> = Object.freeze({
    iss: payload.iss as string,
    aud: options.audience ?? options.applicationId,
    sub: payload.sub,
    sid: payload.sid,
    aal: payload.aal,
    org: nullableString(payload.org),
    org_role: nullableString(payload.org_role),
    host: nullableString(payload.host),
    scope: nullableString(payload.scope),
    client_id: nullableString(payload.client_id),
    iat: payload.iat as number,
    exp: payload.exp as number,
  });
  // Oldest first out: tokens are remembered in the order they were first seen, which is about the order they expire.
  if (set.verified.size >= MAX_REMEMBERED_TOKENS) set.verified.delete(set.verified.keys().next().value!);
  set.verified.set(token, claims);
  return claims;
}

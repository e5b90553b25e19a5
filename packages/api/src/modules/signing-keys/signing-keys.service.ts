import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { type JWTPayload, errors as joseErrors, jwtVerify } from 'jose';
import type { Context, Services } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { isUuid, newId } from '../../lib/ids.ts';
import { type SigningKey, SigningKeyEntity } from './signing-key.entity.ts';

/** A retired key stays published this long: the longest access-token lifetime (1 h) plus clock skew. */
const PUBLISH_AFTER_RETIREMENT_MS = 3_660_000;
/** How long a process signs with the key it cached; a rotation elsewhere is picked up within this time. */
const ACTIVE_KEY_TTL_MS = 30_000;
/** How long a process trusts its cached public keys (a retirement elsewhere sets `publish_until`). */
const VERIFY_KEYS_TTL_MS = 60_000;
export const ACCESS_TOKEN_TYPE = 'at+jwt';

interface VerifyKey {
  key: KeyObject;
  publishUntil: number | null;
}

/** Per-process caches of decrypted signing keys and parsed public keys; the database stays the source of truth. */
class SigningKeyCache {
  readonly active = new Map<string, { kid: string; key: KeyObject; loadedAt: number }>();
  readonly verify = new Map<string, { keys: Map<string, VerifyKey>; loadedAt: number }>();
  /**
   * Access tokens whose signature and claims verified, by their exact text, until they expire: a client presents
   * the same token on every call for its whole lifetime, and the signature check is most of the cost of a signed-in
   * request. (Revocation is not cached: the session is read on every request.)
   */
  readonly verified = new Map<string, { applicationId: string; expiresAt: number; claims: JWTPayload & AccessTokenClaims }>();
}

/** One cache per process (per `Services`): tests run several servers in one process, each with its own. */
const caches = new WeakMap<Services, SigningKeyCache>();
function cacheOf(services: Services): SigningKeyCache {
  const cache = caches.get(services) ?? new SigningKeyCache();
  caches.set(services, cache);
  return cache;
}

const MAX_REMEMBERED_TOKENS = 10_000;

const sealContext = (kid: string) => `signing_key:${kid}`;

function generate(em: EntityManager, services: Services, applicationId: string): SigningKey {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const id = newId();
  const { kty, crv, x } = publicKey.export({ format: 'jwk' });
  if (!kty || !crv || !x) throw new Error('An Ed25519 public key exports kty, crv and x');
  return em.create(SigningKeyEntity, {
    id,
    application: applicationId,
    publicJwk: { kty, crv, x },
    privateKeySealed: services.secretBox.encrypt(privateKey.export({ format: 'pem', type: 'pkcs8' }) as string, sealContext(id)),
    status: 'active',
    retiredAt: null,
    publishUntil: null,
  });
}

/** Adds an application's first key pair to the unit of work (applications get one at creation). */
export function createFirstSigningKey(em: EntityManager, services: Services, applicationId: string): void {
  generate(em, services, applicationId);
}

async function loadActive(em: EntityManager, services: Services, applicationId: string): Promise<SigningKey> {
  const existing = await em.findOne(SigningKeyEntity, { application: applicationId, status: 'active' });
  if (existing) return existing;
  // Applications created before signing keys existed get theirs on first use; the partial unique index decides races.
  const fork = em.fork();
  generate(fork, services, applicationId);
  await fork.flush().catch(() => undefined);
  return em.findOneOrFail(SigningKeyEntity, { application: applicationId, status: 'active' }, { refresh: true });
}

export async function activeSigningKey(em: EntityManager, services: Services, applicationId: string) {
  const cached = cacheOf(services).active.get(applicationId);
  if (cached && Date.now() - cached.loadedAt < ACTIVE_KEY_TTL_MS) return cached;
  const row = await loadActive(em, services, applicationId);
  const entry = {
    kid: row.id,
    key: createPrivateKey(services.secretBox.decrypt(row.privateKeySealed, sealContext(row.id))),
    loadedAt: Date.now(),
  };
  cacheOf(services).active.set(applicationId, entry);
  return entry;
}

export interface AccessTokenClaims {
  sub: string;
  sid: string;
  aal: number;
  org: string | null;
  org_role: string | null;
  /** The host the session signed in to (host access rules); absent otherwise. */
  host?: string;
}

const segment = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * Signs an access token with exactly the claims of CONTRACT §2: a compact JWS (RFC 7515) signed by node:crypto with
 * the cached key (Ed25519 needs no digest; WebCrypto would convert the key and queue a job per token).
 */
export async function signAccessToken(
  em: EntityManager,
  services: Services,
  applicationId: string,
  claims: AccessTokenClaims,
  ttlSeconds: number,
): Promise<string> {
  const { kid, key } = await activeSigningKey(em, services, applicationId);
  const now = Math.floor(Date.now() / 1000);
  const header = segment({ alg: 'EdDSA', kid, typ: ACCESS_TOKEN_TYPE });
  const payload = segment({ ...claims, iss: services.baseUrl, aud: applicationId, iat: now, exp: now + ttlSeconds });
  const input = `${header}.${payload}`;
  return `${input}.${sign(null, Buffer.from(input), key).toString('base64url')}`;
}

const toVerifyKey = (row: SigningKey): VerifyKey => ({
  key: createPublicKey({ key: row.publicJwk, format: 'jwk' }),
  publishUntil: row.publishUntil?.getTime() ?? null,
});

/**
 * The public key of `kid`, cached per process. A kid not cached yet (a key rotated in by another process) is one
 * primary-key read; retirement changes `publish_until`, so cached entries are re-read after a minute.
 */
async function verifyKey(em: EntityManager, services: Services, applicationId: string, kid: string | undefined) {
  if (!kid || !isUuid(kid)) return undefined;
  let entry = cacheOf(services).verify.get(applicationId);
  if (!entry || Date.now() - entry.loadedAt > VERIFY_KEYS_TTL_MS) {
    entry = { keys: new Map(), loadedAt: Date.now() };
    cacheOf(services).verify.set(applicationId, entry);
  }
  if (!entry.keys.has(kid)) {
    const row = await em.findOne(SigningKeyEntity, { id: kid, application: applicationId });
    if (!row) return undefined;
    entry.keys.set(kid, toVerifyKey(row));
  }
  const found = entry.keys.get(kid);
  // A retired key verifies only until the last token it signed has expired.
  if (!found || (found.publishUntil !== null && found.publishUntil < Date.now())) return undefined;
  return found.key;
}

const invalidToken = () => new AppError('invalid_token', 'The access token is invalid or expired');

/**
 * Verifies an access token of this application: EdDSA only, the key only from the application's own key set by
 * `kid` (never `jku`, `jwk` or `x5u`), and `typ`, `iss`, `aud`, `exp` and `nbf` always checked (SECURITY 2).
 */
export async function verifyAccessToken(
  ctx: Context,
  applicationId: string,
  token: string,
): Promise<JWTPayload & AccessTokenClaims> {
  const remembered = cacheOf(ctx.services).verified;
  const seen = remembered.get(token);
  if (seen) {
    if (seen.applicationId === applicationId && seen.expiresAt > Date.now()) return seen.claims;
    if (seen.expiresAt <= Date.now()) remembered.delete(token);
    throw invalidToken();
  }
  try {
    const { payload } = await jwtVerify(
      token,
      async (header) => {
        const key = await verifyKey(ctx.em, ctx.services, applicationId, header.kid);
        if (!key) throw invalidToken();
        return key;
      },
      {
        algorithms: ['EdDSA'],
        issuer: ctx.services.baseUrl,
        audience: applicationId,
        typ: ACCESS_TOKEN_TYPE,
        requiredClaims: ['sub', 'sid', 'exp'],
      },
    );
    if (typeof payload.sid !== 'string' || typeof payload.sub !== 'string' || typeof payload.aal !== 'number')
      throw invalidToken();
    const claims = payload as JWTPayload & AccessTokenClaims;
    // Oldest out first: tokens are remembered in about the order they expire.
    const oldest = remembered.keys().next();
    if (remembered.size >= MAX_REMEMBERED_TOKENS && !oldest.done) remembered.delete(oldest.value);
    remembered.set(token, { applicationId, expiresAt: (claims.exp ?? 0) * 1000, claims });
    return claims;
  } catch (error) {
    if (error instanceof AppError || error instanceof joseErrors.JOSEError || error instanceof TypeError) throw invalidToken();
    throw error;
  }
}

export interface Jwks {
  keys: Array<Record<string, string>>;
}

/** The published key set: the active key and every retired key still inside its publication window. */
export async function jwks(em: EntityManager, applicationId: string): Promise<Jwks> {
  const rows = await em.find(
    SigningKeyEntity,
    { application: applicationId, $or: [{ status: 'active' }, { publishUntil: { $gt: new Date() } }] },
    { orderBy: { createdAt: 'desc' } },
  );
  return { keys: rows.map((row) => ({ ...row.publicJwk, kid: row.id, alg: 'EdDSA', use: 'sig' })) };
}

/** Makes a new key the active one; the old key keeps verifying (and stays published) for the longest token lifetime. */
export async function rotateSigningKey(ctx: Context, applicationId: string) {
  const next = await ctx.em.transactional(async (em) => {
    const now = new Date();
    await em.nativeUpdate(
      SigningKeyEntity,
      { application: applicationId, status: 'active' },
      { status: 'retired', retiredAt: now, publishUntil: new Date(now.getTime() + PUBLISH_AFTER_RETIREMENT_MS) },
    );
    return generate(em, ctx.services, applicationId);
  });
  cacheOf(ctx.services).active.delete(applicationId);
  cacheOf(ctx.services).verify.delete(applicationId);
  return { kid: next.id, ...(await jwks(ctx.em, applicationId)) };
}

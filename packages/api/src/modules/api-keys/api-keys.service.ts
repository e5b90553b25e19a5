import { type Context, header } from '../../context.ts';
import { type EntityManager, preparedQuery } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { actAs } from '../../lib/acting.ts';
import { randomSecret, sha256 } from '../../lib/crypto.ts';
import { isUuid, newId } from '../../lib/ids.ts';
import { Registry } from '../../lib/modules.ts';
import { isScope, type Scope } from '../../lib/scopes.ts';
import { iso } from '../../lib/time.ts';
import { authenticatedProcedure, DeferredCredential } from '../../trpc.ts';
import type { Application } from '../applications/application.entity.ts';
import { applicationFromRow } from '../applications/applications.service.ts';
import { applicationNotResolved, bearer, resolveApplication } from '../applications/callers.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { recordEvent } from '../events/events.service.ts';
import { type ApiKey, ApiKeyEntity } from './api-key.entity.ts';
import type { ApiKeyRecord } from './api-keys.schema.ts';

/**
 * A call with a secret key: its application (the tenant) and the key, which held the procedure's scope; or with another
 * bearer credential a module accepts on the same procedures (`bearerCredentials`: a console operator), `apiKey` null.
 */
export interface SecretKeyContext extends TenantContext {
  apiKey: ApiKey | null;
  /** What the caller may do: the key's scopes, or the operator's role's. */
  scopes: readonly string[];
}

/** The application id and bearer token presented to a secret-key procedure. */
export interface PresentedBearer {
  applicationId: string;
  token: string;
}

/**
 * A bearer credential other than a secret key that secret-key procedures accept (the console operator's access token,
 * `modules/operators`): asked only for a bearer that is not `sk_…` (a secret key goes the way it always went). It
 * answers the application and the scopes the caller holds, having checked the procedure's scope and named the caller
 * (`actAs`); undefined when the token is not its kind (the key's answers follow); or throws its own refusal.
 */
export type BearerCredential = (
  ctx: Context,
  presented: PresentedBearer,
  scope: Scope,
) => Promise<{ application: Application; scopes: readonly string[] } | undefined>;

export const bearerCredentials = new Registry<BearerCredential>('bearer credential', { single: true });

/** `last_used_at` is written at most this often per key, so reads do not turn into writes. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** The scopes that grant `needed`: `*`, itself, and for `x:read` also `x:write`. */
export function scopesGranting(needed: string): string[] {
  return needed.endsWith(':read') ? ['*', needed, `${needed.slice(0, -':read'.length)}:write`] : ['*', needed];
}

export function grants(held: readonly string[], needed: string): boolean {
  const granting = scopesGranting(needed);
  return held.some((scope) => granting.includes(scope));
}

const KEY_COLUMNS = ['id', 'name', 'scopes', 'prefix', 'secret_hash', 'created_at', 'last_used_at', 'revoked_at'];

interface KeyColumns {
  key_id: string;
  key_name: string;
  key_scopes: string[];
  key_prefix: string;
  key_secret_hash: string;
  key_created_at: Date | string;
  key_last_used_at: Date | string | null;
  key_revoked_at: Date | string | null;
}

/** A row of `secretKeyRowSql` (or of a statement with its `presented_key`): the application's id and the key's columns. */
export type PresentedKeyRow = { id: string } & (KeyColumns | { [column in keyof KeyColumns]: null });

/**
 * The application of `$app` and the key of SHA-256 `$hash` in it, as one row (the key's columns prefixed `key_`,
 * null when there is no such key): what a secret key authenticates against, alone (`a.*`: the whole application) or
 * inside a procedure's statement (`a.id`). The PL/pgSQL function `authz_keyed_check` (a migration of authz) reads the
 * same row and judges it as `secretKeyInStatement` does: a change to these columns or that condition needs a migration
 * replacing it too.
 */
const secretKeyRowSql = (app: string, hash: string, applicationColumns: 'a.*' | 'a.id') =>
  `select ${applicationColumns}, ${KEY_COLUMNS.map((c) => `k.${c} as key_${c}`).join(', ')}
     from applications a left join api_keys k on k.secret_hash = ${hash} and k.application_id = a.id
    where a.id = ${app}`;

interface PresentedKey {
  applicationId: string;
  secret: string;
}

/** The application id and secret presented; without both, the contract's answer (application first). */
async function presentedKey(ctx: Context): Promise<PresentedKey> {
  const applicationId = header(ctx, 'x-application-id');
  const secret = bearer(header(ctx, 'authorization'));
  if (!applicationId || !isUuid(applicationId) || secret === undefined) {
    await resolveApplication(ctx);
    throw new AppError('missing_credentials', 'A secret API key is required');
  }
  return { applicationId, secret };
}

/**
 * Judges the row of `secretKeyRowSql` for the presented key and scope, in the contract's order, and marks the key used
 * (at most once a minute).
 */
async function acceptSecretKey(
  ctx: Context,
  presented: PresentedKey,
  row: PresentedKeyRow | undefined,
  scope: Scope,
): Promise<ApiKey> {
  if (!row) throw applicationNotResolved();
  // Unknown, revoked, malformed and other-application keys are one answer: nothing tells them apart.
  if (!row.key_id || row.key_revoked_at || !presented.secret.startsWith('sk_')) {
    throw new AppError('invalid_api_key', 'Invalid API key');
  }
  const apiKey: ApiKey = {
    id: row.key_id,
    application: row.id,
    name: row.key_name,
    scopes: row.key_scopes,
    prefix: row.key_prefix,
    secretHash: row.key_secret_hash,
    createdAt: new Date(row.key_created_at),
    lastUsedAt: row.key_last_used_at === null ? null : new Date(row.key_last_used_at),
    revokedAt: null,
  };
  if (!grants(apiKey.scopes, scope)) throw new AppError('insufficient_scope', `This key lacks the ${scope} scope`);
  actAs({ type: 'api_key', id: apiKey.id });
  const now = new Date();
  if (!apiKey.lastUsedAt || now.getTime() - apiKey.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    await ctx.em.nativeUpdate(ApiKeyEntity, { id: apiKey.id }, { lastUsedAt: now });
  }
  return apiKey;
}

/**
 * The application of `x-application-id` and the bearer key, in the contract's order (application first, then the
 * key, then the scope), read in one query: the hot path of every management call.
 */
export async function authenticateSecretKey(
  ctx: Context,
  scope: Scope,
): Promise<{ application: Application; apiKey: ApiKey | null; scopes: readonly string[] }> {
  const presented = await presentedKey(ctx);
  if (!presented.secret.startsWith('sk_')) {
    for (const credential of ctx.services.hooks.get(bearerCredentials)) {
      const accepted = await credential(ctx, { applicationId: presented.applicationId, token: presented.secret }, scope);
      if (accepted) return { ...accepted, apiKey: null };
    }
  }
  const [row] = await preparedQuery<Record<string, unknown> & PresentedKeyRow>(
    ctx.em,
    'secret_key_authentication',
    secretKeyRowSql('?', '?', 'a.*'),
    [sha256(presented.secret), presented.applicationId],
  );
  if (!row) throw applicationNotResolved();
  const apiKey = await acceptSecretKey(ctx, presented, row, scope);
  return { application: applicationFromRow(row), apiKey, scopes: apiKey.scopes };
}

/**
 * The parts of a statement that checks the presented secret key itself (`secretKeyInStatementProcedure`), its
 * parameters named by the caller: `cte` the key's row as the CTE `presented_key` (the application's id and the key's
 * columns, as `secretKeyRowSql`), and `valid` a condition true only for a live key of that application holding one of
 * `scopes` (comma-separated): the statement gates all its work on it, so a caller without a valid key learns nothing
 * from it, not even by its timing.
 */
export const secretKeyInStatement = (app: string, hash: string, scopes: string) => ({
  cte: `presented_key as (${secretKeyRowSql(app, hash, 'a.id')})`,
  // jsonb_exists_any is the function behind `?|`, an operator the drivers' placeholders would take for a parameter.
  valid: `exists (select 1 from presented_key where key_revoked_at is null
            and jsonb_exists_any(key_scopes, string_to_array(${scopes}, ',')))`,
});

/** The secret key of a procedure that checks it inside its own statement (`secretKeyInStatement`). */
export interface KeyInStatement {
  /** The presented application id: the statement's tenant, trusted only once `accept` has passed. */
  applicationId: string;
  /** SHA-256 of the presented secret, and the scopes that grant the procedure's (comma-separated). */
  hash: string;
  scopes: string;
  /**
   * The bearer is no secret key (`sk_…`): another credential (`bearerCredentials`, a console operator's token) or none.
   * The procedure then settles it with `authenticate` before its statement, which runs without the key's columns.
   */
  notAKey: boolean;
  /**
   * Judges the `presented_key` row the statement returned (undefined: no such application), as `authenticate` would,
   * and answers the key (the statement's tenant is `applicationId`).
   */
  accept(row: PresentedKeyRow | undefined): Promise<ApiKey>;
  /** The ordinary check (its own query), for a call that needs the key settled before its statement. */
  authenticate(): Promise<{ application: Application; apiKey: ApiKey | null; scopes: readonly string[] }>;
}

/** A call with a secret key that its procedure checks inside its own statement (`keyInStatement`). */
export interface SecretKeyInStatementContext extends Context {
  keyInStatement: KeyInStatement;
  deferredCredential: DeferredCredential;
}

async function deferSecretKey(ctx: Context, scope: Scope): Promise<Omit<SecretKeyInStatementContext, keyof Context>> {
  const presented = await presentedKey(ctx);
  const deferredCredential = new DeferredCredential(async () => {
    await authenticateSecretKey(ctx, scope);
  });
  const keyInStatement: KeyInStatement = {
    applicationId: presented.applicationId,
    hash: sha256(presented.secret),
    scopes: scopesGranting(scope).join(','),
    notAKey: !presented.secret.startsWith('sk_'),
    accept(row) {
      deferredCredential.settled = true;
      return acceptSecretKey(ctx, presented, row, scope);
    },
    authenticate() {
      deferredCredential.settled = true;
      return authenticateSecretKey(ctx, scope);
    },
  };
  return { keyInStatement, deferredCredential };
}

/** Secret-key procedures: the application from `x-application-id` first, then the key, then the scope. */
export const secretKeyProcedure = (scope: Scope) =>
  authenticatedProcedure('secret_key', (ctx) => authenticateSecretKey(ctx, scope)).meta({ scope });

/**
 * A secret-key procedure on a hot path whose statement checks the key itself (`keyInStatement`), which saves the
 * round trip; its answers and their order are those of `secretKeyProcedure`.
 */
export const secretKeyInStatementProcedure = (scope: Scope) =>
  authenticatedProcedure('secret_key', (ctx) => deferSecretKey(ctx, scope)).meta({ scope });

export const toApiKeyRecord = (key: ApiKey): ApiKeyRecord => ({
  id: key.id,
  name: key.name,
  scopes: key.scopes,
  prefix: key.prefix,
  created_at: key.createdAt.toISOString(),
  last_used_at: iso(key.lastUsedAt),
  revoked_at: iso(key.revokedAt),
});

/** Builds a key and its event in `em`; the caller flushes (inside its own transaction). */
export function issueApiKey(em: EntityManager, application: Application, name: string, scopes: string[]) {
  const secret = randomSecret(application.environment === 'production' ? 'sk_live_' : 'sk_test_');
  const key = em.create(ApiKeyEntity, {
    id: newId(),
    application: application.id,
    name,
    scopes,
    prefix: secret.slice(0, 12),
    secretHash: sha256(secret),
    lastUsedAt: null,
    revokedAt: null,
  });
  recordEvent(em, application.id, 'api_key.created', { id: key.id, name, scopes });
  return { key, secret };
}

export async function createApiKey(ctx: SecretKeyContext, input: { name: string; scopes: string[] }) {
  const unknown = input.scopes.filter((s) => !isScope(s));
  if (unknown.length) {
    throw new AppError(
      'unknown_scope',
      `Unknown scope: ${unknown.join(', ')}`,
      unknown.map((s) => ({ path: 'scopes', message: `unknown scope ${s}` })),
    );
  }
  const held = ctx.scopes;
  // A key can only hand out what it holds: no escalation through key creation.
  const beyond = input.scopes.filter((s) => (s === '*' ? !held.includes('*') : !grants(held, s)));
  if (beyond.length) throw new AppError('insufficient_scope', `This key cannot grant: ${beyond.join(', ')}`);
  const scopes = [...new Set(input.scopes)];
  const { key, secret } = issueApiKey(ctx.em, ctx.application, input.name, scopes);
  await ctx.em.flush();
  return { ...toApiKeyRecord(key), secret };
}

export async function listApiKeys(ctx: TenantContext) {
  const keys = await ctx.em.find(
    ApiKeyEntity,
    { application: ctx.application.id },
    { orderBy: { createdAt: 'desc', id: 'desc' } },
  );
  return keys.map(toApiKeyRecord);
}

export async function revokeApiKey(ctx: TenantContext, id: string) {
  const key = await ctx.em.findOne(ApiKeyEntity, { id, application: ctx.application.id });
  if (!key) throw notFound('API key');
  if (!key.revokedAt) {
    key.revokedAt = new Date();
    recordEvent(ctx.em, key.application, 'api_key.revoked', { id: key.id, name: key.name });
    await ctx.em.flush();
  }
  return { id, deleted: true as const };
}

import { type Context, header } from '../../context.ts';
import { type EntityManager, preparedQuery } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { constantTimeEqual, randomSecret, sha256 } from '../../lib/crypto.ts';
import { isUuid, newId } from '../../lib/ids.ts';
import { SCOPES, type Scope } from '../../lib/scopes.ts';
import { iso } from '../../lib/time.ts';
import { registerAuthenticator } from '../../trpc.ts';
import type { Application } from '../applications/application.entity.ts';
import { applicationById, applicationFromRow } from '../applications/applications.service.ts';
import { allowOrigin, originCondition } from '../applications/cors.ts';
import { recordEvent } from '../events/events.service.ts';
import { type ApiKey, ApiKeyEntity } from './api-key.entity.ts';
import type { ApiKeyRecord } from './api-keys.schema.ts';

declare module '../../context.ts' {
  interface Context {
    /** Secret-key routes: the key that authenticated the call. */
    apiKey?: ApiKey;
    /** A procedure with meta `credentialInStatement`: the key it checks inside its own statement. */
    keyInStatement?: KeyInStatement;
    /** An end-user procedure with meta `credentialInStatement`: the application it reads inside its own statement. */
    applicationInStatement?: ApplicationInStatement;
  }
}

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

function bearer(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(value);
  return match?.[1] ?? '';
}

export function authenticateOperator(operatorTokenHash: string, authorization: string | undefined): void {
  const token = bearer(authorization);
  if (token === undefined) throw new AppError('missing_credentials', 'An operator token is required');
  if (!constantTimeEqual(sha256(token), operatorTokenHash)) throw new AppError('invalid_credentials', 'Invalid operator token');
}

/** Resolves the application of `x-application-id` (401 `application_not_resolved`); public routes use it too. */
export async function resolveApplication(ctx: Context): Promise<Application> {
  const id = header(ctx, 'x-application-id');
  const application = id ? await applicationById(ctx.em, id) : undefined;
  if (!application) throw applicationNotResolved();
  return application;
}

const applicationNotResolved = () => new AppError('application_not_resolved', 'Unknown or missing x-application-id');

const KEY_COLUMNS = ['id', 'name', 'scopes', 'prefix', 'secret_hash', 'created_at', 'last_used_at', 'revoked_at'];

/**
 * The application of `$app` and the key of SHA-256 `$hash` in it, as one row (the key's columns prefixed `key_`,
 * null when there is no such key): what a secret key authenticates against, alone (`a.*`: the whole application) or
 * inside a procedure's statement (`a.id`).
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
  row: Record<string, unknown> | undefined,
  scope: Scope,
): Promise<ApiKey> {
  if (!row) throw new AppError('application_not_resolved', 'Unknown or missing x-application-id');
  // Unknown, revoked, malformed and other-application keys are one answer: nothing tells them apart.
  if (!row.key_id || row.key_revoked_at || !presented.secret.startsWith('sk_')) {
    throw new AppError('invalid_api_key', 'Invalid API key');
  }
  const apiKey: ApiKey = {
    id: row.key_id as string,
    application: row.id as string,
    name: row.key_name as string,
    scopes: row.key_scopes as string[],
    prefix: row.key_prefix as string,
    secretHash: row.key_secret_hash as string,
    createdAt: new Date(row.key_created_at as string),
    lastUsedAt: row.key_last_used_at === null ? null : new Date(row.key_last_used_at as string),
    revokedAt: null,
  };
  if (!grants(apiKey.scopes, scope)) throw new AppError('insufficient_scope', `This key lacks the ${scope} scope`);
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
export async function authenticateSecretKey(ctx: Context, scope: Scope): Promise<{ application: Application; apiKey: ApiKey }> {
  const presented = await presentedKey(ctx);
  const [row] = await preparedQuery<Record<string, unknown>>(
    ctx.em,
    'secret_key_authentication',
    secretKeyRowSql('?', '?', 'a.*'),
    [sha256(presented.secret), presented.applicationId],
  );
  const apiKey = await acceptSecretKey(ctx, presented, row, scope);
  return { application: applicationFromRow(row!), apiKey };
}

/**
 * The parts of a statement that checks the presented secret key itself (meta `credentialInStatement`), its
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

/** The secret key of a `credentialInStatement` procedure, for its statement (`secretKeyInStatement`). */
export interface KeyInStatement {
  /** The presented application id: the statement's tenant, trusted only once `accept` has passed. */
  applicationId: string;
  /** SHA-256 of the presented secret, and the scopes that grant the procedure's (comma-separated). */
  hash: string;
  scopes: string;
  /**
   * Judges the `presented_key` row the statement returned (undefined: no such application), as `authenticate` would,
   * and sets `ctx.apiKey`; `ctx.application` stays unset (the statement's tenant is `applicationId`).
   */
  accept(ctx: Context, row: Record<string, unknown> | undefined): Promise<void>;
  /** The ordinary check (its own query), for a call that needs the key settled before its statement. */
  authenticate(ctx: Context): Promise<void>;
}

async function deferSecretKey(ctx: Context, scope: Scope) {
  const presented = await presentedKey(ctx);
  const deferredCredential = {
    settled: false,
    async settle() {
      await authenticateSecretKey(ctx, scope);
    },
  };
  const keyInStatement: KeyInStatement = {
    applicationId: presented.applicationId,
    hash: sha256(presented.secret),
    scopes: scopesGranting(scope).join(','),
    async accept(procedureCtx, row) {
      deferredCredential.settled = true;
      procedureCtx.apiKey = await acceptSecretKey(procedureCtx, presented, row, scope);
    },
    async authenticate(procedureCtx) {
      deferredCredential.settled = true;
      Object.assign(procedureCtx, await authenticateSecretKey(procedureCtx, scope));
    },
  };
  return { keyInStatement, deferredCredential };
}

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

export async function createApiKey(ctx: Context, input: { name: string; scopes: string[] }) {
  const unknown = input.scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length) {
    throw new AppError(
      'unknown_scope',
      `Unknown scope: ${unknown.join(', ')}`,
      unknown.map((s) => ({ path: 'scopes', message: `unknown scope ${s}` })),
    );
  }
  const held = ctx.apiKey!.scopes;
  // A key can only hand out what it holds: no escalation through key creation.
  const beyond = input.scopes.filter((s) => (s === '*' ? !held.includes('*') : !grants(held, s)));
  if (beyond.length) throw new AppError('insufficient_scope', `This key cannot grant: ${beyond.join(', ')}`);
  const scopes = [...new Set(input.scopes)];
  const { key, secret } = issueApiKey(ctx.em, ctx.application!, input.name, scopes);
  await ctx.em.flush();
  return { ...toApiKeyRecord(key), secret };
}

export async function listApiKeys(ctx: Context) {
  const keys = await ctx.em.find(
    ApiKeyEntity,
    { application: ctx.application!.id },
    { orderBy: { createdAt: 'desc', id: 'desc' } },
  );
  return keys.map(toApiKeyRecord);
}

export async function revokeApiKey(ctx: Context, id: string) {
  const key = await ctx.em.findOne(ApiKeyEntity, { id, application: ctx.application!.id });
  if (!key) throw notFound('API key');
  if (!key.revokedAt) {
    key.revokedAt = new Date();
    recordEvent(ctx.em, key.application, 'api_key.revoked', { id: key.id, name: key.name });
    await ctx.em.flush();
  }
  return { id, deleted: true as const };
}

registerAuthenticator('operator', async (ctx) => {
  authenticateOperator(ctx.services.operatorTokenHash, header(ctx, 'authorization'));
  return {};
});
registerAuthenticator('secret_key', (ctx, meta) =>
  meta?.credentialInStatement ? deferSecretKey(ctx, meta.scope!) : authenticateSecretKey(ctx, meta!.scope!),
);
async function authenticateEndUser(ctx: Context) {
  const application = await resolveApplication(ctx);
  allowOrigin(ctx, application);
  return { application };
}

/** The application of an end-user procedure with meta `credentialInStatement`, for its statement. */
export interface ApplicationInStatement {
  /** The presented `x-application-id` (a UUID): the statement's tenant, trusted only once `accept` has passed. */
  id: string;
  /**
   * `allowOrigin`'s verdict as a condition on the statement's application row (`originCondition`): the statement
   * gates its writes on it, so a call from an origin the application does not allow changes nothing.
   */
  origin: { sql: (alias: string) => string; params: unknown[] };
  /**
   * Judges the application row the statement read (undefined: no such application) as the authenticator would (the
   * application, then the origin), sets `ctx.application` and the CORS headers, and answers the application.
   */
  accept(ctx: Context, row: Record<string, unknown> | undefined): Application;
}

/** Defers an end user's application to the procedure's statement; a header that cannot name one is answered at once. */
async function deferApplication(ctx: Context) {
  const id = header(ctx, 'x-application-id');
  if (!id || !isUuid(id)) return authenticateEndUser(ctx);
  const deferredCredential = {
    settled: false,
    async settle() {
      await authenticateEndUser(ctx);
    },
  };
  const applicationInStatement: ApplicationInStatement = {
    id,
    origin: originCondition(ctx),
    accept(procedureCtx, row) {
      deferredCredential.settled = true;
      if (!row) throw applicationNotResolved();
      const application = applicationFromRow(row);
      allowOrigin(procedureCtx, application);
      procedureCtx.application = application;
      return application;
    },
  };
  return { applicationInStatement, deferredCredential };
}

registerAuthenticator('end_user', (ctx, meta) =>
  meta?.credentialInStatement ? deferApplication(ctx) : authenticateEndUser(ctx),
);

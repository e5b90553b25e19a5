import { type Context, header } from '../../context.ts';
import { type EntityManager, preparedQuery } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { constantTimeEqual, randomSecret, sha256 } from '../../lib/crypto.ts';
import { newId } from '../../lib/ids.ts';
import { SCOPES, type Scope } from '../../lib/scopes.ts';
import { iso } from '../../lib/time.ts';
import { registerAuthenticator } from '../../trpc.ts';
import { type Application, ApplicationEntity } from '../applications/application.entity.ts';
import { applicationById } from '../applications/applications.service.ts';
import { allowOrigin } from '../applications/cors.ts';
import { recordEvent } from '../events/events.service.ts';
import { type ApiKey, ApiKeyEntity } from './api-key.entity.ts';
import type { ApiKeyRecord } from './api-keys.schema.ts';

declare module '../../context.ts' {
  interface Context {
    /** Secret-key routes: the key that authenticated the call. */
    apiKey?: ApiKey;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** `last_used_at` is written at most this often per key, so reads do not turn into writes. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** `*` grants everything; `x:write` implies `x:read`. */
export function grants(held: readonly string[], needed: string): boolean {
  if (held.includes('*') || held.includes(needed)) return true;
  return needed.endsWith(':read') && held.includes(`${needed.slice(0, -':read'.length)}:write`);
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
  if (!application) throw new AppError('application_not_resolved', 'Unknown or missing x-application-id');
  return application;
}

const KEY_COLUMNS = ['id', 'name', 'scopes', 'prefix', 'secret_hash', 'created_at', 'last_used_at', 'revoked_at'];

/**
 * The application of `x-application-id` and the bearer key, in the contract's order (application first, then the
 * key), read in one query: the hot path of every management call.
 */
export async function authenticateSecretKey(ctx: Context, scope: Scope): Promise<{ application: Application; apiKey: ApiKey }> {
  const id = header(ctx, 'x-application-id');
  const secret = bearer(header(ctx, 'authorization'));
  if (!id || !UUID.test(id) || secret === undefined) {
    await resolveApplication(ctx);
    throw new AppError('missing_credentials', 'A secret API key is required');
  }
  const [row] = await preparedQuery<Record<string, unknown>>(
    ctx.em,
    'secret_key_authentication',
    `select a.*, ${KEY_COLUMNS.map((c) => `k.${c} as key_${c}`).join(', ')}
       from applications a left join api_keys k on k.secret_hash = ? and k.application_id = a.id
      where a.id = ?`,
    [sha256(secret), id],
  );
  if (!row) throw new AppError('application_not_resolved', 'Unknown or missing x-application-id');
  const application = ctx.em.map(ApplicationEntity, row);
  // Unknown, revoked, malformed and other-application keys are one answer: nothing tells them apart.
  if (!row.key_id || row.key_revoked_at || !secret.startsWith('sk_')) throw new AppError('invalid_api_key', 'Invalid API key');
  const apiKey = ctx.em.map(ApiKeyEntity, {
    ...Object.fromEntries(KEY_COLUMNS.map((c) => [c, row[`key_${c}`]])),
    application_id: application.id,
  });
  if (!grants(apiKey.scopes, scope)) throw new AppError('insufficient_scope', `This key lacks the ${scope} scope`);
  const now = new Date();
  if (!apiKey.lastUsedAt || now.getTime() - apiKey.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    await ctx.em.nativeUpdate(ApiKeyEntity, { id: apiKey.id }, { lastUsedAt: now });
  }
  return { application, apiKey };
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
registerAuthenticator('secret_key', (ctx, meta) => authenticateSecretKey(ctx, meta!.scope!));
registerAuthenticator('end_user', async (ctx) => {
  const application = await resolveApplication(ctx);
  allowOrigin(ctx, application);
  return { application };
});

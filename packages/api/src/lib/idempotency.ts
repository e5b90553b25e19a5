import type { Context } from '../context.ts';
import { AppError } from '../errors.ts';
import { sha256 } from './crypto.ts';
import { deleteInBatches, type PurgeStep } from './housekeeping.ts';
import { newId } from './ids.ts';

/** How long a key answers with its first response (Stripe: 24 h). */
const KEY_LIFETIME = "interval '24 hours'";
/** A first call still marked running after this is taken to have died with its process: the key can be used again. */
const ABANDONED_AFTER = "interval '5 minutes'";
const KEY = /^[\x21-\x7e]{1,255}$/;

export interface IdempotentCall {
  path: string;
  rawInput: unknown;
}

const sealContext = (scope: string, key: string) => `idempotency:${scope}:${key}`;

type Stored = { data: unknown; meta: { timestamp: string; request_id: string } };

/**
 * Runs a creating call under its `Idempotency-Key` (when the request has one), with Stripe's semantics: the same
 * key and the same request within 24 h answer the first response again (`idempotent-replayed: true`); the same key
 * with another request is 422 `idempotency_key_reused`; while the first is still running, a duplicate is 409
 * `conflict`. A first call that fails leaves no trace, so the client may retry it with the same key.
 */
export async function idempotent<T>(
  ctx: Context & { application?: { id: string } },
  call: IdempotentCall,
  run: () => Promise<T>,
): Promise<T> {
  const header = ctx.headers['idempotency-key'];
  const key = Array.isArray(header) ? header[0] : header;
  if (key === undefined) return run();
  if (!KEY.test(key)) {
    throw new AppError('validation_failed', 'The Idempotency-Key header must be 1 to 255 visible ASCII characters', [
      { path: 'Idempotency-Key', message: 'invalid' },
    ]);
  }
  const scope = ctx.application ? `app:${ctx.application.id}` : 'operator';
  const fingerprint = sha256(`${call.path}\u0000${JSON.stringify(call.rawInput ?? null)}`);
  const em = ctx.em;
  // Expired keys and abandoned first calls make room, then exactly one insert wins the key.
  await em.execute(
    `delete from idempotency_keys where scope = ? and key = ?
       and (created_at < now() - ${KEY_LIFETIME} or (response is null and created_at < now() - ${ABANDONED_AFTER}))`,
    [scope, key],
  );
  const claimed = await em.execute<unknown[]>(
    `insert into idempotency_keys (id, scope, key, fingerprint, response, created_at) values (?, ?, ?, ?, null, now())
     on conflict (scope, key) do nothing returning 1`,
    [newId(), scope, key, fingerprint],
  );
  if (!claimed.length) {
    const [first] = await em.execute<Array<{ fingerprint: string; response: string | null }>>(
      'select fingerprint, response from idempotency_keys where scope = ? and key = ?',
      [scope, key],
    );
    if (!first) throw new AppError('conflict', 'A request with this Idempotency-Key is being processed; retry shortly');
    if (first.fingerprint !== fingerprint) {
      throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with another request');
    }
    if (!first.response) throw new AppError('conflict', 'A request with this Idempotency-Key is being processed; retry shortly');
    const stored = JSON.parse(ctx.services.secretBox.decrypt(first.response, sealContext(scope, key))) as Stored;
    ctx.response.headers['idempotent-replayed'] = 'true';
    ctx.response.meta = stored.meta;
    return stored.data as T;
  }
  try {
    const data = await run();
    const stored: Stored = { data, meta: { timestamp: new Date().toISOString(), request_id: ctx.requestId } };
    // The first answer carries the meta that replays will repeat.
    ctx.response.meta = stored.meta;
    // Sealed: a first answer can hold a secret shown once (an API key). As text, not jsonb: the replay keeps the first
    // answer's key order, byte for byte.
    const sealed = ctx.services.secretBox.encrypt(JSON.stringify(stored), sealContext(scope, key));
    await em.execute('update idempotency_keys set response = ? where scope = ? and key = ?', [sealed, scope, key]);
    return data;
  } catch (error) {
    await em.execute('delete from idempotency_keys where scope = ? and key = ? and response is null', [scope, key]);
    throw error;
  }
}

export const purgeIdempotencyKeys: PurgeStep = (em) =>
  deleteInBatches(em, 'idempotency_keys', `t.created_at < now() - ${KEY_LIFETIME}`);

import type { Context } from '../context.ts';
import type { EntityManager } from '../db/orm.ts';
import { AppError } from '../errors.ts';
import { sha256 } from './crypto.ts';
import { deleteInBatches, type PurgeStep } from './housekeeping.ts';
import { newId } from './ids.ts';

/** How long a key answers with its first response (Stripe: 24 h). */
const KEY_LIFETIME = "interval '24 hours'";
const KEY = /^[\x21-\x7e]{1,255}$/;

export interface IdempotentCall {
  path: string;
  /** The input as the caller sent it (REST: the body with the path's parameters). */
  rawInput: unknown;
}

const sealContext = (scope: string, key: string) => `idempotency:${scope}:${key}`;

type Stored = { data: unknown; meta: { timestamp: string; request_id: string } };
/** The caller's context: a tenant's call has its application (its keys are scoped to it), the operator's none. */
export type IdempotentContext = Context & { application?: { id: string } };

type Claim = { scope: string; key: string; fingerprint: string };

/** A value as JSON with every object's keys sorted: the same request, whatever order its fields came in. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** The request's key and what identifies the request under it; undefined without an `Idempotency-Key` header. */
function claimOf(ctx: IdempotentContext, call: IdempotentCall): Claim | undefined {
  const header = ctx.headers['idempotency-key'];
  const key = Array.isArray(header) ? header[0] : header;
  if (key === undefined) return undefined;
  if (!KEY.test(key)) {
    throw new AppError('validation_failed', 'The Idempotency-Key header must be 1 to 255 visible ASCII characters', [
      { path: 'Idempotency-Key', message: 'invalid' },
    ]);
  }
  const scope = ctx.application ? `app:${ctx.application.id}` : 'operator';
  return { scope, key, fingerprint: sha256(`${call.path}\u0000${canonicalJson(call.rawInput)}`) };
}

/** The first answer under the key, if one committed: replayed (or refused when the request differs). */
async function replay(ctx: Context, em: EntityManager, claim: Claim): Promise<{ data: unknown } | undefined> {
  const [first] = await em.execute<Array<{ fingerprint: string; response: string | null }>>(
    'select fingerprint, response from idempotency_keys where scope = ? and key = ? and response is not null',
    [claim.scope, claim.key],
  );
  // The statement reads only answered keys: `response` is there.
  if (!first || first.response === null) return undefined;
  if (first.fingerprint !== claim.fingerprint) {
    throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with another request');
  }
  const stored = JSON.parse(ctx.services.secretBox.decrypt(first.response, sealContext(claim.scope, claim.key))) as Stored;
  ctx.response.headers['idempotent-replayed'] = 'true';
  ctx.response.meta = stored.meta;
  return { data: stored.data };
}

/**
 * Claims the key, runs `write` and stores its answer in one transaction, so that they commit together or not at all: a
 * retry after a crash anywhere replays the first answer or runs for the first time. A concurrent call with the same
 * key waits on the key's unique index until the first commits (then replays it) or rolls back (then runs itself).
 */
async function claimWriteAndStore<T>(
  ctx: Context,
  claim: Claim,
  write: (em: EntityManager) => Promise<T>,
): Promise<{ data: T } | { data: unknown }> {
  return ctx.em.transactional(async (em) => {
    const { scope, key, fingerprint } = claim;
    // An expired key makes room; so does a claim without an answer, which only a version that claimed in a
    // transaction of its own can have left (claims now commit with their answer).
    await em.execute(
      `delete from idempotency_keys where scope = ? and key = ? and (created_at < now() - ${KEY_LIFETIME} or response is null)`,
      [scope, key],
    );
    const claimed = await em.execute<unknown[]>(
      `insert into idempotency_keys (id, scope, key, fingerprint, response, created_at) values (?, ?, ?, ?, null, now())
       on conflict (scope, key) do nothing returning 1`,
      [newId(), scope, key, fingerprint],
    );
    if (!claimed.length) {
      const first = await replay(ctx, em, claim);
      if (!first) throw new AppError('conflict', 'A request with this Idempotency-Key is being processed; retry shortly');
      return first;
    }
    const data = await write(em);
    const stored: Stored = { data, meta: { timestamp: new Date().toISOString(), request_id: ctx.requestId } };
    // Sealed: a first answer can hold a secret shown once (an API key). As text, not jsonb: the replay keeps the first
    // answer's key order, byte for byte.
    const sealed = ctx.services.secretBox.encrypt(JSON.stringify(stored), sealContext(scope, key));
    await em.execute('update idempotency_keys set response = ? where scope = ? and key = ?', [sealed, scope, key]);
    // The first answer carries the meta that replays will repeat.
    ctx.response.meta = stored.meta;
    return { data };
  });
}

/** The claims of `'own-write'` calls until their write, by the entity manager each call's handler got. */
const ownWrites = new WeakMap<EntityManager, Claim>();

/**
 * Runs a creating procedure (meta `idempotent`) under its `Idempotency-Key`, when the request has one, with Stripe's
 * semantics: the same key and the same request within 24 h answer the first response again (`idempotent-replayed:
 * true`); the same key with another request is 422 `idempotency_key_reused`. A first call that fails leaves no trace, so
 * the client may retry it with the same key. `run` gets the entity manager its handler must use: the transaction's
 * (`'own-write'`: one outside any, the handler writing through `idempotentWrite`). Answers what `run` answered, or the
 * replayed first answer.
 */
export async function idempotent<T>(
  ctx: IdempotentContext,
  call: IdempotentCall,
  mode: true | 'own-write',
  run: (em: EntityManager | undefined) => Promise<T>,
): Promise<{ data: T } | { data: unknown }> {
  const claim = claimOf(ctx, call);
  if (!claim) return { data: await run(undefined) };
  if (mode === true) return claimWriteAndStore(ctx, claim, run);
  // A first answer is replayed before the handler calls out again (whose peer may now be down).
  const first = await replay(ctx, ctx.em, claim);
  if (first) return first;
  // An entity manager of the call's own (the calls of a tRPC batch share their context) to find its claim by.
  const em = ctx.em.fork({ clear: false });
  ownWrites.set(em, claim);
  return { data: await run(em) };
}

/**
 * The write of an `'own-write'` create, after its outbound call: with the key's claim and the stored answer in one
 * transaction, as the middleware does for the others. Answers what `write` answered, or the first answer of a
 * concurrent call with the same key that committed meanwhile.
 */
export async function idempotentWrite<T>(ctx: Context, write: (em: EntityManager) => Promise<T>): Promise<T> {
  const claim = ownWrites.get(ctx.em);
  if (!claim) return write(ctx.em);
  ownWrites.delete(ctx.em);
  // The same procedure's first answer: the same shape.
  return (await claimWriteAndStore(ctx, claim, write)).data as T;
}

export const purgeIdempotencyKeys: PurgeStep = (em) =>
  deleteInBatches(em, 'idempotency_keys', `t.created_at < now() - ${KEY_LIFETIME}`);

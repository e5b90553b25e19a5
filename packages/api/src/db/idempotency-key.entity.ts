import { defineEntity, p } from '@mikro-orm/core';

/**
 * Idempotency keys of creating calls (Stripe's semantics, kept 24 h): one row per (scope, key), where the scope is the
 * application (or the operator). Stored in the database so that every process shares them.
 */
export const IdempotencyKeyEntity = defineEntity({
  name: 'IdempotencyKey',
  tableName: 'idempotency_keys',
  properties: {
    id: p.uuid().primary(),
    /** `app:<application id>` or `operator`. */
    scope: p.string().length(64),
    key: p.string().length(255),
    /** SHA-256 of the procedure and its input: the same key with another request is refused. */
    fingerprint: p.string().length(64),
    /** The first answer's data and meta (JSON, sealed with the master key), replayed as they were; null while it runs. */
    response: p.text().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ properties: ['scope', 'key'] }],
  indexes: [{ properties: ['createdAt'] }],
});

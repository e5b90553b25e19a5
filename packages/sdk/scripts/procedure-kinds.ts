import { appRouter } from '@gatehouse/api';

/**
 * Each procedure of the API router, as the SDK's transport needs to know it: a query, a mutation, or a create (meta
 * `idempotent`: it takes an Idempotency-Key, so the SDK may retry it). Sorted by path.
 */
export function procedureKinds(): Record<string, 'query' | 'mutation' | 'create'> {
  const procedures = appRouter._def.procedures as unknown as Record<
    string,
    { _def: { type: 'query' | 'mutation'; meta?: { idempotent?: unknown } } }
  >;
  return Object.fromEntries(
    Object.entries(procedures)
      .map(([path, { _def }]) => [path, _def.meta?.idempotent ? 'create' : _def.type] as const)
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}

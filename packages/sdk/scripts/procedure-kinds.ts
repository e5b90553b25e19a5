import { appRouter } from '@gatehouse/api';

/**
 * Each procedure of the API router, as the SDK's transport needs to know it: a query, a mutation, or a create (a
 * management mutation answering 201: it takes an Idempotency-Key, so the SDK may retry it). Sorted by path.
 */
export function procedureKinds(): Record<string, 'query' | 'mutation' | 'create'> {
  const procedures = appRouter._def.procedures as unknown as Record<
    string,
    { _def: { type: 'query' | 'mutation'; meta?: { successStatus?: number; caller?: string } } }
  >;
  return Object.fromEntries(
    Object.entries(procedures)
      .map(([path, { _def }]) => {
        const creates =
          _def.meta?.successStatus === 201 && (_def.meta.caller === 'secret_key' || _def.meta.caller === 'operator');
        return [path, creates ? 'create' : _def.type] as const;
      })
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}

import type { AnyTRPCRouter } from '@trpc/server';

type ZodNode = { _zod?: { def?: Record<string, any> } };
const COERCIBLE = new Set(['boolean', 'number', 'bigint', 'date']);

/**
 * trpc-to-openapi coerces every boolean, number and date of a REST input — JSON bodies included (`"yes"` and
 * `"false"` both become `true`) — by setting `coerce` on the shared zod schemas, so the tRPC transport would
 * coerce too after the first REST call. This pins `coerce` on every such node of every procedure input to what the
 * schema declares: bodies stay strict (a wrong type is 422), and query parameters parse numbers only where their
 * schema says so explicitly (`z.coerce.number()` in the page query).
 */
export function pinDeclaredCoercion(router: AnyTRPCRouter): void {
  const seen = new Set<object>();
  const visit = (node: unknown) => {
    const def = (node as ZodNode)?._zod?.def;
    if (!def || seen.has(def)) return;
    seen.add(def);
    if (COERCIBLE.has(def.type)) {
      const declared = def.coerce === true;
      Object.defineProperty(def, 'coerce', { get: () => declared, set: () => undefined, configurable: false });
      return;
    }
    if (def.shape) for (const child of Object.values(def.shape)) visit(child);
    for (const key of ['innerType', 'element', 'valueType', 'keyType', 'in', 'out', 'left', 'right', 'catchall'] as const) {
      visit(def[key]);
    }
    for (const option of def.options ?? []) visit(option);
    for (const item of def.items ?? []) visit(item);
  };
  for (const procedure of Object.values(router._def.procedures) as Array<{ _def: { inputs?: unknown[] } }>) {
    for (const input of procedure._def.inputs ?? []) visit(input);
  }
}

import type { ScimPatchOperation } from 'scim-patch';
import type { z } from 'zod';
import type { EntityManager } from '../../db/orm.ts';
import { MAX_COUNT } from './scim.discovery.ts';
import { invalidSyntax, invalidValue, ScimError } from './scim.errors.ts';
import { type AttributeResolver, CORE_GROUP, CORE_USER, filterToSql, parseFilter } from './scim.filter.ts';

/** The query of a SCIM list or read (RFC 7644 §3.4.2, §3.9). */
export interface ScimListQuery {
  filter?: string | undefined;
  startIndex?: string | undefined;
  count?: string | undefined;
  attributes?: string | undefined;
  excludedAttributes?: string | undefined;
}

/** `startIndex` (1-based; below 1 reads as 1) and `count` (default 100, at most 1000; negative reads as 0), RFC 7644 §3.4.2.4. */
export function page(query: ScimListQuery) {
  const number = (value: string | undefined, fallback: number) => {
    if (value === undefined || value === '') return fallback;
    if (!/^-?\d{1,9}$/.test(value)) throw invalidValue('startIndex and count are integers');
    return Number(value);
  };
  const startIndex = Math.max(1, number(query.startIndex, 1));
  const count = Math.min(MAX_COUNT, Math.max(0, number(query.count, 100)));
  return { startIndex, count };
}

const names = (list: string | undefined) =>
  (list ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean)
    .map(
      (a) =>
        a
          .replace(new RegExp(`^(${CORE_USER}|${CORE_GROUP}):`, 'i'), '')
          .split('.')[0]
          ?.toLowerCase() ?? '',
    );

/** `attributes` / `excludedAttributes` (RFC 7644 §3.9) on the top-level attributes; `id` and `schemas` always stay. */
export function project<T extends Record<string, unknown>>(resource: T, query: ScimListQuery): T {
  const only = names(query.attributes);
  const excluded = names(query.excludedAttributes);
  if (!only.length && !excluded.length) return resource;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(resource)) {
    const k = key.toLowerCase();
    const keep = k === 'id' || k === 'schemas' || (only.length ? only.includes(k) : !excluded.includes(k));
    if (keep) out[key] = value;
  }
  // the kept entries are entries of T
  return out as T;
}

/** A zod failure as SCIM's 400 `invalidValue`, naming the first path. */
export function zodToScim(error: z.ZodError): ScimError {
  const issue = error.issues[0];
  const path = issue?.path.join('.') || '(root)';
  return invalidValue(`${path}: ${issue?.message ?? 'invalid'}`);
}

const BOOLEAN_ATTRIBUTES = new Set(['active', 'primary']);

/** Entra's `"True"`/`"False"` as booleans, where the attribute is a boolean. */
function booleans(value: unknown, attribute: string | undefined): unknown {
  if (typeof value === 'string' && attribute && BOOLEAN_ATTRIBUTES.has(attribute.toLowerCase())) {
    if (/^true$/i.test(value)) return true;
    if (/^false$/i.test(value)) return false;
  }
  if (Array.isArray(value)) return value.map((v) => booleans(v, attribute));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, booleans(v, k.split('.').pop())]));
  }
  return value;
}

/**
 * A PATCH body (RFC 7644 §3.5.2) with the identity providers' dialects made standard: Entra's capitalised `op`
 * (`"Replace"`), booleans as strings (`"False"`), and an operation without `path` (its `value` an object of
 * attributes) are all accepted.
 */
export function normalizePatch(body: unknown): ScimPatchOperation[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidSyntax('The body must be a PatchOp');
  // a JSON object, checked just above
  const operations = (body as { Operations?: unknown }).Operations;
  if (!Array.isArray(operations) || !operations.length) throw invalidSyntax('Operations must be a non-empty array');
  if (operations.length > 1000) throw invalidValue('At most 1000 operations per PATCH');
  return operations.map((raw) => {
    if (typeof raw !== 'object' || raw === null) throw invalidSyntax('Each operation must be an object');
    // a JSON object, checked just above
    const { op, path, value } = raw as { op?: unknown; path?: unknown; value?: unknown };
    const kind = typeof op === 'string' ? op.toLowerCase() : '';
    if (kind !== 'add' && kind !== 'replace' && kind !== 'remove') throw invalidSyntax('op must be add, replace or remove');
    if (path !== undefined && (typeof path !== 'string' || path.length > 1024))
      throw new ScimError(400, 'Invalid path', 'invalidPath');
    if (kind === 'remove' && !path) throw new ScimError(400, 'A remove needs a path', 'noTarget');
    if (kind !== 'remove' && value === undefined) throw invalidValue('add and replace need a value');
    if (!path && kind !== 'remove' && (typeof value !== 'object' || value === null || Array.isArray(value))) {
      throw invalidValue('An operation without a path takes an object of attributes');
    }
    const attribute = path?.split(/[.[:]/).filter(Boolean).pop();
    const normalized = booleans(value, path ? attribute : undefined);
    // the op, path and value were each checked above
    return { op: kind, ...(path ? { path } : {}), ...(value !== undefined ? { value: normalized } : {}) } as ScimPatchOperation;
  });
}

/**
 * One page of a directory's users or groups for a list request (RFC 7644 §3.4.2), in one statement: how many match
 * its filter, and the page's rows (`select`, over `table` and its alias, including its `created_at` and `id`; each row
 * as JSON, so its timestamps are strings), oldest first from `startIndex` (1-based), at most `count`.
 */
export async function filteredPage<Row>(
  em: EntityManager,
  from: { table: 'directory_users du' | 'directory_groups g'; select: string; attributes: AttributeResolver },
  directoryId: string,
  query: ScimListQuery,
): Promise<{ total: number; rows: Row[]; startIndex: number }> {
  const { startIndex, count } = page(query);
  const alias = from.table.slice(from.table.indexOf(' ') + 1);
  const where = query.filter ? filterToSql(parseFilter(query.filter), from.attributes) : { sql: 'true', params: [] };
  const matching = `from ${from.table} where ${alias}.directory_id = ? and ${where.sql}`;
  const [row] = await em.execute<Array<{ total: string | number; rows: string | Row[] }>>(
    `select (select count(*) ${matching}) as total,
            coalesce((select json_agg(p order by p.created_at, p.id)
                        from (select ${from.select} ${matching}
                               order by ${alias}.created_at, ${alias}.id limit ? offset ?) p), '[]') as rows`,
    [directoryId, ...where.params, directoryId, ...where.params, count, startIndex - 1],
  );
  const rows = typeof row?.rows === 'string' ? JSON.parse(row.rows) : (row?.rows ?? []);
  return { total: Number(row?.total ?? 0), rows, startIndex };
}

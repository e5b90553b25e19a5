import { type Filter, parse } from 'scim2-parse-filter';
import { ScimError } from './scim.errors.ts';

/** A SQL condition and its parameters, for the `where` of a SCIM list. */
export interface SqlCondition {
  sql: string;
  params: unknown[];
}

/** How one attribute path reads in SQL: a text column or expression, compared case-insensitively or exactly. */
export interface AttributeSql {
  /** A SQL expression of type text (or boolean / timestamptz, by `kind`). */
  expr: string;
  /**
   * `text` compares exactly, `ci-text` case-insensitively, `folded` is a column stored lower-cased (the value is
   * lower-cased, the column compared as is, so its index serves).
   */
  kind: 'text' | 'ci-text' | 'folded' | 'boolean' | 'timestamp';
}

/**
 * Where an attribute lives for one resource type. Answers null for an attribute the server cannot filter on (the
 * filter is then refused with `invalidFilter`), or a multi-valued attribute (`{array, element}`): the JSON array and
 * how a sub-attribute of one element reads, for `emails[type eq "work"]` and `emails.value eq …`.
 */
export type AttributeResolver = (
  path: string,
) => AttributeSql | { array: string; element: (sub: string) => AttributeSql | null; defaultSub: string } | null;

const invalidFilter = (detail: string) => new ScimError(400, detail, 'invalidFilter');

/** Parses a SCIM filter (RFC 7644 §3.4.2.2) with `scim2-parse-filter`; a filter that does not parse is `invalidFilter`. */
export function parseFilter(filter: string): Filter {
  if (filter.length > 4096) throw invalidFilter('The filter is too long');
  try {
    return parse(filter);
  } catch {
    throw invalidFilter('The filter does not parse');
  }
}

function compare(attr: AttributeSql, op: string, value: unknown): SqlCondition {
  if (op === 'pr') return { sql: `(${attr.expr}) is not null`, params: [] };
  if (value === null) {
    if (op === 'eq') return { sql: `(${attr.expr}) is null`, params: [] };
    if (op === 'ne') return { sql: `(${attr.expr}) is not null`, params: [] };
    throw invalidFilter(`${op} null is not a comparison`);
  }
  if (attr.kind === 'boolean') {
    const bool = typeof value === 'boolean' ? value : typeof value === 'string' ? value.toLowerCase() === 'true' : null;
    if (bool === null || (op !== 'eq' && op !== 'ne')) throw invalidFilter('A boolean compares with eq or ne only');
    return { sql: op === 'eq' ? `(${attr.expr}) = ?` : `(${attr.expr}) is distinct from ?`, params: [bool] };
  }
  if (attr.kind === 'timestamp') {
    const at = typeof value === 'string' ? new Date(value) : null;
    if (!at || Number.isNaN(at.getTime())) throw invalidFilter('A date compares with an ISO 8601 string');
    const sqlOp = { eq: '=', ne: '<>', gt: '>', ge: '>=', lt: '<', le: '<=' }[op];
    if (!sqlOp) throw invalidFilter(`${op} does not apply to a date`);
    return { sql: `(${attr.expr}) ${sqlOp} ?::timestamptz`, params: [at.toISOString()] };
  }
  if (typeof value !== 'string' && typeof value !== 'number') throw invalidFilter('Compare a string attribute with a string');
  const text = String(value);
  const ci = attr.kind === 'ci-text';
  const left = ci ? `lower(${attr.expr})` : `(${attr.expr})`;
  const v = ci || attr.kind === 'folded' ? text.toLowerCase() : text;
  switch (op) {
    case 'eq':
      return { sql: `${left} = ?`, params: [v] };
    case 'ne':
      return { sql: `${left} is distinct from ?`, params: [v] };
    case 'co':
      return { sql: `strpos(${left}, ?) > 0`, params: [v] };
    case 'sw':
      return { sql: `starts_with(${left}, ?)`, params: [v] };
    case 'ew':
      return { sql: `right(${left}, ?) = ?`, params: [v.length, v] };
    case 'gt':
      return { sql: `${left} > ?`, params: [v] };
    case 'ge':
      return { sql: `${left} >= ?`, params: [v] };
    case 'lt':
      return { sql: `${left} < ?`, params: [v] };
    case 'le':
      return { sql: `${left} <= ?`, params: [v] };
    default:
      throw invalidFilter(`Unknown operator ${op}`);
  }
}

/** The SQL of a parsed filter, with every value a parameter (never spliced into the text). */
export function filterToSql(filter: Filter, resolve: AttributeResolver, depth = 0): SqlCondition {
  if (depth > 16) throw invalidFilter('The filter nests too deeply');
  switch (filter.op) {
    case 'and':
    case 'or': {
      // the parser gives `filters` for the logical operators
      const parts = (filter as { filters: Filter[] }).filters.map((f) => filterToSql(f, resolve, depth + 1));
      return {
        sql: `(${parts.map((p) => p.sql).join(filter.op === 'and' ? ' and ' : ' or ')})`,
        params: parts.flatMap((p) => p.params),
      };
    }
    case 'not': {
      // the parser gives `filter` for `not`
      const inner = filterToSql((filter as { filter: Filter }).filter, resolve, depth + 1);
      return { sql: `not coalesce(${inner.sql}, false)`, params: inner.params };
    }
    case '[]': {
      // the parser gives `attrPath` and `valFilter` for a value path
      const { attrPath, valFilter } = filter as { attrPath: string; valFilter: Filter };
      const target = resolve(attrPath);
      if (!target || !('array' in target)) throw invalidFilter(`${attrPath} is not a multi-valued attribute`);
      const inner = filterToSql(valFilter, (sub) => target.element(sub), depth + 1);
      return {
        sql: `exists (select 1 from jsonb_array_elements(coalesce(${target.array}, '[]'::jsonb)) as e(v) where ${inner.sql})`,
        params: inner.params,
      };
    }
    default: {
      // every other operator is a comparison (or `pr`), which the parser gives `attrPath` and `compValue`
      const { attrPath, compValue } = filter as { attrPath: string; compValue?: unknown };
      const dot = attrPath.lastIndexOf('.');
      const target = resolve(attrPath);
      if (target && !('array' in target)) return compare(target, filter.op, compValue);
      // `emails eq "a@b"` (the default sub-attribute), `emails.value eq "a@b"`, `emails pr`
      const base = target ? attrPath : attrPath.slice(0, dot);
      const array = target ?? (dot > 0 ? resolve(base) : null);
      if (!array || !('array' in array)) throw invalidFilter(`Filtering on ${attrPath} is not supported`);
      if (filter.op === 'pr' && target) {
        return { sql: `jsonb_array_length(coalesce(${array.array}, '[]'::jsonb)) > 0`, params: [] };
      }
      const sub = target ? array.defaultSub : attrPath.slice(dot + 1);
      const element = array.element(sub);
      if (!element) throw invalidFilter(`Filtering on ${attrPath} is not supported`);
      const inner = compare(element, filter.op, compValue);
      return {
        sql: `exists (select 1 from jsonb_array_elements(coalesce(${array.array}, '[]'::jsonb)) as e(v) where ${inner.sql})`,
        params: inner.params,
      };
    }
  }
}

/** The attribute name SCIM compares case-insensitively; a URN prefix (an extension's attribute) is kept apart. */
export function splitUrn(path: string): { urn: string | null; rest: string } {
  const lower = path.toLowerCase();
  for (const urn of [ENTERPRISE_USER, CORE_USER, CORE_GROUP]) {
    if (lower.startsWith(`${urn.toLowerCase()}:`)) return { urn, rest: path.slice(urn.length + 1) };
  }
  return { urn: null, rest: path };
}

export const CORE_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const CORE_GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE_USER = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

/** A JSON text path (`#>> '{name,givenName}'`) safe to splice: attribute names are checked against RFC 7643's ATTRNAME. */
export function jsonPath(parts: string[]): string {
  for (const part of parts) {
    if (!/^[A-Za-z][A-Za-z0-9_$-]{0,63}$/.test(part)) throw invalidFilter(`${part} is not an attribute name`);
  }
  return `'{${parts.join(',')}}'`;
}

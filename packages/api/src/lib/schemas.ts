import { z } from 'zod';

/**
 * JSON can carry U+0000 and unpaired UTF-16 surrogates (`"\u0000"`, `"\ud800"`, `%00` in a query); PostgreSQL's
 * `text` and `jsonb` cannot store them and its driver fails the whole statement. Every string the API reads is
 * refused at the schema instead: 422 `validation_failed` naming the field, before any handler runs.
 */
const isStorableText = (value: string): boolean => value.isWellFormed() && !value.includes('\u0000');
const STORABLE_TEXT_MESSAGE = 'must not contain U+0000 or an unpaired UTF-16 surrogate';

/** The check every string schema carries (formats like `z.url()` that return the input as written take it too). */
export const storableText = z.refine<string>(isStorableText, { message: STORABLE_TEXT_MESSAGE });

/** The string schema of the API: every `z.string()` of a schema starts here. */
export const text = () => z.string().check(storableText);

/** What every DELETE answers: the id of the path's last segment. */
export const DeletedSchema = z.object({ id: text(), deleted: z.literal(true) }).meta({ id: 'Deleted' });

export const IdParamSchema = z.strictObject({ id: z.uuid() });

/** How deep any JSON body may nest (the parser refuses deeper ones before any schema runs). */
export const MAX_BODY_DEPTH = 32;
const FREE_FORM_DEPTH = 10;
const FREE_FORM_BYTES = 8192;

/** The path to the first value nested deeper than `limit` levels below `value`, or null. Iterative: no stack to blow. */
export function tooDeep(value: unknown, limit: number): Array<string | number> | null {
  const stack: Array<{ value: unknown; path: Array<string | number> }> = [{ value, path: [] }];
  for (let entry = stack.pop(); entry; entry = stack.pop()) {
    const { value: node, path } = entry;
    if (node === null || typeof node !== 'object') continue;
    if (path.length >= limit) return path;
    for (const [key, child] of Object.entries(node))
      stack.push({ value: child, path: [...path, Array.isArray(node) ? Number(key) : key] });
  }
  return null;
}

/** The path to the first key or string value at any depth of `value` that PostgreSQL cannot store, or null. */
function unstorableTextAt(value: unknown): Array<string | number> | null {
  const stack: Array<{ value: unknown; path: Array<string | number> }> = [{ value, path: [] }];
  for (let entry = stack.pop(); entry; entry = stack.pop()) {
    const { value: node, path } = entry;
    if (typeof node === 'string' && !isStorableText(node)) return path;
    if (node === null || typeof node !== 'object') continue;
    for (const [key, child] of Object.entries(node)) {
      const at = [...path, Array.isArray(node) ? Number(key) : key];
      if (!isStorableText(key)) return at;
      stack.push({ value: child, path: at });
    }
  }
  return null;
}

/** Adds the issue of the first key or string of `value` that is not storable text; answers whether there was one. */
function addUnstorableIssue(value: unknown, ctx: z.core.$RefinementCtx): boolean {
  const path = unstorableTextAt(value);
  if (path) ctx.addIssue({ code: 'custom', path, message: STORABLE_TEXT_MESSAGE });
  return path !== null;
}

/**
 * The rule of `text()` for JSON whose members the schema does not list (a free-form object, the members a
 * `z.looseObject` passes through): every key and string at any depth.
 */
export const storableJson = z.superRefine((value: unknown, ctx) => void addUnstorableIssue(value, ctx));

/**
 * A free-form JSON object the caller fills (a user's `profile`, like Clerk's metadata): at most 8 KiB serialized and
 * 10 levels deep, so one field cannot grow every row, answer and event without bound; its keys and strings at every
 * depth are storable text (the rule of `text()`).
 */
export const FreeFormJsonSchema = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  const deep = tooDeep(value, FREE_FORM_DEPTH);
  if (deep) ctx.addIssue({ code: 'custom', path: deep, message: `nested deeper than ${FREE_FORM_DEPTH} levels` });
  else if (!addUnstorableIssue(value, ctx) && Buffer.byteLength(JSON.stringify(value)) > FREE_FORM_BYTES) {
    ctx.addIssue({ code: 'custom', message: `larger than ${FREE_FORM_BYTES} bytes serialized` });
  }
});

const isHttpUrl = (value: string) => {
  if (value.length > 2048) return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && !url.username && !url.password;
  } catch {
    return false;
  }
};

/**
 * Where a browser is sent (a magic link's target): an absolute http(s) URL without credentials. A refused one is
 * 422 `invalid_url` whatever the reason (CONTRACT §1), like one that is not on an allowed origin.
 */
export const RedirectUrlSchema = text()
  .refine(isHttpUrl, { message: 'an absolute http(s) URL of at most 2048 characters', params: { code: 'invalid_url' } })
  .meta({ format: 'uri', maxLength: 2048 });

/** The error code a schema failure answers: a code every issue names in its params, else `validation_failed`. */
export function issueCode(issues: ReadonlyArray<{ code: string; params?: Record<string, unknown> }>): string {
  const named = new Set(issues.map((issue) => (issue.code === 'custom' ? issue.params?.code : undefined)));
  const [only] = named;
  return named.size === 1 && typeof only === 'string' ? only : 'validation_failed';
}

import { z } from 'zod';

/** What every DELETE answers: the id of the path's last segment. */
export const DeletedSchema = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'Deleted' });

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

/**
 * A free-form JSON object the caller fills (a user's `profile`, like Clerk's metadata): at most 8 KiB serialized and
 * 10 levels deep, so one field cannot grow every row, answer and event without bound.
 */
export const FreeFormJsonSchema = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  const deep = tooDeep(value, FREE_FORM_DEPTH);
  if (deep) ctx.addIssue({ code: 'custom', path: deep, message: `nested deeper than ${FREE_FORM_DEPTH} levels` });
  else if (Buffer.byteLength(JSON.stringify(value)) > FREE_FORM_BYTES) {
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
export const RedirectUrlSchema = z
  .string()
  .refine(isHttpUrl, { message: 'an absolute http(s) URL of at most 2048 characters', params: { code: 'invalid_url' } })
  .meta({ format: 'uri', maxLength: 2048 });

/** The error code a schema failure answers: a code every issue names in its params, else `validation_failed`. */
export function issueCode(issues: ReadonlyArray<{ code: string; params?: Record<string, unknown> }>): string {
  const named = new Set(issues.map((issue) => (issue.code === 'custom' ? issue.params?.code : undefined)));
  const [only] = named;
  return named.size === 1 && typeof only === 'string' ? only : 'validation_failed';
}

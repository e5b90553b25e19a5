import { type Command, InvalidArgumentError } from 'commander';

/** `--limit 10`: an integer (the server checks the range and answers 422 outside it). */
export function parseInteger(value: string): number {
  if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError('expected an integer.');
  return Number(value);
}

/** `--delivered false`: exactly `true` or `false`. */
export function parseBoolean(value: string): boolean {
  const normalized = value.trim().toLowerCase();
  if (normalized === 'true') return true;
  if (normalized === 'false') return false;
  throw new InvalidArgumentError('expected true or false.');
}

/** `--profile '{"name":"Ada"}'`: a JSON object. */
export function parseJsonObject(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('expected JSON, e.g. \'{"name":"Ada"}\'.');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidArgumentError('expected a JSON object, e.g. \'{"name":"Ada"}\'.');
  }
  return parsed as Record<string, unknown>;
}

/** Variadic options also accept comma-separated values: `--scope users:read,users:write`. */
export const splitList = (values: string[] | undefined): string[] =>
  (values ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);

/** `--limit`/`--offset` for paginated lists; undefined leaves the server's defaults. */
export const pageInput = (options: { limit?: number; offset?: number }) => ({
  ...(options.limit !== undefined ? { limit: options.limit } : {}),
  ...(options.offset !== undefined ? { offset: options.offset } : {}),
});

/** `--limit`: 1 to 100, checked here (a usage error, exit 2) before anything is sent. */
export function parseLimit(value: string): number {
  const n = parseInteger(value);
  if (n < 1 || n > 100) throw new InvalidArgumentError('expected 1 to 100.');
  return n;
}

/** `--offset`: 0 or more. */
export function parseOffset(value: string): number {
  const n = parseInteger(value);
  if (n < 0) throw new InvalidArgumentError('expected 0 or more.');
  return n;
}

/** Adds `--limit`/`--offset` to a list command. */
export const pageOptions = (command: Command): Command =>
  command.option('--limit <n>', 'page size (1-100, default 25)', parseLimit).option('--offset <n>', 'rows to skip', parseOffset);

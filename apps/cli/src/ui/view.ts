import { formatValue } from './format.ts';

export interface Column<T> {
  /** The JSON field name: the header of plain output. */
  key: string;
  /** The header on a terminal. */
  header: string;
  value: (row: T) => unknown;
}

/** What a command shows of its result, independent of how (terminal, plain text). `--json` bypasses it. */
export type View =
  | { kind: 'table'; columns: Column<any>[]; rows: unknown[]; empty: string; summary?: string }
  | { kind: 'record'; fields: Array<[string, unknown]>; note?: string }
  | { kind: 'message'; text: string };

export const tableView = <T>(columns: Column<T>[], rows: T[], empty: string, summary?: string): View => ({
  kind: 'table',
  columns,
  rows,
  empty,
  summary,
});

export const recordView = (record: object, note?: string): View => ({ kind: 'record', fields: Object.entries(record), note });

/** A page's position, e.g. `1–25 of 40`. */
export const pageSummary = (page: { total: number; offset: number }, count: number): string =>
  count === 0 ? `0 of ${page.total}` : `${page.offset + 1}–${page.offset + count} of ${page.total}`;

/**
 * Plain text for pipes, CI and dumb terminals: tab-separated, no colour. A table is a header line of JSON field names
 * and one line per row; a record is one `field<TAB>value` line per field. Notes go to stderr, keeping stdout data only.
 */
export function renderPlain(view: View): { stdout: string; stderr: string } {
  if (view.kind === 'message') return { stdout: `${view.text}\n`, stderr: '' };
  if (view.kind === 'record') {
    const lines = view.fields.map(([key, value]) => `${key}\t${formatValue(value, 'plain')}`);
    return { stdout: `${lines.join('\n')}\n`, stderr: view.note ? `${view.note}\n` : '' };
  }
  const lines = [
    view.columns.map((c) => c.key).join('\t'),
    ...view.rows.map((row) => view.columns.map((c) => formatValue(c.value(row), 'plain')).join('\t')),
  ];
  return { stdout: `${lines.join('\n')}\n`, stderr: '' };
}

const ISO_TIME = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}):\d{2}(?:\.\d+)?Z$/;

/**
 * How one value reads in a cell. `null` is empty in plain text and a dash on a terminal; `compact` (terminal tables)
 * shortens timestamps to the minute so a row fits 80 columns.
 */
export function formatValue(value: unknown, mode: 'plain' | 'rich', compact = false): string {
  if (value === null || value === undefined) return mode === 'plain' ? '' : '—';
  if (typeof value === 'string') {
    if (mode === 'plain') return escapeControl(value);
    const time = compact ? ISO_TIME.exec(value) : null;
    return time ? `${time[1]} ${time[2]}` : value;
  }
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && value.every((v) => typeof v === 'string' || typeof v === 'number')) {
    return formatValue(value.join(','), mode);
  }
  return formatValue(JSON.stringify(value), mode);
}

/** Tabs and newlines inside a value would break the tab-separated lines: show them escaped (`--json` is exact). */
const escapeControl = (value: string): string =>
  value.replace(/[\t\n\r]/g, (c) => ({ '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c] ?? c);

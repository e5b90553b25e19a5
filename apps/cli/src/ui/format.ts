/** How one value reads in a cell. `null` is empty in plain text and a dash on a terminal. */
export function formatValue(value: unknown, mode: 'plain' | 'rich'): string {
  if (value === null || value === undefined) return mode === 'plain' ? '' : '—';
  if (typeof value === 'string') return mode === 'plain' ? escapeControl(value) : value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && value.every((v) => typeof v === 'string' || typeof v === 'number')) {
    return formatValue(value.join(','), mode);
  }
  return formatValue(JSON.stringify(value), mode);
}

/** Tabs and newlines inside a value would break the tab-separated lines: escape them. */
const escapeControl = (value: string): string =>
  value.replace(/[\t\n\r\\]/g, (c) => ({ '\t': '\\t', '\n': '\\n', '\r': '\\r', '\\': '\\\\' })[c] ?? c);

import type { ReactNode } from 'react';

/**
 * A list as a table: a caption for assistive technology only, a header row, one row an item (its cells from
 * `children`), and, with `actions`, a last column whose header is named for assistive technology only. With `empty`,
 * an empty list shows that (an EmptyState) in place of the table.
 */
export function ListTable<T>({
  caption,
  columns,
  actions,
  rows,
  rowKey,
  current,
  className,
  busy,
  empty,
  children,
}: {
  caption: string;
  /** The visible column headers, in order. */
  columns: readonly string[];
  /** The hidden header of a last column of buttons or links: "Actions". */
  actions?: string;
  rows: readonly T[];
  rowKey: (row: T) => string;
  /** The row that is open below the table (aria-current). */
  current?: (row: T) => boolean;
  /** More classes beside `table` ("break-code"). */
  className?: string;
  /** aria-busy: the list is being read again. */
  busy?: boolean;
  empty?: ReactNode;
  /** A row's cells (`<td>`), the actions cell included. */
  children: (row: T) => ReactNode;
}) {
  if (empty !== undefined && rows.length === 0) return empty;
  return (
    <table className={className ? `table ${className}` : 'table'} aria-busy={busy}>
      <caption className="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          {columns.map((column) => (
            <th key={column} scope="col">
              {column}
            </th>
          ))}
          {actions && (
            <th scope="col">
              <span className="visually-hidden">{actions}</span>
            </th>
          )}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={rowKey(row)} aria-current={current?.(row) ? 'true' : undefined}>
            {children(row)}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

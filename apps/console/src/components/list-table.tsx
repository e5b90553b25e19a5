import { type ComponentProps, Fragment, type ReactNode } from 'react';
import { Pager } from './pager.tsx';

/**
 * A list as a table: a caption for assistive technology only, a header row, one row an item (its cells from
 * `children`), and, with `actions`, a last column whose header is named for assistive technology only. With `empty`,
 * an empty list shows that (an EmptyState) in place of the table; with `pager`, a page of a paged list has its Pager
 * below.
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
  noMatch,
  detail,
  pager,
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
  /** A row (`<tr>`) in the body when `rows` is empty but the table stays: a filter matched nothing. */
  noMatch?: ReactNode;
  /** A row (`<tr>`) below an item's row, or nothing: its details, shown on demand. */
  detail?: (row: T) => ReactNode;
  /** A page of a paged list: the Pager below the table (how many it shows is the rows'). */
  pager?: Omit<ComponentProps<typeof Pager>, 'shown'>;
  /** A row's cells (`<td>`), the actions cell included; `index` is the row's place in `rows`. */
  children: (row: T, index: number) => ReactNode;
}) {
  if (empty !== undefined && rows.length === 0) return empty;
  const table = (
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
        {rows.map((row, index) => (
          <Fragment key={rowKey(row)}>
            <tr aria-current={current?.(row) ? 'true' : undefined}>{children(row, index)}</tr>
            {detail?.(row)}
          </Fragment>
        ))}
        {rows.length === 0 && noMatch}
      </tbody>
    </table>
  );
  if (!pager) return table;
  return (
    <>
      {table}
      <Pager {...pager} shown={rows.length} />
    </>
  );
}

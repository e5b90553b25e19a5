import { Link } from '@tanstack/react-router';
import { PAGE_SIZE } from '../search.ts';

/**
 * A paged list's footer: where the page sits in the whole, and links to the pages either side of it. The links change
 * only `?offset=` of the current URL and keep the rest of its state (a search, filters).
 */
export function Pager({
  label,
  offset,
  shown,
  total,
  previous = 'Previous page',
  next = 'Next page',
}: {
  /** Names the list for assistive technology: "Pages of users". */
  label: string;
  /** The offset of the page on screen, and how many items it shows. */
  offset: number;
  shown: number;
  total: number;
  previous?: string;
  next?: string;
}) {
  const last = Math.min(offset + shown, total);
  return (
    <nav className="pager" aria-label={label}>
      <p role="status">
        {offset + 1}–{last} of {total}
      </p>
      <Link
        to="."
        search={(prev) => ({ ...prev, offset: Math.max(0, offset - PAGE_SIZE) || undefined })}
        disabled={offset === 0}
        className="button small"
      >
        {previous}
      </Link>
      <Link to="." search={(prev) => ({ ...prev, offset: offset + PAGE_SIZE })} disabled={last >= total} className="button small">
        {next}
      </Link>
    </nav>
  );
}

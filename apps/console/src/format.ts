/** A time from the API (ISO 8601) in the reader's locale and zone; `none` when there is none (never used, not yet). */
export const when = (iso: string | null, none = '—') => (iso ? new Date(iso).toLocaleString() : none);

/** A time from the API (ISO 8601) in the reader's locale and zone; `none` when there is none (never used, not yet). */
export const when = (iso: string | null, none = '—') => (iso ? new Date(iso).toLocaleString() : none);

/** The items of a list typed into one field, separated by spaces, commas or new lines: origins, URIs, scopes. */
export const splitList = (value: string) => value.split(/[\s,]+/).filter(Boolean);

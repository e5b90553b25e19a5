/** ISO 8601 UTC for a Date column that may be null. */
export const iso = (value: Date | null | undefined): string | null => (value ? value.toISOString() : null);

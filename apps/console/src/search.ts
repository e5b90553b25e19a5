/** Search-parameter readers: the URL holds the page's state, and anything malformed in it reads as absent. */
export const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value.slice(0, 320) : undefined;

export const offset = (value: unknown): number | undefined => {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  return Number.isInteger(n) && n > 0 && n <= 10_000_000 ? n : undefined;
};

export const oneOf =
  <T extends string>(values: readonly T[]) =>
  (value: unknown): T | undefined =>
    values.includes(value as T) ? (value as T) : undefined;

/** Items per page of a paged list. */
export const PAGE_SIZE = 25;

/** The tabs of a user's page (`?tab=`). */
export const USER_TABS = ['profile', 'sessions', 'organizations', 'factors'] as const;
export type UserTab = (typeof USER_TABS)[number];

/** The dashboard's periods, in days (`?days=`; 30 when absent). */
export const DASHBOARD_RANGES = [7, 30, 90] as const;
export type DashboardRange = (typeof DASHBOARD_RANGES)[number];
export const dashboardRange = (value: unknown): DashboardRange | undefined => {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  return DASHBOARD_RANGES.includes(n as DashboardRange) ? (n as DashboardRange) : undefined;
};

/** An ISO time in the URL (`?since=`), kept only when it parses. */
export const isoTime = (value: unknown): string | undefined =>
  typeof value === 'string' && value.length <= 40 && !Number.isNaN(Date.parse(value)) ? value : undefined;

/** `?live=1`: the events page polls for newer events. */
export const flag = (value: unknown): true | undefined =>
  value === true || value === 1 || value === '1' || value === 'true' ? true : undefined;

/** The events page's state (`/apps/$appId/events`). */
export interface EventsSearch {
  action?: string;
  actor?: string;
  since?: string;
  until?: string;
  offset?: number;
  live?: true;
}

/** An id in the URL (`?endpoint=`), kept only when it is a UUID. */
export const uuid = (value: unknown): string | undefined =>
  typeof value === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value) ? value : undefined;

/** The webhooks page's state: the endpoint whose deliveries show, their page, and the delivery whose attempts show. */
export interface WebhooksSearch {
  endpoint?: string;
  delivery?: string;
  offset?: number;
}

/** A message template's key in the URL (`?key=magic_link`), kept only when it has a key's shape. */
export const templateKey = (value: unknown): string | undefined =>
  typeof value === 'string' && /^[a-z][a-z0-9_]{0,63}$/.test(value) ? value : undefined;

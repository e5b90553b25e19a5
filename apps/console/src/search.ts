import type { Outputs } from './api.ts';

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
export const USER_TABS = ['profile', 'sessions', 'organizations', 'factors', 'identities', 'grants', 'events'] as const;
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

/** The tabs of an organization's page (`?tab=`; members when absent). */
export const ORGANIZATION_TABS = ['members', 'invitations', 'subscription', 'domains', 'directories', 'portal'] as const;
export type OrganizationTab = (typeof ORGANIZATION_TABS)[number];

/** An invitation's status, as the invitations tab filters by it (`?status=`). */
export const INVITATION_STATUSES = ['pending', 'accepted', 'revoked', 'expired'] as const;
export type InvitationStatus = (typeof INVITATION_STATUSES)[number];

/** An organization's page: its tab; the page of a paged list (members, invitations) and the invitations' filter. */
export interface OrganizationSearch {
  tab?: OrganizationTab;
  offset?: number;
  status?: InvitationStatus;
}

/** Where a new SSO connection comes from (`?source=` on the SSO connections page; a metadata file when absent). */
export const SSO_SOURCES = ['file', 'url', 'xml', 'manual'] as const;
export type SsoSource = (typeof SSO_SOURCES)[number];

/** A social provider's name, as the API answers it (the list below is checked against it). */
type ProviderName = Outputs['providers']['list'][number]['provider'];

/** The social providers, in `providers.list`'s order (`?provider=`: the one being configured). */
export const SOCIAL_PROVIDERS = [
  'google',
  'github',
  'microsoft',
  'apple',
  'gitlab',
  'discord',
  'slack',
  'linkedin',
  'oidc',
] as const satisfies readonly ProviderName[];
export type SocialProvider = (typeof SOCIAL_PROVIDERS)[number];

/** The OAuth clients page's state: the client whose edit form is open. */
export interface OAuthClientsSearch {
  client?: string;
}

/**
 * The authorization page's state (`/apps/$appId/authz`): the tuple list's filters and page, and the explorer's
 * question — a check (object, relation, subject) or an expand (object, relation) — asked when it is in the URL.
 */
export interface AuthzSearch {
  namespace?: string;
  object?: string;
  relation?: string;
  subject?: string;
  offset?: number;
  ask?: AuthzQuestion;
  ask_object?: string;
  ask_relation?: string;
  ask_subject?: string;
}
export const AUTHZ_QUESTIONS = ['check', 'expand'] as const;
export type AuthzQuestion = (typeof AUTHZ_QUESTIONS)[number];

/** The operators page's state (`/operators`): its page of the list. */
export interface OperatorsSearch {
  offset?: number;
}
/** A message template's key in the URL (`?key=magic_link`), kept only when it has a key's shape. */
export const templateKey = (value: unknown): string | undefined =>
  typeof value === 'string' && /^[a-z][a-z0-9_]{0,63}$/.test(value) ? value : undefined;

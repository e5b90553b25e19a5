import { type Context, header, type Services } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { AppError } from '../../errors.ts';
import type { Application } from './application.entity.ts';

export const CORS_ALLOWED_HEADERS = 'authorization, content-type, x-application-id, x-request-id, x-gatehouse-client';
export const CORS_EXPOSED_HEADERS = 'x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset';

/** The service's own origin (its hosted pages call the API) is always allowed; `null` never is. */
export const ownOrigin = (services: Services): string => new URL(services.baseUrl).origin;

/**
 * A URL on the application's own hosted pages (`{base}/a/{id}/…`, no credentials in it): always a place the browser
 * may be sent back to (a magic link, an SSO or social sign-in's return), whatever the allowed origins.
 */
export const isOwnHostedPage = (services: Services, applicationId: string, url: URL): boolean =>
  url.origin === ownOrigin(services) && !url.username && !url.password && url.pathname.startsWith(`/a/${applicationId}/`);

/**
 * The application whose verified custom domain `hostname` is (as a URL's hostname: lower-case, punycode), or
 * undefined. The hosted pages answer at the root of each verified domain, and sign-ins started there return there.
 */
export async function applicationOfVerifiedDomain(em: EntityManager, hostname: string): Promise<string | undefined> {
  const [row] = await em.execute<Array<{ application_id: string }>>(
    `select application_id from custom_domains where domain = ? and status = 'verified'`,
    [hostname],
  );
  return row?.application_id;
}

/**
 * `isOwnHostedPage`, or a page at the root of one of the application's verified custom domains (where the same pages
 * are served), with the service's scheme: where an SSO or social sign-in started on those pages returns.
 */
export async function isHostedPageOf(em: EntityManager, services: Services, applicationId: string, url: URL): Promise<boolean> {
  if (isOwnHostedPage(services, applicationId, url)) return true;
  if (url.username || url.password || url.protocol !== new URL(services.baseUrl).protocol) return false;
  return (await applicationOfVerifiedDomain(em, url.hostname)) === applicationId;
}

/**
 * CORS for end-user routes, on the actual request: the `Origin` must be one of the resolved application's allowed
 * origins, compared exactly (scheme, host, port). A request without `Origin` is not a browser's and is not subject
 * to CORS. Allowed requests get the headers that let the browser read the answer.
 */
export function allowOrigin(ctx: Context, application: Application): void {
  const origin = header(ctx, 'origin');
  if (origin === undefined) return;
  if (origin === 'null' || !(application.allowedOrigins.includes(origin) || origin === ownOrigin(ctx.services))) {
    throw new AppError('origin_not_allowed', 'This origin is not allowed for the application');
  }
  Object.assign(ctx.response.headers, {
    'access-control-allow-origin': origin,
    'access-control-expose-headers': CORS_EXPOSED_HEADERS,
    vary: 'Origin',
  });
}

/**
 * `allowOrigin`'s verdict as a condition on an application row of a statement (`alias`), for a statement that reads
 * its application itself: true without an `Origin` or from the service's own origin, else when the origin is one of
 * the row's allowed origins, compared exactly (`null` never is).
 */
export function originCondition(ctx: Context): { sql: (alias: string) => string; params: unknown[] } {
  const origin = header(ctx, 'origin');
  return {
    sql: (alias) => `(?::boolean or ${alias}.allowed_origins @> jsonb_build_array(?::text))`,
    params: [origin === undefined || origin === ownOrigin(ctx.services), origin === 'null' ? null : (origin ?? null)],
  };
}

const PREFLIGHT_CACHE_MS = 10_000;
/** Per server (a process of tests runs several, each on its own database), by origin. */
const preflightCaches = new WeakMap<Services, Map<string, { allowed: boolean; at: number }>>();

/**
 * A preflight carries no `x-application-id`, so it is allowed when the origin belongs to any application (CONTRACT
 * §2); the actual request is then checked against its own application. Answers are cached for 10 s per server.
 */
export async function preflightAllowed(em: EntityManager, services: Services, origin: string): Promise<boolean> {
  if (origin === 'null') return false;
  if (origin === ownOrigin(services)) return true;
  let preflightCache = preflightCaches.get(services);
  if (!preflightCache) {
    preflightCache = new Map();
    preflightCaches.set(services, preflightCache);
  }
  const cached = preflightCache.get(origin);
  if (cached && Date.now() - cached.at < PREFLIGHT_CACHE_MS) return cached.allowed;
  const rows = await em.execute('select 1 from applications where allowed_origins @> ?::jsonb limit 1', [
    JSON.stringify([origin]),
  ]);
  const allowed = rows.length > 0;
  if (preflightCache.size > 10_000) preflightCache.clear();
  preflightCache.set(origin, { allowed, at: Date.now() });
  return allowed;
}

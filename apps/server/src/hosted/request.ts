import {
  type Application,
  applicationById,
  applicationOfVerifiedDomain,
  appRouter,
  type BrowserSession,
  createContext,
  errorBody,
  findBrowserSession,
  ownOrigin,
  type Services,
  settingsOf,
} from '@gatehouse/api';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type MessageKey, negotiateLocale, translator } from './catalog.ts';
import type { Frame } from './page.ts';
import { browserToken, csrfToken } from './state.ts';

export type Caller = ReturnType<typeof appRouter.createCaller>;
export type SignInResult = Awaited<ReturnType<Caller['auth']['magicLink']['verify']>>;
export type Form = Record<string, string | undefined>;

/** One hosted request: its application, how its pages are drawn, its CSRF token, and the API as this browser. */
export interface Hosted {
  services: Services;
  request: FastifyRequest;
  reply: FastifyReply;
  application: Application;
  frame: Frame;
  csrf: string;
  /** The procedures, called as this browser on the application's hosted pages (the same ones every client calls). */
  api: Caller;
  /** Where the application's pages are on this host: `/a/{id}`, or `` at the root of its custom domain. */
  base: string;
  /** The application's verified custom domain the pages were opened on (undefined on the service's own host). */
  domain: string | undefined;
}

export const bareFrame = (locale: ReturnType<typeof negotiateLocale>, reply: FastifyReply): Frame => ({
  appName: 'Gatehouse',
  branding: { display_name: null, logo_url: null, primary_color: null, theme: 'auto', support_email: null },
  locale,
  t: translator(locale),
  nonce: reply.cspNonce,
});

/**
 * The application of `/a/{id}/…` — or, for the same pages at the root of a host, the application whose verified
 * custom domain the host is; or `applicationId` (the console's pages, which are the console application's) — and all
 * a page needs with it; undefined for an unknown application.
 */
export async function hostedRequest(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  applicationId = (request.params as { applicationId?: string }).applicationId,
): Promise<Hosted | undefined> {
  const domain = applicationId === undefined ? hostnameOf(services, request.headers.host) : undefined;
  const id = domain ? await applicationOfVerifiedDomain(services.orm.em.fork(), domain) : applicationId?.toLowerCase();
  const query = request.query as Record<string, string | undefined>;
  const locale = negotiateLocale(query.ui_locales, request.headers['accept-language']);
  const application = id ? await applicationById(services.orm.em.fork(), id) : undefined;
  if (!application) return undefined;
  const ctx = createContext(services, {
    requestId: request.id,
    // The pages' own origin: the procedures' origin check passes for them (CSRF was checked on every post).
    headers: {
      'x-application-id': application.id,
      origin: ownOrigin(services),
      'user-agent': request.headers['user-agent'],
    },
    ip: request.ip,
    log: request.log as never,
  });
  return {
    services,
    request,
    reply,
    application,
    frame: {
      appName: application.name,
      branding: settingsOf(application).branding,
      locale,
      t: translator(locale),
      nonce: reply.cspNonce,
    },
    csrf: csrfToken(services, request, reply, application.id),
    api: appRouter.createCaller(ctx),
    base: domain ? '' : `/a/${application.id}`,
    domain,
  };
}

/** The procedures as the signed-in person of this browser (an access token of its session). */
export function signedInApi(h: Hosted, accessToken: string): Caller {
  const ctx = createContext(h.services, {
    requestId: h.request.id,
    headers: {
      'x-application-id': h.application.id,
      origin: ownOrigin(h.services),
      authorization: `Bearer ${accessToken}`,
      'user-agent': h.request.headers['user-agent'],
    },
    ip: h.request.ip,
    log: h.request.log as never,
  });
  return appRouter.createCaller(ctx);
}

export const send = (h: Hosted, status: number, body: string) =>
  h.reply.code(status).type('text/html').header('cache-control', 'no-store').send(body);
export const redirect = (h: Hosted, location: string) => h.reply.code(303).header('cache-control', 'no-store').redirect(location);

/** The browser's live session for this application, if any. */
export async function currentSession(h: Hosted): Promise<BrowserSession | undefined> {
  const token = browserToken(h.request, h.application.id);
  return token ? findBrowserSession(h.services.orm.em.fork(), h.application, token) : undefined;
}

/** The catalog's message for an API error on a page (the API's own messages are English and for developers). */
export function messageFor(error: unknown, fallback: MessageKey): { status: number; key: MessageKey } {
  const { code } = errorBody(error);
  switch (code) {
    case 'rate_limited':
      return { status: 429, key: 'error.rate_limited' };
    case 'access_denied':
      return { status: 403, key: 'error.access_denied' };
    case 'sso_required':
      return { status: 403, key: 'error.sso_required' };
    case 'internal_error':
    case 'service_unavailable':
      return { status: 503, key: 'error.generic' };
    default:
      return { status: code === 'validation_failed' ? 422 : 401, key: fallback };
  }
}

/**
 * The host name a request's `Host` names, as custom domains are stored (the URL parser's reading: port dropped,
 * lower-cased, punycode); undefined for the service's own host, which never serves the root pages (they are for the
 * applications' custom domains), or a Host that is no name.
 */
export function hostnameOf(services: Services, host: string | undefined): string | undefined {
  if (!host || host === new URL(services.baseUrl).host) return undefined;
  try {
    return new URL(`http://${host}`).hostname;
  } catch {
    return undefined;
  }
}

/** The provider's view of this browser: its cookies, and the custom domain the pages are on. */
export const providerBrowser = (h: Hosted) => ({ cookie: h.request.headers.cookie, domain: h.domain });

/** How a feature's routes are declared: `open` for a page, `post` for a form (its CSRF token checked first). */
export interface Routes {
  open(handler: (h: Hosted) => Promise<unknown>): (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  post(handler: (h: Hosted, form: Form) => Promise<unknown>): (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

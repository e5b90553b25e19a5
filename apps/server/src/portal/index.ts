import cookie from '@fastify/cookie';
import helmet from '@fastify/helmet';
import {
  applicationById,
  createContext,
  describeError,
  endPortalSession,
  findPortalSession,
  openPortalLink,
  ownOrigin,
  PORTAL_SESSION_TTL_S,
  type PortalIntent,
  portalPath,
  type Services,
  settingsOf,
  withActor,
} from '@gatehouse/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { negotiateLocale, translator } from '../hosted/catalog.ts';
import { PAGE_HEADERS } from '../hosted/index.ts';
import { errorPage } from '../hosted/pages.ts';
import { bareFrame } from '../hosted/request.ts';
import { csrfToken, csrfValid } from '../hosted/state.ts';
import { registerAuditLogPages } from './intents/audit-log.ts';
import { registerDirectoryPages } from './intents/directory.ts';
import { registerDomainsPages } from './intents/domains.ts';
import { registerSsoPages } from './intents/sso.ts';
import { messagePage, type Portal, type PortalForm, type PortalRoutes, portalSend, SESSION_COOKIE } from './portal.ts';

/** Where each intent's pages start (under `/portal`). */
export const INTENT_PATHS: Record<PortalIntent, string> = {
  sso: '/sso',
  directory: '/directory',
  domains: '/domains',
  audit_log: '/audit-log',
};

const cookieOptions = (services: Services, maxAge?: number) => ({
  path: portalPath,
  httpOnly: true,
  sameSite: 'lax' as const,
  secure: services.baseUrl.startsWith('https:'),
  ...(maxAge === undefined ? {} : { maxAge }),
});

/**
 * The admin portal (CONTRACT §8) under `{GATEHOUSE_BASE_URL}/portal/`: a link opens once (`/portal/open?token=…`) and
 * becomes a portal session (the `gh_portal` cookie, HttpOnly, SameSite=Lax, Secure on https, path `/portal`, at most
 * an hour) that reaches one organization and one intent. The organization never comes from a URL: every page reads it
 * from the session, and each intent's file registers its pages with the intent they belong to. Drawn with the hosted
 * pages' frame, catalog, CSRF tokens and CSP.
 */
export async function registerPortal(app: FastifyInstance, services: Services) {
  await app.register(async (pages) => {
    await pages.register(cookie);
    await pages.register(helmet, PAGE_HEADERS);
    pages.removeAllContentTypeParsers();
    // An IdP's metadata document may be pasted into a form: up to 600 KiB (the API takes 512 KiB of XML).
    pages.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: 1024 * 1024 },
      (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
    );
    pages.setErrorHandler((error, request, reply) => {
      const status = (error as { statusCode?: number }).statusCode;
      if (status === undefined || status >= 500) request.log.error({ err: describeError(error) }, 'unhandled error');
      const locale = negotiateLocale(undefined, request.headers['accept-language']);
      return reply
        .code(status && status < 500 ? status : 500)
        .type('text/html')
        .header('cache-control', 'no-store')
        .send(errorPage(bareFrame(locale, reply), request.id, 'error.generic'));
    });

    const bare = (
      request: FastifyRequest,
      reply: FastifyReply,
      status: number,
      key: 'portal.link_invalid' | 'portal.ended' | 'error.not_found',
    ) => {
      const locale = negotiateLocale((request.query as { ui_locales?: string }).ui_locales, request.headers['accept-language']);
      return reply
        .code(status)
        .type('text/html')
        .header('cache-control', 'no-store')
        .send(errorPage(bareFrame(locale, reply), request.id, key));
    };

    /** Opening a link: spent once, its session's cookie set, on to the intent's first page. */
    pages.get(`${portalPath}/open`, async (request, reply) => {
      const { token } = request.query as { token?: string };
      const opened = typeof token === 'string' ? await openPortalLink(services.orm.em.fork(), token) : undefined;
      if (!opened) return bare(request, reply, 404, 'portal.link_invalid');
      reply.setCookie(SESSION_COOKIE, opened.sessionToken, cookieOptions(services, PORTAL_SESSION_TTL_S));
      return reply.code(303).header('cache-control', 'no-store').redirect(`${portalPath}${INTENT_PATHS[opened.session.intent]}`);
    });

    /** The portal request of a page of `intent`: refused (and nothing run) without a live session of that intent. */
    const portalRequest = async (
      intent: PortalIntent,
      request: FastifyRequest,
      reply: FastifyReply,
    ): Promise<Portal | FastifyReply> => {
      const token = request.cookies[SESSION_COOKIE];
      const em = services.orm.em.fork();
      const session = await findPortalSession(em, token);
      if (!session || !token) return bare(request, reply, 401, 'portal.ended');
      // Another intent's page is not reachable: the same answer as a page that does not exist.
      if (session.intent !== intent) return bare(request, reply, 404, 'error.not_found');
      const application = await applicationById(em, session.applicationId);
      if (!application) return bare(request, reply, 401, 'portal.ended');
      const query = request.query as Record<string, string | undefined>;
      const locale = negotiateLocale(query.ui_locales, request.headers['accept-language']);
      const ctx = createContext(services, {
        requestId: request.id,
        headers: { 'x-application-id': application.id, origin: ownOrigin(services), 'user-agent': request.headers['user-agent'] },
        ip: request.ip,
        log: request.log as never,
      });
      const organization = (
        await em.execute<Array<{ name: string }>>('select name from organizations where id = ?', [session.organizationId])
      )[0];
      return {
        services,
        request,
        reply,
        session,
        sessionToken: token,
        organizationName: organization?.name ?? '',
        ctx: { ...ctx, application, portal: session },
        frame: {
          appName: application.name,
          branding: settingsOf(application).branding,
          locale,
          t: translator(locale),
          nonce: reply.cspNonce,
        },
        // The CSRF token is bound to this portal session as well as to the browser.
        csrf: csrfToken(services, request, reply, `portal:${session.id}`),
      };
    };

    const isPortal = (value: Portal | FastifyReply): value is Portal => 'session' in value;
    /** The audit log's actor of a portal page's work: the portal session (ARCHITECTURE "The audit log"). */
    const asPortal = <T>(portal: Portal, work: () => T): T =>
      withActor({ type: 'portal', id: portal.session.id }, work, {
        ip: portal.request.ip,
        userAgent: portal.request.headers['user-agent'] ?? null,
      });
    const routes: PortalRoutes = {
      open: (intent, handler) => async (request, reply) => {
        const portal = await portalRequest(intent, request, reply);
        return isPortal(portal) ? asPortal(portal, () => handler(portal)) : portal;
      },
      post: (intent, handler) => async (request, reply) => {
        const portal = await portalRequest(intent, request, reply);
        if (!isPortal(portal)) return portal;
        const form = (request.body ?? {}) as PortalForm;
        if (!csrfValid(services, request, `portal:${portal.session.id}`, form.csrf)) {
          return portalSend(portal, 403, errorPage(portal.frame, request.id, 'error.csrf'));
        }
        return asPortal(portal, () => handler(portal, form));
      },
    };

    /** "Done": the session ends at once; back to the app when the link named where. */
    for (const intent of Object.keys(INTENT_PATHS) as PortalIntent[]) {
      pages.post(
        `${portalPath}${INTENT_PATHS[intent]}/done`,
        routes.post(intent, async (p) => {
          await endPortalSession(services.orm.em.fork(), p.sessionToken);
          p.reply.clearCookie(SESSION_COOKIE, cookieOptions(services));
          if (p.session.returnUrl) return p.reply.code(303).header('cache-control', 'no-store').redirect(p.session.returnUrl);
          return portalSend(p, 200, messagePage(p.frame, p.frame.t('portal.closed.title'), p.frame.t('portal.closed.body')));
        }),
      );
    }
    registerSsoPages(pages, routes);
    registerDirectoryPages(pages, routes);
    registerDomainsPages(pages, routes);
    registerAuditLogPages(pages, routes);
  });
}

import cookie from '@fastify/cookie';
import helmet, { type FastifyHelmetOptions } from '@fastify/helmet';
import { describeError, isDatabaseUnreachable, OUTAGE_RETRY_AFTER_S, type Services } from '@gatehouse/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { registerAccountRoutes } from './account.ts';
import { negotiateLocale } from './catalog.ts';
import { registerFederatedRoutes } from './federated-routes.ts';
import { registerInvitationRoutes } from './invitations.ts';
import { authorizeInteraction, continueInteraction } from './oauth2.ts';
import { errorPage } from './pages.ts';
import { registerPasskeyRoutes } from './passkeys.ts';
import { bareFrame, type Form, type Hosted, hostedRequest, type Routes, send } from './request.ts';
import {
  acceptConsent,
  confirmMagicLink,
  showMagicLink,
  showSignIn,
  signOut,
  startSignIn,
  verifySecondFactor,
  waitForLink,
} from './sign-in.ts';
import { csrfValid } from './state.ts';

/**
 * The headers of every hosted page and of the admin portal (CONTRACT §9): a nonce CSP that nothing may frame, no
 * framing, and same-origin referrers.
 */
export const PAGE_HEADERS: FastifyHelmetOptions = {
  enableCSPNonces: true,
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      // The logo may be an https URL of the customer's.
      imgSrc: ["'self'", 'https:'],
      connectSrc: ["'self'"],
      baseUri: ["'none'"],
      frameAncestors: ["'none'"],
      // No form-action: a sign-in form's answer redirects to the client's registered redirect URI (the portal's
      // connection test, to the customer's IdP), and browsers check form-action against every redirect of a
      // submission. The forms themselves are ours.
    },
  },
  frameguard: { action: 'deny' },
  // Not no-referrer: under it browsers send `Origin: null` with a form post, which csrfValid refuses. same-origin
  // sends no referrer to other sites (the magic link's token stays here) and the real Origin with our own posts.
  referrerPolicy: { policy: 'same-origin' },
};

/**
 * The hosted pages of every application (CONTRACT §9) under `/a/{application_id}/`: server-rendered HTML, forms that
 * post back here with a CSRF token, a CSP with nonces and no framing. They hold no rule of their own: each step calls
 * the same procedure any client calls (`api`), and a sign-in that completes becomes this browser's session
 * (`gh_session_<id>`, browser-sessions.ts in the API).
 */
export async function registerHostedPages(app: FastifyInstance, services: Services) {
  await app.register(async (pages) => {
    await pages.register(cookie);
    await pages.register(helmet, PAGE_HEADERS);
    // Every page of `/a/{id}/…` is also at the root of the applications' verified custom domains (the application is
    // then the host's: request.ts).
    pages.addHook('onRoute', (route) => {
      const prefix = '/a/:applicationId/';
      // The root route's own onRoute call returns here: its path does not start with the prefix. HEAD routes are
      // made by fastify for each GET, the root's included.
      if (route.url.startsWith(prefix) && route.method !== 'HEAD') {
        pages.route({ ...route, url: route.url.slice(prefix.length - 1) });
      }
    });
    pages.removeAllContentTypeParsers();
    pages.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: 64 * 1024 },
      (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
    );
    pages.setErrorHandler((error, request, reply) => {
      // The database cannot be reached: 503 with retry-after, the outage logged once for the process.
      const unreachable = isDatabaseUnreachable(error);
      if (unreachable) {
        services.outage.report(error);
        reply.header('retry-after', String(OUTAGE_RETRY_AFTER_S));
      }
      const status = unreachable ? 503 : (error as { statusCode?: number }).statusCode;
      if (status === undefined || (status >= 500 && !unreachable)) {
        request.log.error({ err: describeError(error) }, 'unhandled error');
      }
      const locale = negotiateLocale(undefined, request.headers['accept-language']);
      return reply
        .code(status && (status < 500 || unreachable) ? status : 500)
        .type('text/html')
        .header('cache-control', 'no-store')
        .send(errorPage(bareFrame(locale, reply), request.id, 'error.generic'));
    });

    const open: Routes['open'] =
      (handler: (h: Hosted) => Promise<unknown>) => async (request: FastifyRequest, reply: FastifyReply) => {
        const hosted = await hostedRequest(services, request, reply);
        if (hosted) return handler(hosted);
        const locale = negotiateLocale((request.query as { ui_locales?: string }).ui_locales, request.headers['accept-language']);
        return reply
          .code(404)
          .type('text/html')
          .header('cache-control', 'no-store')
          .send(errorPage(bareFrame(locale, reply), request.id, 'error.not_found'));
      };
    /** A form post: its CSRF token must be this browser's, else 403 and nothing happens. */
    const post: Routes['post'] = (handler) =>
      open(async (h) => {
        const form = (h.request.body ?? {}) as Form;
        if (!csrfValid(services, h.request, h.application.id, form.csrf)) {
          return send(h, 403, errorPage(h.frame, h.request.id, 'error.csrf', `${h.base}/sign-in`));
        }
        return handler(h, form);
      });

    pages.get('/a/:applicationId/sign-in', open(showSignIn));
    pages.post('/a/:applicationId/sign-in', post(startSignIn));
    pages.get('/a/:applicationId/sign-in/wait', open(waitForLink));
    // Under /sign-in: the provider's interaction cookie is scoped to that path.
    pages.post('/a/:applicationId/sign-in/authorize', post(authorizeInteraction));
    pages.post('/a/:applicationId/sign-in/continue', post(continueInteraction));
    pages.get('/a/:applicationId/magic-link', open(showMagicLink));
    pages.post('/a/:applicationId/magic-link', post(confirmMagicLink));
    pages.post('/a/:applicationId/mfa', post(verifySecondFactor));
    pages.post('/a/:applicationId/consent', post(acceptConsent));
    pages.post('/a/:applicationId/sign-out', post(signOut));
    registerAccountRoutes(pages, { open, post });
    registerPasskeyRoutes(pages, { open, post });
    registerFederatedRoutes(pages, { open, post });
    registerInvitationRoutes(pages, { open, post });
  });
}

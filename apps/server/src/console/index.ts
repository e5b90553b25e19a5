import { createHash, randomBytes } from 'node:crypto';
import cookie from '@fastify/cookie';
import helmet, { type FastifyHelmetOptions } from '@fastify/helmet';
import {
  addFirstOperator,
  attachBrowserSession,
  consoleClient,
  consoleSession,
  consoleSetupTokenValid,
  describeError,
  ERROR_CODES,
  type ErrorBody,
  endBrowserSession,
  errorBody,
  hasOperators,
  type Services,
} from '@gatehouse/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { negotiateLocale } from '../hosted/catalog.ts';
import { consoleSetupPage, errorPage, magicLinkPage } from '../hosted/pages.ts';
import { bareFrame, type Hosted, hostedRequest, redirect, send } from '../hosted/request.ts';
import { browserToken, clearBrowserToken, csrfValid, setBrowserToken } from '../hosted/state.ts';
import { consoleAssets } from './assets.ts';

/**
 * The console's page (apps/console, a single-page app) under `{GATEHOUSE_BASE_URL}/console/`, and the routes it signs
 * in with. Operators sign in on Gatehouse's own hosted pages, as people of the reserved console application: the
 * console sends the browser through that application's OpenID provider (code + PKCE, its public client), whose
 * sign-in and step-up pages are the hosted ones, and the browser comes back signed in to the console application —
 * its browser session (the hosted pages' HttpOnly cookie). The page never holds a refresh token: it asks
 * `POST /console/session` for a short-lived access token of that session (the console credential, checked by the
 * server on every call against the operator's roles), again before it expires.
 */

/** The sign-in in progress: its OpenID state and PKCE verifier, and where the console goes back to. */
interface ConsoleFlow {
  state: string;
  verifier: string;
  return: string;
  exp: number;
}

const FLOW_COOKIE = 'gh_console_flow';
const FLOW_CONTEXT = 'console-flow';
const FLOW_TTL_S = 15 * 60;
const MAGIC_LINK_TOKEN = /^ml_[A-Za-z0-9]{20,100}$/;

/**
 * The console's headers: its script and style are its own files (no inline code), it calls only this origin, and
 * nothing may frame it. The nonces are for the pages drawn like the hosted ones (a link's confirmation, an error).
 */
const CONSOLE_HEADERS: FastifyHelmetOptions = {
  enableCSPNonces: true,
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", 'data:', 'https:'],
      fontSrc: ["'self'"],
      connectSrc: ["'self'"],
      manifestSrc: ["'self'"],
      baseUri: ["'none'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
    },
  },
  frameguard: { action: 'deny' },
  referrerPolicy: { policy: 'same-origin' },
};

/** Where the console goes back to after signing in: a path of the console's own, nothing else (no open redirect). */
export function consoleReturn(value: unknown): string {
  if (typeof value !== 'string' || !/^\/console(\/|$)/.test(value) || /[\\\s]|\/\/|\/\.\.?(\/|$)/.test(value)) {
    return '/console/';
  }
  return value.length > 2048 ? '/console/' : value;
}

/**
 * Signs this browser in to the console with a console magic link (an operator's one-time link): the console
 * application's `auth.magicLink.verify`, its session this browser's (the hosted pages' cookie), then the console's
 * sign-in, which finishes at once. A person with a second factor (or a link that no longer works) signs in on the
 * hosted page instead.
 */
async function signInWithLink(h: Hosted, token: string) {
  let result: Awaited<ReturnType<typeof h.api.auth.magicLink.verify>>;
  try {
    result = await h.api.auth.magicLink.verify({ token });
  } catch {
    return send(h, 401, errorPage(h.frame, h.request.id, 'error.link_invalid', '/console/sign-in'));
  }
  if (result.status === 'complete') {
    const previous = browserToken(h.request, h.application.id);
    const session = await attachBrowserSession(h.services.orm.em.fork(), h.application.id, result.tokens.refresh_token, previous);
    if (session) setBrowserToken(h.services, h.reply, h.application.id, session);
  }
  return redirect(h, '/console/sign-in');
}

export async function registerConsole(app: FastifyInstance, services: Services) {
  const cookieOptions = (maxAge?: number) => ({
    path: '/console',
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: services.baseUrl.startsWith('https:'),
    ...(maxAge === undefined ? {} : { maxAge }),
  });
  const readFlow = (request: FastifyRequest): ConsoleFlow | undefined => {
    const sealed = request.cookies[FLOW_COOKIE];
    if (!sealed) return undefined;
    try {
      // Sealed by this service's master key (writeFlow): the shape is ours.
      const flow = JSON.parse(services.secretBox.decrypt(sealed, FLOW_CONTEXT)) as ConsoleFlow;
      return flow.exp > Date.now() ? flow : undefined;
    } catch {
      return undefined;
    }
  };
  const own = new URL(services.baseUrl).origin;
  /** The console's JSON routes answer only the console's own page: same origin, JSON (a form cannot send it). */
  const fromConsole = (request: FastifyRequest) =>
    request.headers.origin === own && (request.headers['content-type'] ?? '').startsWith('application/json');
  const fail = (request: FastifyRequest, reply: FastifyReply, body: ErrorBody) =>
    reply
      .code(ERROR_CODES[body.code].status)
      .header('cache-control', 'no-store')
      .type('application/json')
      .send({ success: false, data: null, error: body, meta: { timestamp: new Date().toISOString(), request_id: request.id } });
  const consolePage = async (request: FastifyRequest, reply: FastifyReply) => {
    const client = await consoleClient(services);
    return client ? hostedRequest(services, request, reply, client.applicationId) : undefined;
  };

  await app.register(async (routes) => {
    await routes.register(cookie);
    await routes.register(helmet, CONSOLE_HEADERS);
    routes.removeAllContentTypeParsers();
    routes.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: 16 * 1024 },
      (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
    );
    routes.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: 1024 }, (_req, _body, done) =>
      done(null, {}),
    );
    routes.setErrorHandler((error, request, reply) => {
      const status = (error as { statusCode?: number }).statusCode;
      if (status === undefined || status >= 500) request.log.error({ err: describeError(error) }, 'unhandled error');
      const locale = negotiateLocale(undefined, request.headers['accept-language']);
      return reply
        .code(status && status < 500 ? status : 500)
        .type('text/html')
        .header('cache-control', 'no-store')
        .send(errorPage(bareFrame(locale, reply), request.id, 'error.generic'));
    });

    /**
     * Signs in (or steps up, `aal=2`): to the console application's OpenID provider, whose hosted pages sign the
     * person in and come back to `/console/callback`. With `token` (an operator's one-time link), the link's
     * confirmation first: opening it consumes nothing.
     */
    routes.get('/console/sign-in', async (request, reply) => {
      const query = request.query as Record<string, string | undefined>;
      const client = await consoleClient(services);
      if (!client) return reply.code(503).header('cache-control', 'no-store').send();
      if (query.token !== undefined) {
        const h = await consolePage(request, reply);
        if (!h) return reply.code(503).send();
        return send(h, 200, magicLinkPage(h, MAGIC_LINK_TOKEN.test(query.token) ? query.token : '', '/console/sign-in'));
      }
      const flow: ConsoleFlow = {
        state: randomBytes(24).toString('base64url'),
        verifier: randomBytes(32).toString('base64url'),
        return: consoleReturn(query.return),
        exp: Date.now() + FLOW_TTL_S * 1000,
      };
      reply.setCookie(FLOW_COOKIE, services.secretBox.encrypt(JSON.stringify(flow), FLOW_CONTEXT), cookieOptions(FLOW_TTL_S));
      const authorize = new URL(`${services.baseUrl}/oauth2/${client.applicationId}/auth`);
      authorize.search = new URLSearchParams({
        client_id: client.clientId,
        response_type: 'code',
        redirect_uri: `${services.baseUrl}/console/callback`,
        scope: 'openid',
        state: flow.state,
        code_challenge: createHash('sha256').update(flow.verifier).digest('base64url'),
        code_challenge_method: 'S256',
        ...(query.aal === '2' ? { acr_values: 'urn:gatehouse:aal2' } : {}),
      }).toString();
      return reply.code(303).header('cache-control', 'no-store').redirect(authorize.toString());
    });

    /**
     * An operator's one-time link, confirmed: the console application's magic link verified, and its session this
     * browser's (the hosted pages' cookie), then the sign-in above finishes at once. A person with a second factor (or
     * a link that no longer works) signs in on the hosted page instead.
     */
    routes.post('/console/sign-in', async (request, reply) => {
      const h = await consolePage(request, reply);
      if (!h) return reply.code(503).send();
      const form = (request.body ?? {}) as Record<string, string | undefined>;
      if (!csrfValid(services, request, h.application.id, form.csrf)) {
        return send(h, 403, errorPage(h.frame, request.id, 'error.csrf', '/console/sign-in'));
      }
      return signInWithLink(h, form.token ?? '');
    });

    /**
     * The first operator's set-up, from the link the start prints while the console has none: an email address makes
     * its person an instance-wide owner, signed in at once. Once an operator exists (or after 24 hours) the link is dead.
     */
    routes.get('/console/setup', async (request, reply) => {
      const h = await consolePage(request, reply);
      if (!h) return reply.code(503).send();
      const { token } = request.query as Record<string, string | undefined>;
      if (!token || !consoleSetupTokenValid(services, token) || (await hasOperators(services.orm))) {
        return send(h, 410, errorPage(h.frame, request.id, 'console.setup.invalid'));
      }
      return send(h, 200, consoleSetupPage(h, token));
    });
    routes.post('/console/setup', async (request, reply) => {
      const h = await consolePage(request, reply);
      if (!h) return reply.code(503).send();
      const form = (request.body ?? {}) as Record<string, string | undefined>;
      if (!csrfValid(services, request, h.application.id, form.csrf)) {
        return send(h, 403, errorPage(h.frame, request.id, 'error.csrf'));
      }
      const token = form.token ?? '';
      if (!consoleSetupTokenValid(services, token)) return send(h, 410, errorPage(h.frame, request.id, 'console.setup.invalid'));
      let added: Awaited<ReturnType<typeof addFirstOperator>>;
      try {
        const info = { requestId: request.id, headers: request.headers, ip: request.ip, log: request.log };
        added = await addFirstOperator(services, info, form.email ?? '');
      } catch (error) {
        const { code } = errorBody(error);
        if (code === 'validation_failed') return send(h, 422, consoleSetupPage(h, token, 'error.email_invalid'));
        if (code === 'conflict') return send(h, 410, errorPage(h.frame, request.id, 'console.setup.invalid'));
        throw error;
      }
      return signInWithLink(h, new URL(added.sign_in_link.url).searchParams.get('token') ?? '');
    });

    /** Back from the provider: this browser's flow (state), its code exchanged (PKCE), then the console. */
    routes.get('/console/callback', async (request, reply) => {
      const query = request.query as Record<string, string | undefined>;
      const flow = readFlow(request);
      const client = await consoleClient(services);
      const locale = negotiateLocale(undefined, request.headers['accept-language']);
      const refuse = () =>
        reply
          .code(400)
          .type('text/html')
          .header('cache-control', 'no-store')
          .send(errorPage(bareFrame(locale, reply), request.id, 'error.interaction_invalid', '/console/sign-in'));
      if (!flow || !client || !query.state || query.state !== flow.state) return refuse();
      reply.clearCookie(FLOW_COOKIE, cookieOptions());
      // Denied, or a step-up the person did not finish: back to the console, which still has its session (or not).
      if (!query.code) return reply.code(303).header('cache-control', 'no-store').redirect(flow.return);
      const exchanged = await app.inject({
        method: 'POST',
        url: `/oauth2/${client.applicationId}/token`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({
          grant_type: 'authorization_code',
          code: query.code,
          redirect_uri: `${services.baseUrl}/console/callback`,
          client_id: client.clientId,
          code_verifier: flow.verifier,
        }).toString(),
      });
      if (exchanged.statusCode !== 200) return refuse();
      return reply.code(303).header('cache-control', 'no-store').redirect(flow.return);
    });

    /** The signed-in operator and an access token of their console session (401 when signed out). */
    routes.post('/console/session', async (request, reply) => {
      if (!fromConsole(request)) return fail(request, reply, { code: 'origin_not_allowed', message: 'Only the console may ask' });
      const client = await consoleClient(services);
      const token = client ? browserToken(request, client.applicationId) : undefined;
      const session = token ? await consoleSession(services, token) : undefined;
      if (!session) return fail(request, reply, { code: 'invalid_credentials', message: 'Not signed in to the console' });
      return reply.header('cache-control', 'no-store').send({
        success: true,
        data: session,
        error: null,
        meta: { timestamp: new Date().toISOString(), request_id: request.id },
      });
    });

    /** Signs the console out: its session ends (every access token of it with it), and the cookie goes. */
    routes.post('/console/sign-out', async (request, reply) => {
      if (!fromConsole(request)) return fail(request, reply, { code: 'origin_not_allowed', message: 'Only the console may ask' });
      const client = await consoleClient(services);
      const token = client ? browserToken(request, client.applicationId) : undefined;
      if (client && token) {
        await endBrowserSession(services.orm.em.fork(), client.applicationId, token);
        clearBrowserToken(services, reply, client.applicationId);
      }
      return reply.code(204).header('cache-control', 'no-store').send();
    });

    /** The page itself: its files, and `index.html` for every other path under /console (the page routes itself). */
    routes.get('/console', (_request, reply) => reply.code(308).redirect('/console/'));
    routes.get('/console/*', async (request, reply) => {
      const assets = await consoleAssets();
      const path = (request.params as { '*': string })['*'];
      const asset = assets?.files.get(path);
      if (asset) {
        const gzip = asset.gzip && /\bgzip\b/.test(request.headers['accept-encoding'] ?? '');
        if (gzip) reply.header('content-encoding', 'gzip');
        return reply
          .header('vary', 'accept-encoding')
          .header('cache-control', path.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache')
          .type(asset.type)
          .send(gzip ? asset.gzip : asset.body);
      }
      if (!assets || path.startsWith('assets/')) {
        const locale = negotiateLocale(undefined, request.headers['accept-language']);
        return reply
          .code(assets ? 404 : 503)
          .type('text/html')
          .header('cache-control', 'no-store')
          .send(errorPage(bareFrame(locale, reply), request.id, assets ? 'error.not_found' : 'error.generic'));
      }
      return reply.header('cache-control', 'no-store').type('text/html; charset=utf-8').send(assets.index);
    });
  });
}

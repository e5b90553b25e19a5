import cookie from '@fastify/cookie';
import helmet from '@fastify/helmet';
import {
  attachBrowserSession,
  type BrowserSession,
  browserAccessToken,
  describeError,
  endBrowserSession,
  errorBody,
  findBrowserSession,
  type Services,
} from '@gatehouse/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type MessageKey, negotiateLocale } from './catalog.ts';
import {
  accountPage,
  checkEmailPage,
  consentPage,
  elsewherePage,
  errorPage,
  magicLinkPage,
  mfaPage,
  signedOutPage,
  signInPage,
} from './pages.ts';
import { bareFrame, type Caller, type Form, type Hosted, hostedRequest, type SignInResult, signedInApi } from './request.ts';
import {
  browserToken,
  clearBrowserToken,
  clearFlow,
  csrfValid,
  type Flow,
  readFlow,
  setBrowserToken,
  writeFlow,
} from './state.ts';

/**
 * The hosted pages of every application (CONTRACT §9) under `/a/{application_id}/`: server-rendered HTML, forms that
 * post back here with a CSRF token, a CSP with nonces and no framing. They hold no rule of their own: each step calls
 * the same procedure any client calls (`api`), and a sign-in that completes becomes this browser's session
 * (`gh_session_<id>`, browser-sessions.ts in the API).
 */
export async function registerHostedPages(app: FastifyInstance, services: Services) {
  await app.register(async (pages) => {
    await pages.register(cookie);
    await pages.register(helmet, {
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
          // No form-action: a sign-in form's answer redirects to the client's registered redirect URI, and browsers
          // check form-action against every redirect of a submission. The forms themselves are ours.
        },
      },
      frameguard: { action: 'deny' },
      referrerPolicy: { policy: 'no-referrer' },
    });
    pages.removeAllContentTypeParsers();
    pages.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: 64 * 1024 },
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

    const open = (handler: (h: Hosted) => Promise<unknown>) => async (request: FastifyRequest, reply: FastifyReply) => {
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
    const post = (handler: (h: Hosted, form: Form) => Promise<unknown>) =>
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
    pages.get('/a/:applicationId/magic-link', open(showMagicLink));
    pages.post('/a/:applicationId/magic-link', post(confirmMagicLink));
    pages.post('/a/:applicationId/mfa', post(verifySecondFactor));
    pages.post('/a/:applicationId/consent', post(acceptConsent));
    pages.get('/a/:applicationId/account', open(showAccount));
    pages.post('/a/:applicationId/sign-out', post(signOut));
  });
}

const send = (h: Hosted, status: number, body: string) =>
  h.reply.code(status).type('text/html').header('cache-control', 'no-store').send(body);
const redirect = (h: Hosted, location: string) => h.reply.code(303).header('cache-control', 'no-store').redirect(location);

/** The browser's live session for this application, if any. */
async function currentSession(h: Hosted): Promise<BrowserSession | undefined> {
  const token = browserToken(h.request, h.application.id);
  return token ? findBrowserSession(h.services.orm.em.fork(), h.application, token) : undefined;
}

/** The catalog's message for an API error on a page (the API's own messages are English and for developers). */
function messageFor(error: unknown, fallback: MessageKey): { status: number; key: MessageKey } {
  const { code } = errorBody(error);
  switch (code) {
    case 'rate_limited':
      return { status: 429, key: 'error.rate_limited' };
    case 'access_denied':
      return { status: 403, key: 'error.access_denied' };
    case 'internal_error':
    case 'service_unavailable':
      return { status: 503, key: 'error.generic' };
    default:
      return { status: code === 'validation_failed' ? 422 : 401, key: fallback };
  }
}

async function showSignIn(h: Hosted) {
  const query = h.request.query as Record<string, string | undefined>;
  const flow = readFlow(h.services, h.request, h.application.id);
  if (query.interaction && query.interaction !== flow.interaction) {
    writeFlow(h.services, h.reply, h.application.id, { interaction: query.interaction });
  } else if (!query.interaction && (await currentSession(h))) {
    return redirect(h, `${h.base}/account`);
  }
  return send(h, 200, signInPage(h, { email: query.login_hint }));
}

async function startSignIn(h: Hosted, form: Form) {
  const email = (form.email ?? '').trim();
  const flow = readFlow(h.services, h.request, h.application.id);
  try {
    const started = await h.api.auth.magicLink.start({
      email,
      redirect_url: `${h.services.baseUrl}${h.base}/magic-link`,
    });
    writeFlow(h.services, h.reply, h.application.id, {
      interaction: flow.interaction,
      verification_id: started.verification_id,
      poll_secret: started.poll_secret ?? undefined,
      email,
    });
    return redirect(h, `${h.base}/sign-in/wait`);
  } catch (error) {
    const { status, key } = messageFor(error, 'error.email_invalid');
    return send(h, status, signInPage(h, { email, error: key }));
  }
}

/** The page that waits for the magic link: it polls the API each time it reloads (every few seconds, no script). */
async function waitForLink(h: Hosted) {
  const flow = readFlow(h.services, h.request, h.application.id);
  if (!flow.verification_id || !flow.poll_secret) return redirect(h, `${h.base}/sign-in`);
  let result: Awaited<ReturnType<Caller['auth']['magicLink']['poll']>>;
  try {
    result = await h.api.auth.magicLink.poll({ verification_id: flow.verification_id, poll_secret: flow.poll_secret });
  } catch (error) {
    // Collected by another tab of this browser (the link opened here): carry on as it did.
    if (await currentSession(h)) return continueSignedIn(h, flow);
    const { status, key } = messageFor(error, 'error.link_invalid');
    return send(h, status, errorPage(h.frame, h.request.id, key, `${h.base}/sign-in`));
  }
  if (result.status === 'pending') return send(h, 200, checkEmailPage(h, flow.email ?? ''));
  return proceed(h, flow, result);
}

async function showMagicLink(h: Hosted) {
  const token = (h.request.query as Record<string, string | undefined>).token ?? '';
  return send(h, 200, magicLinkPage(h, token));
}

/**
 * The emailed link's button. It confirms the link; when this browser is the one that asked for it, the sign-in
 * continues here, else on the device that asked (its waiting page collects it). Opening the link does nothing:
 * mail scanners that follow links confirm nothing.
 */
async function confirmMagicLink(h: Hosted, form: Form) {
  try {
    await h.api.auth.magicLink.confirm({ token: form.token ?? '' });
  } catch (error) {
    const { status, key } = messageFor(error, 'error.link_invalid');
    return send(h, status, errorPage(h.frame, h.request.id, key, `${h.base}/sign-in`));
  }
  const flow = readFlow(h.services, h.request, h.application.id);
  if (flow.verification_id && flow.poll_secret) {
    try {
      const result = await h.api.auth.magicLink.poll({ verification_id: flow.verification_id, poll_secret: flow.poll_secret });
      if (result.status !== 'pending') return proceed(h, flow, result);
    } catch {
      // This browser's flow is another link's, spent or expired: the link belongs to another device.
    }
  }
  return send(h, 200, elsewherePage(h));
}

async function verifySecondFactor(h: Hosted, form: Form) {
  const flow = readFlow(h.services, h.request, h.application.id);
  const pending_token = form.pending_token ?? '';
  const code = (form.code ?? '').trim();
  const method = form.method === 'backup_code' ? 'backup_code' : 'totp';
  try {
    const result =
      method === 'backup_code'
        ? await h.api.auth.mfa.backupCodes.verify({ pending_token, code })
        : await h.api.auth.mfa.totp.verify({ pending_token, code });
    return proceed(h, flow, result);
  } catch (error) {
    const { code: errorCode } = errorBody(error);
    if (errorCode === 'invalid_pending_token') {
      return send(h, 401, errorPage(h.frame, h.request.id, 'error.link_invalid', `${h.base}/sign-in`));
    }
    const { status, key } = messageFor(error, 'error.code_invalid');
    const methods = (form.methods ?? '').split(',').filter(Boolean);
    return send(h, status, mfaPage(h, { pending_token, methods, method, error: key }));
  }
}

async function acceptConsent(h: Hosted, form: Form) {
  const flow = readFlow(h.services, h.request, h.application.id);
  try {
    const doc_types = (form.doc_types ?? '').split(',').filter(Boolean);
    return proceed(h, flow, await h.api.auth.consent.accept({ pending_token: form.pending_token ?? '', doc_types }));
  } catch (error) {
    const { status, key } = messageFor(error, 'error.link_invalid');
    return send(h, status, errorPage(h.frame, h.request.id, key, `${h.base}/sign-in`));
  }
}

/**
 * Where a sign-in step leads: a second factor or consent documents to ask for, or a complete sign-in — which becomes
 * this browser's session. A new session always gets a new cookie and ends the one this browser had (no fixation:
 * nothing a page or a link carries can become the session).
 */
async function proceed(h: Hosted, flow: Flow, result: SignInResult) {
  if (result.status === 'mfa_required') {
    return send(h, 200, mfaPage(h, { pending_token: result.mfa.pending_token, methods: result.mfa.methods }));
  }
  if (result.status === 'consent_required') {
    return send(h, 200, consentPage(h, result.pending_token, result.consent_documents));
  }
  const em = h.services.orm.em.fork();
  const token = await attachBrowserSession(em, h.application.id, result.tokens.refresh_token);
  if (!token) return send(h, 401, errorPage(h.frame, h.request.id, 'error.generic', `${h.base}/sign-in`));
  const previous = browserToken(h.request, h.application.id);
  if (previous) await endBrowserSession(em, h.application.id, previous);
  setBrowserToken(h.services, h.reply, h.application.id, token);
  return continueSignedIn(h, flow);
}

/** Signed in: back to the OAuth client that asked (its interaction), else the account page. */
function continueSignedIn(h: Hosted, flow: Flow) {
  if (flow.interaction) {
    writeFlow(h.services, h.reply, h.application.id, { interaction: flow.interaction });
    return redirect(h, `${h.base}/sign-in?interaction=${encodeURIComponent(flow.interaction)}`);
  }
  clearFlow(h.services, h.reply, h.application.id);
  return redirect(h, `${h.base}/account`);
}

async function showAccount(h: Hosted) {
  const session = await currentSession(h);
  if (!session) return redirect(h, `${h.base}/sign-in`);
  const { access_token } = await browserAccessToken(h.services.orm.em.fork(), h.services, h.application, session);
  const me = await signedInApi(h, access_token).auth.me.get();
  return send(h, 200, accountPage(h, me));
}

async function signOut(h: Hosted) {
  const token = browserToken(h.request, h.application.id);
  if (token) await endBrowserSession(h.services.orm.em.fork(), h.application.id, token);
  clearBrowserToken(h.services, h.reply, h.application.id);
  clearFlow(h.services, h.reply, h.application.id);
  return send(h, 200, signedOutPage(h));
}

import {
  browserAccessToken,
  constantTimeEqual,
  enabledOAuthProviders,
  errorBody,
  organizationsOfUser,
  sha256,
} from '@gatehouse/api';
import type { FastifyInstance } from 'fastify';
import type { MessageKey } from './catalog.ts';
import {
  federatedBlock,
  hopErrorKey,
  isProvider,
  oauthCallbackUri,
  signUpOpen,
  ssoCallbackUri,
  withoutHops,
} from './federated.ts';
import { html } from './html.ts';
import { page } from './page.ts';
import { refusalPage } from './pages.ts';
import { currentSession, type Form, type Hosted, messageFor, type Routes, redirect, send, signedInApi } from './request.ts';
import { continueSignedIn, proceed, startWithEmail } from './sign-in.ts';
import { readFlow, writeFlow } from './state.ts';

/**
 * The hosted pages' federated factors and what comes around them: enterprise SSO's way back (`/sso/callback`), social
 * sign-in (`/oauth/start`, `/oauth/callback`), the sign-up page, and the organization picker. Each hop out (to an IdP
 * or a provider) is bound to the browser that started it: its secret lives in the sealed flow cookie, and a way back
 * in a browser without it is refused before anything is spent.
 */
export function registerFederatedRoutes(pages: FastifyInstance, routes: Routes) {
  pages.get('/a/:applicationId/sso/callback', routes.open(ssoCallback));
  pages.post('/a/:applicationId/oauth/start', routes.post(startSocial));
  pages.get('/a/:applicationId/oauth/callback', routes.open(socialCallback));
  pages.get('/a/:applicationId/sign-up', routes.open(showSignUp));
  pages.post('/a/:applicationId/sign-up', routes.post(startSignUp));
  pages.get('/a/:applicationId/organization', routes.open(showOrganizations));
  pages.post('/a/:applicationId/organization', routes.post(chooseOrganization));
}

const query = (h: Hosted) => h.request.query as Record<string, string | undefined>;
const fail = (h: Hosted, status: number, key: MessageKey, again = `${h.base}/sign-in`) =>
  send(h, status, refusalPage(h, key, again));

// ——— Enterprise SSO (the hop starts on the sign-in form: startSsoIfConnected) ———

/**
 * The ACS's redirect back: `?code=` (or `?error=`) on the redirect_uri this browser's flow names. The code is spent
 * with that redirect_uri — built from the flow cookie's secret, not from the URL — so a code carried to another
 * browser (whose cookie has no such hop, or another one) signs nobody in.
 */
async function ssoCallback(h: Hosted) {
  const { hop, code, error } = query(h);
  const flow = readFlow(h.services, h.request, h.application.id);
  if (!flow.sso_hop || !hop || !constantTimeEqual(hop, flow.sso_hop)) return fail(h, 400, 'federated.other_browser');
  const next = withoutHops(flow);
  writeFlow(h.services, h.reply, h.application.id, next);
  if (error || !code) return fail(h, error === 'access_denied' ? 403 : 401, hopErrorKey(error ?? ''));
  try {
    return proceed(h, next, await h.api.auth.sso.complete({ code, redirect_uri: ssoCallbackUri(h, flow.sso_hop) }));
  } catch (caught) {
    const { status, key } = messageFor(caught, 'federated.failed');
    return fail(h, status, key);
  }
}

// ——— Social sign-in ———

async function startSocial(h: Hosted, form: Form) {
  const providers = await enabledOAuthProviders(h.services.orm.em.fork(), h.application.id);
  if (!isProvider(providers, form.provider)) return fail(h, 404, 'error.not_found');
  const flow = readFlow(h.services, h.request, h.application.id);
  let authorizationUrl: string;
  try {
    ({ authorization_url: authorizationUrl } = await h.api.auth.oauth.start({
      provider: form.provider,
      redirect_uri: oauthCallbackUri(h),
    }));
  } catch (caught) {
    const { status, key } = messageFor(caught, 'federated.failed');
    return fail(h, status, key);
  }
  const state = new URL(authorizationUrl).searchParams.get('state') ?? '';
  writeFlow(h.services, h.reply, h.application.id, {
    ...withoutHops(flow),
    oauth_provider: form.provider,
    oauth_state_hash: sha256(state),
  });
  return redirect(h, authorizationUrl);
}

/**
 * The provider's way back, relayed by `/v1/auth/oauth/redirect` with `code`, `state` and `provider`: accepted only
 * in the browser whose flow holds that state (its hash) for that provider. A stolen state and code replayed in another
 * browser are refused here, before the state is spent.
 */
async function socialCallback(h: Hosted) {
  const { state, code, error, provider } = query(h);
  const flow = readFlow(h.services, h.request, h.application.id);
  const bound =
    !!state &&
    !!flow.oauth_state_hash &&
    constantTimeEqual(sha256(state), flow.oauth_state_hash) &&
    provider === flow.oauth_provider;
  if (!bound || !state) return fail(h, 400, 'federated.other_browser');
  const providers = await enabledOAuthProviders(h.services.orm.em.fork(), h.application.id);
  if (!isProvider(providers, provider)) return fail(h, 404, 'error.not_found');
  const next = withoutHops(flow);
  writeFlow(h.services, h.reply, h.application.id, next);
  try {
    const result = await h.api.auth.oauth.callback(
      error !== undefined || code === undefined
        ? { provider, state, error: (error ?? 'server_error').slice(0, 200) }
        : { provider, state, code },
    );
    return proceed(h, next, result);
  } catch (caught) {
    if (error) return fail(h, error === 'access_denied' ? 403 : 401, hopErrorKey(error));
    const { status, key } = messageFor(caught, 'federated.failed');
    return fail(h, status, key);
  }
}

// ——— Sign-up ———

const NAME_MAX = 200;

function signUpPage(
  h: Hosted,
  below: Awaited<ReturnType<typeof federatedBlock>>,
  options: { email?: string; name?: string; error?: MessageKey } = {},
) {
  const { t } = h.frame;
  const app = h.frame.branding.display_name ?? h.frame.appName;
  return page(
    h.frame,
    t('sign_up.title', { app }),
    html`${options.error ? html`<p class="error" role="alert">${t(options.error, { app })}</p>` : ''}
<p>${t('sign_up.body')}</p>
<form method="post" action="${h.base}/sign-up">
<input type="hidden" name="csrf" value="${h.csrf}">
<label for="email">${t('sign_in.email')}</label>
<input id="email" name="email" type="email" autocomplete="email" required value="${options.email ?? ''}"${options.email ? '' : html` autofocus`}>
<label for="name">${t('sign_up.name')}</label>
<input id="name" name="name" type="text" autocomplete="name" maxlength="${NAME_MAX}" value="${options.name ?? ''}">
<button type="submit">${t('sign_up.submit')}</button>
</form>
${below}`,
  );
}

async function showSignUp(h: Hosted) {
  if (!signUpOpen(h)) return fail(h, 404, 'sign_up.closed');
  if (await currentSession(h)) return redirect(h, `${h.base}/account`);
  return send(h, 200, signUpPage(h, await federatedBlock(h, 'sign_up'), { email: query(h).login_hint }));
}

/**
 * The sign-up form: an email with an SSO connection goes to its IdP (the account is made there); else a magic link,
 * and the account is made when the link is opened (an existing account is simply signed in). The name waits in the
 * flow cookie until then.
 */
async function startSignUp(h: Hosted, form: Form) {
  if (!signUpOpen(h)) return fail(h, 404, 'sign_up.closed');
  const email = (form.email ?? '').trim();
  const name = (form.name ?? '').trim().slice(0, NAME_MAX) || undefined;
  const flow = readFlow(h.services, h.request, h.application.id);
  try {
    return await startWithEmail(h, email, { interaction: flow.interaction, organization: flow.organization, name });
  } catch (caught) {
    const { status, key } = messageFor(caught, 'error.email_invalid');
    return send(h, status, signUpPage(h, await federatedBlock(h, 'sign_up'), { email, name, error: key }));
  }
}

// ——— Organization choice ———

interface Organization {
  id: string;
  name: string;
  role: string;
}

function organizationPage(h: Hosted, organizations: Organization[], active: string | null, error?: MessageKey) {
  const { t } = h.frame;
  return page(
    h.frame,
    t('organization.title'),
    html`${error ? html`<p class="error" role="alert">${t(error)}</p>` : ''}
${
  organizations.length
    ? html`<p>${t('organization.body')}</p>
<div class="stack" role="group" aria-label="${t('organization.title')}">${organizations.map(
        (o) => html`<form method="post" action="${h.base}/organization">
<input type="hidden" name="csrf" value="${h.csrf}">
<input type="hidden" name="organization_id" value="${o.id}">
<button type="submit" class="${o.id === active ? '' : 'secondary'}"${o.id === active ? html` aria-current="true"` : ''}>${o.name} <span class="muted">(${o.role})</span></button>
</form>`,
      )}</div>`
    : html`<p role="status">${t('organization.none')}</p>`
}
<p><a href="${h.base}/account">${t('organization.back')}</a></p>`,
  );
}

/** The person's organizations and an API as them (the browser session's access token); undefined when signed out. */
async function signedIn(h: Hosted) {
  const session = await currentSession(h);
  if (!session) return undefined;
  const em = h.services.orm.em.fork();
  const organizations = await organizationsOfUser(em, h.application.id, session.userId);
  const api = async () => signedInApi(h, (await browserAccessToken(em, h.services, h.application, session)).access_token);
  return { session, organizations, api };
}

/**
 * The picker. In a sign-in that asked for an organization (the flow says so): none → continue; one → it becomes the
 * session's active organization, no page; several → the choice. Outside a sign-in (from the account page): the list,
 * the active one marked.
 */
async function showOrganizations(h: Hosted) {
  const me = await signedIn(h);
  if (!me) return redirect(h, `${h.base}/sign-in?organization=select`);
  const flow = readFlow(h.services, h.request, h.application.id);
  if (flow.organization === 'select' && me.organizations.length <= 1) {
    const only = me.organizations[0];
    if (only && me.session.organizationId !== only.id) {
      await (await me.api()).auth.session.switchOrganization({ organization_id: only.id });
    }
    return continueSignedIn(h, { interaction: flow.interaction });
  }
  return send(h, 200, organizationPage(h, me.organizations, me.session.organizationId));
}

/** A chosen organization becomes the session's active one (the API checks the membership: a foreign id is 404). */
async function chooseOrganization(h: Hosted, form: Form) {
  const me = await signedIn(h);
  if (!me) return redirect(h, `${h.base}/sign-in`);
  const organizationId = form.organization_id ?? '';
  try {
    await (await me.api()).auth.session.switchOrganization({ organization_id: organizationId });
  } catch (caught) {
    const { code } = errorBody(caught);
    const refused: MessageKey = 'organization.unknown';
    if (code === 'not_found' || code === 'validation_failed') {
      return send(h, 404, organizationPage(h, me.organizations, me.session.organizationId, refused));
    }
    const { status, key } = messageFor(caught, 'error.generic');
    return fail(h, status, key, `${h.base}/organization`);
  }
  const flow = readFlow(h.services, h.request, h.application.id);
  if (flow.organization === 'select') return continueSignedIn(h, { interaction: flow.interaction });
  return redirect(h, `${h.base}/account`);
}

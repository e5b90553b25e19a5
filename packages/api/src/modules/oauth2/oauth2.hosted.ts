import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { Interaction } from 'oidc-provider';
import type { Services } from '../../context.ts';
import { AppError, notFound } from '../../errors.ts';
import { isUuid } from '../../lib/ids.ts';
import type { Application } from '../applications/application.entity.ts';
import type { BrowserSession } from '../sessions/browser-sessions.ts';
import { acrOfAal, providerFor, requestedAal } from './oauth2.provider.ts';
import { offeredScopes, saveGrant, setGrantOrganization } from './oauth2.service.ts';
import { OAuth2ClientEntity } from './oauth2-client.entity.ts';

/**
 * The OpenID provider's login and consent, as the hosted pages (`/a/{id}/sign-in?interaction={uid}`) run them. An
 * authorization request that needs the person goes to the page with an interaction `uid`; the page reads it
 * (`interactionFor`), signs the person in or asks for consent, and sends the browser back with the URL
 * `finishLogin`, `finishConsent` or `denyInteraction` answers.
 *
 * Every call takes the request's `Cookie` header: an interaction belongs to the browser that started it (the
 * provider's signed `_interaction` cookie, set for the page's path `/a/{id}/sign-in`), so a uid opened in another
 * browser — a link an attacker sends to someone signed in — reads as unknown and cannot be finished (login CSRF).
 */

/** What a live browser session is worth for an interaction's login. */
export type SessionFit =
  /** It satisfies the request: finish the login with it, no page shown. */
  | 'satisfies'
  /** There is none, or the request wants a fresh sign-in (`prompt=login`, `max_age` passed, another account). */
  | 'sign_in'
  /** It is aal 1 and `acr_values` asks for `urn:gatehouse:aal2`: sign in again (the second factor is asked). */
  | 'second_factor';

export interface HostedInteraction {
  uid: string;
  /** What the provider asks for: `login` (sign the person in), `select_account` (this account or another), `consent`. */
  prompt: 'login' | 'select_account' | 'consent';
  /** Why (oidc-provider's check names: `no_session`, `max_age`, `login_prompt`, `hosted_session`, `acr_aal2`, `op_scopes_missing`, …). */
  reasons: string[];
  client: { id: string; name: string; logo_url: string | null };
  /** The scopes the client asks for, with what each means. */
  scopes: Array<{ name: string; description: string }>;
  /** The account the provider's session names (the person consenting), when it has one. */
  account_id: string | null;
  /** The authorization request's `prompt` values. */
  prompts: string[];
  /** `login_hint` (an email to prefill), `max_age` (seconds), `acr_values`, `ui_locales`, as the client sent them. */
  login_hint: string | null;
  max_age: number | null;
  acr_values: string[];
  ui_locales: string[];
  /** The assurance level the client asks for (2 for `acr_values=urn:gatehouse:aal2`). */
  required_aal: 1 | 2;
  /** When the interaction started (a sign-in made after it is fresh for `prompt=login` and `max_age`). */
  started_at: Date;
  expires_at: Date;
  /** What the browser session the page found is worth here (`sign_in` when there is none). */
  session: SessionFit;
}

/** The raw request oidc-provider reads the interaction cookie from: only its `Cookie` header matters. */
function cookieRequest(cookie: string | undefined) {
  const req = new IncomingMessage(new Socket());
  req.headers = cookie ? { cookie } : {};
  req.url = '/';
  req.method = 'GET';
  return { req, res: new ServerResponse(req) };
}

/**
 * The browser on the hosted pages, as the provider knows it: its `Cookie` header (the provider's interaction cookie),
 * and the application's verified custom domain when the pages were opened there (its issuer is that domain's).
 */
export interface ProviderBrowser {
  cookie: string | undefined;
  domain?: string;
}

/** The interaction `uid` names, if it is live and belongs to this browser; its provider with it. */
async function boundInteraction(services: Services, application: Application, uid: string, browser: ProviderBrowser) {
  const built = await providerFor(services, application.id, {}, browser.domain);
  if (!built) throw notFound('Interaction');
  const { req, res } = cookieRequest(browser.cookie);
  const interaction = await built.provider.interactionDetails(req, res).catch(() => undefined);
  // The browser's cookie names another interaction (or none): this uid is not this browser's to finish.
  if (!interaction || interaction.uid !== uid) throw notFound('Interaction');
  return { provider: built.provider, interaction, req, res };
}

const stringParam = (value: unknown) => (typeof value === 'string' && value ? value : null);
const words = (value: unknown) => (typeof value === 'string' ? value.split(' ').filter(Boolean) : []);

/** When the interaction started: to the millisecond (the login policy records it), else its `iat`. */
const startedAt = (interaction: Interaction) => {
  const recorded = interaction.prompt.details?.started_at;
  return typeof recorded === 'number' ? recorded : interaction.iat * 1000;
};

/**
 * Whether a browser session satisfies the interaction's login: the same account as the provider's session (when it
 * names one and the client did not ask to choose), not older than `max_age`, made after the interaction started when
 * `prompt=login`, and at the assurance level `acr_values` asks for. A sign-in made during the interaction always
 * satisfies `acr_values` (it asked for every factor the person has; `acr_values` is voluntary, and the tokens' `acr`
 * says what was reached).
 */
export function sessionFit(interaction: Interaction, session: BrowserSession | undefined): SessionFit {
  if (!session) return 'sign_in';
  const params = interaction.params;
  const prompts = words(params.prompt);
  const fresh = session.authTime.getTime() >= startedAt(interaction);
  if (prompts.includes('login') && !fresh) return 'sign_in';
  const maxAge = params.max_age === undefined ? null : Number(params.max_age);
  if (maxAge !== null && Number.isFinite(maxAge) && Date.now() - session.authTime.getTime() > maxAge * 1000) return 'sign_in';
  const named = interaction.session?.accountId;
  if (named && named !== session.userId && !prompts.includes('select_account') && interaction.prompt.name !== 'login')
    return 'sign_in';
  if (requestedAal(params.acr_values) > session.aal && !fresh) return 'second_factor';
  return 'satisfies';
}

/**
 * What the sign-in page shows for `uid` (and whether the browser session it found, if any, lets it finish at once).
 * 404 when the interaction is unknown, expired, or was started by another browser.
 */
export async function interactionFor(
  services: Services,
  application: Application,
  uid: string,
  browser: ProviderBrowser,
  session?: BrowserSession,
): Promise<HostedInteraction> {
  const { interaction } = await boundInteraction(services, application, uid, browser);
  const params = interaction.params;
  const clientId = String(params.client_id ?? '');
  const client = isUuid(clientId)
    ? await services.orm.em.fork().findOne(OAuth2ClientEntity, { id: clientId, application: application.id })
    : null;
  if (!client) throw notFound('Interaction');
  const offered = offeredScopes({ application });
  const maxAge = params.max_age === undefined ? null : Number(params.max_age);
  const prompt = interaction.prompt.name;
  return {
    uid: interaction.uid,
    prompt: prompt === 'consent' || prompt === 'select_account' ? prompt : 'login',
    reasons: interaction.prompt.reasons,
    client: { id: client.id, name: client.name, logo_url: client.logoUrl ?? null },
    scopes: [...new Set(words(params.scope))].map((name) => ({ name, description: offered.get(name) ?? '' })),
    account_id: interaction.session?.accountId ?? null,
    prompts: words(params.prompt),
    login_hint: stringParam(params.login_hint),
    max_age: maxAge !== null && Number.isFinite(maxAge) ? maxAge : null,
    acr_values: words(params.acr_values),
    ui_locales: words(params.ui_locales),
    required_aal: requestedAal(params.acr_values) === 2 ? 2 : 1,
    started_at: new Date(startedAt(interaction)),
    expires_at: new Date(interaction.exp * 1000),
    session: sessionFit(interaction, session),
  };
}

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/**
 * The person is signed in (the browser session, with its assurance level and methods): the provider's login is
 * finished with it. Answers where to send the browser (the provider, which goes on to consent or to the client).
 * 422 `validation_failed` when the session does not satisfy the request (see `sessionFit`): sign the person in again.
 */
export async function finishLogin(
  services: Services,
  application: Application,
  uid: string,
  browser: ProviderBrowser,
  session: BrowserSession,
): Promise<string> {
  const { provider, interaction, req, res } = await boundInteraction(services, application, uid, browser);
  if (interaction.prompt.name === 'consent') throw notFound('Interaction');
  if (sessionFit(interaction, session) !== 'satisfies') {
    throw new AppError('validation_failed', 'This sign-in does not satisfy the request', [
      { path: 'session', message: 'sign in again' },
    ]);
  }
  const login = {
    accountId: session.userId,
    acr: acrOfAal(session.aal),
    ...(session.amr.length ? { amr: session.amr } : {}),
    ts: seconds(session.authTime),
    remember: true,
  };
  // The organization the person now works in becomes their grant's for this client, when they have one already (a
  // consent, if the provider still asks for one, sets it on the grant it saves).
  const clientId = String(interaction.params.client_id ?? '');
  if (isUuid(clientId)) {
    await setGrantOrganization(services.orm.em.fork(), application.id, session.userId, clientId, session.organizationId);
  }
  // The account was chosen: a requested `select_account` is answered with the login.
  const chosen = words(interaction.params.prompt).includes('select_account') ? { select_account: {} } : {};
  return provider.interactionResult(req, res, { login, ...chosen });
}

/**
 * The signed-in person approves `approvedScopes` (a subset of the requested ones; 422 otherwise) for the client:
 * the grant is saved and the browser goes back to the provider for its code. The browser session must be the
 * account the provider's session names (404 otherwise).
 */
export async function finishConsent(
  services: Services,
  application: Application,
  uid: string,
  browser: ProviderBrowser,
  session: BrowserSession,
  approvedScopes: string[],
): Promise<string> {
  const { provider, interaction, req, res } = await boundInteraction(services, application, uid, browser);
  const accountId = interaction.session?.accountId;
  if (interaction.prompt.name !== 'consent' || !accountId || accountId !== session.userId) throw notFound('Interaction');
  const clientId = String(interaction.params.client_id ?? '');
  const requested = [...new Set(words(interaction.params.scope))];
  const grantId = await saveGrant(
    services.orm.em.fork(),
    application,
    provider,
    interaction,
    accountId,
    clientId,
    requested,
    approvedScopes,
    session.organizationId,
  );
  return provider.interactionResult(req, res, { consent: { grantId } });
}

/** The person refuses (or the page cannot go on): the client gets `access_denied`. Answers where to send the browser. */
export async function denyHostedInteraction(
  services: Services,
  application: Application,
  uid: string,
  browser: ProviderBrowser,
): Promise<string> {
  const { provider, req, res } = await boundInteraction(services, application, uid, browser);
  return provider.interactionResult(
    req,
    res,
    { error: 'access_denied', error_description: 'The user denied the request' },
    { mergeWithLastSubmission: false },
  );
}

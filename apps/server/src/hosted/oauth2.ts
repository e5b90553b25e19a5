import {
  type BrowserSession,
  browserAccessToken,
  denyHostedInteraction,
  finishConsent,
  finishLogin,
  type HostedInteraction,
  interactionFor,
} from '@gatehouse/api';
import { negotiateLocale, translator } from './catalog.ts';
import { federatedBlock } from './federated.ts';
import { authorizePage, chooseAccountPage, errorPage, mfaPage, signInPage } from './pages.ts';
import { currentSession, type Form, type Hosted, providerBrowser, redirect, send, signedInApi } from './request.ts';

/**
 * The sign-in page as the login and consent of the application's OpenID provider (`/a/{id}/sign-in?interaction=`).
 * The provider says what it asks (a login, an account choice, a consent); the browser's session, when it satisfies
 * the request (the account, `max_age`, `prompt=login`, the assurance `acr_values` asks for), finishes the login with
 * no page; one at aal 1 where aal 2 is asked is stepped up with the second factor alone. An interaction belongs to the browser that started it (the provider's `_interaction` cookie, whose path is
 * `/a/{id}/sign-in`: every form that finishes one posts under it); any other browser is told to start again.
 */
export async function showInteraction(h: Hosted, uid: string, options: { another?: boolean } = {}) {
  const session = await currentSession(h);
  const interaction = await readInteraction(h, uid, session);
  if (!interaction) return interactionGone(h);
  // The client's `ui_locales` chooses the language first (then the browser's Accept-Language).
  const locale = negotiateLocale(interaction.ui_locales.join(' '), h.request.headers['accept-language']);
  h.frame = { ...h.frame, locale, t: translator(locale) };
  if (interaction.prompt === 'consent') {
    // The person who signed in for it is no longer this browser's (signed out, or another account since): start again.
    if (!session || session.userId !== interaction.account_id) return interactionGone(h);
    // The console's own client (a reserved application's) is Gatehouse itself: nothing to consent to.
    if (h.application.reserved) {
      const scopes = interaction.scopes.map((s) => s.name);
      return redirect(h, await finishConsent(h.services, h.application, uid, providerBrowser(h), session, scopes));
    }
    return send(h, 200, authorizePage(h, interaction, await emailOf(h, session)));
  }
  if (session && interaction.session === 'satisfies' && !options.another) {
    if (interaction.prompt === 'select_account') {
      return send(h, 200, chooseAccountPage(h, interaction, await emailOf(h, session)));
    }
    return redirect(h, await finishLogin(h.services, h.application, uid, providerBrowser(h), session));
  }
  if (session && interaction.session === 'second_factor' && !options.another) {
    const stepUp = await secondFactorFor(h, session);
    if (stepUp) return stepUp;
  }
  return signInFor(h, interaction);
}

/**
 * `acr_values` asks for aal 2 and this browser's session is at aal 1: a step-up of that session, when the person has
 * a second factor — the factor alone is asked, and its answer raises the session (its cookie rotated), after which
 * the sign-in page finishes the login with it (the flow keeps the interaction). Undefined when there is nothing to
 * step up with (no second factor): the person signs in again, which satisfies the request.
 */
async function secondFactorFor(h: Hosted, session: BrowserSession) {
  const { access_token } = await browserAccessToken(h.services.orm.em.fork(), h.services, h.application, session);
  try {
    const challenge = await signedInApi(h, access_token).auth.stepUp.start();
    return send(h, 200, mfaPage(h, { pending_token: challenge.pending_token, methods: challenge.mfa.methods }));
  } catch {
    return undefined;
  }
}

/** "Continue as …" (`prompt=select_account`): the login is finished with this browser's session. */
export async function continueInteraction(h: Hosted, form: Form) {
  const uid = form.interaction ?? '';
  const session = await currentSession(h);
  const interaction = await readInteraction(h, uid, session);
  if (!interaction || !session || interaction.session !== 'satisfies') return interactionGone(h);
  return redirect(h, await finishLogin(h.services, h.application, uid, providerBrowser(h), session));
}

/** Allow (the ticked scopes) or Deny: the provider gets the grant, or the client `access_denied`. */
export async function authorizeInteraction(h: Hosted, form: Form) {
  const uid = form.interaction ?? '';
  const session = await currentSession(h);
  const interaction = await readInteraction(h, uid, session);
  if (interaction?.prompt !== 'consent') return interactionGone(h);
  if (form.decision !== 'allow') {
    return redirect(h, await denyHostedInteraction(h.services, h.application, uid, providerBrowser(h)));
  }
  if (!session || session.userId !== interaction.account_id) return interactionGone(h);
  // `openid` is not optional for an OpenID Connect client: it is what signing in is.
  const approved = interaction.scopes.map((s) => s.name).filter((name) => name === 'openid' || form[`scope:${name}`] === 'on');
  return redirect(h, await finishConsent(h.services, h.application, uid, providerBrowser(h), session, approved));
}

async function readInteraction(h: Hosted, uid: string, session: BrowserSession | undefined) {
  try {
    return await interactionFor(h.services, h.application, uid, providerBrowser(h), session);
  } catch {
    return undefined;
  }
}

/** The sign-in form, its email prefilled from `login_hint`; a step-up says why the person signs in again. */
const signInFor = async (h: Hosted, interaction: HostedInteraction) =>
  send(
    h,
    200,
    signInPage(h, {
      email: interaction.login_hint ?? undefined,
      notice: interaction.session === 'second_factor' ? 'sign_in.step_up' : undefined,
      client: interaction.client.name,
      below: await federatedBlock(h, 'sign_in'),
    }),
  );

/** Unknown, expired, already finished, or another browser's: the person goes back to the app that sent them. */
const interactionGone = (h: Hosted) => send(h, 400, errorPage(h.frame, h.request.id, 'error.interaction_invalid'));

async function emailOf(h: Hosted, session: BrowserSession): Promise<string> {
  const { access_token } = await browserAccessToken(h.services.orm.em.fork(), h.services, h.application, session);
  const me = await signedInApi(h, access_token).auth.me.get();
  return me.primary_email ?? '';
}

import { attachBrowserSession, endBrowserSession, errorBody } from '@gatehouse/api';
import { enrolmentRequired, startTotpEnrolment } from './enrolment.ts';
import { federatedBlock, organizationRequested, rememberSignUpName, startSsoIfConnected } from './federated.ts';
import { showInteraction } from './oauth2.ts';
import {
  checkEmailPage,
  consentPage,
  elsewherePage,
  errorPage,
  magicLinkPage,
  mfaPage,
  refusalPage,
  signedOutPage,
  signInPage,
} from './pages.ts';
import { type Caller, currentSession, type Form, type Hosted, messageFor, redirect, type SignInResult, send } from './request.ts';
import { browserToken, clearBrowserToken, clearFlow, type Flow, readFlow, setBrowserToken, writeFlow } from './state.ts';

/**
 * Signing in on the hosted pages: the identifier (an email address), the magic link (its button on this device or
 * another; the waiting page collects it), a second factor, consent documents — and sign-out. Each step calls the
 * procedure any client calls; `proceed` decides what a step's result leads to.
 */
export async function showSignIn(h: Hosted) {
  const query = h.request.query as Record<string, string | undefined>;
  const flow = readFlow(h.services, h.request, h.application.id);
  if (query.interaction && query.interaction !== flow.interaction) {
    const organization = (await organizationRequested(h, query)) ? 'select' : undefined;
    writeFlow(h.services, h.reply, h.application.id, { interaction: query.interaction, organization });
  } else if (!query.interaction && (await currentSession(h))) {
    return redirect(h, query.organization === 'select' ? `${h.base}/organization` : `${h.base}/account`);
  } else if (!query.interaction && query.organization === 'select' && flow.organization !== 'select') {
    writeFlow(h.services, h.reply, h.application.id, { organization: 'select' });
  }
  // The login (and consent) of the application's OpenID provider: oauth2.ts.
  if (query.interaction) return showInteraction(h, query.interaction, { another: query.another === '1' });
  return send(h, 200, signInPage(h, { email: query.login_hint, below: await federatedBlock(h, 'sign_in') }));
}

export async function startSignIn(h: Hosted, form: Form) {
  const email = (form.email ?? '').trim();
  const flow = readFlow(h.services, h.request, h.application.id);
  try {
    return await startWithEmail(h, email, {
      interaction: flow.interaction,
      organization: flow.organization,
      invitation: flow.invitation,
    });
  } catch (error) {
    const { status, key } = messageFor(error, 'error.email_invalid');
    return send(h, status, signInPage(h, { email, error: key, below: await federatedBlock(h, 'sign_in') }));
  }
}

/**
 * The identifier step of the sign-in and sign-up forms: an email whose domain has an SSO connection goes to that IdP;
 * any other gets a magic link, and this browser waits for it. `carried` (the interaction, the organization choice, a
 * sign-up's name) stays in the flow. The API's refusals are thrown for the form to show.
 */
export async function startWithEmail(
  h: Hosted,
  email: string,
  carried: Pick<Flow, 'interaction' | 'organization' | 'name' | 'invitation'>,
) {
  const sso = await startSsoIfConnected(h, email, carried);
  if (sso) return redirect(h, sso);
  const started = await h.api.auth.magicLink.start({
    email,
    // The link opens on the service's own host (also from a custom domain: that tab then collects the sign-in).
    redirect_url: `${h.services.baseUrl}/a/${h.application.id}/magic-link`,
  });
  writeFlow(h.services, h.reply, h.application.id, {
    ...carried,
    verification_id: started.verification_id,
    poll_secret: started.poll_secret ?? undefined,
    email,
  });
  return redirect(h, `${h.base}/sign-in/wait`);
}

/** The page that waits for the magic link: it polls the API each time it reloads (every few seconds, no script). */
export async function waitForLink(h: Hosted) {
  const flow = readFlow(h.services, h.request, h.application.id);
  if (!flow.verification_id || !flow.poll_secret) return redirect(h, `${h.base}/sign-in`);
  let result: Awaited<ReturnType<Caller['auth']['magicLink']['poll']>>;
  try {
    result = await h.api.auth.magicLink.poll({ verification_id: flow.verification_id, poll_secret: flow.poll_secret });
  } catch (error) {
    // Collected by another tab of this browser (the link opened here): carry on as it did.
    if (await currentSession(h)) return continueSignedIn(h, flow);
    const { status, key } = messageFor(error, 'error.link_invalid');
    return send(h, status, refusalPage(h, key));
  }
  if (result.status === 'pending') return send(h, 200, checkEmailPage(h, flow.email ?? ''));
  return proceed(h, flow, result);
}

export async function showMagicLink(h: Hosted) {
  const token = (h.request.query as Record<string, string | undefined>).token ?? '';
  return send(h, 200, magicLinkPage(h, token));
}

/**
 * The emailed link's button. It confirms the link; when this browser is the one that asked for it, the sign-in
 * continues here, else on the device that asked (its waiting page collects it). Opening the link does nothing:
 * mail scanners that follow links confirm nothing.
 */
export async function confirmMagicLink(h: Hosted, form: Form) {
  try {
    await h.api.auth.magicLink.confirm({ token: form.token ?? '' });
  } catch (error) {
    const { status, key } = messageFor(error, 'error.link_invalid');
    return send(h, status, refusalPage(h, key));
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

export async function verifySecondFactor(h: Hosted, form: Form) {
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

export async function acceptConsent(h: Hosted, form: Form) {
  const flow = readFlow(h.services, h.request, h.application.id);
  try {
    const doc_types = (form.doc_types ?? '').split(',').filter(Boolean);
    return proceed(h, flow, await h.api.auth.consent.accept({ pending_token: form.pending_token ?? '', doc_types }));
  } catch (error) {
    const { status, key } = messageFor(error, 'error.link_invalid');
    return send(h, status, refusalPage(h, key));
  }
}

/**
 * Where a sign-in step leads: a second factor or consent documents to ask for, or a complete sign-in — which becomes
 * this browser's session. A new session always gets a new cookie and ends the one this browser had (no fixation:
 * nothing a page or a link carries can become the session).
 */
export async function proceed(h: Hosted, flow: Flow, result: SignInResult) {
  if (result.status === 'mfa_required') {
    return send(h, 200, mfaPage(h, { pending_token: result.mfa.pending_token, methods: result.mfa.methods }));
  }
  if (result.status === 'consent_required') {
    return send(h, 200, consentPage(h, result.pending_token, result.consent_documents));
  }
  // The browser's previous session (a step-up's aal 1 one, or another account's) is revoked as this one is attached.
  const previous = browserToken(h.request, h.application.id);
  const token = await attachBrowserSession(h.services.orm.em.fork(), h.application.id, result.tokens.refresh_token, previous);
  if (!token) return send(h, 401, errorPage(h.frame, h.request.id, 'error.generic', `${h.base}/sign-in`));
  setBrowserToken(h.services, h.reply, h.application.id, token);
  await rememberSignUpName(h, flow, result);
  // A second factor the application requires and the person lacks: enrolled before anything else.
  if (await enrolmentRequired(h, result.tokens.access_token)) return startTotpEnrolment(h, flow, result.tokens.access_token);
  return continueSignedIn(h, flow);
}

/** Signed in: back to the OAuth client that asked (its interaction), else the account page. */
export function continueSignedIn(h: Hosted, flow: Flow) {
  // The organization picker first, when the sign-in asked for one (it continues here without it).
  if (flow.organization === 'select') {
    writeFlow(h.services, h.reply, h.application.id, { interaction: flow.interaction, organization: 'select' });
    return redirect(h, `${h.base}/organization`);
  }
  if (flow.interaction) {
    writeFlow(h.services, h.reply, h.application.id, { interaction: flow.interaction });
    return redirect(h, `${h.base}/sign-in?interaction=${encodeURIComponent(flow.interaction)}`);
  }
  clearFlow(h.services, h.reply, h.application.id);
  // Signed in from an invitation page: back to it, to accept (invitations.ts).
  if (flow.invitation) return redirect(h, `${h.base}/invitations/${encodeURIComponent(flow.invitation)}`);
  return redirect(h, `${h.base}/account`);
}

export async function signOut(h: Hosted) {
  const token = browserToken(h.request, h.application.id);
  if (token) await endBrowserSession(h.services.orm.em.fork(), h.application.id, token);
  clearBrowserToken(h.services, h.reply, h.application.id);
  clearFlow(h.services, h.reply, h.application.id);
  return send(h, 200, signedOutPage(h));
}

import { browserAccessToken, endBrowserSession, errorBody } from '@gatehouse/api';
import type { FastifyInstance } from 'fastify';
import type { MessageKey } from './catalog.ts';
import { html } from './html.ts';
import { page } from './page.ts';
import { errorPage } from './pages.ts';
import {
  type Caller,
  currentSession,
  type Form,
  type Hosted,
  messageFor,
  type Routes,
  redirect,
  send,
  signedInApi,
} from './request.ts';
import { startWithEmail } from './sign-in.ts';
import { browserToken, clearBrowserToken, writeFlow } from './state.ts';

/**
 * The invitation page `/a/{id}/invitations/{token}` (CONTRACT §9), where the mailed link lands. Opening it consumes
 * nothing (mail scanners follow links): it shows the organization and the role, then, by who this browser is signed in
 * as — the invited address: an Accept button (a form post, CSRF) that accepts through `auth.invitations.accept` and
 * goes on to the invitation's redirect URL (else the account page); someone else: a way to sign out and sign in as
 * the invited address; nobody: a sign-in as the invited address (which creates the account when there is none, even
 * with sign-up closed: the API lets an invited address sign up), after which the sign-in comes back here to accept.
 */

type Preview = Awaited<ReturnType<Caller['auth']['invitations']['lookup']>>;

const csrfField = (h: Hosted) => html`<input type="hidden" name="csrf" value="${h.csrf}">`;
const appName = (h: Hosted) => h.frame.branding.display_name ?? h.frame.appName;
const sameAddress = (a: string | null | undefined, b: string) => !!a && a.trim().toLowerCase() === b;

const roleName = (h: Hosted, role: string) => {
  const known: Record<string, MessageKey> = {
    owner: 'invitation.role.owner',
    admin: 'invitation.role.admin',
    member: 'invitation.role.member',
  };
  const key = known[role];
  return key ? h.frame.t(key) : role;
};

const formatDate = (h: Hosted, iso: string) =>
  `${new Intl.DateTimeFormat(h.frame.locale, { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' }).format(new Date(iso))} UTC`;

/** A one-button form posting the token to `action` under the application's pages. */
const tokenForm = (h: Hosted, action: string, token: string, label: string, kind = '') =>
  html`<form method="post" action="${h.base}/invitations/${action}">
${csrfField(h)}
<input type="hidden" name="token" value="${token}">
<button type="submit"${kind ? html` class="${kind}"` : ''}>${label}</button>
</form>`;

function invitationPage(
  h: Hosted,
  token: string,
  invitation: Preview,
  signedInAs: { email: string | null; verified: boolean } | undefined,
) {
  const { t } = h.frame;
  const { email } = invitation;
  const intro = html`<p>${t('invitation.body', {
    app: appName(h),
    email,
    organization: invitation.organization_name,
    role: roleName(h, invitation.role),
  })}</p>
<p class="muted">${t('invitation.expires', { date: formatDate(h, invitation.expires_at) })}</p>`;
  let action: ReturnType<typeof html>;
  if (signedInAs?.verified && sameAddress(signedInAs.email, email)) {
    action = html`<p>${t('invitation.signed_in_as', { email })}</p>
${tokenForm(h, 'accept', token, t('invitation.accept'))}`;
  } else if (signedInAs) {
    action = html`<p class="notice">${t('invitation.other_account', { current: signedInAs.email ?? '—', email })}</p>
${tokenForm(h, 'switch', token, t('invitation.switch', { email }))}`;
  } else {
    action = html`<p>${t('invitation.sign_in', { email })}</p>
${tokenForm(h, 'sign-in', token, t('invitation.continue_as', { email }))}
<p><a href="${h.base}/sign-in?login_hint=${encodeURIComponent(email)}">${t('invitation.other_way')}</a></p>`;
  }
  return page(h.frame, t('invitation.title', { organization: invitation.organization_name }), html`${intro}${action}`);
}

const invalidPage = (h: Hosted, status: number, key: MessageKey) =>
  send(h, status, errorPage(h.frame, h.request.id, key, `${h.base}/sign-in`));

/** The invitation the token names, or the error page's answer (an unknown, used, revoked or expired token). */
async function lookup(h: Hosted, token: string): Promise<Preview | undefined> {
  try {
    return await h.api.auth.invitations.lookup({ token });
  } catch (error) {
    const { status, key } = messageFor(error, 'invitation.invalid');
    await invalidPage(h, status, key);
    return undefined;
  }
}

/** The person this browser is signed in as, with the API as them; undefined without a live session. */
async function signedIn(h: Hosted) {
  const session = await currentSession(h);
  if (!session) return undefined;
  const { access_token } = await browserAccessToken(h.services.orm.em.fork(), h.services, h.application, session);
  const api = signedInApi(h, access_token);
  return { api, me: await api.auth.me.get() };
}

async function showInvitation(h: Hosted) {
  const { token = '' } = h.request.params as { token?: string };
  const invitation = await lookup(h, token);
  if (!invitation) return h.reply;
  const person = await signedIn(h);
  // A sign-in started from here (the links below) comes back here: the flow remembers the invitation.
  if (!person) writeFlow(h.services, h.reply, h.application.id, { invitation: token });
  const as = person ? { email: person.me.primary_email ?? null, verified: person.me.email_verified } : undefined;
  return send(h, 200, invitationPage(h, token, invitation, as));
}

/** The Accept button: accepted as the signed-in person, then on to the invitation's redirect URL (or the account page). */
async function acceptInvitation(h: Hosted, form: Form) {
  const token = form.token ?? '';
  const person = await signedIn(h);
  if (!person) return redirect(h, `${h.base}/invitations/${encodeURIComponent(token)}`);
  try {
    const accepted = await person.api.auth.invitations.accept({ token });
    return redirect(h, accepted.redirect_url ?? `${h.base}/account`);
  } catch (error) {
    const { code } = errorBody(error);
    const known: Partial<Record<string, [number, MessageKey]>> = {
      invitation_email_mismatch: [403, 'invitation.mismatch'],
      already_member: [409, 'invitation.already_member'],
      seat_limit_reached: [409, 'invitation.seats'],
    };
    const refusal = known[code];
    if (refusal) return invalidPage(h, refusal[0], refusal[1]);
    const { status, key } = messageFor(error, 'invitation.invalid');
    return invalidPage(h, status, key);
  }
}

/** Not signed in: a magic link to the invited address (the sign-in then comes back to the invitation page). */
async function signInToAccept(h: Hosted, form: Form) {
  const token = form.token ?? '';
  const invitation = await lookup(h, token);
  if (!invitation) return h.reply;
  try {
    return await startWithEmail(h, invitation.email, { invitation: token });
  } catch (error) {
    const { status, key } = messageFor(error, 'error.generic');
    return invalidPage(h, status, key);
  }
}

/** Signed in as someone else: this browser's session ends, and a sign-in as the invited address begins. */
async function switchAccount(h: Hosted, form: Form) {
  const token = form.token ?? '';
  const invitation = await lookup(h, token);
  if (!invitation) return h.reply;
  const current = browserToken(h.request, h.application.id);
  if (current) await endBrowserSession(h.services.orm.em.fork(), h.application.id, current);
  clearBrowserToken(h.services, h.reply, h.application.id);
  return signInToAccept(h, form);
}

export function registerInvitationRoutes(pages: FastifyInstance, { open, post }: Routes) {
  pages.get('/a/:applicationId/invitations/:token', open(showInvitation));
  pages.post('/a/:applicationId/invitations/accept', post(acceptInvitation));
  pages.post('/a/:applicationId/invitations/sign-in', post(signInToAccept));
  pages.post('/a/:applicationId/invitations/switch', post(switchAccount));
}

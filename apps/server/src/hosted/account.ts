import { type BrowserSession, browserAccessToken, describeError, type ErrorCode, errorBody } from '@gatehouse/api';
import type { FastifyInstance } from 'fastify';
import { isMessageKey, type MessageKey } from './catalog.ts';
import { startTotpEnrolment } from './enrolment.ts';
import { type Html, html } from './html.ts';
import { page } from './page.ts';
import { mfaPage } from './pages.ts';
import { accountPasskeys } from './passkeys.ts';
import { qrSvg } from './qr.ts';
import { type Caller, currentSession, type Form, type Hosted, type Routes, redirect, send, signedInApi } from './request.ts';
import { continueSignedIn } from './sign-in.ts';
import { type Flow, readFlow, writeFlow } from './state.ts';

/**
 * The account page `/a/{id}/account`: the signed-in person's profile, sessions, authenticator app, backup codes,
 * linked accounts and the apps they authorized. Everything goes through the API's own procedures as that person (an
 * access token of this browser's session), so the API's rules hold here unchanged: another person's ids are not
 * found, and what needs a session at aal 2 (`step_up_required`) says so, with the way to get one. Each action is a
 * form post (CSRF) answered by a 303 back to the page, the outcome kept for one view in the sealed flow cookie as a
 * catalog key — never text from the request.
 */

export type Me = Awaited<ReturnType<Caller['auth']['me']['get']>>;
type Factor = Awaited<ReturnType<Caller['auth']['mfa']['factors']['list']>>[number];

/** The signed-in person as a section sees them. */
export interface AccountView {
  h: Hosted;
  /** The procedures as the signed-in person. */
  api: Caller;
  me: Me;
  session: BrowserSession;
  /** Their confirmed second factors of ours (authenticator app, backup codes). */
  factors: Factor[];
}

/** One section of the account page: its markup (a `<section>` with an `<h2>`), from the person's view. */
export type AccountSection = (view: AccountView) => Promise<Html>;

interface Account {
  session: BrowserSession;
  api: Caller;
  me: Me;
}

/** The person signed in in this browser, with the API as them; undefined when this browser has no live session. */
async function signedIn(h: Hosted): Promise<Account | undefined> {
  const session = await currentSession(h);
  if (!session) return undefined;
  const { access_token } = await browserAccessToken(h.services.orm.em.fork(), h.services, h.application, session);
  const api = signedInApi(h, access_token);
  return { session, api, me: await api.auth.me.get() };
}

const csrfField = (h: Hosted) => html`<input type="hidden" name="csrf" value="${h.csrf}">`;
const appName = (h: Hosted) => h.frame.branding.display_name ?? h.frame.appName;

/** A one-button form posting `fields` (an item's id) to `action`. */
const button = (h: Hosted, action: string, label: string, fields: Record<string, string> = {}, kind = 'secondary'): Html =>
  html`<form method="post" action="${h.base}${action}">
${csrfField(h)}${Object.entries(fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}
<button type="submit" class="${kind}">${label}</button>
</form>`;

const formatDate = (h: Hosted, iso: string, withTime = false) =>
  new Intl.DateTimeFormat(h.frame.locale, {
    dateStyle: 'medium',
    ...(withTime ? { timeStyle: 'short' as const } : {}),
    timeZone: 'UTC',
  }).format(new Date(iso)) + (withTime ? ' UTC' : '');

const section = (id: string, title: string, body: Html) =>
  html`<section aria-labelledby="${id}">
<h2 id="${id}">${title}</h2>
${body}
</section>`;

// ——— Sections ———

const profileSection: AccountSection = async ({ h, me }) => {
  const { t } = h.frame;
  const name = typeof me.profile.name === 'string' ? me.profile.name : '';
  return section(
    'account-profile',
    t('account.profile.title'),
    html`<p><span class="muted">${t('account.profile.email')}</span><br>${me.primary_email ?? t('account.profile.no_email')}</p>
<form method="post" action="${h.base}/account/profile">
${csrfField(h)}
<label for="profile-name">${t('account.profile.name')}</label>
<input id="profile-name" name="name" type="text" autocomplete="name" maxlength="${NAME_MAX}" value="${name}">
<button type="submit" class="secondary">${t('account.profile.save')}</button>
</form>`,
  );
};

const sessionsSection: AccountSection = async ({ h, api }) => {
  const { t } = h.frame;
  const sessions = await api.auth.sessions.list();
  return section(
    'account-sessions',
    t('account.sessions.title'),
    html`<ul class="items">${sessions.map(
      (s) => html`<li>
<strong>${s.user_agent ?? t('account.sessions.unknown_device')}</strong>${s.current ? html` <span class="tag">${t('account.sessions.current')}</span>` : ''}
<br><span class="muted">${t('account.sessions.details', { created: formatDate(h, s.created_at, true), active: formatDate(h, s.last_active_at, true) })}</span>
${s.current ? '' : button(h, '/account/sessions/revoke', t('account.sessions.revoke'), { id: s.id })}
</li>`,
    )}</ul>`,
  );
};

const totpSection: AccountSection = async ({ h, factors }) => {
  const { t } = h.frame;
  const totp = factors.find((f) => f.kind === 'totp');
  return section(
    'account-totp',
    t('account.totp.title'),
    totp
      ? html`<p>${t('account.totp.enabled', { date: formatDate(h, totp.created_at) })}</p>
${button(h, '/account/totp/remove', t('account.totp.remove'), { id: totp.id })}
${button(h, '/account/totp/enroll', t('account.totp.replace'))}`
      : html`<p>${t('account.totp.none')}</p>
${button(h, '/account/totp/enroll', t('account.totp.add'), {}, 'primary')}`,
  );
};

const backupCodesSection: AccountSection = async ({ h, factors }) => {
  const { t } = h.frame;
  const set = factors.find((f) => f.kind === 'backup_code');
  return section(
    'account-backup-codes',
    t('account.backup_codes.title'),
    html`<p>${set ? t('account.backup_codes.has', { date: formatDate(h, set.created_at) }) : t('account.backup_codes.none')}</p>
${button(h, '/account/backup-codes', set ? t('account.backup_codes.regenerate') : t('account.backup_codes.generate'))}`,
  );
};

const identitiesSection: AccountSection = async ({ h, api }) => {
  const { t } = h.frame;
  // Passkeys are listed by their own section; this one is for OAuth and SAML accounts.
  const identities = (await api.auth.identities.list()).filter((i) => i.kind !== 'passkey');
  return section(
    'account-identities',
    t('account.identities.title'),
    identities.length
      ? html`<ul class="items">${identities.map((i) => {
          const name = i.provider ? `${i.name} (${i.provider})` : i.name;
          return html`<li><strong>${name}</strong>
${button(h, '/account/identities/unlink', t('account.identities.unlink', { name }), { id: i.id })}</li>`;
        })}</ul>`
      : html`<p class="muted">${t('account.identities.none')}</p>`,
  );
};

const grantsSection: AccountSection = async ({ h, api }) => {
  const { t } = h.frame;
  const grants = await api.auth.me.grants.list();
  const names = await clientNames(
    h,
    grants.map((g) => g.client_id),
  );
  return section(
    'account-grants',
    t('account.grants.title'),
    grants.length
      ? html`<ul class="items">${grants.map((g) => {
          const name = names.get(g.client_id) ?? g.client_id;
          return html`<li><strong>${name}</strong>
<br><span class="muted">${t('account.grants.scopes', { scopes: g.scopes.join(' ') })}</span>
${button(h, '/account/grants/revoke', t('account.grants.revoke', { name }), { id: g.id })}</li>`;
        })}</ul>`
      : html`<p class="muted">${t('account.grants.none')}</p>`,
  );
};

/**
 * The display names of the application's OAuth clients (a grant names its client by id only; the person knows the
 * app by its name). A read of this application's own rows, nothing more.
 */
async function clientNames(h: Hosted, ids: string[]): Promise<Map<string, string>> {
  const unique = [...new Set(ids)];
  if (!unique.length) return new Map();
  const rows = await h.services.orm.em
    .fork()
    .execute<Array<{ id: string; name: string }>>(
      `select id, name from oauth2_clients where application_id = ? and id in (${unique.map(() => '?').join(', ')})`,
      [h.application.id, ...unique],
    );
  return new Map(rows.map((row) => [row.id, row.name]));
}

/**
 * The account page's sections, in order. A feature with its own section adds it here with one line (its markup and
 * routes in its own file), as the passkeys section (passkeys.ts) is.
 */
export const ACCOUNT_SECTIONS: AccountSection[] = [
  profileSection,
  sessionsSection,
  totpSection,
  backupCodesSection,
  ({ h, api }) => accountPasskeys(h, api),
  identitiesSection,
  grantsSection,
];

// ——— The outcome of an action, shown once ———

/** Back to an account page with the outcome of an action (kept in the sealed flow cookie for the next view). */
export function back(h: Hosted, key: MessageKey, to = '/account') {
  const flow = readFlow(h.services, h.request, h.application.id);
  writeFlow(h.services, h.reply, h.application.id, { ...flow, flash: key });
  return redirect(h, `${h.base}${to}`);
}

/** The outcome kept for this view, if any; it is then forgotten. */
function takeFlash(h: Hosted, flow: Flow): MessageKey | undefined {
  if (flow.flash === undefined) return undefined;
  const { flash, ...rest } = flow;
  writeFlow(h.services, h.reply, h.application.id, rest);
  return isMessageKey(flash) ? flash : undefined;
}

const flashMessage = (h: Hosted, key: MessageKey | undefined) =>
  key === undefined
    ? ''
    : key.startsWith('account.done.')
      ? html`<p class="notice" role="status">${h.frame.t(key)}</p>`
      : html`<p class="error" role="alert">${h.frame.t(key, { app: appName(h) })}</p>`;

/** What an API error means to the person, as a catalog key; `specific` overrides for one action. */
export function failure(h: Hosted, error: unknown, specific: Partial<Record<ErrorCode, MessageKey>> = {}): MessageKey {
  const { code } = errorBody(error);
  const own = specific[code];
  if (own) return own;
  switch (code) {
    case 'step_up_required':
      return 'account.failed.step_up_required';
    case 'not_found':
      return 'account.failed.not_found';
    case 'validation_failed':
      return 'account.failed.invalid';
    case 'rate_limited':
      return 'error.rate_limited';
    default:
      h.request.log.error({ err: describeError(error) }, 'account action failed');
      return 'error.generic';
  }
}

/** The way to a session at aal 2: a step-up of this session with the second factor alone. */
const stepUp = (h: Hosted) =>
  html`<div class="notice"><p>${h.frame.t('account.step_up.body')}</p>
${button(h, '/account/verify', h.frame.t('account.step_up.button'))}</div>`;

// ——— Pages ———

const signOutForm = (h: Hosted) => button(h, '/sign-out', h.frame.t('sign_out.button'));

export async function showAccount(h: Hosted) {
  const account = await signedIn(h);
  if (!account) return redirect(h, `${h.base}/sign-in`);
  if (account.me.mfa_enrollment_required) return redirect(h, `${h.base}/account/totp`);
  const flash = takeFlash(h, readFlow(h.services, h.request, h.application.id));
  const factors = await account.api.auth.mfa.factors.list();
  const view: AccountView = { h, ...account, factors };
  // One after another: the calls share the caller's context (and its entity manager).
  const sections: Html[] = [];
  for (const draw of ACCOUNT_SECTIONS) sections.push(await draw(view));
  // Fastify parses the query string into an object of strings; only one value is compared, never trusted further.
  const passkeyRefused = (h.request.query as Record<string, unknown>).passkeys === 'step_up';
  const needsStepUp =
    flash === 'account.failed.step_up_required' || passkeyRefused || (account.session.aal < 2 && factors.length > 0);
  const { t } = h.frame;
  return send(
    h,
    200,
    page(
      h.frame,
      t('account.title'),
      html`${flashMessage(h, flash)}
<p>${t('account.signed_in_as', { email: account.me.primary_email ?? '' })}</p>
${needsStepUp ? stepUp(h) : ''}
${sections}
<p><a href="${h.base}/organization">${t('organization.link')}</a></p>
${signOutForm(h)}`,
      { wide: true },
    ),
  );
}

/** The authenticator app's enrolment: the QR code and the setup key, and the first code that confirms them. */
export async function showTotpEnrolment(h: Hosted) {
  const account = await signedIn(h);
  if (!account) return redirect(h, `${h.base}/sign-in`);
  const flow = readFlow(h.services, h.request, h.application.id);
  const flash = takeFlash(h, flow);
  const { t } = h.frame;
  const required = account.me.mfa_enrollment_required;
  const intro = required ? html`<p>${t('account.totp.enrol.required', { app: appName(h) })}</p>` : '';
  const body = flow.totp
    ? html`<p>${t('account.totp.enrol.scan')}</p>
<div class="qr-box">${qrSvg(flow.totp.otpauth_uri, t('account.totp.enrol.qr', { app: appName(h) }))}</div>
<p><span class="muted">${t('account.totp.enrol.secret')}</span><br><code class="secret">${groups(flow.totp.secret)}</code></p>
<form method="post" action="${h.base}/account/totp/confirm">
${csrfField(h)}
<label for="totp-code">${t('mfa.totp')}</label>
<input id="totp-code" name="code" type="text" autocomplete="one-time-code" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" required>
<button type="submit">${t('account.totp.enrol.confirm')}</button>
</form>`
    : html`<p>${t('account.totp.enrol.start_body')}</p>
${button(h, '/account/totp/enroll', t('account.totp.enrol.start'), {}, 'primary')}`;
  return send(
    h,
    200,
    page(
      h.frame,
      t('account.totp.enrol.title'),
      html`${flashMessage(h, flash)}
${intro}
${body}
${required ? signOutForm(h) : html`<p><a href="${h.base}/account">${t('account.back')}</a></p>`}`,
    ),
  );
}

/** The base32 seed in groups of four, as authenticator apps show and accept it. */
const groups = (secret: string) => secret.match(/.{1,4}/g)?.join(' ') ?? secret;

// ——— Actions ———

const NAME_MAX = 200;

/**
 * An account action: signed in, enrolled when the application requires it, then `run` with the API as the person;
 * its outcome (or the API's refusal) is shown by the account page.
 */
function action(
  run: (account: Account, form: Form) => Promise<MessageKey>,
  specific: Partial<Record<ErrorCode, MessageKey>> = {},
) {
  return async (h: Hosted, form: Form) => {
    const account = await signedIn(h);
    if (!account) return redirect(h, `${h.base}/sign-in`);
    if (account.me.mfa_enrollment_required) return back(h, 'account.failed.enrol_first', '/account/totp');
    try {
      return back(h, await run(account, form));
    } catch (error) {
      return back(h, failure(h, error, specific));
    }
  };
}

const saveProfile = action(async ({ api, me }, form) => {
  const name = (form.name ?? '').trim();
  if (name.length > NAME_MAX) return 'account.failed.invalid';
  const { name: _previous, ...rest } = me.profile;
  await api.auth.me.update({ profile: name ? { ...rest, name } : rest });
  return 'account.done.profile_saved';
});

const revokeSession = action(async ({ api }, form) => {
  await api.auth.sessions.revoke({ id: form.id ?? '' });
  return 'account.done.session_revoked';
});

const removeTotp = action(async ({ api }, form) => {
  await api.auth.mfa.factors.delete({ id: form.id ?? '' });
  return 'account.done.totp_removed';
});

const unlinkIdentity = action(
  async ({ api }, form) => {
    await api.auth.identities.delete({ id: form.id ?? '' });
    return 'account.done.identity_unlinked';
  },
  { conflict: 'account.failed.last_identity' },
);

const revokeGrant = action(async ({ api }, form) => {
  await api.auth.me.grants.revoke({ id: form.id ?? '' });
  return 'account.done.grant_revoked';
});

/** Starts enrolling an authenticator app (also while enrolment is required), then shows its QR code. */
async function enrolTotp(h: Hosted) {
  const session = await currentSession(h);
  if (!session) return redirect(h, `${h.base}/sign-in`);
  const { access_token } = await browserAccessToken(h.services.orm.em.fork(), h.services, h.application, session);
  try {
    return await startTotpEnrolment(h, readFlow(h.services, h.request, h.application.id), access_token);
  } catch (error) {
    return back(h, failure(h, error));
  }
}

/** The first code from the app: the factor counts from now on; a required enrolment then continues the sign-in. */
async function confirmTotp(h: Hosted, form: Form) {
  const account = await signedIn(h);
  if (!account) return redirect(h, `${h.base}/sign-in`);
  const flow = readFlow(h.services, h.request, h.application.id);
  if (!flow.totp) return redirect(h, `${h.base}/account/totp`);
  try {
    await account.api.auth.mfa.totp.confirm({ factor_id: flow.totp.factor_id, code: (form.code ?? '').trim() });
  } catch (error) {
    const key = failure(h, error, {
      assertion_failed: 'account.failed.code_invalid',
      validation_failed: 'account.failed.code_invalid',
    });
    if (key === 'account.failed.code_invalid') return back(h, key, '/account/totp');
    // The enrolment is gone (another tab replaced it) or refused: start again from the account page.
    const { totp: _gone, ...rest } = flow;
    writeFlow(h.services, h.reply, h.application.id, { ...rest, flash: key });
    return redirect(h, `${h.base}${account.me.mfa_enrollment_required ? '/account/totp' : '/account'}`);
  }
  const { totp: _done, ...rest } = flow;
  // A required enrolment continues the sign-in: the organization picker, the OAuth client that asked.
  if (account.me.mfa_enrollment_required && (rest.interaction || rest.organization)) return continueSignedIn(h, rest);
  writeFlow(h.services, h.reply, h.application.id, { ...rest, flash: 'account.done.totp_added' });
  return redirect(h, `${h.base}/account`);
}

/** New backup codes: shown in this answer only (never kept anywhere, not even sealed in a cookie). */
async function createBackupCodes(h: Hosted) {
  const account = await signedIn(h);
  if (!account) return redirect(h, `${h.base}/sign-in`);
  if (account.me.mfa_enrollment_required) return back(h, 'account.failed.enrol_first', '/account/totp');
  let codes: string[];
  try {
    ({ codes } = await account.api.auth.mfa.backupCodes.create());
  } catch (error) {
    return back(h, failure(h, error));
  }
  const { t } = h.frame;
  return send(
    h,
    200,
    page(
      h.frame,
      t('account.backup_codes.shown.title'),
      html`<p role="status">${t('account.backup_codes.shown.body')}</p>
<ul class="codes">${codes.map((code) => html`<li><code>${code}</code></li>`)}</ul>
<p><a class="button" href="${h.base}/account">${t('account.back')}</a></p>`,
    ),
  );
}

/**
 * A session at aal 2 for what needs one: a step-up of this very session (`POST /v1/auth/step-up` as the person),
 * which asks for the second factor only — an authenticator app's code, a backup code or a passkey. The factor's
 * page posts where a sign-in's second factor does; its answer is this session, raised to aal 2, whose cookie is then
 * rotated (`proceed`), and the account page continues with the change possible.
 */
async function verifySecondFactor(h: Hosted) {
  const account = await signedIn(h);
  if (!account) return redirect(h, `${h.base}/sign-in`);
  try {
    const challenge = await account.api.auth.stepUp.start();
    return send(h, 200, mfaPage(h, { pending_token: challenge.pending_token, methods: challenge.mfa.methods }));
  } catch (error) {
    // At aal 2 already (another tab verified): the change is possible now.
    if (errorBody(error).code === 'conflict') return redirect(h, `${h.base}/account`);
    return back(h, failure(h, error, { no_second_factor: 'account.failed.no_second_factor' }));
  }
}

export function registerAccountRoutes(pages: FastifyInstance, routes: Routes) {
  const base = '/a/:applicationId/account';
  pages.get(base, routes.open(showAccount));
  pages.post(`${base}/profile`, routes.post(saveProfile));
  pages.post(`${base}/sessions/revoke`, routes.post(revokeSession));
  pages.get(`${base}/totp`, routes.open(showTotpEnrolment));
  pages.post(`${base}/totp/enroll`, routes.post(enrolTotp));
  pages.post(`${base}/totp/confirm`, routes.post(confirmTotp));
  pages.post(`${base}/totp/remove`, routes.post(removeTotp));
  pages.post(`${base}/backup-codes`, routes.post(createBackupCodes));
  pages.post(`${base}/identities/unlink`, routes.post(unlinkIdentity));
  pages.post(`${base}/grants/revoke`, routes.post(revokeGrant));
  pages.post(`${base}/verify`, routes.post(verifySecondFactor));
}

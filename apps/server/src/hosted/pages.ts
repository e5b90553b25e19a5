import type { MessageKey } from './catalog.ts';
import { type Html, html } from './html.ts';
import { page } from './page.ts';
import { passkeySecondFactor, passkeySignIn } from './passkeys-ui.ts';
import type { Hosted } from './request.ts';

/**
 * The hosted pages' bodies. Each form posts back to the application's pages with this browser's CSRF token; every
 * value is escaped by `html`.
 */
const csrfField = (h: Hosted) => html`<input type="hidden" name="csrf" value="${h.csrf}">`;
const alert = (h: Hosted, key: MessageKey | undefined) =>
  key ? html`<p class="error" role="alert">${h.frame.t(key, { app: appName(h) })}</p>` : '';
const appName = (h: Hosted) => h.frame.branding.display_name ?? h.frame.appName;

export function signInPage(
  h: Hosted,
  options: { email?: string; error?: MessageKey; notice?: MessageKey; client?: string; below?: Html },
): string {
  const { t } = h.frame;
  return page(
    h.frame,
    t('sign_in.title', { app: appName(h) }),
    html`${alert(h, options.error)}
${options.notice ? html`<p role="status">${t(options.notice, { client: options.client ?? '' })}</p>` : ''}
<form method="post" action="${h.base}/sign-in">
${csrfField(h)}
<label for="email">${t('sign_in.email')}</label>
<input id="email" name="email" type="email" autocomplete="username webauthn" required value="${options.email ?? ''}"${options.email ? '' : html` autofocus`}>
<button type="submit">${t('sign_in.continue')}</button>
</form>
${passkeySignIn(h)}
${options.below}`,
  );
}

export function checkEmailPage(h: Hosted, email: string): string {
  const { t } = h.frame;
  return page(
    h.frame,
    t('sign_in.check_email.title'),
    html`<p role="status">${t('sign_in.check_email.body', { email })}</p>
<p><a class="button secondary" href="${h.base}/sign-in/wait">${t('sign_in.check_email.refresh')}</a></p>
<p><a href="${h.base}/sign-in">${t('sign_in.other_email')}</a></p>`,
    {
      // It checks again every few seconds by itself: a script reloads it (a refresh the page declares is one the
      // person cannot stop, WCAG 2.2.1); without scripts, the same refresh in <noscript>. The button checks at once.
      headExtra: html`<script nonce="${h.frame.nonce.script}">setTimeout(() => location.reload(), 3000);</script>
<noscript><meta http-equiv="refresh" content="3"></noscript>`,
    },
  );
}

/** A magic link's confirmation: opening the link consumes nothing, its button does (posted to `action`). */
export function magicLinkPage(h: Hosted, token: string, action = `${h.base}/magic-link`): string {
  const { t } = h.frame;
  return page(
    h.frame,
    t('magic_link.title'),
    html`<p>${t('magic_link.body', { app: appName(h) })}</p>
<form method="post" action="${action}">
${csrfField(h)}
<input type="hidden" name="token" value="${token}">
<button type="submit">${t('magic_link.confirm')}</button>
</form>`,
  );
}

/** The first operator's set-up (the link the start prints while the console has no operator): an email address. */
export function consoleSetupPage(h: Hosted, token: string, error?: MessageKey): string {
  const { t } = h.frame;
  return page(
    h.frame,
    t('console.setup.title'),
    html`${alert(h, error)}<p>${t('console.setup.body')}</p>
<form method="post" action="/console/setup">
${csrfField(h)}
<input type="hidden" name="token" value="${token}">
<label for="email">${t('sign_in.email')}</label>
<input id="email" name="email" type="email" autocomplete="email" required autofocus>
<button type="submit">${t('console.setup.submit')}</button>
</form>`,
  );
}

export function elsewherePage(h: Hosted): string {
  const { t } = h.frame;
  return page(h.frame, t('magic_link.elsewhere.title'), html`<p role="status">${t('magic_link.elsewhere.body')}</p>`);
}

export function mfaPage(
  h: Hosted,
  options: { pending_token: string; methods: readonly string[]; method?: string; error?: MessageKey },
): string {
  const { t } = h.frame;
  const hasTotp = options.methods.includes('totp');
  const method = options.method ?? (hasTotp ? 'totp' : 'backup_code');
  const form = (kind: 'totp' | 'backup_code', label: MessageKey, autocomplete: string): Html => html`
<form method="post" action="${h.base}/mfa">
${csrfField(h)}
<input type="hidden" name="pending_token" value="${options.pending_token}">
<input type="hidden" name="methods" value="${options.methods.join(',')}">
<input type="hidden" name="method" value="${kind}">
<label for="code-${kind}">${t(label)}</label>
<input id="code-${kind}" name="code" type="text" autocomplete="${autocomplete}" required${kind === 'totp' ? html` inputmode="numeric" pattern="[0-9]{6}" maxlength="6"` : ''}${kind === method ? html` autofocus` : ''}>
<button type="submit">${t('mfa.verify')}</button>
</form>`;
  return page(
    h.frame,
    t('mfa.title'),
    html`${alert(h, options.error)}
${hasTotp ? form('totp', 'mfa.totp', 'one-time-code') : ''}
${passkeySecondFactor(h, options.pending_token, options.methods)}
${options.methods.includes('backup_code') ? html`<details${method === 'backup_code' || !hasTotp ? html` open` : ''}><summary>${t('mfa.use_backup_code')}</summary>${form('backup_code', 'mfa.backup_code', 'off')}</details>` : ''}`,
  );
}

export function consentPage(
  h: Hosted,
  pendingToken: string,
  documents: ReadonlyArray<{ doc_type: string; url: string; version: string }>,
): string {
  const { t } = h.frame;
  return page(
    h.frame,
    t('consent.title'),
    html`<p>${t('consent.body')}</p>
<ul>${documents.map((d) => html`<li><a href="${safeUrl(d.url)}" target="_blank" rel="noopener noreferrer">${d.doc_type}</a> <span class="muted">(${d.version})</span></li>`)}</ul>
<form method="post" action="${h.base}/consent">
${csrfField(h)}
<input type="hidden" name="pending_token" value="${pendingToken}">
<input type="hidden" name="doc_types" value="${documents.map((d) => d.doc_type).join(',')}">
<button type="submit">${t('consent.accept')}</button>
</form>`,
  );
}

export function signedOutPage(h: Hosted): string {
  const { t } = h.frame;
  return page(
    h.frame,
    t('sign_out.title'),
    html`<p role="status">${t('sign_out.body', { app: appName(h) })}</p>
<p><a class="button" href="${h.base}/sign-in">${t('sign_out.again')}</a></p>`,
  );
}

/** What an OpenID Connect client asks for (its consent): the scopes, each a checkbox (`openid` is not optional). */
export function authorizePage(
  h: Hosted,
  interaction: { uid: string; client: { name: string }; scopes: ReadonlyArray<{ name: string; description: string }> },
  email: string,
): string {
  const { t } = h.frame;
  const action = `${h.base}/sign-in/authorize`;
  const scope = (s: { name: string; description: string }) =>
    s.name === 'openid'
      ? html`<li>${s.description || s.name}</li>`
      : html`<li><label><input type="checkbox" name="scope:${s.name}" value="on" checked> ${s.description || s.name}</label></li>`;
  return page(
    h.frame,
    t('authorize.title', { client: interaction.client.name, app: appName(h) }),
    html`<p class="muted">${t('authorize.signed_in_as', { email })}</p>
<form method="post" action="${action}">
${csrfField(h)}
<input type="hidden" name="interaction" value="${interaction.uid}">
<p>${t('authorize.scopes', { client: interaction.client.name })}</p>
<ul>${interaction.scopes.map(scope)}</ul>
<button type="submit" name="decision" value="allow">${t('authorize.allow')}</button>
</form>
<form method="post" action="${action}">
${csrfField(h)}
<input type="hidden" name="interaction" value="${interaction.uid}">
<button type="submit" name="decision" value="deny" class="secondary">${t('authorize.deny')}</button>
</form>`,
  );
}

/** `prompt=select_account`: continue as the signed-in person, or sign in with another account. */
export function chooseAccountPage(h: Hosted, interaction: { uid: string; client: { name: string } }, email: string): string {
  const { t } = h.frame;
  return page(
    h.frame,
    t('select_account.title'),
    html`<p>${t('select_account.body', { client: interaction.client.name })}</p>
<form method="post" action="${h.base}/sign-in/continue">
${csrfField(h)}
<input type="hidden" name="interaction" value="${interaction.uid}">
<button type="submit">${t('select_account.continue', { email })}</button>
</form>
<p><a class="button secondary" href="${h.base}/sign-in?interaction=${encodeURIComponent(interaction.uid)}&amp;another=1">${t('select_account.another')}</a></p>`,
  );
}

/** An error page: what happened in the person's language, the request id for support, no internals. */
export function errorPage(frame: Hosted['frame'], requestId: string, key: MessageKey, startAgain?: string): string {
  const { t } = frame;
  return page(
    frame,
    t('error.title'),
    html`<p class="error" role="alert">${t(key, { app: frame.branding.display_name ?? frame.appName })}</p>
${startAgain ? html`<p><a class="button" href="${startAgain}">${t('error.start_again')}</a></p>` : ''}
<p class="muted">${t('error.request_id', { id: requestId })}</p>`,
  );
}

/**
 * A refused step: an organization's SSO requirement is a message on the sign-in form (the email address then goes
 * to the organization's SSO, identifier first); any other refusal is the error page.
 */
export function refusalPage(h: Hosted, key: MessageKey, startAgain = `${h.base}/sign-in`): string {
  return key === 'error.sso_required' ? signInPage(h, { error: key }) : errorPage(h.frame, h.request.id, key, startAgain);
}

/** Only http(s) links are shown as links (a document URL is configuration, but `javascript:` must never be one). */
const safeUrl = (url: string) => (/^https?:\/\//i.test(url) ? url : '#');

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ownOrigin, settingsOf } from '@gatehouse/api';
import type { MessageKey } from './catalog.ts';
import { type Html, html, trusted } from './html.ts';
import type { Hosted } from './request.ts';

/**
 * The passkey parts of the hosted pages (their routes are in passkeys.ts): the sign-in page's autofill and button,
 * the second factor's button, the account page's section. Each part is hidden until the script shows it, so a
 * browser without JavaScript or WebAuthn sees the email form only. The script is inline (nonce), as is the browser
 * bundle of @simplewebauthn/browser (≈ 4 kB gzip): no script file, no `'self'` in the CSP.
 */

/** The origin the page is on: the service's own, or (pages at the root of a host) the custom domain's. */
const pagesOrigin = (h: Hosted) =>
  h.base ? ownOrigin(h.services) : `${new URL(h.services.baseUrl).protocol}//${h.request.headers.host ?? ''}`;

/** The pages can run a ceremony: the application's relying party accepts responses from the pages' own origin. */
export const relyingPartyFits = (h: Hosted) => h.application.allowedOrigins.includes(pagesOrigin(h));

/** Passkeys as a first factor (and adding one on the account page): `settings.sign_in.passkeys`, and a fitting RP. */
export const passkeysOffered = (h: Hosted) => settingsOf(h.application).sign_in.passkeys && relyingPartyFits(h);

let bundle: string | undefined;
/** @simplewebauthn/browser's UMD bundle (the global `SimpleWebAuthnBrowser`), read once. */
function webauthnBundle(): string {
  if (bundle === undefined) {
    const entry = createRequire(import.meta.url).resolve('@simplewebauthn/browser'); // …/script/index.js
    const text = readFileSync(join(dirname(dirname(entry)), 'dist', 'bundle', 'index.umd.min.js'), 'utf8');
    // Inline in a <script> element: the text must not be able to close it.
    if (/<\/script/i.test(text)) throw new Error('the WebAuthn bundle cannot be inlined');
    bundle = text;
  }
  return bundle;
}

/**
 * The ceremony of a `#passkey` box: its button (and, on the sign-in page, the autofill when the browser offers
 * conditional mediation) asks the box's `data-options` route for options with the box form's fields, runs the
 * ceremony, and submits the form with the state, its binding and the credential — a plain form post, so what follows
 * is the same page flow as any other factor. A newer ceremony aborts an older one (AbortError: nothing to show).
 */
const SCRIPT = `(function () {
  var box = document.getElementById('passkey');
  var W = window.SimpleWebAuthnBrowser;
  if (!box || !W || !W.browserSupportsWebAuthn()) return;
  var form = document.getElementById('passkey-form');
  var error = document.getElementById('passkey-error');
  var ceremony = box.getAttribute('data-ceremony');
  box.hidden = false;
  function fail(e) {
    if (e && e.name === 'AbortError') return;
    error.textContent = box.getAttribute('data-error');
    error.hidden = false;
  }
  function run(autofill) {
    var body = new URLSearchParams();
    Array.prototype.forEach.call(form.elements, function (el) {
      if (el.name && ['state', 'binding', 'credential'].indexOf(el.name) < 0) body.append(el.name, el.value);
    });
    return fetch(box.getAttribute('data-options'), { method: 'POST', body: body, credentials: 'same-origin' })
      .then(function (r) { if (!r.ok) throw new Error('options: ' + r.status); return r.json(); })
      .then(function (c) {
        var started = ceremony === 'register'
          ? W.startRegistration({ optionsJSON: c.options })
          : W.startAuthentication({ optionsJSON: c.options, useBrowserAutofill: autofill });
        return started.then(function (credential) {
          form.elements.state.value = c.state;
          form.elements.binding.value = c.binding;
          form.elements.credential.value = JSON.stringify(credential);
          form.submit();
        });
      });
  }
  document.getElementById('passkey-button').addEventListener('click', function () {
    error.hidden = true;
    run(false).catch(fail);
  });
  if (ceremony === 'sign-in') {
    W.browserSupportsWebAuthnAutofill().then(function (yes) { if (yes) run(true).catch(fail); });
  }
})();`;

const STYLE = `.passkey-or { text-align: center; margin: 1rem 0 .75rem; }
.passkeys { list-style: none; padding: 0; margin: 0 0 1rem; }
.passkeys li { display: flex; align-items: center; justify-content: space-between; gap: .75rem; padding: .5rem 0;
  border-bottom: 1px solid var(--line); }
.passkeys li form button { width: auto; padding: .35rem .75rem; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 .75rem; }
section + form { margin-top: 1.5rem; }`;

const style = (h: Hosted) => html`<style nonce="${h.frame.nonce.style}">${trusted(STYLE)}</style>`;

/** A passkey box: the button, where a failure is said, and the form the script fills and submits. */
function box(
  h: Hosted,
  options: { ceremony: 'sign-in' | 'mfa' | 'register'; route: string; button: MessageKey; fields?: Html; before?: Html },
): Html {
  const { t, nonce } = h.frame;
  return html`<div id="passkey" hidden data-ceremony="${options.ceremony}" data-options="${h.base}/passkeys/${options.route}/options" data-error="${t('passkeys.failed')}">
${options.before}
<button type="button" id="passkey-button" class="secondary">${t(options.button)}</button>
<p id="passkey-error" class="error" role="alert" hidden></p>
<form id="passkey-form" method="post" action="${h.base}/passkeys/${options.route}">
<input type="hidden" name="csrf" value="${h.csrf}">
${options.fields}
<input type="hidden" name="state" value="">
<input type="hidden" name="binding" value="">
<input type="hidden" name="credential" value="">
</form>
</div>
<script nonce="${nonce.script}">${trusted(webauthnBundle())}</script>
<script nonce="${nonce.script}">${trusted(SCRIPT)}</script>`;
}

/** The sign-in page's passkey: autofill on the email field, and a button; nothing when passkeys are not offered. */
export function passkeySignIn(h: Hosted): Html | '' {
  if (!passkeysOffered(h)) return '';
  return html`${style(h)}${box(h, {
    ceremony: 'sign-in',
    route: 'sign-in',
    button: 'passkeys.sign_in',
    before: html`<p class="passkey-or muted">${h.frame.t('passkeys.or')}</p>`,
  })}`;
}

/** The second factor's passkey, when the person has one (`methods` lists it). */
export function passkeySecondFactor(h: Hosted, pendingToken: string, methods: readonly string[]): Html | '' {
  if (!methods.includes('passkey') || !relyingPartyFits(h)) return '';
  return html`${style(h)}${box(h, {
    ceremony: 'mfa',
    route: 'mfa',
    button: 'passkeys.mfa',
    fields: html`<input type="hidden" name="pending_token" value="${pendingToken}">
<input type="hidden" name="methods" value="${methods.join(',')}">`,
  })}`;
}

export interface PasskeyListItem {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

const NOTICES = {
  added: 'passkeys.added',
  removed: 'passkeys.removed',
  step_up: 'passkeys.step_up',
  failed: 'passkeys.invalid',
} as const satisfies Record<string, MessageKey>;
export type PasskeyNotice = keyof typeof NOTICES;
const isNotice = (value: unknown): value is PasskeyNotice => typeof value === 'string' && value in NOTICES;

/**
 * The account page's passkeys: each one (name, added, last used) with a Remove button (a form: it works without
 * JavaScript), and "Add a passkey" when passkeys are offered. `notice` is what the last change did (`?passkeys=…`).
 */
export function passkeysSection(h: Hosted, passkeys: readonly PasskeyListItem[], notice: unknown): Html {
  const { t, locale } = h.frame;
  const date = (iso: string) => new Intl.DateTimeFormat(locale, { dateStyle: 'medium' }).format(new Date(iso));
  const said = isNotice(notice) ? NOTICES[notice] : undefined;
  const failure = notice === 'step_up' || notice === 'failed';
  return html`${style(h)}<section aria-labelledby="passkeys-title">
<h2 id="passkeys-title">${t('passkeys.section')}</h2>
${said ? html`<p class="${failure ? 'error' : 'muted'}" role="${failure ? 'alert' : 'status'}">${t(said)}</p>` : ''}
${
  passkeys.length
    ? html`<ul class="passkeys">${passkeys.map(
        (
          p,
        ) => html`<li><span>${p.name}<br><span class="muted">${t('passkeys.created', { date: date(p.created_at) })}${p.last_used_at ? html`, ${t('passkeys.last_used', { date: date(p.last_used_at) })}` : ''}</span></span>
<form method="post" action="${h.base}/passkeys/remove">
<input type="hidden" name="csrf" value="${h.csrf}">
<input type="hidden" name="id" value="${p.id}">
<button type="submit" class="secondary" aria-label="${t('passkeys.remove_label', { name: p.name })}">${t('passkeys.remove')}</button>
</form></li>`,
      )}</ul>`
    : html`<p class="muted">${t('passkeys.none')}</p>`
}
${passkeysOffered(h) ? box(h, { ceremony: 'register', route: 'register', button: 'passkeys.add' }) : ''}
</section>`;
}

import type { PortalContext, PortalIntent, PortalSession, Services } from '@gatehouse/api';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { MessageKey } from '../hosted/catalog.ts';
import { type Html, html, trusted } from '../hosted/html.ts';
import { type Frame, page } from '../hosted/page.ts';

/** The portal session's cookie (path `/portal`): its token is stored only as SHA-256. */
export const SESSION_COOKIE = 'gh_portal';

export type PortalForm = Record<string, string | undefined>;

/** One portal request: its live session (organization, intent), the context its operations run in, the frame. */
export interface Portal {
  services: Services;
  request: FastifyRequest;
  reply: FastifyReply;
  session: PortalSession;
  sessionToken: string;
  organizationName: string;
  /** The application's tenant context with the portal session: every `portal*` operation is bound by it. */
  ctx: PortalContext;
  frame: Frame;
  csrf: string;
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** How an intent declares its pages: each belongs to one intent, and only that intent's sessions reach it. */
export interface PortalRoutes {
  open(intent: PortalIntent, handler: (p: Portal) => Promise<unknown>): Handler;
  post(intent: PortalIntent, handler: (p: Portal, form: PortalForm) => Promise<unknown>): Handler;
}

export const portalSend = (p: Portal, status: number, body: string) =>
  p.reply.code(status).type('text/html').header('cache-control', 'no-store').send(body);
export const portalRedirect = (p: Portal, location: string) =>
  p.reply.code(303).header('cache-control', 'no-store').redirect(location);

export const hiddenCsrf = (p: Portal) => html`<input type="hidden" name="csrf" value="${p.csrf}">`;

/**
 * A portal page: the organization's name above the title, the page's body, and at the foot the way out ("Done",
 * which ends the session, back to the app when the link named where).
 */
export function portalPage(p: Portal, donePath: string, title: string, body: Html, options: { notice?: MessageKey } = {}) {
  const { t } = p.frame;
  return page(
    p.frame,
    title,
    html`<p class="muted">${t('portal.for_organization', { organization: p.organizationName })}</p>
${options.notice ? html`<p class="notice" role="status">${t(options.notice)}</p>` : ''}
${body}
<section>
<form method="post" action="${donePath}">
${hiddenCsrf(p)}
<button type="submit" class="secondary">${p.session.returnUrl ? t('portal.done_return') : t('portal.done')}</button>
</form>
</section>`,
    { wide: true, headExtra: html`<style nonce="${p.frame.nonce.style}">${trusted(PORTAL_STYLE)}</style>` },
  );
}

/** What the portal's pages add to the hosted pages' style: long values to copy, the metadata box, the test's table. */
const PORTAL_STYLE = `
textarea { width: 100%; font: .85rem/1.4 ui-monospace, monospace; padding: .5rem; border: 1px solid var(--line);
  border-radius: 8px; background: var(--card); color: var(--text); margin-bottom: 1rem; }
input[type=file] { margin-bottom: 1rem; color: var(--text); }
.copy { display: flex; gap: .75rem; align-items: flex-start; justify-content: space-between; }
.copy p { margin-bottom: .75rem; min-width: 0; }
.copy button { width: auto; flex: none; padding: .35rem .75rem; }
ol { padding-left: 1.25rem; }
ol li + li { margin-top: .35rem; }
table { width: 100%; border-collapse: collapse; margin-bottom: 1rem; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
select, input[type=date] { width: 100%; font: inherit; padding: .5rem .6rem; border: 1px solid var(--line);
  border-radius: 8px; background: var(--card); color: var(--text); margin-bottom: 1rem; }
.filters { display: grid; grid-template-columns: repeat(auto-fit, minmax(9rem, 1fr)); gap: 0 .75rem; align-items: end; }
.filters button { margin-bottom: 1rem; }
.pages { display: flex; justify-content: space-between; gap: .75rem; }
#entries { font-size: .85rem; }
`;

/** A value to copy (a DNS record, a URL): shown as code, with a Copy button that `copyScript` reveals and wires. */
export function copyable(p: Portal, id: string, label: string, value: string): Html {
  const { t } = p.frame;
  return html`<div class="copy">
<p><strong>${label}</strong><br><code id="${id}">${value}</code></p>
<button type="button" class="secondary" data-copy="${id}" data-copied="${t('portal.copied')}" data-copied-label="${t('portal.copied_label', { label })}" hidden aria-label="${t('portal.copy_label', { label })}">${t('portal.copy')}</button>
</div>`;
}

const COPY_SCRIPT = `
for (const button of document.querySelectorAll('button[data-copy]')) {
  button.hidden = false;
  button.addEventListener('click', async () => {
    const value = document.getElementById(button.dataset.copy).textContent;
    try {
      await navigator.clipboard.writeText(value);
      // The accessible name keeps the visible text (WCAG 2.5.3).
      button.textContent = button.dataset.copied;
      button.setAttribute('aria-label', button.dataset.copiedLabel);
    } catch { }
  });
}
`;

/** The script of `copyable`'s buttons (with the page's nonce): without it, the values are still there to select. */
export const copyScript = (p: Portal) => html`<script nonce="${p.frame.nonce.script}">${trusted(COPY_SCRIPT)}</script>`;

/** A page with one message (the session ended). */
export function messagePage(frame: Frame, title: string, message: string): string {
  return page(frame, title, html`<p role="status">${message}</p>`);
}

import { createHmac } from 'node:crypto';
import {
  errorBody,
  isDraft,
  isUuid,
  PORTAL_IDPS,
  type PortalIdp,
  portalSsoCollectTest,
  portalSsoConfigure,
  portalSsoConnection,
  portalSsoConnections,
  portalSsoCreateDraft,
  portalSsoSetEnabled,
  portalSsoStartTest,
} from '@gatehouse/api';
import type { FastifyInstance } from 'fastify';
import type { MessageKey } from '../../hosted/catalog.ts';
import { type Html, html, trusted } from '../../hosted/html.ts';
import {
  hiddenCsrf,
  type Portal,
  type PortalForm,
  type PortalRoutes,
  portalPage,
  portalRedirect,
  portalSend,
} from '../portal.ts';

/**
 * The `sso` intent: the organization's SAML connections. The IT administrator picks their IdP, which makes a draft
 * connection (its ACS URL, entity id and metadata URL are what the IdP asks for first), follows that IdP's steps,
 * gives the IdP's metadata (a file or its URL), tests the connection with a real sign-in that comes back here (nobody
 * is signed in to the app: the ACS stores a test's result for this page only), reads the certificate's expiry and
 * enables or disables the connection.
 */
const BASE = '/portal/sso';
const DONE = `${BASE}/done`;
const connectionPath = (id: string) => `${BASE}/connections/${id}`;

export function registerSsoPages(pages: FastifyInstance, routes: PortalRoutes) {
  pages.get(BASE, routes.open('sso', showOverview));
  pages.post(`${BASE}/connections`, routes.post('sso', createDraft));
  pages.get(`${BASE}/connections/:connectionId`, routes.open('sso', showConnection));
  pages.post(`${BASE}/connections/:connectionId/metadata`, routes.post('sso', uploadMetadata));
  pages.post(`${BASE}/connections/:connectionId/test`, routes.post('sso', startTest));
  pages.post(
    `${BASE}/connections/:connectionId/enable`,
    routes.post('sso', (p) => setEnabled(p, true)),
  );
  pages.post(
    `${BASE}/connections/:connectionId/disable`,
    routes.post('sso', (p) => setEnabled(p, false)),
  );
  pages.get(`${BASE}/test`, routes.open('sso', showTestResult));
}

const IDP_LABEL: Record<PortalIdp, MessageKey> = {
  okta: 'portal.sso.idp.okta',
  entra: 'portal.sso.idp.entra',
  google: 'portal.sso.idp.google',
  generic: 'portal.sso.idp.generic',
};
const IDP_STEPS: Record<PortalIdp, MessageKey[]> = {
  okta: ['portal.sso.steps.okta.1', 'portal.sso.steps.okta.2', 'portal.sso.steps.okta.3', 'portal.sso.steps.okta.4'],
  entra: ['portal.sso.steps.entra.1', 'portal.sso.steps.entra.2', 'portal.sso.steps.entra.3', 'portal.sso.steps.entra.4'],
  google: ['portal.sso.steps.google.1', 'portal.sso.steps.google.2', 'portal.sso.steps.google.3', 'portal.sso.steps.google.4'],
  generic: ['portal.sso.steps.generic.1', 'portal.sso.steps.generic.2', 'portal.sso.steps.generic.3'],
};
const isIdp = (value: unknown): value is PortalIdp => PORTAL_IDPS.some((idp) => idp === value);
/** The IdP a connection was made for, from its name (a draft is named after its IdP); generic otherwise. */
const idpOf = (name: string): PortalIdp =>
  name.startsWith('Okta') ? 'okta' : name.startsWith('Microsoft') ? 'entra' : name.startsWith('Google') ? 'google' : 'generic';

const connectionIdOf = (p: Portal): string | undefined => {
  const { connectionId } = p.request.params as { connectionId?: string };
  return connectionId && isUuid(connectionId) ? connectionId.toLowerCase() : undefined;
};

/** The day a certificate expires, in the page's language; and whether it is expired or within 30 days. */
function expiry(p: Portal, at: string | null): Html {
  const { t, locale } = p.frame;
  if (!at) return html`<span class="tag">${t('portal.sso.no_certificate')}</span>`;
  const date = new Date(at);
  const day = date.toLocaleDateString(locale, { year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' });
  const left = date.getTime() - Date.now();
  if (left <= 0) return html`<strong class="error">${t('portal.sso.certificate_expired', { date: day })}</strong>`;
  if (left < 30 * 86_400_000) return html`<strong>${t('portal.sso.certificate_expires_soon', { date: day })}</strong>`;
  return html`${t('portal.sso.certificate_expires', { date: day })}`;
}

const statusTag = (p: Portal, c: Awaited<ReturnType<typeof portalSsoConnection>>) => {
  const { t } = p.frame;
  const key: MessageKey = isDraft(c)
    ? 'portal.sso.status.draft'
    : c.enabled
      ? 'portal.sso.status.enabled'
      : 'portal.sso.status.disabled';
  return html`<span class="tag">${t(key)}</span>`;
};

// ——— Overview: the connections, and a new one by IdP ———

async function showOverview(p: Portal) {
  const { t } = p.frame;
  const connections = await portalSsoConnections(p.ctx);
  const list = connections.length
    ? html`<ul class="items">${connections.map(
        (c) => html`<li><a href="${connectionPath(c.id)}"><strong>${c.name}</strong></a> ${statusTag(p, c)}
<br><span class="muted">${expiry(p, c.certificate_expires_at)}</span></li>`,
      )}</ul>`
    : html`<p>${t('portal.sso.none')}</p>`;
  const body = html`<p>${t('portal.sso.intro')}</p>
${list}
<section>
<h2>${t('portal.sso.add.title')}</h2>
<p>${t('portal.sso.add.body')}</p>
<form method="post" action="${BASE}/connections" class="stack">
${hiddenCsrf(p)}
${PORTAL_IDPS.map((idp) => html`<button type="submit" name="idp" value="${idp}" class="secondary" id="idp-${idp}">${t(IDP_LABEL[idp])}</button>`)}
</form>
</section>`;
  return portalSend(p, 200, portalPage(p, DONE, t('portal.sso.title'), body));
}

async function createDraft(p: Portal, form: PortalForm) {
  if (!isIdp(form.idp)) return showOverview(p);
  const connection = await portalSsoCreateDraft(p.ctx, form.idp);
  return portalRedirect(p, connectionPath(connection.id));
}

// ——— One connection: the IdP's steps, the values to copy, the metadata, the test, enable/disable ———

const COPY_SCRIPT = `
for (const button of document.querySelectorAll('button[data-copy]')) {
  button.hidden = false;
  button.addEventListener('click', async () => {
    const value = document.getElementById(button.dataset.copy).textContent;
    try { await navigator.clipboard.writeText(value); button.textContent = button.dataset.copied; } catch { }
  });
}
const file = document.getElementById('metadata-file');
if (file) {
  document.getElementById('metadata-file-field').hidden = false;
  file.addEventListener('change', async () => {
    const chosen = file.files && file.files[0];
    if (chosen) document.getElementById('metadata_xml').value = await chosen.text();
  });
}
`;

function copyable(p: Portal, id: string, label: string, value: string): Html {
  const { t } = p.frame;
  return html`<div class="copy">
<p><strong>${label}</strong><br><code id="${id}">${value}</code></p>
<button type="button" class="secondary" data-copy="${id}" data-copied="${t('portal.sso.copied')}" hidden aria-label="${t('portal.sso.copy_label', { label })}">${t('portal.sso.copy')}</button>
</div>`;
}

async function connectionPage(p: Portal, id: string, options: { status?: number; error?: string; notice?: MessageKey } = {}) {
  const { t } = p.frame;
  const c = await portalSsoConnection(p.ctx, id);
  const idp = idpOf(c.name);
  const draft = isDraft(c);
  const action = (verb: string) => `${connectionPath(c.id)}/${verb}`;
  const body = html`<p>${statusTag(p, c)} <span class="muted">${expiry(p, c.certificate_expires_at)}</span></p>
${options.error ? html`<p class="error" role="alert">${options.error}</p>` : ''}
<section>
<h2>${t('portal.sso.step1', { idp: t(IDP_LABEL[idp]) })}</h2>
<ol>${IDP_STEPS[idp].map((key) => html`<li>${t(key)}</li>`)}</ol>
${copyable(p, 'acs-url', t('portal.sso.acs_url'), c.acs_url)}
${copyable(p, 'entity-id', t('portal.sso.entity_id'), c.metadata_url)}
${copyable(p, 'metadata-url', t('portal.sso.metadata_url'), c.metadata_url)}
</section>
<section>
<h2>${t('portal.sso.step2')}</h2>
<p>${t('portal.sso.metadata.body')}</p>
<form method="post" action="${action('metadata')}">
${hiddenCsrf(p)}
<div id="metadata-file-field" hidden>
<label for="metadata-file">${t('portal.sso.metadata.file')}</label>
<input id="metadata-file" type="file" accept=".xml,application/xml,text/xml,application/samlmetadata+xml">
</div>
<label for="metadata_xml">${t('portal.sso.metadata.xml')}</label>
<textarea id="metadata_xml" name="metadata_xml" rows="4"></textarea>
<label for="metadata_url">${t('portal.sso.metadata.url')}</label>
<input id="metadata_url" name="metadata_url" type="text" inputmode="url" placeholder="https://">
<button type="submit" id="save-metadata">${t('portal.sso.metadata.save')}</button>
</form>
</section>
<section>
<h2>${t('portal.sso.step3')}</h2>
${
  draft
    ? html`<p class="muted">${t('portal.sso.test.needs_metadata')}</p>`
    : html`<p>${t('portal.sso.test.body')}</p>
<form method="post" action="${action('test')}">
${hiddenCsrf(p)}
<button type="submit" id="test-connection">${t('portal.sso.test.start')}</button>
</form>`
}
</section>
<section>
<h2>${t('portal.sso.step4')}</h2>
<p>${t(c.enabled ? 'portal.sso.enabled.body' : 'portal.sso.disabled.body')}</p>
${
  draft && !c.enabled
    ? ''
    : html`<form method="post" action="${action(c.enabled ? 'disable' : 'enable')}">
${hiddenCsrf(p)}
<button type="submit" id="${c.enabled ? 'disable' : 'enable'}" class="${c.enabled ? 'secondary' : ''}">${t(c.enabled ? 'portal.sso.disable' : 'portal.sso.enable')}</button>
</form>`
}
<p><a href="${BASE}">${t('portal.sso.back')}</a></p>
</section>
<script nonce="${p.frame.nonce.script}">${trusted(COPY_SCRIPT)}</script>`;
  return portalSend(p, options.status ?? 200, portalPage(p, DONE, c.name, body, { notice: options.notice }));
}

/** A connection outside the session's organization (or none) is the same page as one that does not exist. */
async function withConnection(p: Portal, then: (id: string) => Promise<unknown>) {
  const id = connectionIdOf(p);
  try {
    if (!id) throw new Error('not a connection id');
    await portalSsoConnection(p.ctx, id);
  } catch {
    return portalSend(
      p,
      404,
      portalPage(p, DONE, p.frame.t('error.title'), html`<p class="error" role="alert">${p.frame.t('error.not_found')}</p>`),
    );
  }
  return then(id);
}

const showConnection = (p: Portal) => {
  const { done } = p.request.query as { done?: string };
  const notice: MessageKey | undefined =
    done === 'metadata'
      ? 'portal.sso.metadata.saved'
      : done === 'enabled'
        ? 'portal.sso.enabled.done'
        : done === 'disabled'
          ? 'portal.sso.disabled.done'
          : undefined;
  return withConnection(p, (id) => connectionPage(p, id, { notice }));
};

async function uploadMetadata(p: Portal, form: PortalForm) {
  return withConnection(p, async (id) => {
    const xml = form.metadata_xml?.trim() ? form.metadata_xml : undefined;
    const url = form.metadata_url?.trim() ? form.metadata_url.trim() : undefined;
    try {
      await portalSsoConfigure(
        p.ctx,
        id,
        xml !== undefined ? { metadata_xml: xml } : url !== undefined ? { metadata_url: url } : {},
      );
    } catch (caught) {
      const { code, message } = errorBody(caught);
      if (code !== 'validation_failed' && code !== 'invalid_url') throw caught;
      // The API's reason (English, for whoever reads the IdP's file) after the page's own sentence.
      return connectionPage(p, id, { status: 422, error: `${p.frame.t('portal.sso.metadata.refused')} ${message}` });
    }
    return portalRedirect(p, `${connectionPath(id)}?done=metadata`);
  });
}

async function setEnabled(p: Portal, enabled: boolean) {
  return withConnection(p, async (id) => {
    const connection = await portalSsoConnection(p.ctx, id);
    if (enabled && isDraft(connection))
      return connectionPage(p, id, { status: 409, error: p.frame.t('portal.sso.test.needs_metadata') });
    await portalSsoSetEnabled(p.ctx, id, enabled);
    return portalRedirect(p, `${connectionPath(id)}?done=${enabled ? 'enabled' : 'disabled'}`);
  });
}

// ——— The connection test ———

/**
 * Where the IdP's answer to a test comes back: this page, with a value only this portal session can make (an HMAC of
 * its cookie). The test's code is spent only with this exact URI, so a code carried to another browser is refused.
 */
function testRedirectUri(p: Portal): string {
  const hop = createHmac('sha256', p.services.secretBox.deriveKey('portal-sso-test')).update(p.sessionToken).digest('base64url');
  return `${p.services.baseUrl}${BASE}/test?hop=${hop}`;
}

async function startTest(p: Portal) {
  return withConnection(p, async (id) => {
    const connection = await portalSsoConnection(p.ctx, id);
    if (isDraft(connection)) return connectionPage(p, id, { status: 409, error: p.frame.t('portal.sso.test.needs_metadata') });
    const { redirect_url } = await portalSsoStartTest(p.ctx, id, testRedirectUri(p));
    return portalRedirect(p, redirect_url);
  });
}

async function showTestResult(p: Portal) {
  const { t } = p.frame;
  const { hop, code, error } = p.request.query as Record<string, string | undefined>;
  const expected = new URL(testRedirectUri(p)).searchParams.get('hop');
  const failed = (reason: MessageKey, status: number) =>
    portalSend(
      p,
      status,
      portalPage(
        p,
        DONE,
        t('portal.sso.test.failed.title'),
        html`<p class="error" role="alert">${t(reason)}</p><p><a href="${BASE}">${t('portal.sso.back')}</a></p>`,
      ),
    );
  if (hop !== expected) return failed('portal.sso.test.other_browser', 400);
  if (error || !code) return failed(error === 'access_denied' ? 'portal.sso.test.denied' : 'portal.sso.test.refused', 401);
  let result: Awaited<ReturnType<typeof portalSsoCollectTest>>;
  try {
    result = await portalSsoCollectTest(p.ctx, code, testRedirectUri(p));
  } catch {
    return failed('portal.sso.test.code_invalid', 401);
  }
  const connection = await portalSsoConnection(p.ctx, result.connection_id);
  const rows: Array<[string, string]> = [
    ['NameID', result.name_id],
    [t('portal.sso.test.email'), result.email ?? '—'],
    [t('portal.sso.test.name'), result.display_name ?? '—'],
    ...Object.entries(result.attributes).map(([name, values]): [string, string] => [name, values.join(', ')]),
  ];
  const body = html`<p class="notice" role="status">${t('portal.sso.test.passed.body', { name: connection.name })}</p>
<h2>${t('portal.sso.test.attributes')}</h2>
<table id="attributes">
<thead><tr><th scope="col">${t('portal.sso.test.attribute')}</th><th scope="col">${t('portal.sso.test.value')}</th></tr></thead>
<tbody>${rows.map(([name, value]) => html`<tr><td><code>${name}</code></td><td>${value}</td></tr>`)}</tbody>
</table>
<p><a href="${connectionPath(connection.id)}">${t('portal.sso.test.back')}</a></p>`;
  return portalSend(p, 200, portalPage(p, DONE, t('portal.sso.test.passed.title'), body));
}

import {
  errorBody,
  isUuid,
  PORTAL_DIRECTORY_PROVIDERS,
  type PortalDirectoryProvider,
  portalCreateDirectory,
  portalDirectories,
  portalDirectory,
  portalRotateDirectoryToken,
  portalUpdateDirectory,
} from '@gatehouse/api';
import type { FastifyInstance } from 'fastify';
import type { MessageKey } from '../../hosted/catalog.ts';
import { html } from '../../hosted/html.ts';
import {
  copyable,
  copyScript,
  hiddenCsrf,
  type Portal,
  type PortalForm,
  type PortalRoutes,
  portalPage,
  portalRedirect,
  portalSend,
} from '../portal.ts';

/**
 * The `directory` intent: the organization's SCIM directories. The IT administrator names one and picks their IdP,
 * reads that IdP's steps, copies the SCIM base URL and the token (shown once, on the answer to the form that made or
 * rotated it, never in an address), maps groups to roles, and disables or enables the directory.
 */
const BASE = '/portal/directory';
const DONE = `${BASE}/done`;
const directoryPath = (id: string) => `${BASE}/${id}`;
/** Rows of the group → role form (an empty row is no mapping). */
const MAPPING_ROWS = 5;

type Directory = Awaited<ReturnType<typeof portalDirectory>>;

export function registerDirectoryPages(pages: FastifyInstance, routes: PortalRoutes) {
  pages.get(
    BASE,
    routes.open('directory', (p) => overview(p)),
  );
  pages.post(`${BASE}/create`, routes.post('directory', create));
  pages.get(`${BASE}/:directoryId`, routes.open('directory', show));
  pages.post(`${BASE}/:directoryId/rotate-token`, routes.post('directory', rotate));
  pages.post(`${BASE}/:directoryId/mappings`, routes.post('directory', saveMappings));
  pages.post(
    `${BASE}/:directoryId/disable`,
    routes.post('directory', (p) => setStatus(p, 'disabled')),
  );
  pages.post(
    `${BASE}/:directoryId/enable`,
    routes.post('directory', (p) => setStatus(p, 'active')),
  );
}

const PROVIDER_LABEL: Record<PortalDirectoryProvider, MessageKey> = {
  okta: 'portal.sso.idp.okta',
  entra: 'portal.sso.idp.entra',
  google: 'portal.sso.idp.google',
  generic: 'portal.directory.provider.generic',
};
const PROVIDER_STEPS: Record<PortalDirectoryProvider, MessageKey[]> = {
  okta: ['portal.directory.steps.okta.1', 'portal.directory.steps.okta.2', 'portal.directory.steps.okta.3'],
  entra: ['portal.directory.steps.entra.1', 'portal.directory.steps.entra.2', 'portal.directory.steps.entra.3'],
  google: ['portal.directory.steps.google.1', 'portal.directory.steps.google.2', 'portal.directory.steps.google.3'],
  generic: ['portal.directory.steps.generic.1', 'portal.directory.steps.generic.2'],
};
const statusTag = (p: Portal, d: Directory) =>
  html`<span class="tag">${p.frame.t(d.status === 'active' ? 'portal.directory.status.active' : 'portal.directory.status.disabled')}</span>`;

const notFoundPage = (p: Portal): unknown =>
  portalSend(
    p,
    404,
    portalPage(p, DONE, p.frame.t('error.title'), html`<p class="error" role="alert">${p.frame.t('error.not_found')}</p>`),
  );

async function overview(p: Portal, options: { status?: number; error?: string } = {}) {
  const { t } = p.frame;
  const directories = await portalDirectories(p.ctx);
  const list = directories.length
    ? html`<ul class="items" id="directories">${directories.map(
        (d) => html`<li><a href="${directoryPath(d.id)}"><strong>${d.name}</strong></a> ${statusTag(p, d)}
<br><span class="muted">${t(PROVIDER_LABEL[d.provider])} &middot; ${t('portal.directory.counts', { users: String(d.user_count), groups: String(d.group_count) })}</span></li>`,
      )}</ul>`
    : html`<p>${t('portal.directory.none')}</p>`;
  const body = html`<p>${t('portal.directory.intro')}</p>
${list}
<section>
<h2>${t('portal.directory.add.title')}</h2>
${options.error ? html`<p class="error" role="alert">${options.error}</p>` : ''}
<form method="post" action="${BASE}/create">
${hiddenCsrf(p)}
<label for="name">${t('portal.directory.name')}</label>
<input id="name" name="name" type="text" required maxlength="200">
<label for="provider">${t('portal.directory.provider')}</label>
<select id="provider" name="provider">${PORTAL_DIRECTORY_PROVIDERS.map((v) => html`<option value="${v}">${t(PROVIDER_LABEL[v])}</option>`)}</select>
<button type="submit" id="create-directory">${t('portal.directory.add.submit')}</button>
</form>
</section>`;
  return portalSend(p, options.status ?? 200, portalPage(p, DONE, t('portal.directory.title'), body));
}

async function directoryPage(
  p: Portal,
  d: Directory,
  options: { status?: number; error?: string; notice?: MessageKey; token?: string } = {},
) {
  const { t } = p.frame;
  const action = (verb: string) => `${directoryPath(d.id)}/${verb}`;
  const rows = [...d.group_role_mappings, ...Array.from({ length: MAPPING_ROWS }, () => ({ group: '', role: '' }))].slice(
    0,
    Math.max(MAPPING_ROWS, d.group_role_mappings.length + 1),
  );
  const body = html`<p>${statusTag(p, d)} <span class="muted">${t('portal.directory.counts', { users: String(d.user_count), groups: String(d.group_count) })}</span></p>
${options.error ? html`<p class="error" role="alert">${options.error}</p>` : ''}
<section>
<h2>${t('portal.directory.step1', { idp: t(PROVIDER_LABEL[d.provider]) })}</h2>
<ol>${PROVIDER_STEPS[d.provider].map((key) => html`<li>${t(key)}</li>`)}</ol>
${copyable(p, 'scim-base-url', t('portal.directory.base_url'), d.scim_base_url)}
${
  options.token
    ? html`<div class="notice" role="status">${copyable(p, 'scim-token', t('portal.directory.token'), options.token)}<p>${t('portal.directory.token_once')}</p></div>`
    : html`<p class="muted">${t('portal.directory.token_hidden')}</p>`
}
<form method="post" action="${action('rotate-token')}">
${hiddenCsrf(p)}
<button type="submit" id="rotate-token" class="secondary">${t('portal.directory.rotate')}</button>
</form>
</section>
<section>
<h2>${t('portal.directory.mappings.title')}</h2>
<p>${t('portal.directory.mappings.body')}</p>
<form method="post" action="${action('mappings')}">
${hiddenCsrf(p)}
<table>
<thead><tr><th scope="col">${t('portal.directory.mappings.group')}</th><th scope="col">${t('portal.directory.mappings.role')}</th></tr></thead>
<tbody>${rows.map(
    (
      row,
      i,
    ) => html`<tr><td><input type="text" name="group_${i}" value="${row.group}" aria-label="${t('portal.directory.mappings.group')} ${i + 1}"></td>
<td><input type="text" name="role_${i}" value="${row.role}" aria-label="${t('portal.directory.mappings.role')} ${i + 1}"></td></tr>`,
  )}</tbody>
</table>
<button type="submit" id="save-mappings">${t('portal.directory.mappings.save')}</button>
</form>
</section>
<section>
<h2>${t('portal.directory.status.title')}</h2>
<form method="post" action="${action(d.status === 'active' ? 'disable' : 'enable')}">
${hiddenCsrf(p)}
<button type="submit" id="${d.status === 'active' ? 'disable' : 'enable'}" class="secondary">${t(d.status === 'active' ? 'portal.directory.disable' : 'portal.directory.enable')}</button>
</form>
<p><a href="${BASE}">${t('portal.directory.back')}</a></p>
</section>
${copyScript(p)}`;
  return portalSend(p, options.status ?? 200, portalPage(p, DONE, d.name, body, { notice: options.notice }));
}

async function withDirectory(p: Portal, then: (d: Directory) => Promise<unknown>) {
  const { directoryId } = p.request.params as { directoryId?: string };
  if (!directoryId || !isUuid(directoryId)) return notFoundPage(p);
  let directory: Directory;
  try {
    directory = await portalDirectory(p.ctx, directoryId.toLowerCase());
  } catch (caught) {
    if (errorBody(caught).code === 'not_found') return notFoundPage(p);
    throw caught;
  }
  return then(directory);
}

async function create(p: Portal, form: PortalForm) {
  try {
    const created = await portalCreateDirectory(p.ctx, { name: form.name, provider: form.provider });
    const { token, ...directory } = created;
    // The token is shown on this answer only (never in an address that a history or a log would keep).
    return directoryPage(p, directory, { status: 201, token, notice: 'portal.directory.created' });
  } catch (caught) {
    if (errorBody(caught).code === 'validation_failed')
      return overview(p, { status: 422, error: p.frame.t('portal.directory.invalid') });
    throw caught;
  }
}

const DONE_NOTICES: Record<string, MessageKey> = {
  mappings: 'portal.directory.mappings.saved',
  disabled: 'portal.directory.disabled',
  active: 'portal.directory.enabled',
};
const show = (p: Portal) =>
  withDirectory(p, (d) => directoryPage(p, d, { notice: DONE_NOTICES[(p.request.query as { done?: string }).done ?? ''] }));

const rotate = (p: Portal) =>
  withDirectory(p, async (d) => {
    const { token } = await portalRotateDirectoryToken(p.ctx, d.id);
    return directoryPage(p, d, { token, notice: 'portal.directory.rotated' });
  });

const saveMappings = (p: Portal, form: PortalForm) =>
  withDirectory(p, async (d) => {
    const mappings: Array<{ group: string; role: string }> = [];
    for (let i = 0; i < 100; i++) {
      const group = form[`group_${i}`]?.trim() ?? '';
      const role = form[`role_${i}`]?.trim() ?? '';
      if (group || role) mappings.push({ group, role });
    }
    try {
      await portalUpdateDirectory(p.ctx, d.id, { group_role_mappings: mappings });
    } catch (caught) {
      if (errorBody(caught).code === 'validation_failed') {
        return directoryPage(p, d, { status: 422, error: p.frame.t('portal.directory.mappings.invalid') });
      }
      throw caught;
    }
    return portalRedirect(p, `${directoryPath(d.id)}?done=mappings`);
  });

const setStatus = (p: Portal, status: 'active' | 'disabled') =>
  withDirectory(p, async (d) => {
    await portalUpdateDirectory(p.ctx, d.id, { status });
    return portalRedirect(p, `${directoryPath(d.id)}?done=${status}`);
  });

import {
  errorBody,
  isUuid,
  portalAddDomain,
  portalDomain,
  portalDomains,
  portalRemoveDomain,
  portalSetDomainPolicies,
  portalVerifyDomain,
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
 * The `domains` intent: the organization's domains. The IT administrator adds one (its TXT record shown with Copy
 * buttons), publishes the record, verifies it (the organization-domains module's DNS check, the API's own), sets the
 * join and SSO policies of a verified domain, or removes one. Every operation is bound to the session's organization:
 * a domain id of another organization is the page of a domain that does not exist.
 */
const BASE = '/portal/domains';
const DONE = `${BASE}/done`;
const domainPath = (id: string) => `${BASE}/${id}`;

type Domain = Awaited<ReturnType<typeof portalDomain>>;

export function registerDomainsPages(pages: FastifyInstance, routes: PortalRoutes) {
  pages.get(
    BASE,
    routes.open('domains', (p) => overview(p)),
  );
  pages.post(`${BASE}/add`, routes.post('domains', add));
  pages.get(`${BASE}/:domainId`, routes.open('domains', show));
  pages.post(`${BASE}/:domainId/verify`, routes.post('domains', verify));
  pages.post(`${BASE}/:domainId/policies`, routes.post('domains', setPolicies));
  pages.post(`${BASE}/:domainId/remove`, routes.post('domains', remove));
}

const STATUS: Record<Domain['status'], MessageKey> = {
  pending_verification: 'portal.domains.status.pending_verification',
  verified: 'portal.domains.status.verified',
  failed: 'portal.domains.status.failed',
};
const JOIN: Record<Domain['join_policy'], MessageKey> = {
  invite_only: 'portal.domains.join.invite_only',
  automatic: 'portal.domains.join.automatic',
};
const SSO: Record<Domain['sso_policy'], MessageKey> = {
  optional: 'portal.domains.sso.optional',
  required: 'portal.domains.sso.required',
};
const isJoin = (value: unknown): value is Domain['join_policy'] => value === 'invite_only' || value === 'automatic';
const isSso = (value: unknown): value is Domain['sso_policy'] => value === 'optional' || value === 'required';

const statusTag = (p: Portal, d: Domain) => html`<span class="tag">${p.frame.t(STATUS[d.status])}</span>`;
const policies = (p: Portal, d: Domain) =>
  p.frame.t('portal.domains.policies_summary', { join: p.frame.t(JOIN[d.join_policy]), sso: p.frame.t(SSO[d.sso_policy]) });

// ——— Overview: the domains, and a new one ———

async function overview(p: Portal, options: { status?: number; error?: string; value?: string; notice?: MessageKey } = {}) {
  const { t } = p.frame;
  const domains = await portalDomains(p.ctx);
  const notice =
    options.notice ?? ((p.request.query as { done?: string }).done === 'removed' ? 'portal.domains.removed' : undefined);
  const list = domains.length
    ? html`<ul class="items" id="domains">${domains.map(
        (d) => html`<li><a href="${domainPath(d.id)}"><strong>${d.domain}</strong></a> ${statusTag(p, d)}
<br><span class="muted">${policies(p, d)}</span></li>`,
      )}</ul>`
    : html`<p>${t('portal.domains.none')}</p>`;
  const body = html`<p>${t('portal.domains.intro')}</p>
${list}
<section>
<h2>${t('portal.domains.add.title')}</h2>
${options.error ? html`<p class="error" role="alert" id="domain-error">${options.error}</p>` : ''}
<form method="post" action="${BASE}/add">
${hiddenCsrf(p)}
<label for="domain">${t('portal.domains.add.label')}</label>
<input id="domain" name="domain" type="text" autocomplete="off" spellcheck="false" required value="${options.value ?? ''}">
<button type="submit" id="add-domain">${t('portal.domains.add.submit')}</button>
</form>
</section>`;
  return portalSend(p, options.status ?? 200, portalPage(p, DONE, t('portal.domains.title'), body, { notice }));
}

async function add(p: Portal, form: PortalForm) {
  const { t } = p.frame;
  const name = (form.domain ?? '').trim().slice(0, 300);
  try {
    const domain = await portalAddDomain(p.ctx, name);
    return portalRedirect(p, `${domainPath(domain.id)}?done=added`);
  } catch (caught) {
    const { code } = errorBody(caught);
    if (code === 'invalid_domain' || code === 'validation_failed') {
      return overview(p, { status: 422, error: t('portal.domains.invalid'), value: name });
    }
    if (code === 'domain_already_claimed') return overview(p, { status: 409, error: t('portal.domains.claimed'), value: name });
    throw caught;
  }
}

// ——— One domain: its record, the check, the policies ———

async function domainPage(p: Portal, d: Domain, options: { status?: number; error?: string; notice?: MessageKey } = {}) {
  const { t } = p.frame;
  const action = (verb: string) => `${domainPath(d.id)}/${verb}`;
  const verified = d.status === 'verified';
  const option = (value: string, label: MessageKey, current: string) =>
    html`<option value="${value}"${value === current ? html` selected` : ''}>${t(label)}</option>`;
  const body = html`<p>${statusTag(p, d)} <span class="muted">${policies(p, d)}</span></p>
${options.error ? html`<p class="error" role="alert">${options.error}</p>` : ''}
<section>
<h2>${t('portal.domains.record.title')}</h2>
<p>${t('portal.domains.record.body')}</p>
${copyable(p, 'record-type', t('portal.domains.record.type'), d.verification.type)}
${copyable(p, 'record-name', t('portal.domains.record.name'), d.verification.name)}
${copyable(p, 'record-value', t('portal.domains.record.value'), d.verification.value)}
</section>
<section>
<h2>${t('portal.domains.verify.title')}</h2>
${
  verified
    ? html`<p>${t('portal.domains.verify.done')}</p>`
    : d.status === 'failed'
      ? html`<p>${t('portal.domains.verify.failed')}</p>`
      : html`<form method="post" action="${action('verify')}">
${hiddenCsrf(p)}
<button type="submit" id="verify">${t('portal.domains.verify.submit')}</button>
</form>`
}
</section>
<section>
<h2>${t('portal.domains.policies.title')}</h2>
${
  verified
    ? html`<form method="post" action="${action('policies')}">
${hiddenCsrf(p)}
<label for="join_policy">${t('portal.domains.policies.join')}</label>
<select id="join_policy" name="join_policy">${option('invite_only', JOIN.invite_only, d.join_policy)}${option('automatic', JOIN.automatic, d.join_policy)}</select>
<label for="sso_policy">${t('portal.domains.policies.sso')}</label>
<select id="sso_policy" name="sso_policy">${option('optional', SSO.optional, d.sso_policy)}${option('required', SSO.required, d.sso_policy)}</select>
<button type="submit" id="save-policies">${t('portal.domains.policies.save')}</button>
</form>`
    : html`<p class="muted">${t('portal.domains.policies.needs_verification')}</p>`
}
</section>
<section>
<form method="post" action="${action('remove')}">
${hiddenCsrf(p)}
<button type="submit" id="remove" class="secondary">${t('portal.domains.remove')}</button>
</form>
<p><a href="${BASE}">${t('portal.domains.back')}</a></p>
</section>
${copyScript(p)}`;
  return portalSend(p, options.status ?? 200, portalPage(p, DONE, d.domain, body, { notice: options.notice }));
}

const notFoundPage = (p: Portal): unknown =>
  portalSend(
    p,
    404,
    portalPage(p, DONE, p.frame.t('error.title'), html`<p class="error" role="alert">${p.frame.t('error.not_found')}</p>`),
  );

/** The path's domain, if it is one of the session's organization; anything else is the page of a missing domain. */
async function withDomain(p: Portal, then: (d: Domain) => Promise<unknown>) {
  const { domainId } = p.request.params as { domainId?: string };
  if (!domainId || !isUuid(domainId)) return notFoundPage(p);
  let domain: Domain;
  try {
    domain = await portalDomain(p.ctx, domainId.toLowerCase());
  } catch (caught) {
    if (errorBody(caught).code === 'not_found') return notFoundPage(p);
    throw caught;
  }
  return then(domain);
}

const DONE_NOTICES: Record<string, MessageKey> = {
  added: 'portal.domains.added',
  verified: 'portal.domains.verify.done',
  policies: 'portal.domains.policies.saved',
};

const show = (p: Portal) =>
  withDomain(p, (d) => domainPage(p, d, { notice: DONE_NOTICES[(p.request.query as { done?: string }).done ?? ''] }));

const verify = (p: Portal) =>
  withDomain(p, async (d) => {
    const { t } = p.frame;
    let checked: Domain;
    try {
      checked = await portalVerifyDomain(p.ctx, d.id);
    } catch (caught) {
      const { code } = errorBody(caught);
      if (code === 'domain_already_claimed') return domainPage(p, d, { status: 409, error: t('portal.domains.claimed') });
      if (code === 'rate_limited') return domainPage(p, d, { status: 429, error: t('portal.domains.verify.too_many') });
      throw caught;
    }
    if (checked.status === 'verified') return portalRedirect(p, `${domainPath(d.id)}?done=verified`);
    return domainPage(p, checked, {
      error: checked.status === 'failed' ? t('portal.domains.verify.failed') : t('portal.domains.verify.pending'),
    });
  });

const setPolicies = (p: Portal, form: PortalForm) =>
  withDomain(p, async (d) => {
    const { t } = p.frame;
    if (!isJoin(form.join_policy) || !isSso(form.sso_policy)) return domainPage(p, d, { status: 422, error: t('error.generic') });
    try {
      await portalSetDomainPolicies(p.ctx, d.id, { join_policy: form.join_policy, sso_policy: form.sso_policy });
    } catch (caught) {
      if (errorBody(caught).code === 'domain_not_verified') {
        return domainPage(p, d, { status: 409, error: t('portal.domains.policies.needs_verification') });
      }
      throw caught;
    }
    return portalRedirect(p, `${domainPath(d.id)}?done=policies`);
  });

const remove = (p: Portal) =>
  withDomain(p, async (d) => {
    await portalRemoveDomain(p.ctx, d.id);
    return portalRedirect(p, `${BASE}?done=removed`);
  });

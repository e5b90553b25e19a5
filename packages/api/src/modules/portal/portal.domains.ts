import { notFound } from '../../errors.ts';
import type { OrganizationDomainRecord } from '../organization-domains/organization-domains.schema.ts';
import {
  addOrganizationDomain,
  deleteOrganizationDomain,
  listOrganizationDomains,
  updateOrganizationDomain,
  verifyOrganizationDomain,
} from '../organization-domains/organization-domains.service.ts';
import type { PortalIntent } from './portal.schema.ts';
import type { PortalContext } from './portal.sso.ts';

/**
 * The `domains` intent's operations, for a portal session: the organization-domains module's own service functions,
 * called with the session's organization only. A domain of another organization (or application) is 404, as an
 * unknown one is: the services look a domain up by its id and the organization's together.
 */
export function requirePortalIntent(ctx: PortalContext, intent: PortalIntent) {
  // The pages route by intent already; the operations refuse too, so no page can forget.
  if (ctx.portal.intent !== intent || ctx.portal.applicationId !== ctx.application.id) throw notFound('Page');
}

const ids = (ctx: PortalContext, domainId: string) => {
  requirePortalIntent(ctx, 'domains');
  return { id: ctx.portal.organizationId, domain_id: domainId };
};

/** The organization's domains, newest first. */
export async function portalDomains(ctx: PortalContext): Promise<OrganizationDomainRecord[]> {
  requirePortalIntent(ctx, 'domains');
  return listOrganizationDomains(ctx, ctx.portal.organizationId);
}

/** One domain of the organization; any other id is 404. */
export async function portalDomain(ctx: PortalContext, domainId: string): Promise<OrganizationDomainRecord> {
  const domain = (await portalDomains(ctx)).find((d) => d.id === domainId);
  if (!domain) throw notFound('Organization domain');
  return domain;
}

/** A claim, pending verification, with its TXT record (422 `invalid_domain`, 409 `domain_already_claimed`). */
export async function portalAddDomain(ctx: PortalContext, domain: string): Promise<OrganizationDomainRecord> {
  requirePortalIntent(ctx, 'domains');
  return addOrganizationDomain(ctx, { id: ctx.portal.organizationId, domain });
}

/** Looks the TXT record up now, through the same resolver and rate limit as the API's verify. */
export const portalVerifyDomain = (ctx: PortalContext, domainId: string) => verifyOrganizationDomain(ctx, ids(ctx, domainId));

/** A verified domain's join and SSO policies (409 `domain_not_verified` before). */
export const portalSetDomainPolicies = (
  ctx: PortalContext,
  domainId: string,
  policies: { join_policy?: OrganizationDomainRecord['join_policy']; sso_policy?: OrganizationDomainRecord['sso_policy'] },
) => updateOrganizationDomain(ctx, { ...ids(ctx, domainId), ...policies });

/** Removes a claim of the organization. */
export const portalRemoveDomain = (ctx: PortalContext, domainId: string) => deleteOrganizationDomain(ctx, ids(ctx, domainId));

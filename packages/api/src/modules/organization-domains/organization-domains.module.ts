import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { verifiedDomainChecks } from '../directories/directories.hooks.ts';
import { domainOwners, signInChecks, signInCompletions } from '../sign-in/sign-in.service.ts';
import { OrganizationDomainEntity } from './organization-domain.entity.ts';
import { organizationDomainsRouter } from './organization-domains.router.ts';
import {
  OrganizationDomainDeletedEventSchema,
  OrganizationDomainJoinSkippedEventSchema,
  OrganizationDomainSchema,
} from './organization-domains.schema.ts';
import { automaticJoin, domainOwner, hasVerifiedDomain, ssoPolicyCheck } from './organization-domains.service.ts';

/** The events this module emits, with their payload schemas. */
const events = {
  'organization_domain.created': OrganizationDomainSchema,
  'organization_domain.verified': OrganizationDomainSchema,
  'organization_domain.updated': OrganizationDomainSchema,
  'organization_domain.deleted': OrganizationDomainDeletedEventSchema,
  'organization_domain.join_skipped': OrganizationDomainJoinSkippedEventSchema,
} satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/**
 * Domains an organization verifies by DNS, and their effects at sign-in: the SSO policy (a sign-in check, and the
 * SSO requirement the magic link and `sso/start` ask) and the automatic join (a sign-in completion).
 */
export const organizationDomainsModule = defineModule({
  name: 'organization-domains',
  entities: [OrganizationDomainEntity],
  procedures: { organizations: { domains: organizationDomainsRouter } },
  tag: {
    name: 'Organization domains',
    description:
      "Domains an organization verifies through a DNS TXT record, with their join policy (automatic membership at sign-in) and SSO policy (only the organization's SAML connections sign its people in).",
  },
  hooks: [
    signInChecks.entry('organization_sso_policy', ssoPolicyCheck),
    signInCompletions.entry('organization_automatic_join', automaticJoin),
    domainOwners.entry('organization_domains', domainOwner),
    verifiedDomainChecks.entry('organization_domains', hasVerifiedDomain),
  ],
  events,
});

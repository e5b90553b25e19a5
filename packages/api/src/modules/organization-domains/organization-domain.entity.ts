import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { EditableTenantRowEntity } from '../applications/tenant-row.entity.ts';
import { OrganizationEntity } from '../organizations/organization.entity.ts';

/**
 * A domain an organization claims (CONTRACT §8), verified through the same DNS TXT challenge as custom domains.
 * Several organizations of an application may claim one domain; the partial unique index lets at most one of them
 * hold it `verified`, and so decides a race between two verifies on any number of processes.
 */
export const OrganizationDomainEntity = defineEntity({
  name: 'OrganizationDomain',
  tableName: 'organization_domains',
  extends: EditableTenantRowEntity,
  properties: {
    organization: () => p.manyToOne(OrganizationEntity).mapToPk().deleteRule('cascade'),
    /** Canonical: lower-case, IDN as punycode, no trailing dot (`canonicalDomain`). */
    domain: p.string().length(253),
    /** `pending_verification` → `verified`, or `failed` (not verified within 7 days of the claim). */
    status: p.string().length(32),
    /** The value of the `_gatehouse-challenge.<domain>` TXT record (random per claim; public by nature). */
    verificationToken: p.string().length(128),
    /** `invite_only` (default) or `automatic` (a person with a verified email at the domain joins at sign-in). */
    joinPolicy: p.string().length(16).default('invite_only'),
    /** `optional` (default) or `required` (only the organization's SAML connections sign such a person in). */
    ssoPolicy: p.string().length(16).default('optional'),
    verifiedAt: p.datetime().nullable(),
  },
  uniques: [{ name: 'organization_domains_organization_domain_unique', properties: ['organization', 'domain'] }],
  indexes: [
    { properties: ['organization', 'createdAt', 'id'] },
    {
      name: 'organization_domains_verified_unique',
      expression: `create unique index "organization_domains_verified_unique" on "organization_domains" ("application_id", "domain") where "status" = 'verified'`,
    },
  ],
});
export type OrganizationDomain = InferEntity<typeof OrganizationDomainEntity>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';

/**
 * A custom domain of an application (S7). `domain` is canonical (lower-case, IDN as punycode, no trailing dot) and
 * unique across all applications: the unique index decides a race between two adds of the same name.
 */
export const CustomDomainEntity = defineEntity({
  name: 'CustomDomain',
  tableName: 'custom_domains',
  extends: TenantRowEntity,
  properties: {
    domain: p.string().length(253),
    /** `pending_verification` → `verified` | `failed` (not verified within 7 days). */
    status: p.string().length(32),
    /** Follows `status`: `pending`, `active` (verified), `failed`. TLS itself is the operator's proxy's. */
    tlsStatus: p.string().length(16),
    /** The value of the `_gatehouse-challenge.<domain>` TXT record (random per domain; public by nature). */
    verificationToken: p.string().length(128),
    verifiedAt: p.datetime().nullable(),
    /** The last check's outcome when it did not verify: `txt_not_found`, `txt_mismatch`, `dns_failed`. */
    verificationError: p.string().length(32).nullable(),
    lastCheckedAt: p.datetime().nullable(),
    /** Checks so far (the background re-check backs off with it). */
    checkCount: p.integer().default(0),
    /** When the background re-check looks again; null once the domain is verified or failed. */
    nextCheckAt: p.datetime().nullable(),
  },
  uniques: [{ name: 'custom_domains_domain_unique', properties: ['domain'] }],
  indexes: [
    { properties: ['application', 'createdAt', 'id'] },
    {
      name: 'custom_domains_pending_next_check_index',
      expression: `create index "custom_domains_pending_next_check_index" on "custom_domains" ("next_check_at") where "status" = 'pending_verification'`,
    },
  ],
});
export type CustomDomain = InferEntity<typeof CustomDomainEntity>;

import { z } from 'zod';
import { text } from '../../lib/schemas.ts';

export const ORGANIZATION_DOMAIN_STATUSES = ['pending_verification', 'verified', 'failed'] as const;
export const JOIN_POLICIES = ['invite_only', 'automatic'] as const;
export const SSO_POLICIES = ['optional', 'required'] as const;

/** The record of CONTRACT §8, exactly. */
export const OrganizationDomainSchema = z
  .object({
    id: z.uuid(),
    organization_id: z.uuid(),
    domain: text().meta({ description: 'Canonical: lower-case, IDN as punycode, no trailing dot' }),
    status: z.enum(ORGANIZATION_DOMAIN_STATUSES),
    verification: z
      .object({
        type: z.literal('TXT'),
        name: text().meta({ description: '`_gatehouse-challenge.<domain>`' }),
        value: text().meta({ description: 'The TXT value to publish there' }),
      })
      .meta({ description: 'The DNS record that proves the organization controls the domain' }),
    join_policy: z
      .enum(JOIN_POLICIES)
      .meta({ description: '`automatic`: a person with a verified email at the domain becomes a member at sign-in' }),
    sso_policy: z
      .enum(SSO_POLICIES)
      .meta({ description: "`required`: such a person signs in only through the organization's SAML connections" }),
    verified_at: z.iso.datetime().nullable(),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'OrganizationDomain' });
export type OrganizationDomainRecord = z.infer<typeof OrganizationDomainSchema>;

/** The name is judged by the service (422 `invalid_domain`); only a missing or non-string one is `validation_failed`. */
export const AddOrganizationDomainInputSchema = z.strictObject({
  id: z.uuid(),
  domain: text().meta({ description: 'A registrable domain or a host under one, e.g. `acme.com`', example: 'acme.com' }),
});
export const OrganizationDomainParamsSchema = z.strictObject({ id: z.uuid(), domain_id: z.uuid() });
export const UpdateOrganizationDomainInputSchema = z.strictObject({
  id: z.uuid(),
  domain_id: z.uuid(),
  join_policy: z.enum(JOIN_POLICIES).optional(),
  sso_policy: z.enum(SSO_POLICIES).optional(),
});

/** The `data` of `organization_domain.deleted`. */
export const OrganizationDomainDeletedEventSchema = z.object({ id: z.uuid(), organization_id: z.uuid(), domain: text() });

/** The `data` of `organization_domain.join_skipped`: an automatic join that a full organization turned away. */
export const OrganizationDomainJoinSkippedEventSchema = z.object({
  organization_id: z.uuid(),
  domain_id: z.uuid(),
  user_id: z.uuid(),
  reason: text().meta({ description: 'The error code that refused the membership, e.g. `seat_limit_reached`' }),
});

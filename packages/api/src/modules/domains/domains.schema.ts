import { z } from 'zod';
import { text } from '../../lib/schemas.ts';

const DOMAIN_STATUSES = ['pending_verification', 'verified', 'failed'] as const;
const TLS_STATUSES = ['pending', 'active', 'failed'] as const;
/** Why the last check did not verify. */
const VERIFICATION_ERRORS = ['txt_not_found', 'txt_mismatch', 'dns_failed'] as const;
export type VerificationError = (typeof VERIFICATION_ERRORS)[number];

const DnsRecordSchema = z.object({
  type: z.enum(['TXT', 'CNAME']),
  name: text().meta({ description: 'The record name, fully qualified' }),
  value: text(),
});

export const CustomDomainSchema = z
  .object({
    id: z.uuid(),
    domain: text().meta({ description: 'Canonical: lower-case, IDN as punycode, no trailing dot' }),
    status: z.enum(DOMAIN_STATUSES),
    tls_status: z.enum(TLS_STATUSES).meta({ description: 'Follows `status`: `active` once verified' }),
    dns_records: z
      .object({
        txt: DnsRecordSchema.meta({ description: 'Proves control of the domain: `_gatehouse-challenge.<domain>`' }),
        cname: DnsRecordSchema.meta({ description: "Routes the domain to the operator's proxy" }),
      })
      .meta({ description: 'The DNS records to publish' }),
    verification_error: z
      .enum(VERIFICATION_ERRORS)
      .nullable()
      .meta({ description: 'Why the last check did not verify; null once verified or before the first check' }),
    last_checked_at: z.iso.datetime().nullable(),
    created_at: z.iso.datetime(),
    verified_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'CustomDomain' });
export type CustomDomainRecord = z.infer<typeof CustomDomainSchema>;

/** The name is judged by the service (422 `invalid_domain`); only a missing or non-string one is `validation_failed`. */
export const AddDomainInputSchema = z.strictObject({
  id: z.uuid(),
  domain: text().meta({ description: 'A public host name, e.g. `auth.example.com`', example: 'auth.example.com' }),
});
export const DomainParamsSchema = z.strictObject({ id: z.uuid(), domain_id: z.uuid() });

export const AllowedDomainInputSchema = z.strictObject({
  domain: text().max(1024).meta({ description: 'The host name a TLS certificate is asked for' }),
});
export const AllowedDomainSchema = z.object({ domain: text(), allowed: z.literal(true) }).meta({ id: 'AllowedDomain' });

/** The `data` of `custom_domain.added`. */
export const DomainAddedEventSchema = z.object({ id: z.uuid(), domain: text(), status: z.enum(DOMAIN_STATUSES) });
/** The `data` of `custom_domain.verified`. */
export const DomainVerifiedEventSchema = z.object({ id: z.uuid(), domain: text(), verified_at: z.iso.datetime() });

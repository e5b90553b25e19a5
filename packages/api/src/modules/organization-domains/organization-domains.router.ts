import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import {
  AddOrganizationDomainInputSchema,
  OrganizationDomainParamsSchema,
  OrganizationDomainSchema,
  UpdateOrganizationDomainInputSchema,
} from './organization-domains.schema.ts';
import {
  addOrganizationDomain,
  deleteOrganizationDomain,
  listOrganizationDomains,
  updateOrganizationDomain,
  verifyOrganizationDomain,
} from './organization-domains.service.ts';

const tags = ['Organization domains'];
const base = '/v1/organizations/{id}/domains';

/** `organizations.domains.*` (CONTRACT §8 "Organization domains"). */
export const organizationDomainsRouter = router({
  add: secretKeyProcedure('organizations:write')
    .meta({
      idempotent: true,
      successStatus: 201,
      openapi: {
        method: 'POST',
        path: base,
        tags,
        summary: 'Claim a domain for the organization (pending verification; answers the TXT record to publish)',
        description:
          'The name is canonicalised as custom domains are (lower-case, IDN as punycode, no trailing dot) and must be ' +
          'a public name under a public suffix (a suffix itself, `com` or `co.uk`, is refused): 422 `invalid_domain`. ' +
          'Several organizations may claim one domain; one that another organization has verified, or that this one ' +
          'claims already, is 409 `domain_already_claimed`. Emits `organization_domain.created`.',
      },
    })
    .input(AddOrganizationDomainInputSchema)
    .output(OrganizationDomainSchema)
    .mutation(({ ctx, input }) => addOrganizationDomain(ctx, input)),
  list: secretKeyProcedure('organizations:read')
    .meta({ openapi: { method: 'GET', path: base, tags, summary: "The organization's domains, newest first" } })
    .input(IdParamSchema)
    .output(z.array(OrganizationDomainSchema))
    .query(({ ctx, input }) => listOrganizationDomains(ctx, input.id)),
  verify: secretKeyProcedure('organizations:write')
    .meta({
      rateLimited: true,
      openapi: {
        method: 'POST',
        path: `${base}/{domain_id}/verify`,
        tags,
        summary: 'Look the TXT record up now',
        description:
          'Found: `verified` and `organization_domain.verified` — unless another organization of the application ' +
          'verified the domain first: 409 `domain_already_claimed`. Not found: the claim stays `pending_verification` ' +
          '(`failed` once it is 7 days old).',
      },
    })
    .input(OrganizationDomainParamsSchema)
    .output(OrganizationDomainSchema)
    .mutation(({ ctx, input }) => verifyOrganizationDomain(ctx, input)),
  update: secretKeyProcedure('organizations:write')
    .meta({
      openapi: {
        method: 'PATCH',
        path: `${base}/{domain_id}`,
        tags,
        summary: "Set a verified domain's join and SSO policies",
        description:
          '`join_policy: automatic` makes a person whose verified email is at the domain a member (`source: domain`) ' +
          'when a sign-in completes; `sso_policy: required` refuses every first factor but the organization\u2019s SAML ' +
          'connections (403 `sso_required`). 409 `domain_not_verified` before verification. Emits `organization_domain.updated`.',
      },
    })
    .input(UpdateOrganizationDomainInputSchema)
    .output(OrganizationDomainSchema)
    .mutation(({ ctx, input }) => updateOrganizationDomain(ctx, input)),
  delete: secretKeyProcedure('organizations:write')
    .meta({ openapi: { method: 'DELETE', path: `${base}/{domain_id}`, tags, summary: 'Remove a domain claim' } })
    .input(OrganizationDomainParamsSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => deleteOrganizationDomain(ctx, input)),
});

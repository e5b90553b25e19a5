import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { publicProcedure, router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import {
  AddDomainInputSchema,
  AllowedDomainInputSchema,
  AllowedDomainSchema,
  CustomDomainSchema,
  DomainParamsSchema,
} from './domains.schema.ts';
import { addDomain, allowedDomain, deleteDomain, listDomains, verifyDomain } from './domains.service.ts';

const tags = ['Domains'];
const base = '/v1/applications/{id}/domains';

export const domainsRouter = router({
  add: secretKeyProcedure('settings:write')
    .meta({
      idempotent: true,
      openapi: {
        method: 'POST',
        path: base,
        tags,
        summary: 'Add a custom domain (pending verification; answers the DNS records to publish)',
        description:
          'The name is canonicalised (trimmed, lower-case, IDN as punycode, one trailing dot dropped) and must be a ' +
          'public host name: 422 `invalid_domain` otherwise. A name is configured once across all applications: 409 ' +
          '`domain_already_configured`. Answers 200 (not 201, as clients of this route have always received). Emits `custom_domain.added`.',
      },
    })
    .input(AddDomainInputSchema)
    .output(CustomDomainSchema)
    .mutation(({ ctx, input }) => addDomain(ctx, input)),
  list: secretKeyProcedure('settings:read')
    .meta({ openapi: { method: 'GET', path: base, tags, summary: "The application's custom domains, newest first" } })
    .input(IdParamSchema)
    .output(z.array(CustomDomainSchema))
    .query(({ ctx, input }) => listDomains(ctx, input.id)),
  verify: secretKeyProcedure('settings:write')
    .meta({
      rateLimited: true,
      openapi: {
        method: 'POST',
        path: `${base}/{domain_id}/verify`,
        tags,
        summary: 'Look the TXT record up now',
        description:
          'Found with the token: `verified` (TLS `active`) and `custom_domain.verified`. Otherwise the status stays ' +
          'and `verification_error` says why (`txt_not_found`, `txt_mismatch`, `dns_failed`).',
      },
    })
    .input(DomainParamsSchema)
    .output(CustomDomainSchema)
    .mutation(({ ctx, input }) => verifyDomain(ctx, input)),
  delete: secretKeyProcedure('settings:write')
    .meta({ openapi: { method: 'DELETE', path: `${base}/{domain_id}`, tags, summary: 'Remove a custom domain' } })
    .input(DomainParamsSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => deleteDomain(ctx, input)),
  allowed: publicProcedure
    .meta({
      rateLimited: true,
      openapi: {
        method: 'GET',
        path: '/v1/domains/allowed',
        tags,
        summary: "Whether a name is a verified custom domain (Caddy's on-demand TLS `ask`)",
        description:
          'Public (the proxy asks without credentials): 200 when the name is a verified custom domain, 404 for ' +
          'anything else; nothing about which application holds it.',
      },
    })
    .input(AllowedDomainInputSchema)
    .output(AllowedDomainSchema)
    .query(({ ctx, input }) => allowedDomain(ctx, input)),
});

import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import { CreatePortalLinkInputSchema, PortalLinkSchema } from './portal.schema.ts';
import { createPortalLink } from './portal.service.ts';

/** `organizations.portalLinks`: links to the admin portal for one organization's IT administrator. */
export const portalLinksRouter = router({
  create: secretKeyProcedure('organizations:write')
    .meta({
      successStatus: 201,
      openapi: {
        method: 'POST',
        path: '/v1/organizations/{id}/portal-links',
        tags: ['Organizations'],
        summary: 'Create an admin portal link (opens once within 5 minutes; a session of at most an hour)',
        description:
          'The URL starts a portal session limited to this organization and the `intent`: `sso` (SAML set-up and test), ' +
          '`directory`, `domains` or `audit_log`.',
      },
    })
    .input(CreatePortalLinkInputSchema)
    .output(PortalLinkSchema)
    .mutation(({ ctx, input }) => createPortalLink(ctx, input)),
});

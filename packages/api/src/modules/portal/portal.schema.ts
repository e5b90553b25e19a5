import { z } from 'zod';
import { RedirectUrlSchema, text } from '../../lib/schemas.ts';

/** What a portal link opens: one part of the portal, never another. */
export const PORTAL_INTENTS = ['sso', 'directory', 'domains', 'audit_log'] as const;
export type PortalIntent = (typeof PORTAL_INTENTS)[number];

export const CreatePortalLinkInputSchema = z.strictObject({
  id: z.uuid(),
  intent: z.enum(PORTAL_INTENTS).meta({ description: 'The part of the portal the link opens (and the only one it reaches)' }),
  return_url: RedirectUrlSchema.optional().meta({
    description:
      "Where the portal's \u201cBack\u201d link goes; its origin must be one of the application\u2019s allowed origins",
  }),
});

export const PortalLinkSchema = z
  .object({
    url: text().meta({ description: 'Send the IT administrator\u2019s browser here; it opens once' }),
    expires_at: z.iso.datetime().meta({ description: 'The link opens until then (5 minutes)' }),
  })
  .meta({ id: 'PortalLink' });

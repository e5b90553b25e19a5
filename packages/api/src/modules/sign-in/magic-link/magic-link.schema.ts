import { z } from 'zod';
import { RedirectUrlSchema } from '../../../lib/schemas.ts';
import { EmailSchema } from '../../users/users.schema.ts';

export const StartMagicLinkInputSchema = z.strictObject({
  email: EmailSchema,
  redirect_url: RedirectUrlSchema.optional().meta({
    description: 'Where the link leads (`?token=` is appended); its origin must be an allowed origin',
  }),
});
export const StartMagicLinkOutputSchema = z.object({ verification_id: z.uuid() }).meta({ id: 'MagicLinkStarted' });
export const VerifyMagicLinkInputSchema = z.strictObject({ token: z.string().min(1).max(200) });

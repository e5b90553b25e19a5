import { z } from 'zod';
import { RedirectUrlSchema, text } from '../../../lib/schemas.ts';
import { EmailSchema } from '../../users/users.schema.ts';
import { HostIdSchema, SignInResultSchema } from '../sign-in.schema.ts';

export const StartMagicLinkInputSchema = z.strictObject({
  email: EmailSchema,
  redirect_url: RedirectUrlSchema.optional().meta({
    description: 'Where the link leads (`?token=` is appended); its origin must be an allowed origin',
  }),
  host_id: HostIdSchema.optional(),
});
export const StartMagicLinkOutputSchema = z
  .object({
    verification_id: z.uuid(),
    poll_secret: text()
      .nullable()
      .meta({
        description:
          'With the hosted page (no redirect URL): the secret the device that asked polls with (POST ' +
          '/v1/auth/magic-link/poll), so the link can be opened anywhere — a phone — and sign this device in. Shown once. ' +
          'null when the link leads to your own redirect URL (that page calls verify).',
      }),
  })
  .meta({ id: 'MagicLinkStarted' });
export const VerifyMagicLinkInputSchema = z.strictObject({ token: text().min(1).max(200) });
export const ConfirmMagicLinkOutputSchema = z.object({ status: z.literal('confirmed') }).meta({ id: 'MagicLinkConfirmed' });
export const PollMagicLinkInputSchema = z.strictObject({
  verification_id: z.uuid(),
  poll_secret: text().min(1).max(200),
});
export const PollMagicLinkOutputSchema = z
  .union([z.strictObject({ status: z.literal('pending') }), SignInResultSchema])
  .meta({ id: 'MagicLinkPoll' });

import { router } from '../../trpc.ts';
import { endUserProcedure } from '../applications/callers.ts';
import { acceptConsent } from './accept-consent.service.ts';
import {
  ConfirmMagicLinkOutputSchema,
  PollMagicLinkInputSchema,
  PollMagicLinkOutputSchema,
  StartMagicLinkInputSchema,
  StartMagicLinkOutputSchema,
  VerifyMagicLinkInputSchema,
} from './magic-link/magic-link.schema.ts';
import { confirmMagicLink, pollMagicLink, startMagicLink, verifyMagicLink } from './magic-link/magic-link.service.ts';
import { AcceptConsentInputSchema, SignInResultSchema } from './sign-in.schema.ts';

const tags = ['End-user sign-in'];

/** `auth.*`: the first factor by magic link, and consent acceptance. */
export const signInProcedures = {
  magicLink: router({
    start: endUserProcedure
      .meta({
        rateLimited: true,
        openapi: { method: 'POST', path: '/v1/auth/magic-link/start', tags, summary: 'Email a sign-in link' },
      })
      .input(StartMagicLinkInputSchema)
      .output(StartMagicLinkOutputSchema)
      .mutation(({ ctx, input }) => startMagicLink(ctx, input)),
    verify: endUserProcedure
      .meta({
        openapi: { method: 'POST', path: '/v1/auth/magic-link/verify', tags, summary: 'Sign in with the token of a link' },
      })
      .input(VerifyMagicLinkInputSchema)
      .output(SignInResultSchema)
      .mutation(({ ctx, input }) => verifyMagicLink(ctx, input)),
    confirm: endUserProcedure
      .meta({
        openapi: {
          method: 'POST',
          path: '/v1/auth/magic-link/confirm',
          tags,
          summary: 'Confirm a hosted link for the device that asked (cross-device sign-in)',
          description: 'Called by the hosted page: signs nobody in here; the starting device collects the sign-in by polling.',
        },
      })
      .input(VerifyMagicLinkInputSchema)
      .output(ConfirmMagicLinkOutputSchema)
      .mutation(({ ctx, input }) => confirmMagicLink(ctx, input)),
    poll: endUserProcedure
      .meta({
        rateLimited: true,
        openapi: {
          method: 'POST',
          path: '/v1/auth/magic-link/poll',
          tags,
          summary: 'Wait for a hosted link to be confirmed, then collect the sign-in once',
          description:
            '`{status: "pending"}` until the person confirms on the hosted page (any device), then the sign-in result, ' +
            'once. Poll every 2 s or so.',
        },
      })
      .input(PollMagicLinkInputSchema)
      .output(PollMagicLinkOutputSchema)
      .mutation(({ ctx, input }) => pollMagicLink(ctx, input)),
  }),
  consent: router({
    accept: endUserProcedure
      .meta({
        openapi: { method: 'POST', path: '/v1/auth/consent/accept', tags, summary: 'Accept consent documents and continue' },
      })
      .input(AcceptConsentInputSchema)
      .output(SignInResultSchema)
      .mutation(({ ctx, input }) => acceptConsent(ctx, input)),
  }),
};

import { z } from 'zod';
import { router } from '../../trpc.ts';
import { endUserProcedure } from '../applications/callers.ts';
import { signedInProcedure } from '../sessions/signed-in.ts';
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
import { AcceptConsentInputSchema, SignInResultSchema, StepUpSchema } from './sign-in.schema.ts';
import { startStepUp } from './sign-in.service.ts';

const tags = ['End-user sign-in'];

/** `auth.*`: the first factor by magic link, consent acceptance, and the step-up of a live session. */
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
  stepUp: router({
    start: signedInProcedure
      .meta({
        openapi: {
          method: 'POST',
          path: '/v1/auth/step-up',
          tags,
          summary: 'Ask for a second factor that raises this session to aal 2',
          description:
            'Signed in at aal 1, with a second factor: answers an `mfa_required` whose pending token (5 minutes, ' +
            'single use) continues with the second-factor procedures of a sign-in (TOTP, backup code, passkey). Their ' +
            '`complete` answer is this same session at aal 2, with a new refresh token. 409 `conflict` at aal 2 ' +
            'already; 409 `no_second_factor` when the user has none.',
        },
      })
      .input(z.strictObject({}).optional())
      .output(StepUpSchema)
      .mutation(({ ctx }) => startStepUp(ctx)),
  }),
};

import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from './lib/schemas.ts';
import { endUserProcedure } from './modules/applications/callers.ts';
import { mfaRouter } from './modules/mfa/mfa.router.ts';
import { identitiesRouter, oauthRouter } from './modules/oauth/oauth.router.ts';
import { interactionRouter, myGrantsRouter } from './modules/oauth2/oauth2.router.ts';
import { passkeysRouter } from './modules/passkeys/passkeys.router.ts';
import { ssoRouter } from './modules/saml/saml.router.ts';
import { getMe, updateMe } from './modules/sessions/me.service.ts';
import {
  RefreshInputSchema,
  SessionSchema,
  SwitchOrganizationInputSchema,
  TokensSchema,
} from './modules/sessions/sessions.schema.ts';
import {
  getCurrentSession,
  listSessions,
  refreshSession,
  revokeOwnSession,
  signedInProcedure,
  signOut,
  switchOrganization,
} from './modules/sessions/sessions.service.ts';
import { acceptConsent } from './modules/sign-in/accept-consent.service.ts';
import {
  ConfirmMagicLinkOutputSchema,
  PollMagicLinkInputSchema,
  PollMagicLinkOutputSchema,
  StartMagicLinkInputSchema,
  StartMagicLinkOutputSchema,
  VerifyMagicLinkInputSchema,
} from './modules/sign-in/magic-link/magic-link.schema.ts';
import {
  confirmMagicLink,
  pollMagicLink,
  startMagicLink,
  verifyMagicLink,
} from './modules/sign-in/magic-link/magic-link.service.ts';
import { AcceptConsentInputSchema, SignInResultSchema } from './modules/sign-in/sign-in.schema.ts';
import { CurrentUserSchema, UpdateMeInputSchema } from './modules/users/users.schema.ts';
import { router } from './trpc.ts';

/** The end-user surface (ES): sign-in steps, tokens, the current user and their sessions. */
const tags = ['End-user sign-in'];
const none = z.strictObject({}).optional();

export const authRouter = router({
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
  token: router({
    refresh: endUserProcedure
      .meta({
        openapi: { method: 'POST', path: '/v1/auth/token/refresh', tags, summary: 'Rotate the refresh token for new tokens' },
      })
      .input(RefreshInputSchema)
      .output(TokensSchema)
      .mutation(({ ctx, input }) => refreshSession(ctx, ctx.application, input.refresh_token)),
  }),
  signOut: signedInProcedure
    .meta({ openapi: { method: 'POST', path: '/v1/auth/sign-out', tags, summary: 'End the current session' } })
    .input(none)
    .output(DeletedSchema)
    .mutation(({ ctx }) => signOut(ctx)),
  me: router({
    get: signedInProcedure
      .meta({ openapi: { method: 'GET', path: '/v1/auth/me', tags, summary: 'The signed-in user' } })
      .input(none)
      .output(CurrentUserSchema)
      .query(({ ctx }) => getMe(ctx)),
    update: signedInProcedure
      .meta({ openapi: { method: 'PATCH', path: '/v1/auth/me', tags, summary: "Update the signed-in user's profile" } })
      .input(UpdateMeInputSchema)
      .output(CurrentUserSchema)
      .mutation(({ ctx, input }) => updateMe(ctx, input)),
    grants: myGrantsRouter,
  }),
  sessions: router({
    list: signedInProcedure
      .meta({ openapi: { method: 'GET', path: '/v1/auth/sessions', tags, summary: "The signed-in user's live sessions" } })
      .input(none)
      .output(z.array(SessionSchema))
      .query(({ ctx }) => listSessions(ctx)),
    revoke: signedInProcedure
      .meta({ openapi: { method: 'DELETE', path: '/v1/auth/sessions/{id}', tags, summary: 'Revoke one of your sessions' } })
      .input(IdParamSchema)
      .output(DeletedSchema)
      .mutation(({ ctx, input }) => revokeOwnSession(ctx, input.id)),
  }),
  session: router({
    get: signedInProcedure
      .meta({
        openapi: {
          method: 'GET',
          path: '/v1/auth/session',
          tags,
          summary: 'The current session (aal, mfa_enrollment_required, …)',
        },
      })
      .input(none)
      .output(SessionSchema)
      .query(({ ctx }) => getCurrentSession(ctx)),
    switchOrganization: signedInProcedure
      .meta({
        openapi: {
          method: 'POST',
          path: '/v1/auth/session/organization',
          tags,
          summary: 'Choose the active organization (org, org_role)',
        },
      })
      .input(SwitchOrganizationInputSchema)
      .output(TokensSchema)
      .mutation(({ ctx, input }) => switchOrganization(ctx, input.organization_id)),
  }),
  mfa: mfaRouter,
  passkeys: passkeysRouter,
  sso: ssoRouter,
  oauth: oauthRouter,
  identities: identitiesRouter,
  oauth2: interactionRouter,
});

import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { endUserProcedure } from '../applications/callers.ts';
import { signedInProcedure } from '../sessions/signed-in.ts';
import { SignInResultSchema } from '../sign-in/sign-in.schema.ts';
import {
  AuthenticationCeremonySchema,
  FinishAssertionInputSchema,
  FinishRegistrationInputSchema,
  PasskeySchema,
  RegistrationCeremonySchema,
  StartPasskeyMfaInputSchema,
  StartPasskeySignInInputSchema,
} from './passkeys.schema.ts';
import {
  deletePasskey,
  finishMfa,
  finishRegistration,
  finishSignIn,
  listPasskeys,
  startMfa,
  startRegistration,
  startSignIn,
} from './passkeys.service.ts';

/** Passkeys (WebAuthn): registration signed in, sign-in as a first factor, and as a second factor. */
const tags = ['End-user passkeys'];
const none = z.strictObject({}).optional();

export const passkeysRouter = router({
  register: router({
    start: signedInProcedure
      .meta({
        openapi: { method: 'POST', path: '/v1/auth/passkeys/register/start', tags, summary: 'Options to create a passkey' },
      })
      .input(none)
      .output(RegistrationCeremonySchema)
      .mutation(({ ctx }) => startRegistration(ctx)),
    finish: signedInProcedure
      .meta({
        successStatus: 201,
        openapi: { method: 'POST', path: '/v1/auth/passkeys/register/finish', tags, summary: 'Register the created passkey' },
      })
      .input(FinishRegistrationInputSchema)
      .output(PasskeySchema)
      .mutation(({ ctx, input }) => finishRegistration(ctx, input)),
  }),
  signIn: router({
    start: endUserProcedure
      .meta({
        rateLimited: true,
        openapi: { method: 'POST', path: '/v1/auth/passkeys/sign-in/start', tags, summary: 'Options to sign in with a passkey' },
      })
      .input(StartPasskeySignInInputSchema)
      .output(AuthenticationCeremonySchema)
      .mutation(({ ctx, input }) => startSignIn(ctx, input)),
    finish: endUserProcedure
      .meta({
        openapi: { method: 'POST', path: '/v1/auth/passkeys/sign-in/finish', tags, summary: 'Sign in with a passkey (aal 2)' },
      })
      .input(FinishAssertionInputSchema)
      .output(SignInResultSchema)
      .mutation(({ ctx, input }) => finishSignIn(ctx, input)),
  }),
  mfa: router({
    start: endUserProcedure
      .meta({
        rateLimited: true,
        openapi: {
          method: 'POST',
          path: '/v1/auth/passkeys/mfa/start',
          tags,
          summary: 'Options to continue a sign-in with a passkey',
        },
      })
      .input(StartPasskeyMfaInputSchema)
      .output(AuthenticationCeremonySchema)
      .mutation(({ ctx, input }) => startMfa(ctx, input)),
    finish: endUserProcedure
      .meta({
        rateLimited: true,
        openapi: {
          method: 'POST',
          path: '/v1/auth/passkeys/mfa/finish',
          tags,
          summary: 'Continue a sign-in with a passkey (aal 2)',
        },
      })
      .input(FinishAssertionInputSchema)
      .output(SignInResultSchema)
      .mutation(({ ctx, input }) => finishMfa(ctx, input)),
  }),
  list: signedInProcedure
    .meta({ openapi: { method: 'GET', path: '/v1/auth/passkeys', tags, summary: "The signed-in user's passkeys" } })
    .input(none)
    .output(z.array(PasskeySchema))
    .query(({ ctx }) => listPasskeys(ctx)),
  delete: signedInProcedure
    .meta({ openapi: { method: 'DELETE', path: '/v1/auth/passkeys/{id}', tags, summary: 'Remove a passkey (needs aal 2)' } })
    .input(IdParamSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => deletePasskey(ctx, input.id)),
});

import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { endUserProcedure } from '../applications/callers.ts';
import { signedInProcedure } from '../sessions/signed-in.ts';
import { SignInResultSchema } from '../sign-in/sign-in.schema.ts';
import {
  BackupCodesSchema,
  ConfirmTotpInputSchema,
  EnrollTotpInputSchema,
  MfaFactorSchema,
  TotpEnrollmentSchema,
  VerifyBackupCodeInputSchema,
  VerifyTotpInputSchema,
} from './mfa.schema.ts';
import {
  confirmTotp,
  createBackupCodes,
  deleteFactor,
  enrollTotp,
  listFactors,
  verifyBackupCode,
  verifyTotp,
} from './mfa.service.ts';

/** Second factors: TOTP and backup codes (enrollment signed in, verification with a pending token). */
const tags = ['End-user second factors'];
const none = z.strictObject({}).optional();

export const mfaRouter = router({
  totp: router({
    enroll: signedInProcedure
      .meta({
        successStatus: 201,
        openapi: { method: 'POST', path: '/v1/auth/mfa/totp/enroll', tags, summary: 'Start enrolling an authenticator app' },
      })
      .input(EnrollTotpInputSchema)
      .output(TotpEnrollmentSchema)
      .mutation(({ ctx, input }) => enrollTotp(ctx, input)),
    confirm: signedInProcedure
      .meta({
        openapi: { method: 'POST', path: '/v1/auth/mfa/totp/confirm', tags, summary: 'Confirm an enrollment with a first code' },
      })
      .input(ConfirmTotpInputSchema)
      .output(MfaFactorSchema)
      .mutation(({ ctx, input }) => confirmTotp(ctx, input)),
    verify: endUserProcedure
      .meta({
        rateLimited: true,
        openapi: { method: 'POST', path: '/v1/auth/mfa/totp/verify', tags, summary: 'Continue a sign-in with a TOTP code' },
      })
      .input(VerifyTotpInputSchema)
      .output(SignInResultSchema)
      .mutation(({ ctx, input }) => verifyTotp(ctx, input)),
  }),
  backupCodes: router({
    create: signedInProcedure
      .meta({
        successStatus: 201,
        openapi: { method: 'POST', path: '/v1/auth/mfa/backup-codes', tags, summary: 'Generate a new set of backup codes' },
      })
      .input(none)
      .output(BackupCodesSchema)
      .mutation(({ ctx }) => createBackupCodes(ctx)),
    verify: endUserProcedure
      .meta({
        rateLimited: true,
        openapi: {
          method: 'POST',
          path: '/v1/auth/mfa/backup-code/verify',
          tags,
          summary: 'Continue a sign-in with a backup code',
        },
      })
      .input(VerifyBackupCodeInputSchema)
      .output(SignInResultSchema)
      .mutation(({ ctx, input }) => verifyBackupCode(ctx, input)),
  }),
  factors: router({
    list: signedInProcedure
      .meta({ openapi: { method: 'GET', path: '/v1/auth/mfa/factors', tags, summary: "The signed-in user's second factors" } })
      .input(none)
      .output(z.array(MfaFactorSchema))
      .query(({ ctx }) => listFactors(ctx)),
    delete: signedInProcedure
      .meta({
        openapi: { method: 'DELETE', path: '/v1/auth/mfa/factors/{id}', tags, summary: 'Remove a second factor (needs aal 2)' },
      })
      .input(IdParamSchema)
      .output(DeletedSchema)
      .mutation(({ ctx, input }) => deleteFactor(ctx, input.id)),
  }),
});

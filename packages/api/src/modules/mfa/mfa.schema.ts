import { z } from 'zod';
import { text } from '../../lib/schemas.ts';
import { PendingTokenInputSchema } from '../sign-in/sign-in.schema.ts';

export const MFA_FACTOR_KINDS = ['totp', 'backup_code'] as const;
export type MfaFactorKind = (typeof MFA_FACTOR_KINDS)[number];

/** CONTRACT §6: a second factor as its owner sees it (never its secret). */
export const MfaFactorSchema = z
  .object({
    id: z.uuid(),
    kind: z.enum(MFA_FACTOR_KINDS),
    name: text(),
    created_at: z.iso.datetime(),
    last_used_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'MfaFactor' });
export type MfaFactorRecord = z.infer<typeof MfaFactorSchema>;

export const EnrollTotpInputSchema = z
  .strictObject({
    name: text().trim().min(1).max(200).optional().meta({ description: 'A label for the authenticator app' }),
  })
  .optional();

export const TotpEnrollmentSchema = z
  .object({
    factor_id: z.uuid(),
    secret: text().meta({ description: 'The base32 seed, shown once: enter it in an authenticator app' }),
    otpauth_uri: text().meta({ description: 'otpauth://totp/… for a QR code' }),
  })
  .meta({ id: 'TotpEnrollment' });

/** A TOTP code: six digits. */
const TotpCodeSchema = text().regex(/^\d{6}$/, 'six digits');

export const ConfirmTotpInputSchema = z.strictObject({ factor_id: z.uuid(), code: TotpCodeSchema });

export const VerifyTotpInputSchema = z.strictObject({ pending_token: PendingTokenInputSchema, code: TotpCodeSchema });

export const VerifyBackupCodeInputSchema = z.strictObject({
  pending_token: PendingTokenInputSchema,
  code: text().min(1).max(64),
});

export const BackupCodesSchema = z
  .object({
    codes: z.array(text()).length(10).meta({ description: 'Shown once; each works once. A new set voids this one.' }),
  })
  .meta({ id: 'BackupCodes' });

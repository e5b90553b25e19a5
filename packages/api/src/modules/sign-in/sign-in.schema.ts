import { z } from 'zod';
import { text } from '../../lib/schemas.ts';
import { TokensSchema } from '../sessions/sessions.schema.ts';
import { UserSchema } from '../users/users.schema.ts';

export const MFA_METHODS = ['passkey', 'totp', 'backup_code'] as const;
export type MfaMethod = (typeof MFA_METHODS)[number];

export const ConsentDocumentSchema = z.object({ doc_type: text(), url: text(), version: text() }).meta({ id: 'ConsentDocument' });

/** The host a first-factor start names: host access rules decide at the end of the sign-in, and the token carries it. */
export const HostIdSchema = z.uuid().meta({
  description: 'The host the person signs in to: host access rules decide, and the access token carries it as `host`',
});

const MfaChallengeSchema = z
  .object({ methods: z.array(z.enum(MFA_METHODS)), pending_token: text() })
  .meta({ id: 'MfaChallenge' });

/** CONTRACT §4: a discriminated union whose variants carry only their own fields. */
export const SignInResultSchema = z
  .discriminatedUnion('status', [
    z.strictObject({
      status: z.literal('consent_required'),
      pending_token: text(),
      consent_documents: z.array(ConsentDocumentSchema),
    }),
    z.strictObject({
      status: z.literal('mfa_required'),
      pending_token: text(),
      mfa: MfaChallengeSchema,
    }),
    z.strictObject({ status: z.literal('complete'), tokens: TokensSchema, user: UserSchema }),
  ])
  .meta({ id: 'SignInResult' });
export type SignInResult = z.infer<typeof SignInResultSchema>;

/** A pending token as a client sends it back (the next step of a sign-in). */
export const PendingTokenInputSchema = text().min(1).max(200);

export const AcceptConsentInputSchema = z.strictObject({
  pending_token: PendingTokenInputSchema,
  doc_types: z
    .array(text().max(64))
    .max(50)
    .optional()
    .meta({ description: 'Every listed document type, accepted at its current version' }),
});

/** The `data` of `access.denied`: a refused sign-in (a banned user, or the host access rules: then with `rule_id`). */
export const AccessDeniedEventSchema = z.object({
  user_id: z.uuid(),
  host_id: text().nullable(),
  first_factor: text(),
  reason: text(),
  rule_id: z.uuid().nullable().optional(),
});
export type AccessDeniedEvent = z.infer<typeof AccessDeniedEventSchema>;

/**
 * A step-up (`POST /v1/auth/step-up`): the `mfa_required` of a sign-in, for the caller's own session. Its pending
 * token continues with the second-factor procedures of a sign-in, whose `complete` answer is this same session at
 * aal 2 (same `session_id`, a new refresh token).
 */
export const StepUpSchema = z
  .strictObject({
    status: z.literal('mfa_required'),
    pending_token: text(),
    mfa: MfaChallengeSchema,
    session_id: z.uuid().meta({ description: "The session the second factor raises (the caller's own)" }),
    expires_at: z.iso.datetime().meta({ description: 'The pending token expires then (5 minutes), single use' }),
  })
  .meta({ id: 'StepUp' });

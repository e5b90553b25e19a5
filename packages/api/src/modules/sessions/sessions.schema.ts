import { z } from 'zod';
import { text } from '../../lib/schemas.ts';

export const TokensSchema = z
  .object({
    access_token: text().meta({ description: 'EdDSA JWT; verify it against the JWKS' }),
    refresh_token: text().meta({ description: 'Opaque, single use: every refresh answers a new one' }),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int().meta({ description: 'Seconds until the access token expires' }),
    aal: z.number().int(),
    session_id: z.uuid(),
  })
  .meta({ id: 'Tokens' });
export type Tokens = z.infer<typeof TokensSchema>;

export const SessionSchema = z
  .object({
    id: z.uuid(),
    aal: z.number().int(),
    organization_id: z.uuid().nullable(),
    user_agent: text().nullable(),
    ip: text().nullable(),
    created_at: z.iso.datetime(),
    last_active_at: z.iso.datetime(),
    expires_at: z.iso.datetime(),
    current: z.boolean(),
    mfa_enrollment_required: z.boolean().meta({
      description:
        "The application's settings.mfa is required and the user had no second factor when signing in: ask them to enroll one",
    }),
  })
  .meta({ id: 'Session' });
export type SessionRecord = z.infer<typeof SessionSchema>;

export const RefreshInputSchema = z.strictObject({ refresh_token: text().min(1).max(200) });
export const SwitchOrganizationInputSchema = z.strictObject({
  organization_id: z.uuid().nullable().meta({ description: 'null leaves the active organization' }),
});
export const RevokedSessionsSchema = z.object({ user_id: z.uuid(), revoked: z.number().int() }).meta({ id: 'RevokedSessions' });

/** The `data` of `session.created`. */
export const SessionCreatedEventSchema = z.object({ id: z.uuid(), user_id: z.uuid(), aal: z.number().int() });
/** The `data` of `session.revoked`: why (`sign_out`, `ban`, `refresh_token_reuse`, …). */
export const SessionRevokedEventSchema = z.object({ id: z.uuid(), user_id: z.uuid(), reason: text() });
/**
 * The `data` of `session.stepped_up`: a second factor raised a live session to `aal` 2 (a step-up); `method` is the
 * factor (`totp`, `backup_code`, `passkey`), `amr` the session's authentication methods now.
 */
export const SessionSteppedUpEventSchema = z.object({
  id: z.uuid(),
  user_id: z.uuid(),
  aal: z.number().int(),
  method: text(),
  amr: z.array(text()),
});

import { z } from 'zod';
import { text } from '../../lib/schemas.ts';

/** A sign-in factor as support sees it: a passkey, an authenticator app or a set of backup codes. */
export const UserFactorSchema = z
  .object({
    id: z.uuid(),
    kind: z.enum(['passkey', 'totp', 'backup_code']),
    name: text(),
    created_at: z.iso.datetime(),
    last_used_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'UserFactor' });
export type UserFactorRecord = z.infer<typeof UserFactorSchema>;

export const UserFactorParamsSchema = z.strictObject({ id: z.uuid(), factor_id: z.uuid() });

export const RemovedFactorSchema = z
  .object({
    id: z.uuid(),
    deleted: z.literal(true),
    revoked_sessions: z.number().int().meta({ description: 'Sessions of the user ended by the removal' }),
  })
  .meta({ id: 'RemovedFactor' });

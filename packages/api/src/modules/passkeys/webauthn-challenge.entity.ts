import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';
import { SessionEntity } from '../sessions/session.entity.ts';
import { PendingTokenEntity } from '../sign-in/pending-token.entity.ts';
import { UserEntity } from '../users/user.entity.ts';

/**
 * One WebAuthn ceremony in progress. The client holds `state` (stored hashed); the challenge it signs is bound to
 * it, to the ceremony, and to who may finish it: the session that started a registration, the pending sign-in of a
 * second factor. Single use and 5 minutes by the database clock (SECURITY 3, 4).
 */
export const WebauthnChallengeEntity = defineEntity({
  name: 'WebauthnChallenge',
  tableName: 'webauthn_challenges',
  extends: TenantRowEntity,
  properties: {
    /** `registration`, `sign_in` or `mfa`. */
    ceremony: p.string().length(16),
    stateHash: p.string().length(64).unique(),
    /** base64url, as it appears in the signed clientDataJSON. */
    challenge: p.string().length(128),
    /** Registration and MFA: whose ceremony it is. */
    user: () => p.manyToOne(UserEntity).mapToPk().nullable().deleteRule('cascade'),
    /** Registration: the session that started it (and only it may finish it). */
    session: () => p.manyToOne(SessionEntity).mapToPk().nullable().deleteRule('cascade'),
    /** MFA: the pending sign-in this second factor continues. */
    pendingToken: () => p.manyToOne(PendingTokenEntity).mapToPk().nullable().deleteRule('cascade'),
    /** Sign-in: the host named at the start (host access rules), carried to the session. */
    hostId: p.uuid().nullable(),
    expiresAt: p.datetime(),
    consumedAt: p.datetime().nullable(),
  },
});
export type WebauthnChallenge = InferEntity<typeof WebauthnChallengeEntity>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';
import { SessionEntity } from '../sessions/session.entity.ts';
import { UserEntity } from '../users/user.entity.ts';

/** A sign-in paused between steps (consent, second factor). Opaque to the client, stored hashed, single use. */
export const PendingTokenEntity = defineEntity({
  name: 'PendingToken',
  tableName: 'pending_tokens',
  extends: TenantRowEntity,
  properties: {
    user: () => p.manyToOne(UserEntity).mapToPk().deleteRule('cascade'),
    tokenHash: p.string().length(64).unique(),
    /** `consent` or `mfa`: which step this token may continue. */
    stage: p.string().length(16),
    /** The assurance level the first factor gave. */
    aal: p.integer(),
    firstFactor: p.string().length(32),
    /** The host named at the first factor's start (host access rules), carried to the session. */
    hostId: p.uuid().nullable(),
    /**
     * A step-up's: the live session it was opened from (by that session's access token). Its second factor raises
     * this session to aal 2 instead of opening a new one; null for a sign-in's pending token.
     */
    session: () => p.manyToOne(SessionEntity).mapToPk().nullable().deleteRule('cascade'),
    failedAttempts: p.integer().default(0),
    expiresAt: p.datetime(),
    consumedAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['user'] }, { properties: ['session'] }],
});
export type PendingToken = InferEntity<typeof PendingTokenEntity>;

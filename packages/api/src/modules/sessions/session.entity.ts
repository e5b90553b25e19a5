import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';
import { OrganizationEntity } from '../organizations/organization.entity.ts';
import { UserEntity } from '../users/user.entity.ts';

export const SessionEntity = defineEntity({
  name: 'Session',
  tableName: 'sessions',
  extends: TenantRowEntity,
  properties: {
    user: () => p.manyToOne(UserEntity).mapToPk().deleteRule('cascade'),
    aal: p.integer(),
    /** The authentication methods used (RFC 8176 `amr` values, see `amrOf`); null for sessions opened before it was kept. */
    amr: p.json<string[]>().nullable(),
    /** The active organization: set by the organization switch, carried into every refreshed token. */
    organization: () => p.manyToOne(OrganizationEntity).mapToPk().nullable().deleteRule('set null'),
    /**
     * SHA-256 of the one refresh token that may be used next; older ones are reuse. Not indexed: a token is looked up by
     * its row in refresh_tokens (every issued token has one), so that a rotation updates the row in place.
     */
    refreshTokenHash: p.string().length(64),
    /** SHA-256 of the hosted pages' browser token for this session (browser-sessions.ts), when it has one. */
    browserTokenHash: p.string().length(64).nullable().unique(),
    /** Set when `settings.mfa` is `required` and the user has no second factor yet. */
    mfaEnrollmentRequired: p.boolean().default(false),
    /** The host this session signed in to (host access rules): every access token of the session carries it as `host`. */
    hostId: p.uuid().nullable(),
    userAgent: p.string().length(512).nullable(),
    ip: p.string().length(64).nullable(),
    lastActiveAt: p.datetime(),
    expiresAt: p.datetime(),
    revokedAt: p.datetime().nullable(),
  },
  indexes: [
    { properties: ['user', 'createdAt'] },
    // The daily statistics (sign-ins by method, active users) read these alone, never the table.
    {
      name: 'sessions_application_id_created_at_index',
      expression:
        'create index "sessions_application_id_created_at_index" on "sessions" ("application_id", "created_at") include ("user_id", "amr")',
    },
    {
      name: 'sessions_application_id_last_active_at_index',
      expression:
        'create index "sessions_application_id_last_active_at_index" on "sessions" ("application_id", "last_active_at") include ("user_id")',
    },
  ],
});
export type Session = InferEntity<typeof SessionEntity>;

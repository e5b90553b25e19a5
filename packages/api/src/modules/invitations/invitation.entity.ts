import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';
import { OrganizationEntity } from '../organizations/organization.entity.ts';

/**
 * An invitation to an organization. Its status is derived, never stored: `accepted` once `acceptedAt` is set,
 * `revoked` once `revokedAt` is, else `expired` after `expiresAt` (by the database clock), else `pending`. The token
 * is kept as SHA-256 only; a resend replaces it (the old link stops).
 */
export const InvitationEntity = defineEntity({
  name: 'Invitation',
  tableName: 'organization_invitations',
  extends: TenantRowEntity,
  properties: {
    organization: () => p.manyToOne(OrganizationEntity).mapToPk().deleteRule('cascade'),
    /** Lower-case (CONTRACT §8): the address the invitation is for, compared with the user's normalized email. */
    email: p.string().length(320),
    role: p.string().length(64),
    tokenHash: p.string().length(64).unique(),
    redirectUrl: p.string().length(2048).nullable(),
    /** The lifetime asked for at creation: a resend gives the new link as long. */
    lifetimeS: p.integer(),
    expiresAt: p.datetime(),
    acceptedAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['organization', 'createdAt', 'id'] }, { properties: ['application', 'email'] }],
});
export type Invitation = InferEntity<typeof InvitationEntity>;

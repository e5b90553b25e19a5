import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../../applications/tenant-row.entity.ts';

/** A sign-in link; its `id` is the `verification_id` the start answers. */
export const MagicLinkEntity = defineEntity({
  name: 'MagicLink',
  tableName: 'magic_links',
  extends: TenantRowEntity,
  properties: {
    email: p.string().length(320),
    emailNormalized: p.string().length(320),
    tokenHash: p.string().length(64).unique(),
    redirectUrl: p.string().length(2048).nullable(),
    /** The host the person signs in to (host access rules judge the sign-in by it), when the start named one. */
    hostId: p.uuid().nullable(),
    /** Hosted links: SHA-256 of the secret the starting device polls with. */
    pollSecretHash: p.string().length(64).nullable(),
    /** Hosted links: when the person confirmed on the hosted page; the poll then collects the sign-in. */
    confirmedAt: p.datetime().nullable(),
    expiresAt: p.datetime(),
    consumedAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['application', 'emailNormalized', 'createdAt'] }],
});
export type MagicLink = InferEntity<typeof MagicLinkEntity>;

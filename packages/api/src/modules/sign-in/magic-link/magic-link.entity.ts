import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../../applications/application.entity.ts';

export const MagicLinkEntity = defineEntity({
  name: 'MagicLink',
  tableName: 'magic_links',
  properties: {
    /** The `verification_id` of S15. */
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
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
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [{ properties: ['application', 'emailNormalized', 'createdAt'] }],
});
export type MagicLink = InferEntity<typeof MagicLinkEntity>;

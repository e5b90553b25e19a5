import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';
import { OrganizationEntity } from '../organizations/organization.entity.ts';

/**
 * A link to the admin portal (CONTRACT §8) and, once opened, the portal session it became: one organization and one
 * intent. The link's token opens once within 5 minutes; the session's token (the cookie) lives at most an hour. Both
 * are stored as SHA-256 only.
 */
export const PortalLinkEntity = defineEntity({
  name: 'PortalLink',
  tableName: 'portal_links',
  extends: TenantRowEntity,
  properties: {
    organization: () => p.manyToOne(OrganizationEntity).mapToPk().deleteRule('cascade'),
    /** `sso`, `directory`, `domains` or `audit_log`: the only part of the portal the session reaches. */
    intent: p.string().length(16),
    tokenHash: p.string().length(64).unique(),
    /** Where "Back to the app" goes: on one of the application's allowed origins, checked at creation. */
    returnUrl: p.string().length(2048).nullable(),
    expiresAt: p.datetime(),
    consumedAt: p.datetime().nullable(),
    sessionHash: p.string().length(64).nullable().unique(),
    sessionExpiresAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['organization'] }, { properties: ['expiresAt'] }],
});
export type PortalLink = InferEntity<typeof PortalLinkEntity>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { EditableTenantRowEntity } from '../applications/tenant-row.entity.ts';
import { OrganizationEntity } from '../organizations/organization.entity.ts';

/**
 * An enterprise customer's SAML identity provider. The IdP's signing certificate (base64 DER) is public, so it is
 * stored as is; it is never returned by the API (the seed's record omits it). Without one, every response is refused.
 */
export const SamlConnectionEntity = defineEntity({
  name: 'SamlConnection',
  tableName: 'saml_connections',
  extends: EditableTenantRowEntity,
  properties: {
    name: p.string().length(200),
    enabled: p.boolean(),
    idpEntityId: p.string().length(1024),
    idpSsoUrl: p.string().length(2048),
    idpCertificate: p.text().nullable(),
    certificateExpiresAt: p.datetime().nullable(),
    emailAttribute: p.string().length(256).nullable(),
    /** Lower-case; unique per application (an email's domain finds its connection at `sso/start`). */
    emailDomain: p.string().length(253).nullable(),
    nameAttribute: p.string().length(256).nullable(),
    allowIdpInitiated: p.boolean(),
    /** The organization whose IdP this is (its verified domains' SSO policy names it); null for an application-wide one. */
    organization: () => p.manyToOne(OrganizationEntity).mapToPk().nullable().deleteRule('set null'),
  },
  uniques: [{ name: 'saml_connections_application_email_domain_unique', properties: ['application', 'emailDomain'] }],
  indexes: [{ properties: ['application', 'createdAt', 'id'] }, { properties: ['organization'] }],
});
export type SamlConnection = InferEntity<typeof SamlConnectionEntity>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';

/**
 * An enterprise customer's SAML identity provider. The IdP's signing certificate (base64 DER) is public, so it is
 * stored as is; it is never returned by the API (the seed's record omits it). Without one, every response is refused.
 */
export const SamlConnectionEntity = defineEntity({
  name: 'SamlConnection',
  tableName: 'saml_connections',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
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
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ name: 'saml_connections_application_email_domain_unique', properties: ['application', 'emailDomain'] }],
  indexes: [{ properties: ['application', 'createdAt', 'id'] }],
});
export type SamlConnection = InferEntity<typeof SamlConnectionEntity>;

/**
 * An AuthnRequest we sent (`sso/start`): its ID is what a response's InResponseTo must name. Stored in the database so
 * that any process can finish the sign-in; consumed once by the ACS that accepts its response; 10 minutes.
 */
export const SamlRequestEntity = defineEntity({
  name: 'SamlRequest',
  tableName: 'saml_requests',
  properties: {
    /** The AuthnRequest's ID attribute (`_` + 40 hex: an NCName). */
    id: p.string().length(64).primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    connection: () => p.manyToOne(SamlConnectionEntity).mapToPk().deleteRule('cascade'),
    redirectUri: p.string().length(2048),
    /** Sign-in: the host named at the start (host access rules), carried to the session. */
    hostId: p.uuid().nullable(),
    expiresAt: p.datetime(),
    consumedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type SamlRequest = InferEntity<typeof SamlRequestEntity>;

/** The replay cache: every accepted assertion's ID per connection, kept until the assertion could no longer be valid. */
export const SamlAssertionEntity = defineEntity({
  name: 'SamlAssertion',
  tableName: 'saml_assertions',
  properties: {
    id: p.uuid().primary(),
    connection: () => p.manyToOne(SamlConnectionEntity).mapToPk().deleteRule('cascade'),
    assertionId: p.string().length(256),
    expiresAt: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ name: 'saml_assertions_connection_assertion_unique', properties: ['connection', 'assertionId'] }],
  indexes: [{ properties: ['expiresAt'] }],
});

/**
 * What an accepted response established, waiting for the browser's app to collect it (`sso/complete`) with the code
 * the ACS redirect carried: single use, 60 seconds, stored as SHA-256.
 */
export const SamlCodeEntity = defineEntity({
  name: 'SamlCode',
  tableName: 'saml_codes',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    connection: () => p.manyToOne(SamlConnectionEntity).mapToPk().deleteRule('cascade'),
    codeHash: p.string().length(64).unique(),
    nameId: p.string().length(1024),
    email: p.string().length(320).nullable(),
    displayName: p.string().length(200).nullable(),
    /** Sign-in: the host named at the start (host access rules), carried to the session. */
    hostId: p.uuid().nullable(),
    expiresAt: p.datetime(),
    consumedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';
import { SamlConnectionEntity } from './saml-connection.entity.ts';

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
    /**
     * `sign_in`, or `test`: the admin portal's connection test. A test's code is spent only by the portal (its
     * attributes shown, nobody signed in) and a sign-in's only by `sso/complete`; the ACS checks are the same.
     */
    purpose: p.string().length(16).default('sign_in'),
    expiresAt: p.datetime(),
    consumedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type SamlRequest = InferEntity<typeof SamlRequestEntity>;

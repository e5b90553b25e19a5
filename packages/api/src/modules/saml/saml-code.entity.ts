import { defineEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';
import { SamlConnectionEntity } from './saml-connection.entity.ts';

/**
 * What an accepted response established, waiting for the browser's app to collect it (`sso/complete`) with the code
 * the ACS redirect carried: single use, 60 seconds, stored as SHA-256.
 */
export const SamlCodeEntity = defineEntity({
  name: 'SamlCode',
  tableName: 'saml_codes',
  extends: TenantRowEntity,
  properties: {
    connection: () => p.manyToOne(SamlConnectionEntity).mapToPk().deleteRule('cascade'),
    codeHash: p.string().length(64).unique(),
    nameId: p.string().length(1024),
    email: p.string().length(320).nullable(),
    displayName: p.string().length(200).nullable(),
    /** Sign-in: the host named at the start (host access rules), carried to the session. */
    hostId: p.uuid().nullable(),
    /** Where the ACS sent the code (`sso/complete` given a `redirect_uri` requires this one). */
    redirectUri: p.string().length(2048).nullable(),
    expiresAt: p.datetime(),
    consumedAt: p.datetime().nullable(),
  },
});

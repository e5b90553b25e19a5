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
    /** The request's purpose (`sign_in` or `test`): `sso/complete` spends only sign-in codes, the portal only tests. */
    purpose: p.string().length(16).default('sign_in'),
    /** A test's signed attributes, shown to the administrator who ran it; null for a sign-in (not kept). */
    attributes: p.json<Record<string, string[]>>().nullable(),
    expiresAt: p.datetime(),
    consumedAt: p.datetime().nullable(),
  },
});

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';

/** An application's Ed25519 key pair. The id is the JWT `kid`; the private key is sealed with the master key. */
export const SigningKeyEntity = defineEntity({
  name: 'SigningKey',
  tableName: 'signing_keys',
  extends: TenantRowEntity,
  properties: {
    publicJwk: p.json<{ kty: 'OKP'; crv: 'Ed25519'; x: string }>(),
    privateKeySealed: p.text(),
    status: p.string().length(16),
    retiredAt: p.datetime().nullable(),
    /** A retired key stays in the JWKS until every token it signed has expired. */
    publishUntil: p.datetime().nullable(),
  },
  uniques: [{ name: 'signing_keys_one_active', properties: ['application'], where: { status: 'active' } }],
  indexes: [{ properties: ['application', 'createdAt'] }],
});
export type SigningKey = InferEntity<typeof SigningKeyEntity>;

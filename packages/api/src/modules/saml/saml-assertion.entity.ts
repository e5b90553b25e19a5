import { defineEntity, p } from '@mikro-orm/core';
import { SamlConnectionEntity } from './saml-connection.entity.ts';

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

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { EditableTenantRowEntity } from '../applications/tenant-row.entity.ts';

export const OrganizationEntity = defineEntity({
  name: 'Organization',
  tableName: 'organizations',
  extends: EditableTenantRowEntity,
  properties: {
    name: p.string().length(200),
    slug: p.string().length(100),
  },
  uniques: [{ name: 'organizations_application_slug_unique', properties: ['application', 'slug'] }],
  indexes: [
    { properties: ['application', 'createdAt', 'id'] },
    // Trigram indexes serve the literal, case-insensitive substring search (ILIKE '%…%') of S10.
    {
      name: 'organizations_name_trgm',
      expression: 'create index "organizations_name_trgm" on "organizations" using gin ("name" gin_trgm_ops)',
    },
    {
      name: 'organizations_slug_trgm',
      expression: 'create index "organizations_slug_trgm" on "organizations" using gin ("slug" gin_trgm_ops)',
    },
  ],
});
export type Organization = InferEntity<typeof OrganizationEntity>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { EditableTenantRowEntity } from '../applications/tenant-row.entity.ts';

/** An application's override of a catalog template; unset fields fall back to the catalog's. */
export const TemplateOverrideEntity = defineEntity({
  name: 'TemplateOverride',
  tableName: 'template_overrides',
  extends: EditableTenantRowEntity,
  properties: {
    key: p.string().length(64),
    subject: p.string().length(998).nullable(),
    body: p.text().nullable(),
    delivered: p.boolean().nullable(),
  },
  uniques: [{ name: 'template_overrides_application_key_unique', properties: ['application', 'key'] }],
});
export type TemplateOverride = InferEntity<typeof TemplateOverrideEntity>;

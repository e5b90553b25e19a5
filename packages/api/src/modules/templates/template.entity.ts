import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';

/** An application's override of a catalog template; unset fields fall back to the catalog's. */
export const TemplateOverrideEntity = defineEntity({
  name: 'TemplateOverride',
  tableName: 'template_overrides',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    key: p.string().length(64),
    subject: p.string().length(998).nullable(),
    body: p.text().nullable(),
    delivered: p.boolean().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ name: 'template_overrides_application_key_unique', properties: ['application', 'key'] }],
});
export type TemplateOverride = InferEntity<typeof TemplateOverrideEntity>;

import { defineEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from './application.entity.ts';

/**
 * What every row an application owns has (no table of its own): a UUID v7 id, the application it belongs to (its
 * rows go with it) and when it was created. Entities extend it, as the MikroORM guide's base entity.
 */
export const TenantRowEntity = defineEntity({
  name: 'TenantRow',
  abstract: true,
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

/** A tenant row that changes: `updatedAt` is set by the service that changes it, so answers and events carry it. */
export const EditableTenantRowEntity = defineEntity({
  name: 'EditableTenantRow',
  abstract: true,
  extends: TenantRowEntity,
  properties: {
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';
import { OperatorEntity } from './operator.entity.ts';

/**
 * An operator's role for one application, or for every application (`application` null: instance-wide). One role per
 * operator and application (the unique index reads a missing application as the nil UUID, so one instance-wide role).
 */
export const OperatorRoleEntity = defineEntity({
  name: 'OperatorRole',
  tableName: 'operator_roles',
  properties: {
    id: p.uuid().primary(),
    operator: () => p.manyToOne(OperatorEntity).mapToPk().deleteRule('cascade'),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade').nullable(),
    /** `owner`, `admin`, `support` or `viewer` (OPERATOR_ROLES). */
    role: p.string().length(16),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [
    { properties: ['application'] },
    {
      name: 'operator_roles_operator_application_unique',
      expression: `create unique index "operator_roles_operator_application_unique" on "operator_roles" ("operator_id", coalesce("application_id", '00000000-0000-0000-0000-000000000000'::uuid))`,
    },
  ],
});
export type OperatorRole = InferEntity<typeof OperatorRoleEntity>;

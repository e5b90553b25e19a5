import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { UserEntity } from '../users/user.entity.ts';

/**
 * A person who runs Gatehouse through the console: a user of the console application (the reserved one), who signs
 * in there like anyone else. What they may do is their roles (`OperatorRoleEntity`); removing the operator (or their
 * user) removes the roles with it.
 */
export const OperatorEntity = defineEntity({
  name: 'Operator',
  tableName: 'operators',
  properties: {
    id: p.uuid().primary(),
    user: () => p.manyToOne(UserEntity).mapToPk().deleteRule('cascade').unique(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Operator = InferEntity<typeof OperatorEntity>;

import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';

/**
 * One relationship tuple `object_type:object_id#relation@subject_type:subject_id[#subject_relation]`. A direct subject
 * (a user) has `subject_relation` '' rather than null, so the unique key makes writes idempotent with plain equality.
 * The service reads and writes this table with set-based SQL (see authz.service.ts); the entity gives the schema.
 */
export const AuthzTupleEntity = defineEntity({
  name: 'AuthzTuple',
  tableName: 'authz_tuples',
  extends: TenantRowEntity,
  properties: {
    objectType: p.string().length(64),
    objectId: p.string().length(256),
    relation: p.string().length(64),
    subjectType: p.string().length(64),
    subjectId: p.string().length(256),
    subjectRelation: p.string().length(64).default(''),
    /** The consistency token of the batch that wrote it (a value of the `authz_revisions` sequence). */
    revision: p.bigint('string'),
  },
  uniques: [
    {
      // Idempotent writes, and the object → subjects walk of check and expand (a prefix of it).
      name: 'authz_tuples_unique',
      properties: ['application', 'objectType', 'objectId', 'relation', 'subjectType', 'subjectId', 'subjectRelation'],
    },
  ],
  indexes: [
    // The subject → objects walk of lookup, and S11 (a user's tuples, newest first).
    {
      name: 'authz_tuples_subject_index',
      properties: ['application', 'subjectType', 'subjectId', 'subjectRelation', 'createdAt', 'id'],
    },
    // GET /v1/authz/tuples, newest first.
    { properties: ['application', 'createdAt', 'id'] },
  ],
});
export type AuthzTuple = InferEntity<typeof AuthzTupleEntity>;

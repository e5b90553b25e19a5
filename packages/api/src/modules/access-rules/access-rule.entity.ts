import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';

/**
 * Who (a user, or every member of an organization) may or may not sign in to what (a host, or every host of a group).
 * Subjects and targets are polymorphic (kind + id); a deleted host or group takes its rules with it.
 */
export const AccessRuleEntity = defineEntity({
  name: 'AccessRule',
  tableName: 'access_rules',
  extends: TenantRowEntity,
  properties: {
    /** `allow` | `deny`. */
    effect: p.string().length(8),
    /** `user` | `organization`. */
    subjectKind: p.string().length(16),
    subjectId: p.uuid(),
    /** `host` | `host_group`. */
    targetKind: p.string().length(16),
    targetId: p.uuid(),
  },
  indexes: [
    { properties: ['application', 'createdAt', 'id'] },
    // The check: the rules of one target (the host, its group) in one application.
    { properties: ['application', 'targetId', 'targetKind'] },
  ],
});
export type AccessRule = InferEntity<typeof AccessRuleEntity>;

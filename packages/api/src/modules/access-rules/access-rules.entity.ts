import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';

/** A named set of hosts that rules can target together. */
export const HostGroupEntity = defineEntity({
  name: 'HostGroup',
  tableName: 'host_groups',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    name: p.string().length(200),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ name: 'host_groups_application_name_unique', properties: ['application', 'name'] }],
  indexes: [{ properties: ['application', 'createdAt', 'id'] }],
});
export type HostGroup = InferEntity<typeof HostGroupEntity>;

/** One of the developer's machines or services that people sign in to; the service assigns its id. */
export const HostEntity = defineEntity({
  name: 'Host',
  tableName: 'hosts',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    name: p.string().length(200),
    hostGroup: () => p.manyToOne(HostGroupEntity).mapToPk().nullable().deleteRule('set null'),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ name: 'hosts_application_name_unique', properties: ['application', 'name'] }],
  indexes: [{ properties: ['application', 'createdAt', 'id'] }, { properties: ['hostGroup'] }],
});
export type Host = InferEntity<typeof HostEntity>;

/**
 * Who (a user, or every member of an organization) may or may not sign in to what (a host, or every host of a group).
 * Subjects and targets are polymorphic (kind + id); a deleted host or group takes its rules with it.
 */
export const AccessRuleEntity = defineEntity({
  name: 'AccessRule',
  tableName: 'access_rules',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    /** `allow` | `deny`. */
    effect: p.string().length(8),
    /** `user` | `organization`. */
    subjectKind: p.string().length(16),
    subjectId: p.uuid(),
    /** `host` | `host_group`. */
    targetKind: p.string().length(16),
    targetId: p.uuid(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [
    { properties: ['application', 'createdAt', 'id'] },
    // The check: the rules of one target (the host, its group) in one application.
    { properties: ['application', 'targetId', 'targetKind'] },
  ],
});
export type AccessRule = InferEntity<typeof AccessRuleEntity>;

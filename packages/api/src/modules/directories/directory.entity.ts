import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { EditableTenantRowEntity } from '../applications/tenant-row.entity.ts';
import { OrganizationEntity } from '../organizations/organization.entity.ts';

/** A group's `displayName` and the organization role its members get (CONTRACT §8 `group_role_mappings`). */
export interface GroupRoleMapping {
  group: string;
  role: string;
}

/**
 * An organization's SCIM directory (CONTRACT §8): the identity provider pushes its users and groups to
 * `/scim/v2/{id}` with the bearer token whose SHA-256 is kept here (the token itself is shown at creation and rotation
 * only).
 */
export const DirectoryEntity = defineEntity({
  name: 'Directory',
  tableName: 'directories',
  extends: EditableTenantRowEntity,
  properties: {
    organization: () => p.manyToOne(OrganizationEntity).mapToPk().deleteRule('cascade'),
    name: p.string().length(200),
    /** `okta`, `entra`, `google` or `generic`. */
    provider: p.string().length(16),
    /** `active` or `disabled` (a disabled directory answers 403 to every SCIM request). */
    status: p.string().length(16),
    /** SHA-256 (hex) of the current `scim_…` token: rotation replaces it, so the old token stops at once. */
    tokenHash: p.string().length(64),
    groupRoleMappings: p.json<GroupRoleMapping[]>(),
    /** When the identity provider last called (written at most once a minute). */
    lastRequestAt: p.datetime().nullable(),
  },
  uniques: [{ name: 'directories_token_hash_unique', properties: ['tokenHash'] }],
  indexes: [{ properties: ['organization', 'createdAt', 'id'] }, { properties: ['application', 'createdAt', 'id'] }],
});
export type Directory = InferEntity<typeof DirectoryEntity>;

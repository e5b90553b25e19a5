import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';
import { UserEntity } from '../users/user.entity.ts';

/**
 * A second factor of a user: a TOTP authenticator or a set of backup codes. A TOTP factor exists unconfirmed from
 * enrollment until a first code proves the authenticator holds the seed; only confirmed factors count.
 */
export const MfaFactorEntity = defineEntity({
  name: 'MfaFactor',
  tableName: 'mfa_factors',
  extends: TenantRowEntity,
  properties: {
    user: () => p.manyToOne(UserEntity).mapToPk().deleteRule('cascade'),
    /** `totp` or `backup_code`. */
    kind: p.string().length(16),
    name: p.string().length(200),
    /** TOTP only: the seed sealed with the master key (context `totp:<id>`); never stored in clear. */
    secretSealed: p.text().nullable(),
    /** TOTP only: the last accepted time step. A code is accepted only for a later step (each step once). */
    lastUsedStep: p.integer().nullable(),
    confirmedAt: p.datetime().nullable(),
    lastUsedAt: p.datetime().nullable(),
  },
  uniques: [
    // One confirmed factor of each kind per user: one authenticator app, one live set of backup codes.
    { name: 'mfa_factors_one_confirmed_per_kind', properties: ['user', 'kind'], where: { confirmedAt: { $ne: null } } },
  ],
  indexes: [{ properties: ['user', 'createdAt'] }],
});
export type MfaFactor = InferEntity<typeof MfaFactorEntity>;

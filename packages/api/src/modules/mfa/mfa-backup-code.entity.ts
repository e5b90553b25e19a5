import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';
import { UserEntity } from '../users/user.entity.ts';
import { MfaFactorEntity } from './mfa-factor.entity.ts';

/** One backup code of a set: SHA-256 of its normalized form only; single use (`used_at`). */
export const MfaBackupCodeEntity = defineEntity({
  name: 'MfaBackupCode',
  tableName: 'mfa_backup_codes',
  extends: TenantRowEntity,
  properties: {
    user: () => p.manyToOne(UserEntity).mapToPk().deleteRule('cascade'),
    /** The set it belongs to: deleting the factor (a new set, or removal) voids every code of it. */
    factor: () => p.manyToOne(MfaFactorEntity).mapToPk().deleteRule('cascade'),
    codeHash: p.string().length(64),
    usedAt: p.datetime().nullable(),
  },
  uniques: [{ name: 'mfa_backup_codes_factor_code_unique', properties: ['factor', 'codeHash'] }],
  indexes: [{ properties: ['user'] }],
});
export type MfaBackupCode = InferEntity<typeof MfaBackupCodeEntity>;

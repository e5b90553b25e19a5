import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';
import { UserEntity } from './user.entity.ts';

/**
 * A way a user proves who they are, other than their email: today a passkey (WebAuthn credential); social and
 * enterprise links join as further kinds. `subject` is what the outside world names it by (for a passkey, its
 * credential id), unique per application and kind. Second factors that are not identities (TOTP, backup codes)
 * live in `mfa_factors`.
 */
export const IdentityEntity = defineEntity({
  name: 'Identity',
  tableName: 'identities',
  extends: TenantRowEntity,
  properties: {
    user: () => p.manyToOne(UserEntity).mapToPk().deleteRule('cascade'),
    /** `passkey`, or `saml` (an enterprise SSO link; subject `<connection id>:<NameID>`). */
    kind: p.string().length(16),
    /** Passkey: the credential id, base64url (up to 1023 bytes by WebAuthn). */
    subject: p.text(),
    name: p.string().length(200),
    /** Passkey: the COSE public key, base64url. Public by nature, so stored as is. */
    publicKey: p.text().nullable(),
    /** Passkey: the last signature counter seen (WebAuthn counters are unsigned 32-bit). */
    signCount: p.bigint('number').nullable(),
    /** Passkey: the user handle the authenticator stores and returns with a discoverable sign-in, base64url. */
    userHandle: p.string().length(128).nullable(),
    /** Passkey: how the browser may reach the authenticator (`internal`, `hybrid`, `usb`, …). */
    transports: p.json<string[]>().nullable(),
    /** Passkey: the authenticator model (all zeros when it does not say). */
    aaguid: p.string().length(36).nullable(),
    /** Passkey: may be synced to other devices (backup eligible), and is synced now (backed up). */
    backupEligible: p.boolean().nullable(),
    backedUp: p.boolean().nullable(),
    lastUsedAt: p.datetime().nullable(),
  },
  uniques: [{ name: 'identities_application_kind_subject_unique', properties: ['application', 'kind', 'subject'] }],
  indexes: [{ properties: ['user', 'kind', 'createdAt'] }],
});
export type Identity = InferEntity<typeof IdentityEntity>;

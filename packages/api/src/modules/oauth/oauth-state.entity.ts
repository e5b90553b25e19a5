import { defineEntity, p } from '@mikro-orm/core';
import { TenantRowEntity } from '../applications/tenant-row.entity.ts';
import { UserEntity } from '../users/user.entity.ts';

/**
 * A started authorization (RFC 9700): the `state` (SHA-256), the PKCE verifier and OIDC nonce (sealed), where the
 * browser goes back to, and what it is for (a sign-in, or linking to `user`). In the database so that any process can
 * finish it; consumed once by a conditional update; 10 minutes.
 */
export const OAuthStateEntity = defineEntity({
  name: 'OAuthState',
  tableName: 'oauth_states',
  extends: TenantRowEntity,
  properties: {
    provider: p.string().length(32),
    stateHash: p.string().length(64).unique(),
    /** `sign_in`, or `link` (then `user` is who links). */
    purpose: p.string().length(16),
    user: () => p.manyToOne(UserEntity).mapToPk().deleteRule('cascade').nullable(),
    /** `{verifier, nonce}` sealed: with a stolen code they would finish someone else's sign-in. */
    secretsSealed: p.text(),
    redirectUri: p.string().length(2048),
    /** Sign-in: the host named at the start (host access rules), carried to the session. */
    hostId: p.uuid().nullable(),
    expiresAt: p.datetime(),
    consumedAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['expiresAt'] }],
});

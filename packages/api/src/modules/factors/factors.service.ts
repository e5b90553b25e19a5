import { notFound } from '../../errors.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { factorsOfUser, removeFactorOfUser } from '../mfa/mfa.service.ts';
import { passkeysOfUser, removePasskeyOfUser } from '../passkeys/passkeys.service.ts';
import { revokeUserSessions } from '../sessions/sessions.service.ts';
import { sendSecurityNotice } from '../templates/templates.service.ts';
import { findUser } from '../users/users.service.ts';
import type { UserFactorRecord } from './factors.schema.ts';

/** Support view of a user's sign-in factors: passkeys and second factors, newest first, never their secrets. */
export async function listUserFactors(ctx: TenantContext, userId: string): Promise<UserFactorRecord[]> {
  const user = await findUser(ctx, userId);
  const passkeys = (await passkeysOfUser(ctx.em, user.id)).map(
    ({ id, name, created_at, last_used_at }): UserFactorRecord => ({ id, kind: 'passkey', name, created_at, last_used_at }),
  );
  const factors = await factorsOfUser(ctx.em, user.id);
  return [...passkeys, ...factors].sort((a, b) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id));
}

/**
 * Removes a passkey or second factor for a support case (a lost phone). Whoever holds a live session may be the
 * person who lost it, or who took it: every session of the user is revoked in the same transaction, and the user is
 * told by mail.
 */
export async function removeUserFactor(ctx: TenantContext, userId: string, factorId: string) {
  const user = await findUser(ctx, userId);
  const outcome = await ctx.em.transactional(async (em) => {
    const passkey = await removePasskeyOfUser(em, user.id, factorId);
    const removed = passkey ?? (await removeFactorOfUser(em, user.id, factorId));
    if (!removed) throw notFound('Factor');
    const revoked = await revokeUserSessions(em, user.application, user.id, 'factor_removed');
    return { name: removed.name, notice: passkey ? 'passkey_removed' : 'mfa_factor_removed', revoked } as const;
  });
  await sendSecurityNotice(ctx, user, outcome.notice, outcome.name);
  return { id: factorId, deleted: true as const, revoked_sessions: outcome.revoked };
}

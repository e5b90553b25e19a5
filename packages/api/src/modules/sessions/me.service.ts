import { recordEvent } from '../events/events.service.ts';
import { type User, UserEntity } from '../users/user.entity.ts';
import { toUserRecord } from '../users/users.service.ts';
import type { SignedInContext } from './contexts.ts';

/** The user as S21 shows them, with what the current session asks of them. */
const currentUser = (ctx: SignedInContext, user: User) => ({
  ...toUserRecord(user),
  mfa_enrollment_required: ctx.session.mfaEnrollmentRequired,
});

/** S21: the user of the verified session (read together with it: no further query). */
export async function getMe(ctx: SignedInContext) {
  return currentUser(ctx, ctx.user);
}

export async function updateMe(ctx: SignedInContext, input: { profile: Record<string, unknown> }) {
  const user = await ctx.em.findOneOrFail(UserEntity, { id: ctx.session.user });
  user.profile = input.profile;
  user.updatedAt = new Date();
  recordEvent(ctx.em, user.application, 'user.updated', toUserRecord(user));
  await ctx.em.flush();
  return currentUser(ctx, user);
}

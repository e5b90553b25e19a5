import type { Context } from '../../context.ts';
import { recordEvent } from '../events/events.service.ts';
import { UserEntity } from './user.entity.ts';
import { toUserRecord } from './users.service.ts';

/** S21: the user of the verified session (read together with it: no further query). */
export async function getMe(ctx: Context) {
  return toUserRecord(ctx.user!);
}

export async function updateMe(ctx: Context, input: { profile: Record<string, unknown> }) {
  const user = await ctx.em.findOneOrFail(UserEntity, { id: ctx.session!.user });
  user.profile = input.profile;
  user.updatedAt = new Date();
  const record = toUserRecord(user);
  recordEvent(ctx.em, user.application, 'user.updated', record);
  await ctx.em.flush();
  return record;
}

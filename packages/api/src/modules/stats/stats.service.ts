import { onlyRow } from '../../db/orm.ts';
import { ownApplication, settingsOf } from '../applications/applications.service.ts';
import type { TenantContext } from '../applications/contexts.ts';

/** S18, with the definitions of CONTRACT §5, counted by the database in one round trip. */
export async function applicationStats(ctx: TenantContext, id: string) {
  const application = ownApplication(ctx, id);
  const idle = settingsOf(application).session.idle_timeout_s;
  const row = onlyRow(
    await ctx.em.execute<Array<Record<string, string | number | boolean>>>(
      `select
       (select count(*) from sessions where application_id = ? and revoked_at is null and expires_at > now()
           and last_active_at > now() - make_interval(secs => ?)) as active_sessions,
       (select count(distinct user_id) from sessions where application_id = ?
           and (created_at > now() - interval '30 days' or last_active_at > now() - interval '30 days')) as active_users,
       (select count(*) from sessions where application_id = ? and created_at > now() - interval '24 hours') as sign_ins_24h,
       (select first_traffic_at is not null from applications where id = ?) as has_traffic`,
      [id, idle, id, id, id],
    ),
  );
  return {
    active_sessions: Number(row.active_sessions),
    active_users: Number(row.active_users),
    sign_ins_24h: Number(row.sign_ins_24h),
    has_traffic: row.has_traffic === true || row.has_traffic === 't',
  };
}

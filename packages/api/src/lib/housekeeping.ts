import type { EntityManager, Orm } from '../db/orm.ts';

/**
 * One-time secrets that expired a day ago can never be used again: keeping them only grows the tables that every
 * sign-in writes to (a passkey sign-in start needs no credential at all). The day of grace keeps recent ones for
 * investigating a support case.
 */
const EXPIRING_TABLES = ['webauthn_challenges', 'pending_tokens', 'magic_links'] as const;
const BATCH = 1000;

/** Deletes rows expired for more than a day, in batches (short locks); answers how many went. */
export async function purgeExpired(orm: Orm): Promise<number> {
  const em = orm.em.fork() as EntityManager;
  let purged = 0;
  for (const table of EXPIRING_TABLES) {
    for (;;) {
      const rows = await em.execute<Array<{ id: string }>>(
        `delete from ${table} where id in (
           select id from ${table} where expires_at < now() - interval '1 day' limit ${BATCH}
         ) returning id`,
      );
      purged += rows.length;
      if (rows.length < BATCH) break;
    }
  }
  return purged;
}

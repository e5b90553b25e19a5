import type { EntityManager, Orm } from '../db/orm.ts';
import { type Hooks, Registry } from './modules.ts';

/**
 * Housekeeping, run by every process on an interval (the kernel knows no table; modules declare their steps):
 * - retention: every module that keeps rows nobody needs after a while registers a purge step; concurrent runs on
 *   several processes are harmless: each delete takes its own batch;
 * - recurring tasks (re-checking pending custom domains, …): each claims its rows so that several processes never
 *   do the same work twice (`FOR UPDATE SKIP LOCKED` or a conditional update).
 */
export type PurgeStep = (em: EntityManager) => Promise<number>;

export const purgeSteps = new Registry<PurgeStep>('purge step');

const BATCH = 1000;

/**
 * Deletes the rows of `table` that `where` selects (it may use the alias `t`), in batches: each statement holds its
 * locks briefly, so sign-ins writing to the same table never wait long. Answers how many went.
 */
export async function deleteInBatches(em: EntityManager, table: string, where: string): Promise<number> {
  let deleted = 0;
  for (;;) {
    // By row address (ctid): every table qualifies, whatever its key.
    const rows = await em.execute<unknown[]>(
      `delete from ${table} where ctid = any(array(select t.ctid from ${table} t where ${where} limit ${BATCH})) returning 1`,
    );
    deleted += rows.length;
    if (rows.length < BATCH) return deleted;
  }
}

/**
 * One-time secrets (links, pending tokens, ceremonies) are kept a day after they expired or were used — enough to
 * investigate a support case — and can never be used again.
 */
export const SPENT_ONE_TIME_ROWS = `(t.expires_at < now() - interval '1 day' or t.consumed_at < now() - interval '1 day')`;

/**
 * How many days an application keeps a kind of row: its `settings.retention.<key>`, or the default for settings
 * stored before the key existed. For a statement over `table t` with an `application_id`.
 */
export const retentionDays = (key: string, fallback: number) =>
  `coalesce((select (a.settings->'retention'->>'${key}')::int from applications a where a.id = t.application_id), ${fallback})`;

/** Runs every declared purge step; answers how many rows went. */
export async function purgeExpired(orm: Orm, hooks: Hooks): Promise<number> {
  const em = orm.em.fork();
  let purged = 0;
  for (const step of hooks.get(purgeSteps)) purged += await step(em);
  return purged;
}

/** What housekeeping is given of the process's services (`Services` has it): the database, its configuration and the modules' steps. */
export interface HousekeepingServices {
  orm: Orm;
  dnsServers: readonly string[] | undefined;
  hooks: Hooks;
}

/** A recurring task: answers how many rows it handled. It must claim its rows itself (several processes run it). */
export type HousekeepingTask = (em: EntityManager, services: HousekeepingServices) => Promise<number>;

export const housekeepingTasks = new Registry<HousekeepingTask>('housekeeping task');

/** One housekeeping run: every purge step, then every recurring task. Answers how many rows each kind handled. */
export async function runHousekeeping(services: HousekeepingServices): Promise<{ purged: number; handled: number }> {
  const purged = await purgeExpired(services.orm, services.hooks);
  let handled = 0;
  for (const task of services.hooks.get(housekeepingTasks)) handled += await task(services.orm.em.fork(), services);
  return { purged, handled };
}

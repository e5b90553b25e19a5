import type { EntityManager } from '../../db/orm.ts';
import type { User } from './user.entity.ts';

/**
 * What a ban does beyond the user row, for the modules above users (sessions revoke every session). A step runs in
 * the ban's transaction, so a user is never banned-but-still-signed-in.
 */
export type BanStep = (em: EntityManager, user: User) => Promise<void>;

const banSteps = new Map<string, BanStep>();

export function registerBanStep(name: string, step: BanStep): void {
  if (banSteps.has(name)) throw new Error(`Ban step ${name} is registered twice`);
  banSteps.set(name, step);
}

export async function runBanSteps(em: EntityManager, user: User): Promise<void> {
  for (const step of banSteps.values()) await step(em, user);
}

/**
 * What a user's deletion removes beyond the rows that cascade with it (relationship tuples name users by id in text
 * columns, not by foreign key). A step runs in the deletion's transaction, after the user row is locked.
 */
export type DeleteStep = (em: EntityManager, user: User) => Promise<void>;

const deleteSteps = new Map<string, DeleteStep>();

export function registerDeleteStep(name: string, step: DeleteStep): void {
  if (deleteSteps.has(name)) throw new Error(`Delete step ${name} is registered twice`);
  deleteSteps.set(name, step);
}

export async function runDeleteSteps(em: EntityManager, user: User): Promise<void> {
  for (const step of deleteSteps.values()) await step(em, user);
}

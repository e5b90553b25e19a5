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

import type { EntityManager } from '../../db/orm.ts';
import { type Hooks, Registry } from '../../lib/modules.ts';
import type { User } from './user.entity.ts';

/**
 * What a ban does beyond the user row, for the modules above users (sessions revoke every session). A step runs in
 * the ban's transaction, so a user is never banned-but-still-signed-in.
 */
export type BanStep = (em: EntityManager, user: User) => Promise<void>;

export const banSteps = new Registry<BanStep>('ban step');

export async function runBanSteps(hooks: Hooks, em: EntityManager, user: User): Promise<void> {
  for (const step of hooks.get(banSteps)) await step(em, user);
}

/**
 * What a user's deletion removes beyond the rows that cascade with it (relationship tuples name users by id in text
 * columns, not by foreign key). A step runs in the deletion's transaction, after the user row is locked.
 */
export type DeleteStep = (em: EntityManager, user: User) => Promise<void>;

export const deleteSteps = new Registry<DeleteStep>('delete step');

export async function runDeleteSteps(hooks: Hooks, em: EntityManager, user: User): Promise<void> {
  for (const step of hooks.get(deleteSteps)) await step(em, user);
}

/**
 * Who may sign up while the application's `settings.sign_up` is `closed` (invitations: an address with a pending
 * invitation). An allowance answers for one normalized address; any allowance that says yes lets it sign up by a
 * first factor that proves that address (a magic link).
 */
export type SignUpAllowance = (em: EntityManager, applicationId: string, emailNormalized: string) => Promise<boolean>;

export const signUpAllowances = new Registry<SignUpAllowance>('sign-up allowance');

export async function signUpAllowed(hooks: Hooks, em: EntityManager, applicationId: string, emailNormalized: string) {
  for (const allowance of hooks.get(signUpAllowances)) if (await allowance(em, applicationId, emailNormalized)) return true;
  return false;
}

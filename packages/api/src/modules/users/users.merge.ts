import type { EntityManager } from '../../db/orm.ts';
import { type Hooks, Registry } from '../../lib/modules.ts';

export interface MergeInput {
  applicationId: string;
  sourceUserId: string;
  targetUserId: string;
}

/**
 * One step of a user merge: moves what one capability owns from the source user to the target. It runs inside the
 * merge transaction, after both users are locked; use set-based native statements on `em`.
 */
export type MergeStep = (em: EntityManager, input: MergeInput) => Promise<void>;

/** Each capability declares its own step (in its module declaration), so merge never needs editing. */
export const mergeSteps = new Registry<MergeStep>('merge step');

export async function runMergeSteps(hooks: Hooks, em: EntityManager, input: MergeInput): Promise<void> {
  for (const step of hooks.get(mergeSteps)) await step(em, input);
}

/**
 * Identities (passkeys; later social and enterprise links) move as they are: their subjects are unique per
 * application, so nothing can collide. A passkey keeps its user handle, which is how it still finds its user.
 */
export const mergeIdentities: MergeStep = async (em, { sourceUserId, targetUserId }) => {
  await em.execute('update identities set user_id = ? where user_id = ?', [targetUserId, sourceUserId]);
};

import type { EntityManager } from '../../db/orm.ts';

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

const steps = new Map<string, MergeStep>();

/** Each capability registers its own step (from its service module), so merge never needs editing. */
export function registerMergeStep(name: string, step: MergeStep): void {
  if (steps.has(name)) throw new Error(`Merge step ${name} is registered twice`);
  steps.set(name, step);
}

export async function runMergeSteps(em: EntityManager, input: MergeInput): Promise<void> {
  for (const step of steps.values()) await step(em, input);
}

/**
 * Identities (passkeys; later social and enterprise links) move as they are: their subjects are unique per
 * application, so nothing can collide. A passkey keeps its user handle, which is how it still finds its user.
 */
registerMergeStep('identities', async (em, { sourceUserId, targetUserId }) => {
  await em.execute('update identities set user_id = ? where user_id = ?', [targetUserId, sourceUserId]);
});

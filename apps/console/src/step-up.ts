import { useSyncExternalStore } from 'react';

/**
 * A write answered 403 `step_up_required` (the session has not proved a second factor): the shell shows one dialog
 * that sends the operator to the sign-in's step-up, whichever page made the call.
 */
let wanted = false;
const listeners = new Set<() => void>();
const notify = () => {
  for (const listener of listeners) listener();
};

export const stepUp = {
  require(): void {
    wanted = true;
    notify();
  },
  dismiss(): void {
    wanted = false;
    notify();
  },
};

export function useStepUpWanted(): boolean {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => wanted,
  );
}

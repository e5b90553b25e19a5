/** Time limits of the tests, for a busy two-core machine (see vitest.config.ts). */

/**
 * How long a test waits for something that should happen (a mail, a delivery, a settled state) before it fails naming
 * it: what takes milliseconds on an idle machine can take many seconds on a busy two-core one, and waiting longer costs
 * nothing when it happens. Below vitest's testTimeout (120 s), so the failure says what did not happen.
 */
export const WAIT_MS = 60_000;

/** How long a test waits for a server process it spawned to answer: a fresh embedded database is seconds of CPU. */
export const BOOT_MS = 240_000;

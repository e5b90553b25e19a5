/** A problem that stops the process before it serves: reported as its message alone (no stack), exit code 1. */
export class StartupError extends Error {}

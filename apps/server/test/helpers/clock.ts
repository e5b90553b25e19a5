/** One TOTP time step (RFC 6238's default, as the service uses). */
export const TOTP_STEP_MS = 30_000;

let shift = 0;

/**
 * The clock the test servers judge TOTP codes by (`totpClock`), and test authenticators generate them by: real time,
 * shifted forward when a test asks to start at the beginning of a step. Only forward, so a step a factor has spent
 * stays in the past.
 */
export const totpNow = (): number => Date.now() + shift;

/**
 * Moves the TOTP clock to just past the start of the next step, at once: a test that compares steps then has a whole
 * step (30 s) before a boundary, instead of waiting up to 10 s of real time for one.
 */
export function startOfTotpStep(): void {
  shift += TOTP_STEP_MS - (totpNow() % TOTP_STEP_MS) + 100;
}

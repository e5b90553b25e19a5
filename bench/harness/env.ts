/**
 * The knobs (BENCH_* environment variables), the log, and the undo steps every suite registers (servers, scratch
 * databases, temporary directories), run newest first on success, failure and Ctrl-C alike.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Read through a name, not `process.env.X`: these knobs belong to this script, not to any turbo task. */
const textEnv = (name: string): string | undefined => process.env[name] || undefined;

function intEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = textEnv(name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name} must be an integer in ${min}..${max}`);
  return value;
}

export const config = {
  adminUrl: textEnv('BENCH_DATABASE_URL') ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  connections: intEnv('BENCH_CONNECTIONS', 64, 1, 1024),
  durationSeconds: intEnv('BENCH_DURATION', 20, 1, 120),
  warmupSeconds: intEnv('BENCH_WARMUP', 3, 0, 60),
  maxWarmupSeconds: intEnv('BENCH_MAX_WARMUP', 60, 1, 120),
  timeoutSeconds: intEnv('BENCH_TIMEOUT', 120, 1, 300),
  organizations: intEnv('BENCH_ORGANIZATIONS', 100_000, 100, 1_000_000),
  /** organizations: `postgres` or `pglite` only. */
  only: textEnv('BENCH_ONLY'),
  /** Start every server with `--cpu-prof` and keep the profiles there (open them in Chrome DevTools). */
  profileDir: textEnv('BENCH_PROFILE_DIR'),
  mfaMaxRate: intEnv('BENCH_MFA_MAX_RATE', 600, 10, 20_000),
  samlMaxRate: intEnv('BENCH_SAML_MAX_RATE', 300, 10, 20_000),
  /** authz: relationship tuples seeded (the graph scales with it). */
  authzTuples: intEnv('BENCH_AUTHZ_TUPLES', 1_000_000, 10_000, 10_000_000),
  oauthMaxRate: intEnv('BENCH_OAUTH_MAX_RATE', 3000, 10, 20_000),
  webhookEvents: intEnv('BENCH_WEBHOOK_EVENTS', 6000, 100, 1_000_000),
  /** better-auth: alternated rounds of the session-read and refresh comparisons (the median of each is reported). */
  rounds: intEnv('BENCH_ROUNDS', 3, 1, 9),
  /** boot: starts per case (the median is reported). */
  bootRuns: intEnv('BENCH_BOOT_RUNS', 3, 1, 20),
  /** scim: directory users seeded for the filter, users provisioned through the API, the filter's steady rate. */
  scimUsers: intEnv('BENCH_SCIM_USERS', 100_000, 1000, 10_000_000),
  scimProvision: intEnv('BENCH_SCIM_PROVISION', 10_000, 100, 1_000_000),
  /** 0: half the closed-loop throughput of the same filter (the authz suite's "half load"). */
  scimFilterRate: intEnv('BENCH_SCIM_FILTER_RATE', 0, 0, 20_000),
  /** dashboard: events seeded (users, sessions and deliveries in proportion), the steady rate of the daily statistics. */
  dashboardEvents: intEnv('BENCH_DASHBOARD_EVENTS', 1_000_000, 10_000, 10_000_000),
  dashboardRate: intEnv('BENCH_DASHBOARD_RATE', 20, 1, 1000),
  /** console: users seeded for the users page, and the fresh loads of it measured. */
  consoleUsers: intEnv('BENCH_CONSOLE_USERS', 100_000, 100, 10_000_000),
  consoleRuns: intEnv('BENCH_CONSOLE_RUNS', 20, 1, 200),
};
if (config.only && config.only !== 'postgres' && config.only !== 'pglite') throw new Error('BENCH_ONLY is postgres or pglite');

/** The exact command: `npm run bench` with the suites named and the BENCH_* knobs set (passwords masked). */
export function commandLine(suites: string[]): string {
  const knobs = Object.keys(process.env)
    .filter((key) => key.startsWith('BENCH_'))
    .sort()
    .map((key) => `${key}=${(textEnv(key) ?? '').replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@')}`);
  return [...knobs, 'npm run bench', ...(suites.length ? ['--', ...suites] : [])].join(' ');
}

export const log = (message: string) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const cleanups: Array<{ what: string; run: () => Promise<unknown> }> = [];

export const onCleanup = (what: string, run: () => Promise<unknown>) => void cleanups.push({ what, run });

export async function cleanUp(): Promise<void> {
  while (cleanups.length) {
    const step = cleanups.pop()!;
    try {
      await step.run();
    } catch (error) {
      console.error(`cleanup (${step.what}) failed: ${(error as Error).message}`);
    }
  }
}

export async function tempDir(kind: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `gatehouse-bench-${kind}-`));
  onCleanup(`remove ${dir}`, () => rm(dir, { recursive: true, force: true }));
  return dir;
}

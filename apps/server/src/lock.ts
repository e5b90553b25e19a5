/**
 * The embedded database's lock: light on purpose (no import of the API), so that a process can take it before it
 * loads anything else, and tests can race many processes for it.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { DatabaseConfig } from '@gatehouse/api';
import { StartupError } from './startup-error.ts';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * The embedded database belongs to one process: two servers (or a server and `migrate`) on one PGlite directory
 * would each keep their own copy in memory and silently diverge. A lock file next to it holds the owner's pid; a
 * second process refuses to start before it touches the database, and a lock left by a process that died (kill -9)
 * is taken over. Answers the release (also run at exit). PostgreSQL needs no lock.
 *
 * Processes that start at the same instant must not both win, so nothing is decided on a file another process could
 * be writing or replacing:
 * - a lock file appears complete or not at all: the pid is written to a private file that is then `link`ed into
 *   place (which fails if the name exists);
 * - a stale lock is never deleted to be replaced: its taker creates the next generation (`db.lock`, `db.lock.1`,
 *   `db.lock.2`, …) with the same exclusive `link`, so of the processes that read the same dead pid exactly one
 *   takes over. The highest generation is the lock; a process that finds a higher one beside its own (it read an
 *   older state) gives its own back. The holder clears the older generations, which only dead holders left.
 */
export function lockEmbeddedDatabase(database: DatabaseConfig): () => void {
  if (database.kind !== 'pglite' || !('dataDir' in database)) return () => undefined;
  const dir = dirname(database.dataDir);
  const name = `${basename(database.dataDir)}.lock`;
  const fileOf = (generation: number) => join(dir, generation ? `${name}.${generation}` : name);
  const generations = () =>
    readdirSync(dir)
      .map((file) => (file === name ? 0 : file.startsWith(`${name}.`) ? Number(file.slice(name.length + 1)) : Number.NaN))
      .filter((generation) => Number.isSafeInteger(generation) && generation >= 0)
      .sort((a, b) => b - a);
  const mine = join(dir, `${name}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
  writeFileSync(mine, `${process.pid}\n`, { mode: 0o600 });
  try {
    // Each pass either decides or saw another process change the files; a handful is plenty.
    for (let pass = 0; pass < 20; pass++) {
      const [top] = generations();
      if (top !== undefined) {
        const holder = pidIn(fileOf(top));
        if (holder === undefined) continue; // Released or given back since the listing: look again.
        if (holder > 0 && holder !== process.pid && alive(holder)) {
          throw new StartupError(
            `The embedded database ${database.dataDir} is in use by process ${holder} (another Gatehouse server or migrate). ` +
              'Stop it first; to run several processes, use PostgreSQL (DATABASE_URL).',
          );
        }
      }
      const generation = top === undefined ? 0 : top + 1;
      const file = fileOf(generation);
      try {
        linkSync(mine, file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
        throw error;
      }
      const [highest, ...older] = generations();
      if (highest !== generation) {
        removeIfPresent(file);
        continue;
      }
      for (const stale of older) removeIfPresent(fileOf(stale));
      let held = true;
      // Once only: after a release the same name can be another process's lock.
      const release = () => {
        if (held) removeIfPresent(file);
        held = false;
      };
      process.once('exit', release);
      return release;
    }
  } finally {
    removeIfPresent(mine);
  }
  throw new StartupError(`Could not lock the embedded database ${database.dataDir}: other processes kept changing its lock`);
}

/** The pid a lock file holds (0 for an unreadable one: no process has it), or undefined when the file is gone. */
function pidIn(file: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : 0;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function removeIfPresent(file: string) {
  try {
    unlinkSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

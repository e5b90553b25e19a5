import { type ChildProcess, fork, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The embedded database's lock taken by processes that start at the same instant (lifecycle.test.ts starts real
 * servers one after another): exactly one holds it, whether there was no lock, a lock left by a dead process, or an
 * older generation of one. The function itself, in child processes kept across rounds: cheap enough for many rounds.
 */
const CHILDREN = 4;
const ROUNDS = 24;

type Answer = { held: true } | { held: false; message: string };
let children: ChildProcess[] = [];
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-lock-'));
const dataDir = join(dir, 'db');

/** The next message of a child. */
const next = <T>(child: ChildProcess) => new Promise<T>((resolve) => child.once('message', (m) => resolve(m as T)));

beforeAll(async () => {
  children = Array.from({ length: CHILDREN }, () =>
    fork(join(import.meta.dirname, 'helpers/lock-child.ts'), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  await Promise.all(children.map((child) => next(child)));
});

afterAll(() => {
  for (const child of children) if (child.connected) child.send('exit');
  rmSync(dir, { recursive: true, force: true });
});

/** A pid no process has any more. */
const deadPid = () => spawnSync(process.execPath, ['-e', '']).pid;
const lockFiles = () => readdirSync(dir).filter((file) => file.startsWith('db.lock'));

describe('the embedded database lock under simultaneous starts', () => {
  it('has exactly one holder each round: no lock, a dead holder’s lock, an older generation of one', async () => {
    const setups = [
      () => undefined,
      () => writeFileSync(join(dir, 'db.lock'), `${deadPid()}\n`),
      () => writeFileSync(join(dir, 'db.lock.3'), `${deadPid()}\n`),
    ];
    for (let round = 0; round < ROUNDS; round++) {
      setups[round % setups.length]!();
      const at = Date.now() + 150;
      const answers = await Promise.all(
        children.map((child) => {
          const answer = next<Answer>(child);
          child.send({ at, dataDir });
          return answer;
        }),
      );
      const holders = children.filter((_, i) => answers[i]!.held);
      expect(holders.length, `round ${round}: ${JSON.stringify(answers)}`).toBe(1);
      const [holder] = holders;
      for (const answer of answers) {
        if (!answer.held) expect(answer.message, `round ${round}`).toContain(`is in use by process ${holder!.pid} `);
      }
      // The holder's lock is the only one left; released, nothing is.
      expect(lockFiles(), `round ${round}`).toHaveLength(1);
      holder!.send('release');
      await next(holder!);
      expect(lockFiles(), `round ${round}`).toEqual([]);
    }
  });
});

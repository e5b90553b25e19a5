/**
 * A process that takes the embedded database's lock when told (embedded-lock.test.ts): `{ at, dataDir }` makes it
 * wait until the instant `at` (ms since the epoch, spinning so that every child tries at once) and try; it answers
 * `{ held: true }` or `{ held: false, message }`. `release` drops a lock it holds and answers `released`.
 */
import { lockEmbeddedDatabase } from '../../src/lock.ts';

let release: (() => void) | undefined;
process.on('message', (message: { at: number; dataDir: string } | 'release' | 'exit') => {
  if (message === 'exit') process.exit(0);
  if (message === 'release') {
    release?.();
    release = undefined;
    process.send!('released');
    return;
  }
  while (Date.now() < message.at) {
    // Spin: a timer would wake each child at a slightly different moment.
  }
  try {
    release = lockEmbeddedDatabase({ kind: 'pglite', dataDir: message.dataDir });
    process.send!({ held: true });
  } catch (error) {
    process.send!({ held: false, message: (error as Error).message });
  }
});
process.send!('ready');

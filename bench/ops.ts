/**
 * Operations per second of one small piece of work, in this process (the micro-benchmarks bench/verify.ts and
 * bench/mfa-crypto.ts): a warm-up, then three rounds of about `ms` milliseconds each; the best round counts (the
 * others were slowed by something else: a GC, another process).
 */

/** For work that returns a promise: each call is awaited, in batches of `batch` calls between clock readings. */
export async function measure(run: () => unknown, ms = 700, batch = 1_000): Promise<number> {
  for (let i = 0; i < batch; i++) await run();
  let best = 0;
  for (let round = 0; round < 3; round++) {
    let count = 0;
    const start = performance.now();
    let elapsed = 0;
    while (elapsed < ms) {
      for (let i = 0; i < batch; i++) await run();
      count += batch;
      elapsed = performance.now() - start;
    }
    best = Math.max(best, (count / elapsed) * 1000);
  }
  return best;
}

/** The same, synchronously: no promise per call, so a raw baseline is not slowed by the harness. */
export function measureSync(run: () => unknown, ms = 700): number {
  for (let i = 0; i < 200; i++) run();
  let best = 0;
  for (let round = 0; round < 3; round++) {
    let count = 0;
    const start = performance.now();
    let elapsed = 0;
    while (elapsed < ms) {
      for (let i = 0; i < 100; i++) run();
      count += 100;
      elapsed = performance.now() - start;
    }
    best = Math.max(best, (count / elapsed) * 1000);
  }
  return best;
}

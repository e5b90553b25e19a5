import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.{ts,tsx}'],
    // Builds dist/gatehouse.js once, so the tests drive the bundle that bin/gatehouse.js ships.
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    // Limits that hold on a busy two-core laptop: they only bound a hang, a passing test takes a fraction of them.
    testTimeout: 120_000,
    hookTimeout: 300_000,
  },
});

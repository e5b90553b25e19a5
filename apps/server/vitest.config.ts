import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    // Each file boots its own server and (on PGlite) its own embedded database. Three at a time on two cores: many files
    // spend part of their time waiting on child processes, Chromium, npm or the network, and a third worker fills that
    // (measured on a quiet two-core machine: the PGlite suite in 200 s with three, against about 300 s with two).
    pool: 'forks',
    maxWorkers: 3,
    // A worker runs file after file in one process instead of a fresh process per file: the server's module graph
    // (fastify, MikroORM, zod, PGlite, …) is loaded and compiled once per worker, not once per file — that was about
    // 3 s of CPU per file, over half the suite's CPU. Safe because each file still gets servers and databases of its
    // own, closes them in afterAll, and the server keeps no state in modules (its caches hang off the server).
    isolate: false,
    // The server processes some files start (`node src/main.ts`) keep Node's compiled code, types stripped, between
    // starts, as the CLI does for itself (bin/gatehouse.js).
    env: { NODE_COMPILE_CACHE: join(tmpdir(), 'node-compile-cache') },
    // Limits that hold on a busy two-core laptop (a newcomer's, also running the service): they only bound a hang, a
    // passing test takes a fraction of them. A wait inside a test gives up sooner (helpers/limits.ts), so that
    // its failure names what it waited for.
    testTimeout: 120_000,
    hookTimeout: 300_000,
  },
});

/**
 * Start and memory: how long from spawning the server as `npm start` runs it to `/readyz` 200, and how much memory it
 * holds — on PostgreSQL, on a fresh embedded (PGlite) data directory (a newcomer's first start) and on a restart of
 * that directory. Each case runs several times; the table gives the median.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { config, log, ROOT, sleep, tempDir } from '../harness/env.ts';
import { scratchDatabase } from '../harness/postgres.ts';
import { freePort, processCpuSeconds, secrets, startArguments } from '../harness/processes.ts';
import { limitTarget, num, ratioTarget, type SuiteResult } from '../harness/report.ts';

const RUNS = config.bootRuns;
const IDLE_MS = 10_000;

interface Boot {
  readyMs: number;
  cpuS: number;
  /** The highest resident memory up to ready (the kernel's high-water mark), MB. */
  peakMb: number;
  /** Resident memory 10 s after ready, MB. */
  idleMb: number;
}

const statusMb = (pid: number, field: 'VmRSS' | 'VmHWM') => {
  const match = readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${field}:\\s+(\\d+) kB`));
  return match ? Number(match[1]) / 1024 : Number.NaN;
};

async function boot(label: string, env: Record<string, string>, args = startArguments()): Promise<Boot> {
  const port = await freePort();
  const inherited = Object.entries(process.env).filter(([k]) => k !== 'DATABASE_URL' && !k.startsWith('GATEHOUSE_'));
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...Object.fromEntries(inherited), ...env, PORT: String(port), HOST: '127.0.0.1', GATEHOUSE_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4000);
  });
  const exited = once(child, 'exit');
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${label}: no process`);
  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${label} exited:\n${stderr}`);
      const status = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) break;
      if (performance.now() - started > 180_000) throw new Error(`${label} not ready within 180 s:\n${stderr}`);
      await sleep(25);
    }
    const readyMs = performance.now() - started;
    const cpuS = processCpuSeconds(pid);
    const peakMb = statusMb(pid, 'VmHWM');
    await sleep(IDLE_MS);
    const idleMb = statusMb(pid, 'VmRSS');
    log(`  ${label}: ready ${num(readyMs)} ms (CPU ${cpuS.toFixed(2)} s), peak ${num(peakMb)} MB, idle ${num(idleMb)} MB`);
    return { readyMs, cpuS, peakMb, idleMb };
  } finally {
    child.kill('SIGINT');
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
};

interface Case {
  name: string;
  runs: Boot[];
}

const row = (c: Case) => {
  const m = (f: (b: Boot) => number) => median(c.runs.map(f));
  const spread = `${num(Math.min(...c.runs.map((b) => b.readyMs)))}–${num(Math.max(...c.runs.map((b) => b.readyMs)))}`;
  return `| ${c.name} | ${num(m((b) => b.readyMs))} (${spread}) | ${m((b) => b.cpuS).toFixed(2)} | ${num(m((b) => b.peakMb))} | ${num(m((b) => b.idleMb))} |`;
};

export async function bootSuite(): Promise<SuiteResult> {
  const cases: Case[] = [];
  const software: string[] = [];
  if (config.only !== 'pglite') {
    const db = await scratchDatabase();
    software.push(db.version);
    const dataDir = await tempDir('boot-pg');
    const env = { DATABASE_URL: db.url, GATEHOUSE_DATA_DIR: dataDir, ...secrets() };
    log('boot: PostgreSQL (a first start applies the migrations, not timed)');
    await boot('PostgreSQL, migrating', env);
    // The peer, started the same way on a database of its own: node on its entry file, migrated by a first start.
    const peerDb = await scratchDatabase();
    const peerEnv = { DATABASE_URL: peerDb.url, BETTER_AUTH_SECRET: randomBytes(32).toString('hex') };
    const peerArgs = ['bench/peers/better-auth.ts'];
    await boot('Better Auth peer, migrating', peerEnv, peerArgs);
    // Alternated, one start of each at a time: a machine whose speed drifts (a shared one) slows both alike.
    const runs: Boot[] = [];
    const peerRuns: Boot[] = [];
    for (let i = 0; i < RUNS; i++) {
      runs.push(await boot(`PostgreSQL #${i + 1}`, env));
      peerRuns.push(await boot(`Better Auth peer #${i + 1}`, peerEnv, peerArgs));
    }
    cases.push({ name: 'PostgreSQL', runs });
    cases.push({ name: 'Better Auth peer, PostgreSQL', runs: peerRuns });
  }
  if (config.only !== 'postgres') {
    const fresh: Boot[] = [];
    const restart: Boot[] = [];
    for (let i = 0; i < RUNS; i++) {
      const dataDir = await tempDir('boot-pglite');
      fresh.push(await boot(`PGlite, fresh data directory #${i + 1}`, { GATEHOUSE_DATA_DIR: dataDir }));
      restart.push(await boot(`PGlite, restart #${i + 1}`, { GATEHOUSE_DATA_DIR: dataDir }));
    }
    cases.push({ name: 'PGlite, fresh data directory (first `npm start`)', runs: fresh });
    cases.push({ name: 'PGlite, restart', runs: restart });
  }
  const find = (name: string) => cases.find((c) => c.name.startsWith(name));
  const pg = find('PostgreSQL');
  const peer = find('Better Auth peer');
  const fresh = find('PGlite, fresh');
  const restart = find('PGlite, restart');
  const m = (c: Case, f: (b: Boot) => number) => median(c.runs.map(f));
  return {
    title: 'Boot: time from spawn to ready, and memory',
    software,
    targets: [
      ...(pg
        ? [
            limitTarget(
              'start to `/readyz` 200, PostgreSQL',
              m(pg, (b) => b.readyMs),
              'ms',
              2_000,
            ),
            limitTarget(
              'idle memory (RSS 10 s after ready), PostgreSQL',
              m(pg, (b) => b.idleMb),
              'MB',
              150,
            ),
          ]
        : []),
      ...(pg && peer
        ? [
            ratioTarget(
              'start to `/readyz` 200 on PostgreSQL against the Better Auth peer',
              m(pg, (b) => b.readyMs),
              m(peer, (b) => b.readyMs),
              'ms',
              '≤',
              1,
            ),
          ]
        : []),
      ...(fresh
        ? [
            limitTarget(
              'first `npm start`, fresh PGlite data directory',
              m(fresh, (b) => b.readyMs),
              'ms',
              10_000,
            ),
            limitTarget(
              'peak memory of the first PGlite start',
              m(fresh, (b) => b.peakMb),
              'MB',
              600,
            ),
          ]
        : []),
      ...(restart
        ? [
            limitTarget(
              'restart on PGlite',
              m(restart, (b) => b.readyMs),
              'ms',
              3_000,
            ),
            limitTarget(
              'idle memory (RSS 10 s after ready), PGlite',
              m(restart, (b) => b.idleMb),
              'MB',
              350,
            ),
          ]
        : []),
    ],
    method: [
      `The server is spawned with the arguments of \`npm start\` (\`node ${startArguments().join(' ')}\`, without npm ` +
        `itself) and \`/readyz\` polled every 25 ms; ${RUNS} runs per case, the median (the range of the start times in ` +
        "brackets). CPU: the process's user + system time at ready. Peak: the kernel's high-water mark of resident " +
        `memory (VmHWM) at ready. Idle: resident memory (VmRSS) ${IDLE_MS / 1000} s after ready.`,
      'PostgreSQL: a scratch database, migrated by a first start that is not timed. PGlite: a new data directory per ' +
        'run (the first start creates the database and the secrets), then a restart of it.',
      'The Better Auth peer (`bench/peers/better-auth.ts`, as the better-auth suite runs it: `node` on its entry file) ' +
        'is started the same way on a scratch database of its own, its tables made by a first start that is not timed ' +
        '(each start runs its `getMigrations(…).runMigrations()`, as it always does). Its starts alternate with ' +
        "Gatehouse's on PostgreSQL (Gatehouse #1, the peer #1, Gatehouse #2, …), so a drift of the machine's speed " +
        'weighs on both alike.',
    ],
    measurements: [],
    details: ['| case | ready, ms | CPU at ready, s | peak RSS, MB | idle RSS, MB |', '|---|---|---|---|---|', ...cases.map(row)],
    notes: ['Wall-clock start times on a shared machine follow its load; the CPU column is the steadier figure.'],
  };
}

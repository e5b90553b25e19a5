/**
 * A server as a child process on a free loopback port: the real server (`node apps/server/src/main.ts`) or the
 * benchmark's own minimal server (`bench/minimal-server.ts`).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Client } from 'pg';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** The last lines the server printed (stdout and stderr). */
  output: () => string;
  /** Log lines at warn or above seen so far (GATEHOUSE_LOG_LEVEL=warn prints nothing else but the banner). */
  warnings: () => number;
  /** CPU seconds (user + system) the server process has used so far; NaN where /proc is not there. */
  cpuSeconds: () => number;
  /** SIGTERM (graceful: in-flight requests finish, the database closes), SIGKILL after `graceMs`. */
  stop: (graceMs?: number) => Promise<void>;
}

let clockTicks: number | undefined;

/** utime + stime of a process, from /proc/<pid>/stat (Linux), in seconds. */
export function processCpuSeconds(pid: number | undefined): number {
  try {
    clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at field 3; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clockTicks;
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds all cores of the machine have spent busy (not idle, not waiting for I/O), from /proc/stat. */
export function machineCpuSeconds(): number {
  try {
    clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    const [, ...ticks] = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/);
    const values = ticks.map(Number);
    const total = values.slice(0, 8).reduce((a, b) => a + b, 0); // user nice system idle iowait irq softirq steal
    return (total - (values[3] ?? 0) - (values[4] ?? 0)) / clockTicks;
  } catch {
    return Number.NaN;
  }
}

export async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const address = probe.address();
  probe.close();
  await once(probe, 'close');
  if (!address || typeof address !== 'object') throw new Error('no port');
  return address.port;
}

/** Our environment without anything that would point the server elsewhere (a DATABASE_URL in the shell, say). */
function baseEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([key]) => key !== 'DATABASE_URL' && key !== 'PORT' && !key.startsWith('GATEHOUSE_')),
  );
}

export interface StartOptions {
  /** The script to run, relative to the repository root; it must answer `GET /readyz` with 200 once it serves. */
  script?: string;
  /** Node options before the script (e.g. `--cpu-prof`). */
  nodeArgs?: string[];
  readyTimeoutMs?: number;
}

export async function startServer(
  label: string,
  env: Record<string, string>,
  { script = 'apps/server/src/main.ts', nodeArgs = [], readyTimeoutMs = 120_000 }: StartOptions = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // process.execPath is the project's Node 24: `npm run bench` puts node_modules/.bin first on PATH.
  const child = spawn(process.execPath, [...nodeArgs, script], {
    cwd: ROOT,
    env: { ...baseEnv(), ...env, PORT: String(port), HOST: '127.0.0.1', GATEHOUSE_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let warnings = 0;
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line.trim()) continue;
      lines.push(line);
      if (lines.length > 200) lines.shift();
      // pino levels: 40 warn, 50 error, 60 fatal.
      if (/"level":\s*(4|5|6)0\b/.test(line)) {
        warnings++;
        if (warnings <= 5) console.error(`  [${label} server] ${line.slice(0, 400)}`);
      }
    }
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = once(child, 'exit');
  exited.catch(() => {}); // a spawn error surfaces through exitCode and the readiness loop

  const output = () => lines.join('\n');
  const stop = async (graceMs = 20_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };

  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the ${label} server exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${output()}`);
    }
    try {
      const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) });
      if (response.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop(2_000);
      throw new Error(`the ${label} server was not ready within ${readyTimeoutMs / 1000} s:\n${output()}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { url, child, output, warnings: () => warnings, cpuSeconds: () => processCpuSeconds(child.pid), stop };
}

/**
 * CPU time of the PostgreSQL backends of `client`'s database (read from /proc: the server must be on this machine).
 * `refresh` (async) learns which backends there are; `seconds` (sync, so it can be read when a window opens and
 * closes) sums the CPU time of those it knows, so call `refresh` after the pool has opened its connections (the
 * warm-up does) and keep calling it. Background processes shared by all databases (WAL writer, checkpointer) are
 * not counted.
 */
export function databaseCpu(client: Client) {
  let pids: number[] = [];
  return {
    refresh: async () => {
      const { rows } = await client.query<{ pid: number }>(
        'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
      );
      pids = rows.map((r) => r.pid);
    },
    seconds: () => {
      const values = pids.map((pid) => processCpuSeconds(pid)).filter((v) => !Number.isNaN(v));
      return values.length ? values.reduce((a, b) => a + b, 0) : Number.NaN;
    },
  };
}

/** Statements of the current database other than this connection's own that are running now. */
export async function activeStatements(client: Client): Promise<number> {
  const { rows } = await client.query<{ n: string }>(
    'select count(*) as n from pg_stat_activity ' +
      "where datname = current_database() and backend_type = 'client backend' and state <> 'idle' and pid <> pg_backend_pid()",
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Waits until the requests autocannon abandoned when it stopped have been served: the server process's CPU is idle
 * (with PGlite the database works inside it) and, on PostgreSQL, no statement of the scratch database is running.
 * Stopping the server earlier would measure its shutdown, and the next scenario would start behind a queue.
 */
export async function drain(server: ServerProcess, statements?: () => Promise<number>, maxSeconds = 90): Promise<void> {
  const deadline = Date.now() + maxSeconds * 1000;
  let quiet = 0;
  while (quiet < 2 && Date.now() < deadline) {
    const before = server.cpuSeconds();
    await new Promise((r) => setTimeout(r, 500));
    const busy = (server.cpuSeconds() - before) / 0.5;
    const active = statements ? await statements() : 0;
    quiet = busy < 0.05 && active === 0 ? quiet + 1 : 0;
  }
}

export interface BenchApplication {
  id: string;
  secretKey: string;
}

/**
 * Creates the application the benchmark works in, through the operator API (as an operator would); `settings` as in
 * `POST /v1/applications` (each top-level key named replaces the default); `fields`, other top-level fields of the
 * body (e.g. `allowed_origins`).
 */
export async function createApplication(
  url: string,
  operatorToken: string,
  settings?: Record<string, unknown>,
  fields?: Record<string, unknown>,
): Promise<BenchApplication> {
  const response = await fetch(`${url}/v1/applications`, {
    method: 'POST',
    headers: { authorization: `Bearer ${operatorToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Benchmark', ...fields, ...(settings ? { settings } : {}) }),
  });
  const body = (await response.json()) as { data?: { application: { id: string }; secret_key: { secret: string } } };
  if (response.status !== 201 || !body.data) {
    throw new Error(`POST /v1/applications answered ${response.status}: ${JSON.stringify(body)}`);
  }
  return { id: body.data.application.id, secretKey: body.data.secret_key.secret };
}

export interface ScratchDatabase {
  /** The administration connection (to `adminUrl`); closed by the undo step registered. */
  admin: Client;
  name: string;
  /** `adminUrl` with the scratch database's name. */
  url: URL;
  /** `show server_version`, e.g. `15.20 (Debian 15.20-0+deb12u1)`. */
  version: string;
}

/**
 * A new database `gatehouse_bench_<pid>_<random>` beside `adminUrl`'s, dropped (WITH FORCE) by the undo step it
 * registers through `onCleanup`, as is the administration connection.
 */
export async function scratchDatabase(
  adminUrl: string,
  onCleanup: (what: string, run: () => Promise<unknown>) => void,
): Promise<ScratchDatabase> {
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  onCleanup('close the admin connection', () => admin.end());
  const { rows } = await admin.query<{ server_version: string }>('show server_version');
  const name = `gatehouse_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
  await admin.query(`create database ${name}`);
  onCleanup(`drop database ${name}`, () => admin.query(`drop database if exists ${name} with (force)`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { admin, name, url, version: rows[0]?.server_version ?? 'unknown' };
}

/**
 * Runs a benchmark script (relative to the repository root) in a process of its own, so that nothing of this
 * process (autocannon, its buffers, its garbage) shares its thread; the script prints its result as JSON on its last
 * line of output.
 */
export async function runJsonScript<T>(
  script: string,
  args: string[] = [],
  { nodeArgs = [], timeoutMs = 120_000 }: { nodeArgs?: string[]; timeoutMs?: number } = {},
): Promise<T> {
  const child = spawn(process.execPath, [...nodeArgs, script, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  if (code !== 0) throw new Error(`${script} exited with ${code}: ${out}`);
  return JSON.parse(out.trim().split('\n').pop() ?? '{}') as T;
}

/** What the backends of a database were doing at one moment (`pg_stat_activity`, the sampling connection excepted). */
export interface ActivitySample {
  /** On this process's `performance.now()` clock (ms), like a measurement's window. */
  at: number;
  /** One entry per client backend that was not idle: `state`, `wait_event_type:wait_event` (or ''), its statement. */
  backends: Array<{ state: string; wait: string; query: string }>;
}

/**
 * Samples `pg_stat_activity` of `client`'s database every `intervalMs` until `stop()`, which returns the samples.
 * `client` should be a connection of its own: a sample must not wait behind other queries.
 */
export function sampleActivity(client: Client, intervalMs = 100) {
  const samples: ActivitySample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const at = performance.now();
      try {
        const { rows } = await client.query<{ state: string; wait: string | null; query: string }>(
          "select state, wait_event_type || ':' || wait_event as wait, left(query, 300) as query from pg_stat_activity " +
            "where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid() " +
            "and state <> 'idle'",
        );
        samples.push({ at, backends: rows.map((r) => ({ state: r.state, wait: r.wait ?? '', query: r.query })) });
      } catch {
        // a missed sample is only a missed sample
      }
      await new Promise((r) => setTimeout(r, Math.max(0, intervalMs - (performance.now() - at))));
    }
  })();
  return {
    stop: async (): Promise<ActivitySample[]> => {
      running = false;
      await loop;
      return samples;
    },
  };
}

/**
 * Child processes: a server on a free loopback port (the real one, the server as `npm start` runs it (bundled, `apps/server/start.js`), or a minimal
 * server), a micro-benchmark script that prints JSON, and the CPU accounting of processes and of the machine (/proc).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { config, onCleanup, ROOT, sleep } from './env.ts';

let clockTicks: number | undefined;
const ticks = () => (clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100);

/** utime + stime of a process, from /proc/<pid>/stat, in seconds (NaN where there is no /proc). */
export function processCpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from the 3rd: utime, stime are 14, 15
    return (Number(fields[11]) + Number(fields[12])) / ticks();
  } catch {
    return Number.NaN;
  }
}

/** Busy CPU seconds of all cores (not idle, not waiting for I/O), from /proc/stat. */
export function machineCpuSeconds(): number {
  try {
    const values = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
    const total = values.slice(0, 8).reduce((a, b) => a + b, 0); // user nice system idle iowait irq softirq steal
    return (total - (values[3] ?? 0) - (values[4] ?? 0)) / ticks();
  } catch {
    return Number.NaN;
  }
}

export const selfCpuSeconds = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
};

export async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const address = probe.address();
  probe.close();
  await once(probe, 'close');
  if (!address || typeof address !== 'object') throw new Error('no port');
  return address.port;
}

/** The operator token and master key of a new server. */
export const secrets = () => ({
  GATEHOUSE_OPERATOR_TOKEN: `op_bench_${randomBytes(24).toString('hex')}`,
  GATEHOUSE_MASTER_KEY: randomBytes(32).toString('base64'),
});

export interface ServerProcess {
  label: string;
  url: string;
  pid: number | undefined;
  /** Log lines at warn or above (pino levels 40–60) so far. */
  warnings: () => number;
  cpuSeconds: () => number;
  /** SIGTERM (graceful), SIGKILL after `graceMs`. */
  stop: (graceMs?: number) => Promise<void>;
}

const servers: ServerProcess[] = [];

/** Log lines at warn or above of the servers started since the last call. */
export const takeWarnings = () => servers.splice(0).reduce((sum, server) => sum + server.warnings(), 0);

/** The node arguments of `npm start` (the root package's `start` script: `exec node <args…>`). */
export function startArguments(): string[] {
  const scripts = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>;
  const words = (scripts.start ?? '').split(/\s+/).filter(Boolean);
  const at = words.indexOf('node');
  if (at < 0) throw new Error(`the start script does not run node: ${scripts.start}`);
  return words.slice(at + 1);
}

/**
 * Starts `script` with `env` on a free port and waits for `GET /readyz`; without a script, the real server as `npm
 * start` runs it (its node arguments, the bundled server). The server is stopped by an undo step. With
 * BENCH_PROFILE_DIR, it runs under `--cpu-prof` and writes its profile there on exit.
 */
export async function startServer(label: string, env: Record<string, string>, script?: string) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const nodeArgs: string[] = [];
  if (config.profileDir) {
    await mkdir(resolve(config.profileDir), { recursive: true });
    const dir = await mkdtemp(join(resolve(config.profileDir), `${label.replace(/\W+/g, '-')}-`));
    nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${dir}`);
  }
  // Nothing of our own environment may point the server elsewhere (a DATABASE_URL in the shell, say).
  const inherited = Object.entries(process.env).filter(([k]) => k !== 'DATABASE_URL' && !k.startsWith('GATEHOUSE_'));
  // process.execPath is the project's Node 24: `npm run bench` puts node_modules/.bin first on PATH.
  const child = spawn(process.execPath, [...nodeArgs, ...(script ? [script] : startArguments())], {
    cwd: ROOT,
    env: { ...Object.fromEntries(inherited), ...env, PORT: String(port), HOST: '127.0.0.1', GATEHOUSE_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let warnings = 0;
  const collect = (chunk: Buffer) => {
    for (const line of chunk
      .toString('utf8')
      .split('\n')
      .filter((l) => l.trim())) {
      lines.push(line);
      if (lines.length > 100) lines.shift();
      if (/"level":\s*[456]0\b/.test(line) && ++warnings <= 5) console.error(`  [${label}] ${line.slice(0, 400)}`);
    }
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = once(child, 'exit').catch(() => undefined);
  const stop = async (graceMs = 30_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  onCleanup(`stop the ${label} server`, () => stop());
  const server: ServerProcess = {
    label,
    url,
    pid: child.pid,
    warnings: () => warnings,
    cpuSeconds: () => processCpuSeconds(child.pid),
    stop,
  };
  servers.push(server);
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the ${label} server exited (${child.exitCode ?? child.signalCode}):\n${lines.join('\n')}`);
    }
    const status = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return server;
    if (Date.now() > deadline) throw new Error(`the ${label} server was not ready within 120 s:\n${lines.join('\n')}`);
    await sleep(250);
  }
}

/** Runs a micro-benchmark script in a process of its own; it prints its result as JSON on its last line. */
export async function runJsonScript<T>(script: string, args: string[] = []): Promise<T> {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', script, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  if (code !== 0) throw new Error(`${script} exited with ${code}: ${out}`);
  return JSON.parse(out.trim().split('\n').pop() ?? '{}') as T;
}

import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { BOOT_MS } from './helpers/limits.ts';
import { freePort } from './helpers/ports.ts';
import { seedEmbeddedDatabase } from './helpers/processes.ts';

/** The process as operators run it: the real entry point (or `npm start`), on the embedded database. */
const root = fileURLToPath(new URL('../../..', import.meta.url));
const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-lifecycle-'));
  dirs.push(dir);
  return dir;
}

/** A data directory that already holds a migrated database (the first start on an empty one is main.test.ts's). */
async function seededDataDir(): Promise<string> {
  const dir = await dataDir();
  await seedEmbeddedDatabase(dir);
  return dir;
}

function run(command: string, args: string[], env: Record<string, string>): Run {
  // The embedded database and generated secrets unless the test names others.
  const full: NodeJS.ProcessEnv = { ...process.env, HOST: '127.0.0.1', GATEHOUSE_LOG_LEVEL: 'info' };
  delete full.DATABASE_URL;
  delete full.GATEHOUSE_OPERATOR_TOKEN;
  delete full.GATEHOUSE_MASTER_KEY;
  Object.assign(full, env);
  const child = spawn(command, args, { cwd: root, env: full, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk) => {
    out += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    err += chunk;
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return { child, stdout: () => out, stderr: () => err, exited };
}

const serve = (env: Record<string, string>, args: string[] = []) => run(process.execPath, [main, ...args], env);

async function ready(port: number, server: Run): Promise<void> {
  const deadline = Date.now() + BOOT_MS;
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
    if (res?.status === 200) return;
    if (server.child.exitCode !== null || Date.now() > deadline) throw new Error(`did not start:\n${server.stderr()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const portFree = async (port: number) => {
  const probe = createServer();
  const free = await new Promise<boolean>((resolve) => {
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (free) await new Promise<void>((resolve) => probe.close(() => resolve()));
  return free;
};

const processGone = (pid: number) => {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
};

const noStack = (text: string) => expect(text).not.toMatch(/^\s+at /m);

// Real `npm start` and server processes on embedded databases: a test may boot two (BOOT_MS each).
describe('process lifecycle', { timeout: 600_000 }, () => {
  it('SIGTERM to `npm start` stops the server within 10 s and frees the port (no orphan)', async () => {
    const port = await freePort();
    const npm = run('npm', ['start', '--silent'], { PORT: String(port), GATEHOUSE_DATA_DIR: await seededDataDir() });
    await ready(port, npm);
    // The server's pid, from its own JSON log lines: standard output carries nothing else.
    const lines = npm
      .stdout()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { pid: number });
    const pid = lines[0]!.pid;
    expect(pid).not.toBe(npm.child.pid);
    const started = Date.now();
    npm.child.kill('SIGTERM');
    await npm.exited;
    for (let i = 0; i < 100 && !(processGone(pid) && (await portFree(port))); i++) await new Promise((r) => setTimeout(r, 100));
    expect(processGone(pid)).toBe(true);
    expect(await portFree(port)).toBe(true);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(npm.stderr()).toContain('Gatehouse is running at');
  });

  it('a second server, or migrate, on the same embedded database is refused before it opens it; a dead holder is taken over', async () => {
    const dir = await seededDataDir();
    const port = await freePort();
    const first = serve({ PORT: String(port), GATEHOUSE_DATA_DIR: dir });
    await ready(port, first);
    for (const line of first.stdout().trim().split('\n')) expect(() => JSON.parse(line), line).not.toThrow();

    const second = serve({ PORT: String(await freePort()), GATEHOUSE_DATA_DIR: dir });
    expect(await second.exited).toBe(1);
    expect(second.stderr()).toMatch(
      new RegExp(`^gatehouse: The embedded database .+ is in use by process ${first.child.pid} .*DATABASE_URL`),
    );
    expect(second.stdout()).toBe('');
    noStack(second.stderr());
    const migrate = serve({ GATEHOUSE_DATA_DIR: dir }, ['migrate']);
    expect(await migrate.exited).toBe(1);
    expect(migrate.stderr()).toContain(`is in use by process ${first.child.pid}`);

    first.child.kill('SIGKILL');
    await first.exited;
    const next = serve({ PORT: String(port), GATEHOUSE_DATA_DIR: dir });
    await ready(port, next);
    next.child.kill('SIGTERM');
    expect(await next.exited).toBe(0);
    // The dead holder's lock was taken over (a new generation beside it), and both are gone after the clean exit.
    expect(readdirSync(dir).filter((file) => file.startsWith('db.lock'))).toEqual([]);
  });

  it('a port in use is one line, and the database is never opened', async () => {
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as AddressInfo;
    try {
      const dir = await dataDir();
      const server = serve({ PORT: String(port), GATEHOUSE_DATA_DIR: dir });
      expect(await server.exited).toBe(1);
      expect(server.stderr()).toBe(`gatehouse: Port ${port} on 127.0.0.1 is already in use: stop what holds it, or set PORT.\n`);
      expect(existsSync(join(dir, 'db'))).toBe(false);
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });

  it('a PostgreSQL that cannot be reached is one line, without a stack trace', async () => {
    const closed = await freePort();
    const server = serve({
      PORT: String(await freePort()),
      DATABASE_URL: `postgres://postgres@127.0.0.1:${closed}/gatehouse`,
      GATEHOUSE_DATA_DIR: await dataDir(),
    });
    expect(await server.exited).toBe(1);
    expect(server.stderr()).toBe(`gatehouse: connect ECONNREFUSED 127.0.0.1:${closed}\n`);
  });

  it('a configuration error lists every problem, without a stack trace', async () => {
    const server = serve({
      PORT: 'eighty',
      GATEHOUSE_SMTP_URL: 'ftp://mail.example.com',
      GATEHOUSE_CNAME_TARGET: 'https://edge.example.com/',
      GATEHOUSE_DATA_DIR: await dataDir(),
    });
    expect(await server.exited).toBe(1);
    const stderr = server.stderr();
    expect(stderr).toMatch(/^gatehouse: Invalid configuration:\n/);
    expect(stderr).toMatch(/^ {2}- PORT: /m);
    expect(stderr).toMatch(/^ {2}- GATEHOUSE_SMTP_URL: GATEHOUSE_SMTP_URL must be an smtp:\/\/ or smtps:\/\/ URL$/m);
    expect(stderr).toMatch(
      /^ {2}- GATEHOUSE_CNAME_TARGET: GATEHOUSE_CNAME_TARGET must be a host name, e\.g\. domains\.example\.com$/m,
    );
    noStack(stderr);
    expect(server.stdout()).toBe('');
  });
});

import { type ChildProcess, spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { BOOT_MS } from './helpers/limits.ts';
import { freePort } from './helpers/ports.ts';
import { processTestbed } from './helpers/processes.ts';
import { until } from './helpers/server.ts';

/**
 * SIGTERM drains (GATEHOUSE_SHUTDOWN_DELAY_S): /readyz answers 503 `draining` at once, the process keeps serving —
 * each answer asking to close its connection — for the delay, then closes and exits 0. SIGINT, or a second signal, does
 * not wait. The real entry point as a child process; scale-out.test.ts runs it behind HAProxy.
 */
const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const { children, deployment } = processTestbed();

interface Running {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
}

async function start(delayS: number): Promise<Running> {
  const { env } = await deployment('drain', { GATEHOUSE_SHUTDOWN_DELAY_S: String(delayS) });
  const port = await freePort();
  const child = spawn(process.execPath, [main], { env: { ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  await until(
    async () => {
      if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}):\n${stderr}`);
      return (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined;
    },
    'the server to start',
    BOOT_MS,
  );
  return { child, url, exited };
}

/** Keeps connections open between requests, as a load balancer or an SDK does. */
const keepAlive = new Agent({ keepAlive: true });
afterAll(() => keepAlive.destroy());

/** A GET with node:http over a kept-alive connection, which shows the `connection` header as sent (fetch hides it). */
const get = (url: string) =>
  new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
    request(url, { agent: keepAlive }, (res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }));
    })
      .on('error', reject)
      .end();
  });

const untilDraining = (url: string) =>
  until(async () => {
    const res = await get(`${url}/readyz`).catch(() => undefined);
    return res?.status === 503 ? res : undefined;
  }, '/readyz to answer 503');

describe('SIGTERM drains before it closes', { timeout: 600_000 }, () => {
  it('/readyz answers 503 draining at once; requests are still served, with connection: close; then a clean exit', async () => {
    const server = await start(4);
    const before = await get(`${server.url}/healthz`);
    expect(before.connection).toBe('keep-alive');
    server.child.kill('SIGTERM');
    const readyz = await untilDraining(server.url);
    expect(JSON.parse(readyz.body)).toEqual({ status: 'draining' });
    const served = await get(`${server.url}/healthz`);
    expect(served.status).toBe(200);
    expect(served.connection).toBe('close');
    expect(await server.exited).toBe(0);
  });

  it('a second SIGTERM cuts the wait short; SIGINT does not wait at all', async () => {
    // A delay far longer than the test's timeout: the process exits only because the wait was cut short.
    const twice = await start(600);
    twice.child.kill('SIGTERM');
    await untilDraining(twice.url);
    twice.child.kill('SIGTERM');
    expect(await twice.exited).toBe(0);

    const interrupted = await start(600);
    interrupted.child.kill('SIGINT');
    expect(await interrupted.exited).toBe(0);
  });
});

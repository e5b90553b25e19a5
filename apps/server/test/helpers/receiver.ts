import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WAIT_MS } from './limits.ts';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** How the receiver answers one request: a status (with headers and body), or `hang` (never answers). */
export type Answer = { status: number; headers?: Record<string, string>; body?: string } | 'hang';

/**
 * A real HTTP server that receives webhooks: it records every request and answers per path from a queue of answers
 * (then 200). Tests verify what it received with the `standardwebhooks` package.
 */
export async function startReceiver() {
  const received: Received[] = [];
  const scripts = new Map<string, Answer[]>();
  const hanging = new Set<ServerResponse>();
  const state = { delayMs: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      const answer = scripts.get(path)?.shift() ?? { status: 200, body: 'ok' };
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      const respond = () => {
        res.writeHead(answer.status, answer.headers);
        res.end(answer.body ?? '');
      };
      if (state.delayMs) setTimeout(respond, state.delayMs);
      else respond();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    /** Every answer waits this long (a slow receiver keeps deliveries in flight). */
    state,
    /** Answers the next requests to `path` with these, in order. */
    script(path: string, ...answers: Answer[]) {
      scripts.set(path, [...(scripts.get(path) ?? []), ...answers]);
    },
    at: (path: string) => received.filter((r) => r.path === path),
    async until(path: string, count: number, timeoutMs = WAIT_MS): Promise<Received[]> {
      const deadline = Date.now() + timeoutMs;
      while (received.filter((r) => r.path === path).length < count) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${count} request(s) to ${path}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return received.filter((r) => r.path === path);
    },
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

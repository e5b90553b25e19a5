import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { base62Of, randomBase62, randomSecret, SecretBox, sha256 } from './crypto.ts';
import { newId } from './ids.ts';
import { escapeLike } from './pagination.ts';
import { PollingWorker } from './polling-worker.ts';
import { guardedRequest } from './ssrf.ts';

describe('SecretBox (AES-256-GCM with the master key)', () => {
  const box = new SecretBox(randomBytes(32));

  it('round-trips and never repeats a ciphertext', () => {
    const a = box.encrypt('signing-key', 'app:1');
    const b = box.encrypt('signing-key', 'app:1');
    expect(a).not.toBe(b);
    expect(a).not.toContain('signing-key');
    expect(box.decrypt(a, 'app:1')).toBe('signing-key');
  });

  it('refuses another context, another key and any tampering', () => {
    const sealed = box.encrypt('totp-seed', 'user:1');
    expect(() => box.decrypt(sealed, 'user:2')).toThrow();
    expect(() => new SecretBox(randomBytes(32)).decrypt(sealed, 'user:1')).toThrow();
    const [version, iv, tag, ciphertext] = sealed.split('.');
    const data = Buffer.from(ciphertext ?? '', 'base64url');
    data.writeUInt8(data.readUInt8(0) ^ 1, 0);
    expect(() => box.decrypt([version, iv, tag, data.toString('base64url')].join('.'), 'user:1')).toThrow();
    expect(() => box.decrypt('v2.x.y.z', 'user:1')).toThrow();
  });

  it('needs a 32-byte key', () => {
    expect(() => new SecretBox(randomBytes(16))).toThrow();
  });

  it('derives a key per label: HMAC-SHA256 of the master key over `gatehouse:<label>`, the same on every call', () => {
    const master = randomBytes(32);
    const keys = new SecretBox(master);
    const expected = createHmac('sha256', master).update('gatehouse:hosted-csrf').digest();
    expect(keys.deriveKey('hosted-csrf').export()).toEqual(expected);
    expect(keys.deriveKey('hosted-csrf')).toBe(keys.deriveKey('hosted-csrf'));
    expect(keys.deriveKey('oauth2-cookies').export()).not.toEqual(expected);
    expect(new SecretBox(randomBytes(32)).deriveKey('hosted-csrf').export()).not.toEqual(expected);
  });
});

describe('random secrets and ids', () => {
  it('are base62 of the requested strength', () => {
    expect(randomBase62(43)).toMatch(/^[0-9A-Za-z]{43}$/);
    expect(randomSecret('sk_test_')).toMatch(/^sk_test_[0-9A-Za-z]{43}$/);
    expect(new Set(Array.from({ length: 1000 }, () => randomBase62(12))).size).toBe(1000);
    expect(sha256('a')).toBe(createHash('sha256').update('a').digest('hex'));
    expect(sha256('pâté ✓')).toBe(createHash('sha256').update('pâté ✓', 'utf8').digest('hex'));
  });

  it('base62Of writes 32 bytes as the 43 digits of their value, as BigInt division does', () => {
    const digits = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    const byBigInt = (bytes: Buffer) => {
      let value = BigInt(`0x${bytes.toString('hex')}`);
      let out = '';
      for (let i = 0; i < 43; i++) {
        out = digits[Number(value % 62n)] + out;
        value /= 62n;
      }
      return out;
    };
    const edges = [Buffer.alloc(32), Buffer.alloc(32, 0xff), Buffer.from(`${'00'.repeat(31)}3d`, 'hex')];
    for (const bytes of [...edges, ...Array.from({ length: 500 }, () => randomBytes(32))]) {
      expect(base62Of(bytes)).toBe(byBigInt(bytes));
    }
    expect(base62Of(Buffer.alloc(32))).toBe('0'.repeat(43));
    expect(base62Of(Buffer.from(`${'00'.repeat(31)}3d`, 'hex'))).toBe(`${'0'.repeat(42)}z`);
    expect(() => base62Of(randomBytes(31))).toThrow();
  });

  it('ids are UUID v7 and sort by creation', () => {
    const ids = Array.from({ length: 50 }, newId);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
  });
});

describe('escapeLike', () => {
  it('makes %, _ and \\ literal', () => {
    expect(escapeLike('50%_off\\')).toBe('50\\%\\_off\\\\');
    expect(escapeLike('plain')).toBe('plain');
  });
});

describe('PollingWorker', () => {
  /** A worker whose batches are answered by the test, one at a time. */
  const harness = () => {
    const runs: { finish: (full: boolean) => void; fail: (error: Error) => void }[] = [];
    const errors: unknown[] = [];
    let waiting: (() => void) | undefined;
    const worker = new PollingWorker({
      pollMs: 60_000,
      nudgeMs: 0,
      runBatch: () =>
        new Promise<boolean>((resolve, reject) => {
          runs.push({ finish: resolve, fail: reject });
          waiting?.();
        }),
      onError: (error) => errors.push(error),
    });
    const nextRun = async (count: number) => {
      while (runs.length < count) await new Promise<void>((resolve) => (waiting = resolve));
      const run = runs[count - 1];
      if (!run) throw new Error(`no run ${count}`);
      return run;
    };
    return { worker, runs, errors, nextRun };
  };

  it('runs its first batch one poll interval after start, not at once', async () => {
    const ran: number[] = [];
    const worker = new PollingWorker({
      pollMs: 50,
      nudgeMs: 0,
      runBatch: async () => {
        ran.push(performance.now());
        return false;
      },
      onError: () => undefined,
    });
    const started = performance.now();
    worker.start();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(ran).toEqual([]);
    while (!ran.length) await new Promise((resolve) => setTimeout(resolve, 5));
    // A timer never fires before its delay (a millisecond of rounding allowed).
    expect((ran[0] ?? 0) - started).toBeGreaterThanOrEqual(49);
    await worker.stop();
  });

  it('runs when nudged, chains full batches and stops at a short one', async () => {
    const { worker, runs, nextRun } = harness();
    worker.start();
    worker.nudge();
    (await nextRun(1)).finish(true);
    (await nextRun(2)).finish(true);
    (await nextRun(3)).finish(false);
    await worker.stop();
    expect(runs).toHaveLength(3);
  });

  it('runs again after a batch when nudged during it, and reports a failed run without stopping', async () => {
    const { worker, errors, nextRun } = harness();
    worker.start();
    worker.nudge();
    const first = await nextRun(1);
    worker.nudge();
    first.fail(new Error('database down'));
    (await nextRun(2)).finish(false);
    expect(errors).toEqual([new Error('database down')]);
    worker.nudge();
    (await nextRun(3)).finish(false);
    await worker.stop();
  });

  it('stop() waits for the batch in hand and starts no other, even when it was full or nudged', async () => {
    const { worker, runs, nextRun } = harness();
    worker.start();
    worker.nudge();
    const first = await nextRun(1);
    worker.nudge();
    let stopped = false;
    const stopping = worker.stop().then(() => (stopped = true));
    await Promise.resolve();
    expect(stopped).toBe(false);
    first.finish(true);
    await stopping;
    worker.nudge();
    await new Promise((resolve) => setImmediate(resolve));
    expect(runs).toHaveLength(1);
  });

  it('a stream of nudges never postpones a run already due', async () => {
    let runs = 0;
    let ran: (() => void) | undefined;
    const worker = new PollingWorker({
      pollMs: 60_000,
      nudgeMs: 30,
      runBatch: async () => {
        runs++;
        ran?.();
        return false;
      },
      onError: () => undefined,
    });
    const first = new Promise<void>((resolve) => (ran = resolve));
    worker.start();
    worker.nudge();
    await first;
    // Nudged again and again faster than nudgeMs: the run still comes (a postponing timer would never fire).
    const second = new Promise<void>((resolve) => (ran = resolve));
    const nudging = setInterval(() => worker.nudge(), 5);
    await second;
    clearInterval(nudging);
    await worker.stop();
    expect(runs).toBeGreaterThanOrEqual(2);
  });
});

describe('guardedRequest and kept-alive sockets', () => {
  it('a request whose reused socket the peer resets before answering is sent once more, on a new connection', async () => {
    // Each connection answers its first request (keep-alive) and resets on its second, as a peer that closed an idle
    // socket at the moment it was picked again.
    const connections: Socket[] = [];
    const server = createServer((socket) => {
      connections.push(socket);
      let requests = 0;
      socket.on('data', (chunk) => {
        if (!chunk.includes('\r\n\r\n')) return;
        if (++requests === 1) {
          socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\nok');
        } else socket.resetAndDestroy();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/token`;
    try {
      const ask = () => guardedRequest(url, { method: 'GET', timeoutMs: 5_000, allowInsecure: true });
      expect((await ask()).body.toString()).toBe('ok');
      // The agent reuses the first connection, which resets: the request goes again on a second one.
      expect((await ask()).body.toString()).toBe('ok');
      expect(connections.length).toBe(2);
    } finally {
      for (const socket of connections) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

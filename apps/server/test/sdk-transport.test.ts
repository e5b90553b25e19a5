import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGatehouse, GatehouseError } from '@gatehouse/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejection } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite({ smtp: false });

/**
 * A stand-in for what can sit between the SDK and the service (a proxy, a flaky network): it answers each request
 * with the next scripted reply and records what it saw.
 */
type Reply = (req: IncomingMessage, res: ServerResponse) => void;
let standIn: Server;
let standInUrl: string;
let script: Reply[] = [];
const seen: IncomingMessage[] = [];

const trpcOk =
  (data: unknown): Reply =>
  (_req, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ result: { data } }));
const status =
  (code: number, headers: Record<string, string> = {}, body = ''): Reply =>
  (_req, res) =>
    res.writeHead(code, headers).end(body);
const hang: Reply = () => undefined;

beforeAll(async () => {
  standIn = createServer((req, res) => {
    seen.push(req);
    const reply = script.shift() ?? status(599);
    reply(req, res);
  });
  await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve));
  standInUrl = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`;
});
afterAll(async () => {
  standIn.closeAllConnections();
  await new Promise<void>((resolve) => standIn.close(() => resolve()));
});

const sdk = (options: { maxRetries?: number; timeoutMs?: number } = {}) =>
  createGatehouse({
    baseUrl: standInUrl,
    applicationId: '01937c4e-8a2b-7c3d-9e4f-5a6b7c8d9e0f',
    secretKey: 'sk_test_x',
    ...options,
  });

describe('SDK transport: retries, timeouts and errors that say what happened', () => {
  it('retries a read after 503 and 500, and succeeds; says who it is', async () => {
    seen.length = 0;
    script = [
      status(503),
      status(500, { 'content-type': 'application/json' }, '{}'),
      trpcOk({ users: [], total: 0, limit: 25, offset: 0 }),
    ];
    expect(await sdk().users.list()).toEqual({ users: [], total: 0, limit: 25, offset: 0 });
    expect(seen).toHaveLength(3);
    expect(seen[0]!.headers['x-gatehouse-client']).toMatch(/^gatehouse-sdk-js\/\d+\.\d+\.\d+$/);
    expect(seen[0]!.headers['user-agent']).toMatch(/^gatehouse-sdk-js\/\S+ node\/v\d+/);
  });

  it('honours retry-after on 429', async () => {
    seen.length = 0;
    script = [status(429, { 'retry-after': '1' }), trpcOk({ users: [], total: 0, limit: 25, offset: 0 })];
    const started = Date.now();
    await sdk().users.list();
    expect(seen).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('never repeats a write that is not a create; a proxy page is unexpected_response with its status', async () => {
    seen.length = 0;
    script = [status(502, { 'content-type': 'text/html' }, '<html><body>Bad gateway</body></html>')];
    const error = await rejection(sdk().users.update({ id: '01937c4e-8a2b-7c3d-9e4f-5a6b7c8d9e0f', profile: {} }));
    expect(error).toMatchObject({ code: 'unexpected_response', status: 502 });
    expect(error.message).toContain('HTTP 502');
    expect(seen).toHaveLength(1);
  });

  it('a create carries one Idempotency-Key for all its attempts, so it is retried like a read', async () => {
    seen.length = 0;
    script = [status(503), trpcOk({ id: 'u1' })];
    await sdk().users.create({ primary_email: 'a@example.com' });
    expect(seen).toHaveLength(2);
    const keys = seen.map((req) => req.headers['idempotency-key']);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    seen.length = 0;
    script = [trpcOk({ id: 'u2' })];
    await sdk().users.create({ primary_email: 'b@example.com' });
    expect(seen[0]!.headers['idempotency-key']).not.toBe(keys[0]);
    // Other writes carry none.
    seen.length = 0;
    script = [trpcOk({ id: 'u1', deleted: true })];
    await sdk().users.delete({ id: '01937c4e-8a2b-7c3d-9e4f-5a6b7c8d9e0f' });
    expect(seen[0]!.headers['idempotency-key']).toBeUndefined();
  });

  it('times out a call that hangs, after its retries; maxRetries 0 turns retries off', async () => {
    seen.length = 0;
    script = [hang, hang];
    const error = await rejection(sdk({ timeoutMs: 200, maxRetries: 1 }).users.list());
    expect(error).toMatchObject({ code: 'timeout', status: 0 });
    expect(seen).toHaveLength(2);
    seen.length = 0;
    script = [status(503)];
    expect(await rejection(sdk({ maxRetries: 0 }).users.list())).toMatchObject({ code: 'unexpected_response', status: 503 });
    expect(seen).toHaveLength(1);
  });

  it('a service that cannot be reached is network_error, status 0', async () => {
    const nowhere = createGatehouse({ baseUrl: 'http://127.0.0.1:9', secretKey: 'sk_test_x', maxRetries: 1 });
    expect(await rejection(nowhere.users.list())).toMatchObject({ code: 'network_error', status: 0 });
  });

  it("an API error from the real service carries code, status, message, details and the answer's request id", async () => {
    const app = await suite.server.createApp();
    const error = await rejection(app.sdk.users.create({ primary_email: 'not an email' }));
    expect(error).toBeInstanceOf(GatehouseError);
    expect(error).toMatchObject({ code: 'validation_failed', status: 422 });
    expect(error.details?.[0]?.path).toBe('primary_email');
    expect(error.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });
});

import { beforeAll, describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import type { TestApp } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * `/trpc`: single calls (the SDK's httpLink) run on the server's own fast path, everything else on tRPC's handler.
 * Both must speak tRPC's wire format alike: the same data, the same error shapes and statuses.
 */
const suite = serverSuite({ smtp: false });

let app: TestApp;
let userId: string;

beforeAll(async () => {
  app = await suite.server.createApp();
  userId = (await app.rest('POST', '/v1/users', { primary_email: uniqueEmail('trpc') })).body.data.id;
});

const call = async (path: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}) => {
  const response = await fetch(`${suite.server.url}/trpc/${path}`, {
    method: init.method ?? 'GET',
    body: init.body,
    headers: {
      authorization: `Bearer ${app.secretKey}`,
      'x-application-id': app.id,
      ...(init.body ? { 'content-type': 'application/json' } : {}),
      ...init.headers,
    },
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
};

const input = (value: unknown) => `input=${encodeURIComponent(JSON.stringify(value))}`;

describe('/trpc wire format', () => {
  it('a single query and the same query in a batch answer the same data', async () => {
    const single = await call(`users.get?${input({ id: userId })}`);
    expect(single.status).toBe(200);
    expect(single.headers.get('content-type')).toContain('application/json');
    expect(single.body).toEqual({ result: { data: expect.objectContaining({ id: userId }) } });
    const batch = await call(`users.get?batch=1&input=${encodeURIComponent(JSON.stringify({ 0: { id: userId } }))}`);
    expect(batch.status).toBe(200);
    expect(batch.body).toEqual([{ result: { data: single.body.result.data } }]);
  });

  it('a mutation is a POST with its input as the body', async () => {
    const created = await call('users.create', { method: 'POST', body: JSON.stringify({ primary_email: uniqueEmail('trpc') }) });
    expect(created.status).toBe(200);
    expect(created.body.result.data).toMatchObject({ primary_email: expect.stringContaining('trpc') });
  });

  it('errors carry the same shape and status on the fast path and in a batch', async () => {
    const missing = '00000000-0000-7000-8000-000000000000';
    const single = await call(`users.get?${input({ id: missing })}`);
    expect(single.status).toBe(404);
    expect(single.body.error).toMatchObject({
      message: expect.any(String),
      code: -32004,
      data: { code: 'not_found', httpStatus: 404, path: 'users.get' },
    });
    const batch = await call(`users.get?batch=1&input=${encodeURIComponent(JSON.stringify({ 0: { id: missing } }))}`);
    expect(batch.status).toBe(404);
    expect(batch.body).toEqual([{ error: single.body.error }]);

    const invalid = await call(`users.get?${input({ id: 'nope' })}`);
    expect(invalid.status).toBe(422);
    expect(invalid.body.error.data).toMatchObject({ code: 'validation_failed', details: [{ path: 'id' }] });

    const unauthenticated = await call(`users.get?${input({ id: userId })}`, { headers: { authorization: '' } });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.body.error.data).toMatchObject({ code: 'missing_credentials', httpStatus: 401 });
  });

  it("tRPC's own answers: a query posted, an unknown procedure, input that is not JSON", async () => {
    const posted = await call('users.get', { method: 'POST', body: JSON.stringify({ id: userId }) });
    expect(posted.status).toBe(405);
    expect((await call(`users.nope?${input({})}`)).status).toBe(404);
    const unreadable = await call('users.get?input=%7Bnot-json');
    expect(unreadable.status).toBe(422);
    expect(unreadable.body.error.data).toMatchObject({ code: 'validation_failed', httpStatus: 422 });
  });
});

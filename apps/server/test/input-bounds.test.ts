import { createOrm } from '@gatehouse/api';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { rawRequest, startServer, type TestApp, type TestServer } from './helpers/server.ts';
import { endUser } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite({ smtp: false });

let app: TestApp;
beforeAll(async () => {
  app = await suite.server.createApp({ allowed_origins: ['https://app.example.com'] });
});

const expect422 = (res: { status: number; body: any }, code: string, path: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(422);
  expect(res.body.error.code).toBe(code);
  expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
};

describe('bodies are strict: a wrong type is 422, never coerced', () => {
  // Every boolean and number a request body carries (found by walking the OpenAPI document's request bodies).
  it('booleans: email_verified, templates delivered', async () => {
    for (const value of ['yes', 'false', 1, 0, 'true']) {
      expect422(
        await app.rest('POST', '/v1/users', { primary_email: uniqueEmail(), email_verified: value }),
        'validation_failed',
        'email_verified',
      );
    }
    const user = (await app.rest('POST', '/v1/users', { primary_email: uniqueEmail() })).body.data;
    expect422(await app.rest('PATCH', `/v1/users/${user.id}`, { email_verified: 'true' }), 'validation_failed', 'email_verified');
    expect422(
      await app.rest('PUT', `/v1/applications/${app.id}/templates/magic_link`, { delivered: 'false' }),
      'validation_failed',
      'delivered',
    );
    const stored = (await app.rest('GET', `/v1/users/${user.id}`)).body.data;
    expect(stored.email_verified).toBe(false);
  });

  it('numbers: application settings', async () => {
    const settings = {
      session: { access_token_ttl_s: '900' },
      magic_link: { ttl_s: '600' },
      rate_limits: { window_s: '60' },
    };
    for (const [group, values] of Object.entries(settings)) {
      const [field] = Object.keys(values);
      const body = { settings: { [group]: values } };
      expect422(await app.rest('PATCH', `/v1/applications/${app.id}`, body), 'validation_failed', `settings.${group}.${field}`);
      const created = await rawRequest(suite.server.url, 'POST', '/v1/applications', {
        body: { name: 'Strict', ...body },
        headers: { authorization: `Bearer ${suite.server.operatorToken}` },
      });
      expect422(created, 'validation_failed', `settings.${group}.${field}`);
    }
  });

  it('stays strict on tRPC after REST calls (the REST adapter must not switch coercion on for both)', async () => {
    await app.rest('POST', '/v1/users', { primary_email: uniqueEmail(), email_verified: 'yes' });
    await expect(app.sdk.users.create({ primary_email: uniqueEmail(), email_verified: 'yes' as never })).rejects.toMatchObject({
      code: 'validation_failed',
    });
  });

  it('query parameters still parse numbers where the schema says so', async () => {
    const res = await app.rest('GET', '/v1/users?limit=2&offset=0');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ limit: 2, offset: 0 });
  });
});

describe('a refused redirect is 422 invalid_url, whatever the reason', () => {
  const start = (redirect_url: unknown) =>
    endUser(app, 'POST', '/v1/auth/magic-link/start', { email: uniqueEmail(), redirect_url }, undefined, {
      origin: 'https://app.example.com',
    });

  it('magic-link start', async () => {
    for (const url of [
      'javascript:alert(1)',
      'not a url',
      'ftp://app.example.com/x',
      'https://user:pass@app.example.com/x',
      `https://app.example.com/${'a'.repeat(2100)}`,
      'https://evil.example.net/callback',
    ]) {
      expect422(await start(url), 'invalid_url', 'redirect_url');
    }
    expect((await start('https://app.example.com/callback')).status).toBe(200);
  });

  it('settings.magic_link.redirect_url', async () => {
    for (const url of ['javascript:alert(1)', 'data:text/html,hi', 'https://evil.example.net/x']) {
      expect422(
        await app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { magic_link: { redirect_url: url } } }),
        'invalid_url',
        'settings.magic_link.redirect_url',
      );
    }
  });
});

describe('free-form JSON and nesting are bounded', () => {
  const nested = (depth: number) => {
    let value: Record<string, unknown> = { leaf: 1 };
    for (let i = 1; i < depth; i++) value = { a: value };
    return value;
  };
  const deepBody = (depth: number) =>
    `{"primary_email":"${uniqueEmail()}","profile":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`;
  const post = (body: string) =>
    fetch(`${suite.server.url}/v1/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${app.secretKey}`, 'x-application-id': app.id },
      body,
    }).then(async (res) => ({ status: res.status, body: await res.json() }));

  it('a profile: 10 levels and 8 KiB are fine, one more level or byte is 422 with the path', async () => {
    expect((await app.rest('POST', '/v1/users', { primary_email: uniqueEmail(), profile: nested(10) })).status).toBe(201);
    const tooDeep = await app.rest('POST', '/v1/users', { primary_email: uniqueEmail(), profile: nested(11) });
    expect422(tooDeep, 'validation_failed', `profile.${Array(10).fill('a').join('.')}`);
    const big = { blob: 'x'.repeat(8192 - 11) };
    expect(JSON.stringify(big)).toHaveLength(8192);
    expect((await app.rest('POST', '/v1/users', { primary_email: uniqueEmail(), profile: big })).status).toBe(201);
    const bigger = { blob: 'x'.repeat(8192 - 10) };
    expect422(
      await app.rest('POST', '/v1/users', { primary_email: uniqueEmail(), profile: bigger }),
      'validation_failed',
      'profile',
    );
  });

  it('bodies nested 500, 5,000 and 100,000 levels deep are a clean 422 and store nothing', async () => {
    const before = (await app.rest('GET', '/v1/users?limit=1')).body.data.total;
    for (const depth of [500, 5_000, 100_000]) {
      const res = await post(deepBody(depth));
      expect(res.status, `depth ${depth}`).toBe(422);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.details[0].message).toMatch(/nested deeper than 32 levels/);
    }
    expect((await app.rest('GET', '/v1/users?limit=1')).body.data.total).toBe(before);
  });
});

describe('every 500 is logged at error level with the request id and its cause', () => {
  let server: TestServer;
  const lines: string[] = [];
  // The database goes away under the server: on PostgreSQL a database of this test's own, dropped; on PGlite the
  // embedded instance, closed.
  let dropDatabase: () => Promise<unknown>;
  beforeAll(async () => {
    const url = inject('databaseUrl');
    if (!url) {
      server = await startServer({ logLines: lines });
      dropDatabase = async () => {
        await server.server.orm.close(true);
        await (server.server.orm.config.get('driverOptions') as { pglite?: { close(): Promise<void> } }).pglite?.close();
      };
      return;
    }
    const admin = await createOrm({ kind: 'postgres', url, poolSize: 1 });
    const name = `gatehouse_gone_${process.pid}_${Date.now()}`;
    await admin.em.getConnection().execute(`create database ${name}`);
    const own = new URL(url);
    own.pathname = `/${name}`;
    server = await startServer({ logLines: lines, database: { kind: 'postgres', url: own.toString(), poolSize: 2 } });
    dropDatabase = async () => {
      await admin.em.getConnection().execute(`drop database ${name} with (force)`);
      await admin.close();
    };
  });
  afterAll(async () => {
    await server.close().catch(() => undefined);
  });

  it('the database going away: 500 internal_error without internals, and one error line naming the request', async () => {
    const own = await server.createApp();
    // Fail closed (SECURITY 12): with the database gone every call is an error, never a guess.
    await dropDatabase();
    const res = await own.rest('GET', '/v1/users', undefined, { 'x-request-id': 'probe-500-request' });
    expect(res.status).toBe(500);
    expect(res.body.error).toEqual({ code: 'internal_error', message: 'Internal error' });
    const logged = lines.map((line) => JSON.parse(line)).filter((entry) => entry.level === 50);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ reqId: 'probe-500-request', msg: 'unhandled error' });
    expect(typeof logged[0].err.type).toBe('string');
    expect(JSON.stringify(logged[0])).not.toContain(own.secretKey);
    expect(JSON.stringify(logged[0])).not.toMatch(/select |from "?users/i);
  });
});

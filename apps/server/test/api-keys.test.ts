import { sha256 } from '@gatehouse/api';
import { GatehouseError } from '@gatehouse/sdk';
import { describe, expect, it } from 'vitest';
import { sql } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite({ smtp: false });

describe('secret API keys (S1)', () => {
  it('creates a key: 201, the record plus the secret shown once', async () => {
    const app = await suite.server.createApp();
    const res = await app.rest('POST', '/v1/api-keys', { name: 'backend', scopes: ['users:write', 'organizations:read'] });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({
      id: expect.any(String),
      name: 'backend',
      scopes: ['users:write', 'organizations:read'],
      prefix: res.body.data.secret.slice(0, 12),
      created_at: expect.any(String),
      last_used_at: null,
      revoked_at: null,
      secret: expect.stringMatching(/^sk_test_[0-9A-Za-z]{43}$/),
    });
    const list = await app.rest('GET', '/v1/api-keys');
    expect(list.status).toBe(200);
    expect(list.body.data.map((k: { id: string }) => k.id)).toContain(res.body.data.id);
    expect(JSON.stringify(list.body)).not.toContain(res.body.data.secret);
    for (const key of list.body.data) expect(key).not.toHaveProperty('secret');
  });

  it('stores only the SHA-256 of the secret', async () => {
    const app = await suite.server.createApp();
    const { secret, id } = (await app.rest('POST', '/v1/api-keys', { name: 'stored', scopes: ['users:read'] })).body.data;
    const rows = await sql(suite.server, 'select * from api_keys where id = ?', [id]);
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(secret);
    expect(rows[0].secret_hash).toBe(sha256(secret));
  });

  it('records last_used_at', async () => {
    const app = await suite.server.createApp();
    const { secret, id } = (await app.rest('POST', '/v1/api-keys', { name: 'used', scopes: ['users:read'] })).body.data;
    await app.rest('GET', '/v1/users', undefined, { authorization: `Bearer ${secret}` });
    const key = (await app.rest('GET', '/v1/api-keys')).body.data.find((k: { id: string }) => k.id === id);
    expect(key.last_used_at).not.toBeNull();
  });

  it('revocation is effective immediately', async () => {
    const app = await suite.server.createApp();
    const { secret, id } = (await app.rest('POST', '/v1/api-keys', { name: 'temp', scopes: ['users:read'] })).body.data;
    const auth = { authorization: `Bearer ${secret}` };
    expect((await app.rest('GET', '/v1/users', undefined, auth)).status).toBe(200);
    const revoked = await app.rest('DELETE', `/v1/api-keys/${id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.data).toEqual({ id, deleted: true });
    const after = await app.rest('GET', '/v1/users', undefined, auth);
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('invalid_api_key');
    const listed = (await app.rest('GET', '/v1/api-keys')).body.data.find((k: { id: string }) => k.id === id);
    expect(listed.revoked_at).not.toBeNull();
  });

  it('unknown scopes are 422 unknown_scope; empty or missing scopes are 422', async () => {
    const app = await suite.server.createApp();
    const unknown = await app.rest('POST', '/v1/api-keys', { name: 'x', scopes: ['users:read', 'users:delete'] });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.code).toBe('unknown_scope');
    for (const body of [{ name: 'x', scopes: [] }, { name: 'x' }, { scopes: ['*'] }]) {
      const res = await app.rest('POST', '/v1/api-keys', body);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('validation_failed');
    }
    expect((await app.rest('GET', '/v1/api-keys')).body.data).toHaveLength(1);
  });

  it('a key cannot create a key with scopes beyond its own (no escalation)', async () => {
    const app = await suite.server.createApp();
    const limited = (await app.rest('POST', '/v1/api-keys', { name: 'limited', scopes: ['api_keys:write', 'users:read'] })).body
      .data.secret;
    const auth = { authorization: `Bearer ${limited}` };
    for (const scopes of [['*'], ['users:write'], ['organizations:read'], ['users:read', 'settings:write']]) {
      const res = await app.rest('POST', '/v1/api-keys', { name: 'escalate', scopes }, auth);
      expect(res.status, scopes.join()).toBe(403);
      expect(res.body.error.code).toBe('insufficient_scope');
    }
    // Within its own scopes (write implies read) it may.
    const ok = await app.rest('POST', '/v1/api-keys', { name: 'sub', scopes: ['users:read', 'api_keys:read'] }, auth);
    expect(ok.status).toBe(201);
  });

  it('enforces the scope each operation declares; write implies read', async () => {
    const app = await suite.server.createApp();
    const writer = (await app.rest('POST', '/v1/api-keys', { name: 'w', scopes: ['users:write'] })).body.data.secret;
    const auth = { authorization: `Bearer ${writer}` };
    expect((await app.rest('GET', '/v1/users', undefined, auth)).status).toBe(200);
    expect((await app.rest('POST', '/v1/users', { primary_email: 'w@example.com' }, auth)).status).toBe(201);
    const denied = await app.rest('GET', '/v1/organizations', undefined, auth);
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('insufficient_scope');
    expect((await app.rest('GET', '/v1/api-keys', undefined, auth)).status).toBe(403);
  });
});

describe('secret-key authentication and tenant isolation', () => {
  it('checks x-application-id first: missing, malformed or unknown is 401 application_not_resolved', async () => {
    const app = await suite.server.createApp();
    for (const id of [undefined, 'not-a-uuid', '00000000-0000-7000-8000-000000000000']) {
      const res = await app.rest('POST', '/v1/users', { primary_email: 'a@example.com' }, { 'x-application-id': id });
      expect(res.status, String(id)).toBe(401);
      expect(res.body.error.code).toBe('application_not_resolved');
    }
    // Even without any credential, the application is checked first.
    const res = await app.rest('GET', '/v1/users', undefined, { 'x-application-id': 'nope', authorization: undefined });
    expect(res.body.error.code).toBe('application_not_resolved');
  });

  it('401 missing_credentials without a key, invalid_api_key for a wrong one', async () => {
    const app = await suite.server.createApp();
    const missing = await app.rest('GET', '/v1/users', undefined, { authorization: undefined });
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe('missing_credentials');
    for (const value of ['Bearer sk_test_wrong', 'Bearer ', 'Basic abc', `Bearer ${app.secretKey}x`, 'Bearer op_x']) {
      const res = await app.rest('GET', '/v1/users', undefined, { authorization: value });
      expect(res.status, value).toBe(401);
      expect(['invalid_api_key', 'missing_credentials']).toContain(res.body.error.code);
    }
  });

  it("a key of application A with B's x-application-id is 401", async () => {
    const a = await suite.server.createApp();
    const b = await suite.server.createApp();
    const res = await a.rest('GET', '/v1/users', undefined, { 'x-application-id': b.id });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('invalid_api_key');
    const created = await a.rest('POST', '/v1/users', { primary_email: 'cross@example.com' }, { 'x-application-id': b.id });
    expect(created.status).toBe(401);
    expect((await b.rest('GET', '/v1/users')).body.data.total).toBe(0);
  });

  it("B's key ids through A's key are 404 and change nothing", async () => {
    const a = await suite.server.createApp();
    const b = await suite.server.createApp();
    const bKey = (await b.rest('GET', '/v1/api-keys')).body.data[0];
    const res = await a.rest('DELETE', `/v1/api-keys/${bKey.id}`);
    expect(res.status).toBe(404);
    expect((await b.rest('GET', '/v1/users')).status).toBe(200);
  });
});

describe('SDK', () => {
  it('creates and lists keys, and throws GatehouseError with code and status', async () => {
    const app = await suite.server.createApp();
    const created = await app.sdk.apiKeys.create({ name: 'sdk', scopes: ['users:read'] });
    expect(created.secret).toMatch(/^sk_test_/);
    expect((await app.sdk.apiKeys.list()).map((k) => k.id)).toContain(created.id);
    const error = await app.sdk.apiKeys.create({ name: 'bad', scopes: ['nope'] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatehouseError);
    expect(error).toMatchObject({ code: 'unknown_scope', status: 422 });
    const revoked = await app.sdk.apiKeys.revoke({ id: created.id });
    expect(revoked).toEqual({ id: created.id, deleted: true });
  });
});

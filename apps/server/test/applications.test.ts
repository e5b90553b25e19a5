import { describe, expect, it } from 'vitest';
import { rawRequest } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite({ smtp: false });

const operator = (method: string, path: string, body?: unknown, token = suite.server.operatorToken) =>
  rawRequest(suite.server.url, method, path, { body, headers: { authorization: `Bearer ${token}` } });

describe('operator token', () => {
  it('is required to create, list and delete applications', async () => {
    for (const [method, path] of [
      ['POST', '/v1/applications'],
      ['GET', '/v1/applications'],
      ['DELETE', '/v1/applications/00000000-0000-7000-8000-000000000000'],
    ] as const) {
      const missing = await rawRequest(suite.server.url, method, path, { body: method === 'POST' ? { name: 'x' } : undefined });
      expect(missing.status, `${method} ${path}`).toBe(401);
      expect(missing.body.error.code).toBe('missing_credentials');
      const wrong = await operator(method, path, method === 'POST' ? { name: 'x' } : undefined, 'op_wrong');
      expect(wrong.status).toBe(401);
      expect(wrong.body.error.code).toBe('invalid_credentials');
    }
  });

  it('a secret key is never an operator token', async () => {
    const app = await suite.server.createApp();
    const res = await operator('GET', '/v1/applications', undefined, app.secretKey);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('invalid_credentials');
  });
});

describe('applications', () => {
  it('creates an application with its first secret key, shown once', async () => {
    const res = await operator('POST', '/v1/applications', {
      name: 'Shop',
      environment: 'production',
      allowed_origins: ['https://shop.example.com', 'http://localhost:3000'],
    });
    expect(res.status).toBe(201);
    const { application, secret_key } = res.body.data;
    expect(application).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Shop',
      environment: 'production',
      allowed_origins: ['https://shop.example.com', 'http://localhost:3000'],
      reserved: false,
      settings: expect.objectContaining({ sign_up: 'open', mfa: 'optional', consent_documents: [] }),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(secret_key.secret).toMatch(/^sk_live_[0-9A-Za-z]{43}$/);
    expect(secret_key.prefix).toBe(secret_key.secret.slice(0, 12));
    expect(secret_key.scopes).toEqual(['*']);

    const dev = await operator('POST', '/v1/applications', { name: 'Dev' });
    expect(dev.body.data.application.environment).toBe('development');
    expect(dev.body.data.secret_key.secret).toMatch(/^sk_test_/);
  });

  it('lists applications newest first with pagination', async () => {
    const a = (await operator('POST', '/v1/applications', { name: 'List A' })).body.data.application;
    const b = (await operator('POST', '/v1/applications', { name: 'List B' })).body.data.application;
    const res = await operator('GET', '/v1/applications?limit=2');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ limit: 2, offset: 0 });
    expect(res.body.data.total).toBeGreaterThanOrEqual(2);
    expect(res.body.data.applications).toHaveLength(2);
    expect(JSON.stringify(res.body)).not.toContain('sk_');
    // Other test files create applications on the same database meanwhile: only the relative order is ours.
    const all = (await operator('GET', '/v1/applications?limit=100')).body.data.applications.map((x: { id: string }) => x.id);
    expect(all.indexOf(b.id)).toBeGreaterThanOrEqual(0);
    expect(all.indexOf(b.id)).toBeLessThan(all.indexOf(a.id));
  });

  it('rejects invalid origins and settings with 422 and the failing paths', async () => {
    const cases: Array<[unknown, string]> = [
      [{ name: 'x', allowed_origins: ['https://a.example.com/path'] }, 'allowed_origins.0'],
      [{ name: 'x', allowed_origins: ['ftp://a.example.com'] }, 'allowed_origins.0'],
      [{ name: 'x', allowed_origins: ['https://a.example.com/'] }, 'allowed_origins.0'],
      [{ name: 'x', environment: 'staging' }, 'environment'],
      [{ name: '' }, 'name'],
      [{ name: 'x', settings: { sign_up: 'maybe' } }, 'settings.sign_up'],
      [{ name: 'x', settings: { session: { access_token_ttl_s: 5 } } }, 'settings.session.access_token_ttl_s'],
      [{ name: 'x', settings: { unknown_key: 1 } }, 'settings'],
      [{ name: 'x', id: '00000000-0000-7000-8000-000000000000' }, '(root)'],
    ];
    for (const [body, path] of cases) {
      const res = await operator('POST', '/v1/applications', body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    }
  });

  it('deletes an application and everything it owns', async () => {
    const app = await suite.server.createApp();
    await app.rest('POST', '/v1/users', { primary_email: 'gone@example.com' });
    const res = await operator('DELETE', `/v1/applications/${app.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: app.id, deleted: true });
    const after = await app.rest('GET', '/v1/users');
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('application_not_resolved');
    expect((await operator('DELETE', `/v1/applications/${app.id}`)).status).toBe(404);
  });
});

describe('application settings (secret key)', () => {
  it('GET and PATCH answer only for the application of x-application-id', async () => {
    const a = await suite.server.createApp();
    const b = await suite.server.createApp();
    expect((await a.rest('GET', `/v1/applications/${a.id}`)).body.data.id).toBe(a.id);
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { name: 'hijacked' }],
    ] as const) {
      const res = await a.rest(method, `/v1/applications/${b.id}`, body);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    expect((await b.rest('GET', `/v1/applications/${b.id}`)).body.data.name).toBe('Test app');
  });

  it('PATCH replaces each top-level settings key it names and keeps the others', async () => {
    const app = await suite.server.createApp({ allowed_origins: ['https://app.example.com'] });
    const first = await app.rest('PATCH', `/v1/applications/${app.id}`, {
      settings: {
        sign_up: 'closed',
        consent_documents: [{ doc_type: 'terms', url: 'https://app.example.com/terms', version: '1' }],
      },
    });
    expect(first.status).toBe(200);
    const second = await app.rest('PATCH', `/v1/applications/${app.id}`, {
      name: 'Renamed',
      settings: { magic_link: { ttl_s: 300 } },
    });
    expect(second.status).toBe(200);
    expect(second.body.data.name).toBe('Renamed');
    expect(second.body.data.settings).toMatchObject({
      sign_up: 'closed',
      consent_documents: [{ doc_type: 'terms', version: '1' }],
      magic_link: { ttl_s: 300, redirect_url: null },
      mfa: 'optional',
    });
  });

  it('refuses a magic-link redirect outside the allowed origins (422 invalid_url)', async () => {
    const app = await suite.server.createApp({ allowed_origins: ['https://app.example.com'] });
    const refused = await app.rest('PATCH', `/v1/applications/${app.id}`, {
      settings: { magic_link: { redirect_url: 'https://evil.example.net/callback' } },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('invalid_url');
    const accepted = await app.rest('PATCH', `/v1/applications/${app.id}`, {
      settings: { magic_link: { redirect_url: 'https://app.example.com/callback' } },
    });
    expect(accepted.status).toBe(200);
    // Removing the origin later would leave the redirect dangling: refused too.
    const dangling = await app.rest('PATCH', `/v1/applications/${app.id}`, { allowed_origins: ['https://other.example.com'] });
    expect(dangling.status).toBe(422);
    expect(dangling.body.error.code).toBe('invalid_url');
  });

  it('needs settings scopes', async () => {
    const app = await suite.server.createApp();
    const reader = (await app.rest('POST', '/v1/api-keys', { name: 'reader', scopes: ['settings:read'] })).body.data.secret;
    const headers = { authorization: `Bearer ${reader}` };
    expect((await app.rest('GET', `/v1/applications/${app.id}`, undefined, headers)).status).toBe(200);
    const patch = await app.rest('PATCH', `/v1/applications/${app.id}`, { name: 'no' }, headers);
    expect(patch.status).toBe(403);
    expect(patch.body.error.code).toBe('insufficient_scope');
  });
});

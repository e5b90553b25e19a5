import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { procedureKinds } from '../../../packages/sdk/scripts/procedure-kinds.ts';
import { PROCEDURES } from '../../../packages/sdk/src/procedures.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite({ smtp: false });

const run = promisify(execFile);

describe('a plain REST client in another language', () => {
  it('Python (standard library only) creates a user and lists organizations', async () => {
    const app = await suite.server.createApp();
    const script = fileURLToPath(new URL('./clients/rest_client.py', import.meta.url));
    const { stdout } = await run('python3', [script, suite.server.url, app.id, app.secretKey, 'py@example.com']);
    const seen = JSON.parse(stdout);
    expect(seen.created_status).toBe(201);
    expect(seen.user).toMatchObject({ primary_email: 'py@example.com', status: 'active', email_verified: false });
    expect(seen.duplicate_status).toBe(409);
    expect(seen.duplicate_code).toBe('email_taken');
    expect(seen.listed_status).toBe(200);
    expect(seen.organizations).toMatchObject({ total: 1, limit: 10, offset: 0 });
    expect(seen.organizations.organizations[0]).toMatchObject({ name: 'Python Guild', slug: 'python-guild', member_count: 0 });
  });
});

describe('the SDK', () => {
  it('knows every procedure of the router (src/procedures.ts is regenerated, not stale)', () => {
    expect(PROCEDURES).toEqual(procedureKinds());
  });

  it('runs the main flows over tRPC with typed results', async () => {
    const app = await suite.server.createApp();
    const user = await app.sdk.users.create({ primary_email: 'sdk@example.com', profile: { plan: 'pro' } });
    expect(user).toMatchObject({ primary_email: 'sdk@example.com', profile: { plan: 'pro' }, merged_into: null });
    const org = await app.sdk.organizations.create({ name: 'SDK Org' });
    const member = await app.sdk.organizations.members.add({ id: org.id, user_id: user.id, role: 'admin' });
    expect(member).toMatchObject({ user_id: user.id, role: 'admin', email: 'sdk@example.com', user_status: 'active' });
    const page = await app.sdk.organizations.list({ search: 'sdk' });
    expect(page).toMatchObject({ total: 1, limit: 25, offset: 0 });
    expect(page.organizations[0]).toMatchObject({ id: org.id, member_count: 1 });
    const users = await app.sdk.users.list();
    expect(users.users.map((u) => u.id)).toEqual([user.id]);
    await expect(app.sdk.users.create({ primary_email: 'SDK@example.com' })).rejects.toMatchObject({
      code: 'email_taken',
      status: 409,
    });
    await expect(app.sdk.users.get({ id: '00000000-0000-7000-8000-000000000000' })).rejects.toMatchObject({
      code: 'not_found',
      status: 404,
    });
    await expect(app.sdk.users.list({ limit: 500 })).rejects.toMatchObject({ code: 'validation_failed', status: 422 });
  });
});

import { ensureConsoleApplication, type Services } from '@gatehouse/api';
import { createGatehouse } from '@gatehouse/sdk';
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { enrolTotp, totpCode } from './helpers/mfa.ts';
import {
  expectError,
  isoDate,
  MISSING,
  ok,
  rawRequest,
  rejection,
  sql,
  startServer,
  type TestApp,
  type TestServer,
  UUID,
} from './helpers/server.ts';
import { endUser, type SignInResult, type Tokens } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

const operatorHeaders = (server: TestServer) => ({ authorization: `Bearer ${server.operatorToken}` });
const asOperator = (server: TestServer, method: string, path: string, body?: unknown) =>
  rawRequest(server.url, method, path, { body, headers: operatorHeaders(server) });

/** A call from the console: the operator's console access token, for the target application. */
const fromConsole = (token: string, target: string, method: string, path: string, body?: unknown) =>
  rawRequest(suite.server.url, method, path, { body, headers: { authorization: `Bearer ${token}`, 'x-application-id': target } });

async function consoleId(server: TestServer): Promise<string> {
  const [row] = await sql(server, "select id from applications where reserved = 'console'");
  return row.id;
}

/** The console application as a browser calls it (its publishable id only). */
async function consoleApp(server: TestServer): Promise<TestApp> {
  const id = await consoleId(server);
  const at = (base: string): TestApp => ({
    id,
    secretKey: '',
    application: { id },
    rest: (method, path, body, headers) =>
      rawRequest(base, method, path, { body, headers: { 'x-application-id': id, ...headers } }),
    // The console has no secret key: these tests call it as a browser only.
    sdk: undefined as never,
    via: (other) => at(other.url),
  });
  return at(server.url);
}

/** Adds an operator with the operator token (201), answering the operator and the one-time link's token. */
async function addOperator(body: Record<string, unknown>) {
  const added = await ok(asOperator(suite.server, 'POST', '/v1/operators', body), 201);
  const token = new URL(added.sign_in_link.url).searchParams.get('token') ?? '';
  return { ...added, token };
}

/** Opens the sign-in link as the console page will: the console application's magic-link verify. */
async function signInWithLink(token: string): Promise<Tokens> {
  const app = await consoleApp(suite.server);
  const result = await ok<SignInResult>(endUser(app, 'POST', '/v1/auth/magic-link/verify', { token }));
  if (result.status !== 'complete') throw new Error(`expected complete, got ${result.status}`);
  return result.tokens;
}

/** Enrols TOTP on the operator's console account and steps the session up: answers the aal 2 tokens. */
async function stepUp(tokens: Tokens, userId: string): Promise<Tokens> {
  const app = await consoleApp(suite.server);
  const { secret } = await enrolTotp(app, tokens.access_token);
  // The confirming code spent the current step: as if long ago.
  await sql(suite.server, 'update mfa_factors set last_used_step = null where user_id = ?', [userId]);
  const challenge = await ok(endUser(app, 'POST', '/v1/auth/step-up', undefined, tokens.access_token));
  const raised = await ok<SignInResult>(
    endUser(app, 'POST', '/v1/auth/mfa/totp/verify', { pending_token: challenge.pending_token, code: totpCode(secret) }),
  );
  if (raised.status !== 'complete') throw new Error(`expected complete, got ${raised.status}`);
  expect(raised.tokens.aal).toBe(2);
  return raised.tokens;
}

describe('the console application', () => {
  it('exists from the start, is listed as reserved, cannot be deleted, and has the console page\u2019s OpenID client', async () => {
    const id = await consoleId(suite.server);
    expect(id).toMatch(UUID);
    const page = await ok(asOperator(suite.server, 'GET', '/v1/applications?limit=100'));
    const listed = page.applications.find((a: { id: string }) => a.id === id);
    expect(listed).toMatchObject({ name: 'Gatehouse console', reserved: true, settings: { sign_up: 'closed' } });
    const other = await suite.server.createApp();
    expect(page.applications.every((a: { id: string; reserved: boolean }) => a.reserved === (a.id === id))).toBe(true);
    expect((await ok(asOperator(suite.server, 'GET', '/v1/applications?limit=100'))).applications[0]).toMatchObject({
      id: other.id,
      reserved: false,
    });

    expectError(await asOperator(suite.server, 'DELETE', `/v1/applications/${id}`), 409, 'conflict');
    expect(await consoleId(suite.server)).toBe(id);
    expectError(await asOperator(suite.server, 'DELETE', `/v1/applications/${MISSING}`), 404, 'not_found');

    const clients = await sql(suite.server, 'select * from oauth2_clients where application_id = ?', [id]);
    expect(clients).toHaveLength(1);
    expect(clients[0]).toMatchObject({
      type: 'public',
      secret_hash: null,
      redirect_uris: ['http://gatehouse.test/console/callback'],
      post_logout_redirect_uris: ['http://gatehouse.test/console/'],
    });
    // Its hosted sign-in page serves; sign-up is closed: a stranger's magic link is never sent.
    expect((await rawRequest(suite.server.url, 'GET', `/a/${id}/sign-in`)).status).toBe(200);
    const stranger = uniqueEmail('stranger');
    await ok(endUser(await consoleApp(suite.server), 'POST', '/v1/auth/magic-link/start', { email: stranger }));
    expect(await sql(suite.server, 'select status from messages where application_id = ? and "to" = ?', [id, stranger])).toEqual([
      { status: 'suppressed' },
    ]);
    // Signing keys: the console's access tokens are signed by its own key.
    expect(
      await sql(suite.server, "select id from signing_keys where application_id = ? and status = 'active'", [id]),
    ).toHaveLength(1);
  });

  it('is created once when several processes start together on one database, and the start says how to add an operator', async () => {
    const logLines: string[] = [];
    const server = await startServer({ logLines });
    try {
      expect(logLines.filter((line) => line.includes('No console operator yet'))).toHaveLength(1);
      expect(logLines.join('\n')).toContain('gatehouse operators add');
      // The set-up link is a secret: printed on the terminal, never logged.
      expect(server.server.setupLink).toMatch(/\/console\/setup\?token=cs_/);
      expect(logLines.join('\n')).not.toContain('cs_');
      // As if the database had none: processes starting together (each with its own services) race to create it.
      await sql(server, "delete from applications where reserved = 'console'");
      const starts = await Promise.all(
        Array.from({ length: 8 }, () => ensureConsoleApplication({ ...server.server.services } as Services)), // a copy: its own cache
      );
      expect(starts.filter((s) => s.created)).toHaveLength(1);
      expect(new Set(starts.map((s) => s.id)).size).toBe(1);
      expect(await sql(server, "select id from applications where reserved = 'console'")).toHaveLength(1);
      // Another process starting later finds it; a new base URL moves its origin and its client's URIs.
      const peer = await startServer({ ...server.started, logLines: undefined, baseUrl: 'https://id.example.test' });
      try {
        const rows = await sql(server, "select id, allowed_origins from applications where reserved = 'console'");
        expect(rows).toEqual([{ id: starts[0]?.id, allowed_origins: ['https://id.example.test'] }]);
        expect(
          await sql(server, 'select redirect_uris, post_logout_redirect_uris from oauth2_clients where application_id = ?', [
            rows[0].id,
          ]),
        ).toEqual([
          {
            redirect_uris: ['https://id.example.test/console/callback'],
            post_logout_redirect_uris: ['https://id.example.test/console/'],
          },
        ]);
      } finally {
        await peer.close();
      }
    } finally {
      await server.close();
    }
  });
});

describe('operator routes', () => {
  it('add, list, set a role and remove, with the operator token only', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('ops');
    const added = await addOperator({ email, role: 'viewer', application_id: app.id });
    expect(added.operator).toEqual({
      id: expect.stringMatching(UUID),
      user_id: expect.stringMatching(UUID),
      email,
      roles: [{ application_id: app.id, role: 'viewer' }],
      created_at: isoDate,
    });
    expect(added.sign_in_link.url).toMatch(/^http:\/\/gatehouse\.test\/console\/sign-in\?token=ml_/);
    const ttl = Date.parse(added.sign_in_link.expires_at) - Date.now();
    expect(ttl).toBeGreaterThan(9 * 60_000);
    expect(ttl).toBeLessThanOrEqual(10 * 60_000);
    // The link is stored as a hash only; the user is the console application's, verified.
    const [link] = await sql(suite.server, 'select * from magic_links where email = ?', [email]);
    expect(JSON.stringify(link)).not.toContain(added.token);
    const [user] = await sql(suite.server, 'select * from users where id = ?', [added.operator.user_id]);
    expect(user).toMatchObject({ application_id: await consoleId(suite.server), email_verified: true });

    // Adding the same address again gives a role and a new link, not a second operator.
    const again = await addOperator({ email, role: 'owner', application_id: null });
    expect(again.operator.id).toBe(added.operator.id);
    expect(again.operator.roles).toEqual([
      { application_id: app.id, role: 'viewer' },
      { application_id: null, role: 'owner' },
    ]);
    expect(again.token).not.toBe(added.token);

    const listed = await ok(asOperator(suite.server, 'GET', '/v1/operators?limit=100'));
    expect(listed.operators.find((o: { id: string }) => o.id === added.operator.id)).toEqual(again.operator);

    const changed = await ok(
      asOperator(suite.server, 'PUT', `/v1/operators/${added.operator.id}/roles`, { application_id: null, role: null }),
    );
    expect(changed.roles).toEqual([{ application_id: app.id, role: 'viewer' }]);
    const events = await sql(
      suite.server,
      "select type, actor_type, actor_id from events where type like 'operator.%' and data->>'id' = ? order by created_at, id",
      [added.operator.id],
    );
    expect(events).toEqual([
      { type: 'operator.created', actor_type: 'operator', actor_id: 'operator' },
      { type: 'operator.updated', actor_type: 'operator', actor_id: 'operator' },
      { type: 'operator.updated', actor_type: 'operator', actor_id: 'operator' },
    ]);

    // A role for an application that does not exist, or for the console itself: 404.
    for (const application_id of [MISSING, await consoleId(suite.server)]) {
      expectError(
        await asOperator(suite.server, 'POST', '/v1/operators', { email, role: 'viewer', application_id }),
        404,
        'not_found',
      );
    }
    expectError(await asOperator(suite.server, 'POST', '/v1/operators', { email, role: 'root' }), 422, 'validation_failed');
    // A secret key is not the operator token.
    expectError(
      await rawRequest(suite.server.url, 'GET', '/v1/operators', { headers: { authorization: `Bearer ${app.secretKey}` } }),
      401,
      'invalid_credentials',
    );
    expectError(await rawRequest(suite.server.url, 'GET', '/v1/operators'), 401, 'missing_credentials');

    expect(await ok(asOperator(suite.server, 'DELETE', `/v1/operators/${added.operator.id}`))).toEqual({
      id: added.operator.id,
      deleted: true,
    });
    expectError(await asOperator(suite.server, 'DELETE', `/v1/operators/${added.operator.id}`), 404, 'not_found');
    expectError(
      await asOperator(suite.server, 'PUT', `/v1/operators/${added.operator.id}/roles`, { role: 'viewer' }),
      404,
      'not_found',
    );
  });

  it('the SDK drives them', async () => {
    const app = await suite.server.createApp();
    const sdk = createGatehouse({ baseUrl: suite.server.url, operatorToken: suite.server.operatorToken });
    const email = uniqueEmail('sdk-op');
    const { operator, sign_in_link } = await sdk.operators.add({ email, role: 'support', application_id: app.id });
    expect(sign_in_link.url).toContain('/console/sign-in?token=ml_');
    expect((await sdk.operators.list({ limit: 100 })).operators.map((o) => o.id)).toContain(operator.id);
    expect((await sdk.operators.setRole({ id: operator.id, application_id: app.id, role: 'admin' })).roles).toEqual([
      { application_id: app.id, role: 'admin' },
    ]);
    expect(await sdk.operators.remove({ id: operator.id })).toEqual({ id: operator.id, deleted: true });
    expect((await rejection(sdk.operators.remove({ id: operator.id }))).code).toBe('not_found');
  });
});

describe('the console credential', () => {
  it('a viewer reads an application\u2019s users, is refused writes, and sees no other application', async () => {
    const app = await suite.server.createApp();
    const other = await suite.server.createApp();
    await ok(app.rest('POST', '/v1/users', { primary_email: uniqueEmail('customer') }), 201);
    const { token, operator } = await addOperator({ email: uniqueEmail('viewer'), role: 'viewer', application_id: app.id });
    const tokens = await signInWithLink(token);
    expect(tokens.aal).toBe(1);
    expect(decodeJwt(tokens.access_token)).toMatchObject({ aud: await consoleId(suite.server), aal: 1 });
    expect(await sql(suite.server, 'select aal, amr from sessions where id = ?', [tokens.session_id])).toEqual([
      { aal: 1, amr: ['email'] },
    ]);
    // The link opens once.
    expectError(
      await endUser(await consoleApp(suite.server), 'POST', '/v1/auth/magic-link/verify', { token }),
      401,
      'invalid_verification',
    );

    const users = await ok(fromConsole(tokens.access_token, app.id, 'GET', '/v1/users'));
    expect(users.total).toBe(1);
    // The routes that check a secret key inside their own statement take the console's token too.
    const [customer] = users.users;
    expect(await ok(fromConsole(tokens.access_token, app.id, 'GET', `/v1/users/${customer.id}`))).toEqual(customer);
    expectError(await fromConsole(tokens.access_token, app.id, 'GET', `/v1/users/${MISSING}`), 404, 'not_found');
    expect(
      await ok(
        fromConsole(tokens.access_token, app.id, 'POST', '/v1/authz/check', {
          object: 'document:plan',
          relation: 'viewer',
          subject: `user:${customer.id}`,
        }),
      ),
    ).toEqual({ allowed: false });
    expectError(await fromConsole(tokens.access_token, other.id, 'GET', `/v1/users/${customer.id}`), 404, 'not_found');
    expectError(
      await fromConsole(tokens.access_token, app.id, 'POST', '/v1/users', { primary_email: uniqueEmail('x') }),
      403,
      'insufficient_scope',
    );
    // No role for the other application, an unknown one, or the console itself: 404 as for another tenant's.
    for (const target of [other.id, MISSING, await consoleId(suite.server)]) {
      expectError(await fromConsole(tokens.access_token, target, 'GET', '/v1/users'), 404, 'not_found', target);
    }
    // Not an instance-wide owner: the operator routes refuse.
    expectError(await fromConsole(tokens.access_token, app.id, 'GET', '/v1/applications'), 403, 'insufficient_scope');
    expectError(await fromConsole(tokens.access_token, app.id, 'GET', '/v1/operators'), 403, 'insufficient_scope');
    // A forged or foreign bearer is still the secret key's answer.
    expectError(await fromConsole('not-a-token', app.id, 'GET', '/v1/users'), 401, 'invalid_api_key');
    expect(operator.roles).toEqual([{ application_id: app.id, role: 'viewer' }]);
  });

  it('an admin writes only at aal 2, as the operator; a lowered role or a removal counts from the next request', async () => {
    const app = await suite.server.createApp();
    const { token, operator } = await addOperator({ email: uniqueEmail('admin'), role: 'admin', application_id: app.id });
    const tokens = await signInWithLink(token);
    const create = (accessToken: string) =>
      fromConsole(accessToken, app.id, 'POST', '/v1/users', { primary_email: uniqueEmail('made') });
    expectError(await create(tokens.access_token), 403, 'step_up_required');

    const raised = await stepUp(tokens, operator.user_id);
    const created = await ok(create(raised.access_token), 201);
    const [event] = await sql(
      suite.server,
      "select actor_type, actor_id from events where application_id = ? and type = 'user.created' and data->>'id' = ?",
      [app.id, created.id],
    );
    expect(event).toEqual({ actor_type: 'operator', actor_id: operator.id });
    const audit = await ok(app.rest('GET', `/v1/audit-logs?actor_id=${operator.id}`));
    expect(audit.audit_logs).toEqual([
      expect.objectContaining({ action: 'user.created', actor: expect.objectContaining({ type: 'operator', id: operator.id }) }),
    ]);
    // The token issued before the step-up keeps its aal 1.
    expectError(await create(tokens.access_token), 403, 'step_up_required');

    // Lowered to viewer: the next write is refused by scope.
    await ok(asOperator(suite.server, 'PUT', `/v1/operators/${operator.id}/roles`, { application_id: app.id, role: 'viewer' }));
    expectError(await create(raised.access_token), 403, 'insufficient_scope');
    await ok(fromConsole(raised.access_token, app.id, 'GET', '/v1/users'));
    // Role taken away: 404.
    await ok(asOperator(suite.server, 'PUT', `/v1/operators/${operator.id}/roles`, { application_id: app.id, role: null }));
    expectError(await fromConsole(raised.access_token, app.id, 'GET', '/v1/users'), 404, 'not_found');

    // Removed: the console sessions are revoked, and the token stops working at once.
    await ok(asOperator(suite.server, 'PUT', `/v1/operators/${operator.id}/roles`, { application_id: app.id, role: 'admin' }));
    await ok(fromConsole(raised.access_token, app.id, 'GET', '/v1/users'));
    await ok(asOperator(suite.server, 'DELETE', `/v1/operators/${operator.id}`));
    expectError(await fromConsole(raised.access_token, app.id, 'GET', '/v1/users'), 401, 'invalid_token');
    const sessions = await sql(suite.server, 'select revoked_at from sessions where user_id = ?', [operator.user_id]);
    expect(sessions.length).toBeGreaterThan(0);
    expect(sessions.every((s: { revoked_at: unknown }) => s.revoked_at !== null)).toBe(true);
  });

  it('an instance-wide owner manages applications and operators from the console; an application owner deletes only theirs', async () => {
    const mine = await suite.server.createApp();
    const theirs = await suite.server.createApp();
    const owner = await addOperator({ email: uniqueEmail('root'), role: 'owner', application_id: null });
    const ownerTokens = await signInWithLink(owner.token);
    // Reads at aal 1: any application, the applications list, the operators.
    await ok(fromConsole(ownerTokens.access_token, theirs.id, 'GET', '/v1/users'));
    await ok(fromConsole(ownerTokens.access_token, mine.id, 'GET', '/v1/applications'));
    await ok(fromConsole(ownerTokens.access_token, mine.id, 'GET', '/v1/operators'));
    // Writes need aal 2.
    expectError(
      await fromConsole(ownerTokens.access_token, mine.id, 'POST', '/v1/applications', { name: 'From the console' }),
      403,
      'step_up_required',
    );
    const raised = await stepUp(ownerTokens, owner.operator.user_id);
    const made = await ok(
      fromConsole(raised.access_token, mine.id, 'POST', '/v1/applications', { name: 'From the console' }),
      201,
    );
    const added = await ok(
      fromConsole(raised.access_token, mine.id, 'POST', '/v1/operators', {
        email: uniqueEmail('app-owner'),
        role: 'owner',
        application_id: mine.id,
      }),
      201,
    );
    const [event] = await sql(
      suite.server,
      "select actor_type, actor_id from events where type = 'operator.created' and data->>'id' = ?",
      [added.operator.id],
    );
    expect(event).toEqual({ actor_type: 'operator', actor_id: owner.operator.id });

    // The application's owner may delete it (at aal 2), and no other.
    const appOwnerTokens = await stepUp(
      await signInWithLink(new URL(added.sign_in_link.url).searchParams.get('token') ?? ''),
      added.operator.user_id,
    );
    expectError(await fromConsole(appOwnerTokens.access_token, mine.id, 'GET', '/v1/applications'), 403, 'insufficient_scope');
    expectError(
      await fromConsole(appOwnerTokens.access_token, mine.id, 'DELETE', `/v1/applications/${theirs.id}`),
      404,
      'not_found',
    );
    expect(await ok(fromConsole(appOwnerTokens.access_token, mine.id, 'DELETE', `/v1/applications/${mine.id}`))).toEqual({
      id: mine.id,
      deleted: true,
    });
    expect(await ok(fromConsole(raised.access_token, theirs.id, 'DELETE', `/v1/applications/${made.application.id}`))).toEqual({
      id: made.application.id,
      deleted: true,
    });
  });
});

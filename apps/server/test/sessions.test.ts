import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { acrossServers, expectError, ok, type RestResponse, sql, type TestApp, UUID } from './helpers/server.ts';
import { endUser, requestMagicLink, signIn, type Tokens } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

const UNKNOWN_ID = '01890000-0000-7000-8000-000000000000';

const me = (app: TestApp, token: string) => endUser(app, 'GET', '/v1/auth/me', undefined, token);
const refresh = (app: TestApp, refreshToken: string) =>
  endUser<Tokens>(app, 'POST', '/v1/auth/token/refresh', { refresh_token: refreshToken });

async function eventsOf(app: TestApp, type: string) {
  const page = await ok(app.rest('GET', `/v1/events?limit=100&type=${type}`));
  return page.events as Array<{ id: string; type: string; data: Record<string, any>; created_at: string }>;
}

/**
 * Moves the session's last rotation past the refresh grace (30 s by default): a replay of the token rotated last is then
 * reuse, not a client retrying a lost answer (refresh-grace.test.ts tests the grace itself). Time is the database's.
 */
const pastGrace = (sessionId: string) =>
  sql(suite.server, `update refresh_tokens set created_at = created_at - interval '1 hour' where session_id = ?`, [sessionId]);

async function expectDead(app: TestApp, tokens: Tokens, label: string) {
  expectError(await me(app, tokens.access_token), 401, 'invalid_token', `${label}: access token`);
  expectError(await refresh(app, tokens.refresh_token), 401, 'invalid_token', `${label}: refresh token`);
}

describe('refresh tokens: rotation, reuse detection, races, timeouts', () => {
  it('every refresh answers a new pair for the same session', async () => {
    const app = await suite.server.createApp();
    const first = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const seen = new Set([first.refresh_token]);
    let current = first;
    for (let i = 0; i < 3; i++) {
      const next = await ok(refresh(app, current.refresh_token));
      expect(next).toEqual({
        access_token: expect.any(String),
        refresh_token: expect.stringMatching(/^rt_/),
        token_type: 'Bearer',
        expires_in: 600,
        aal: 1,
        session_id: first.session_id,
      });
      expect(seen.has(next.refresh_token)).toBe(false);
      seen.add(next.refresh_token);
      expect(decodeJwt(next.access_token)).toMatchObject({ sid: first.session_id, sub: decodeJwt(first.access_token).sub });
      expect((await me(app, next.access_token)).status).toBe(200);
      current = next;
    }
    // Refresh tokens are stored hashed only.
    const stored = await sql(suite.server, 'select refresh_token_hash from sessions where id = ?', [first.session_id]);
    expect(JSON.stringify(stored)).not.toContain(current.refresh_token);
    expect(JSON.stringify(await sql(suite.server, 'select * from refresh_tokens'))).not.toMatch(/rt_/);
  });

  it('reusing a rotated refresh token after the grace revokes the whole session', async () => {
    const app = await suite.server.createApp();
    const t0 = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const t1 = await ok(refresh(app, t0.refresh_token));
    const t2 = await ok(refresh(app, t1.refresh_token));
    expect((await me(app, t2.access_token)).status).toBe(200);
    await pastGrace(t0.session_id);

    // t1's refresh token was already rotated: presenting it again is reuse (a stolen copy, or a replay).
    expectError(await refresh(app, t1.refresh_token), 401, 'invalid_token', 'reuse');
    // The whole session is gone: the newest access token and the newest refresh token, and every older one.
    await expectDead(app, t2, 'newest');
    await expectDead(app, t1, 'middle');
    await expectDead(app, t0, 'oldest');
    const revoked = await eventsOf(app, 'session.revoked');
    expect(revoked.map((e) => e.data.id)).toEqual([t0.session_id]);
    expect(revoked[0]!.data.reason).toBe('refresh_token_reuse');
  });

  it('20 concurrent refreshes of one token (over two servers on PostgreSQL): one rotation, every answer its one successor, and after the grace the original is dead', async () => {
    const app = await suite.server.createApp();
    const tokens = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const results = await acrossServers(suite.server, 20, (server) => refresh(app.via(server), tokens.refresh_token));
    const statuses = results.map((r) => r.status);
    // The token is consumed once: one rotation happened, and every concurrent use answers that rotation's pair (the
    // grace), never a second, independent refresh token.
    expect(
      statuses.every((status) => status === 200),
      `statuses: ${statuses.join(',')}`,
    ).toBe(true);
    const successors = new Set(results.map((r) => r.body.data.refresh_token));
    expect(successors.size).toBe(1);
    const [successor] = [...successors] as [string];
    expect(successor).not.toBe(tokens.refresh_token);
    for (const r of results) expect(r.body.data.session_id).toBe(tokens.session_id);
    const issued = await sql(suite.server, 'select count(*)::int as n from refresh_tokens where session_id = ?', [
      tokens.session_id,
    ]);
    expect(issued[0].n).toBe(2);

    // Past the grace the original token is reuse: it fails, and nothing of the session survives.
    await pastGrace(tokens.session_id);
    expectError(await refresh(app, tokens.refresh_token), 401, 'invalid_token', 'original after the race');
    expectError(await me(app, tokens.access_token), 401, 'invalid_token', 'original access token');
    for (const r of results) await expectDead(app, r.body.data, 'winner');
    const [row] = await sql(suite.server, 'select revoked_at from sessions where id = ?', [tokens.session_id]);
    expect(row.revoked_at).not.toBeNull();
  });

  it('a refresh token of another application is 401 there and leaves its own session alone', async () => {
    const a = await suite.server.createApp();
    const b = await suite.server.createApp();
    const tokens = (await signIn(suite.server, suite.smtp, a, 'ada@example.com')).tokens;
    expectError(await refresh(b, tokens.refresh_token), 401, 'invalid_token', 'A token at B');
    // Nothing happened to A's session: no refresh there, no revocation either.
    expect((await me(a, tokens.access_token)).status).toBe(200);
    const next = await ok(refresh(a, tokens.refresh_token));
    expect((await me(a, next.access_token)).status).toBe(200);
    expect(await eventsOf(b, 'session.revoked')).toEqual([]);
    expect(await eventsOf(a, 'session.revoked')).toEqual([]);

    // Malformed refresh requests.
    expectError(await refresh(a, 'rt_garbage'), 401, 'invalid_token', 'garbage');
    expectError(await endUser(a, 'POST', '/v1/auth/token/refresh', {}), 422, 'validation_failed', 'missing');
    expectError(
      await endUser(a, 'POST', '/v1/auth/token/refresh', { refresh_token: next.refresh_token, session_id: next.session_id }),
      422,
      'validation_failed',
      'unknown field',
    );
    expectError(
      await endUser(a, 'POST', '/v1/auth/token/refresh', { refresh_token: next.refresh_token }, undefined, {
        'x-application-id': undefined,
      }),
      401,
      'application_not_resolved',
    );
    // None of those spent the token.
    expect((await refresh(a, next.refresh_token)).status).toBe(200);
  });

  it('idle timeout (settings.session.idle_timeout_s): a session idle longer cannot be refreshed', async () => {
    const app = await suite.server.createApp({
      settings: { session: { access_token_ttl_s: 60, idle_timeout_s: 300, absolute_timeout_s: 86_400 } },
    });
    const tokens = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    // Active 299 s ago: still inside the idle window.
    await sql(suite.server, `update sessions set last_active_at = now() - interval '299 seconds' where id = ?`, [
      tokens.session_id,
    ]);
    const next = await ok(refresh(app, tokens.refresh_token));
    // Idle for 301 s.
    await sql(suite.server, `update sessions set last_active_at = now() - interval '301 seconds' where id = ?`, [
      tokens.session_id,
    ]);
    expectError(await refresh(app, next.refresh_token), 401, 'invalid_token', 'idle');
    expectError(await refresh(app, next.refresh_token), 401, 'invalid_token', 'idle, again');
  });

  it('a refresh records the activity that keeps the session alive, at most every 30 s', async () => {
    const app = await suite.server.createApp();
    const tokens = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const activity = async () =>
      (
        await sql<{ at: string; ago: number }>(
          suite.server,
          `select last_active_at::text as at, extract(epoch from now() - last_active_at)::float8 as ago from sessions where id = ?`,
          [tokens.session_id],
        )
      )[0]!;
    // Last active 31 s ago: the refresh writes the activity.
    await sql(suite.server, `update sessions set last_active_at = now() - interval '31 seconds' where id = ?`, [
      tokens.session_id,
    ]);
    const next = await ok(refresh(app, tokens.refresh_token));
    const written = await activity();
    expect(written.ago).toBeLessThan(5);
    // Used again at once: the activity just written stands (the row is rewritten in place, no index changes).
    const again = await ok(refresh(app, next.refresh_token));
    expect((await activity()).at).toBe(written.at);
    // 29 s later, still not rewritten; 31 s later, it is.
    await sql(suite.server, `update sessions set last_active_at = now() - interval '29 seconds' where id = ?`, [
      tokens.session_id,
    ]);
    const third = await ok(refresh(app, again.refresh_token));
    expect((await activity()).ago).toBeGreaterThan(28);
    await sql(suite.server, `update sessions set last_active_at = now() - interval '31 seconds' where id = ?`, [
      tokens.session_id,
    ]);
    await ok(refresh(app, third.refresh_token));
    expect((await activity()).ago).toBeLessThan(5);
  });

  it('absolute timeout (settings.session.absolute_timeout_s): the session ends at expires_at, however active', async () => {
    const app = await suite.server.createApp({
      settings: { session: { access_token_ttl_s: 60, idle_timeout_s: 300, absolute_timeout_s: 300 } },
    });
    const tokens = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const [session] = await ok(endUser(app, 'GET', '/v1/auth/sessions', undefined, tokens.access_token));
    const lifetime = Date.parse(session.expires_at) - Date.parse(session.created_at);
    expect(Math.abs(lifetime - 300_000)).toBeLessThan(2_000);

    const next = await ok(refresh(app, tokens.refresh_token));
    // The absolute lifetime is not extended by a refresh.
    const [after] = await ok(endUser(app, 'GET', '/v1/auth/sessions', undefined, next.access_token));
    expect(after.expires_at).toBe(session.expires_at);

    await sql(suite.server, `update sessions set expires_at = now() - interval '1 second' where id = ?`, [tokens.session_id]);
    expectError(await refresh(app, next.refresh_token), 401, 'invalid_token', 'expired');
    expectError(await me(app, next.access_token), 401, 'invalid_token', 'access token of an expired session');
  });
});

describe('the signed-in user’s sessions', () => {
  it('lists live sessions with current: true on the caller’s, and revokes one of them at once', async () => {
    const app = await suite.server.createApp();
    const laptop = (await signIn(suite.server, suite.smtp, app, 'ada@example.com', { headers: { 'user-agent': 'laptop/1.0' } }))
      .tokens;
    const phone = (await signIn(suite.server, suite.smtp, app, 'ada@example.com', { headers: { 'user-agent': 'phone/2.0' } }))
      .tokens;
    const other = await signIn(suite.server, suite.smtp, app, 'mallory@example.com');

    const list = await ok(endUser(app, 'GET', '/v1/auth/sessions', undefined, laptop.access_token));
    expect(Array.isArray(list)).toBe(true);
    expect(list.map((s: { id: string }) => s.id).sort()).toEqual([laptop.session_id, phone.session_id].sort());
    for (const s of list) {
      expect(Object.keys(s).sort()).toEqual(
        [
          'aal',
          'created_at',
          'current',
          'expires_at',
          'id',
          'ip',
          'last_active_at',
          'mfa_enrollment_required',
          'organization_id',
          'user_agent',
        ].sort(),
      );
      expect(s.current).toBe(s.id === laptop.session_id);
      expect(s.user_agent).toBe(s.id === laptop.session_id ? 'laptop/1.0' : 'phone/2.0');
      expect(s.aal).toBe(1);
      expect(s.organization_id).toBeNull();
    }
    const fromPhone = await ok(endUser(app, 'GET', '/v1/auth/sessions', undefined, phone.access_token));
    expect(fromPhone.find((s: { current: boolean }) => s.current).id).toBe(phone.session_id);

    // Another user's session id: 404, and that session is untouched.
    expectError(
      await endUser(app, 'DELETE', `/v1/auth/sessions/${other.tokens.session_id}`, undefined, laptop.access_token),
      404,
      'not_found',
      "another user's session",
    );
    expectError(
      await endUser(app, 'DELETE', `/v1/auth/sessions/${UNKNOWN_ID}`, undefined, laptop.access_token),
      404,
      'not_found',
      'unknown session',
    );
    expect((await me(app, other.tokens.access_token)).status).toBe(200);

    // The laptop signs the phone out: the phone's tokens stop working at once.
    const deleted = await ok(endUser(app, 'DELETE', `/v1/auth/sessions/${phone.session_id}`, undefined, laptop.access_token));
    expect(deleted).toEqual({ id: phone.session_id, deleted: true });
    await expectDead(app, phone, 'revoked phone');
    const remaining = await ok(endUser(app, 'GET', '/v1/auth/sessions', undefined, laptop.access_token));
    expect(remaining.map((s: { id: string }) => s.id)).toEqual([laptop.session_id]);
    expect((await me(app, laptop.access_token)).status).toBe(200);

    // Another application's session id is 404 too (and untouched).
    const elsewhere = await suite.server.createApp();
    const foreign = (await signIn(suite.server, suite.smtp, elsewhere, 'ada@example.com')).tokens;
    expectError(
      await endUser(app, 'DELETE', `/v1/auth/sessions/${foreign.session_id}`, undefined, laptop.access_token),
      404,
      'not_found',
      "another application's session",
    );
    expect((await me(elsewhere, foreign.access_token)).status).toBe(200);
    expectError(await endUser(app, 'GET', '/v1/auth/sessions'), 401, 'missing_credentials');
  });

  it('POST /v1/users/{id}/sessions/revoke signs a user out everywhere and answers the count', async () => {
    const app = await suite.server.createApp();
    const one = await signIn(suite.server, suite.smtp, app, 'ada@example.com');
    const two = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const bystander = await signIn(suite.server, suite.smtp, app, 'grace@example.com');

    expect(await ok(app.rest('POST', `/v1/users/${one.user.id}/sessions/revoke`))).toEqual({ user_id: one.user.id, revoked: 2 });
    await expectDead(app, one.tokens, 'first');
    await expectDead(app, two, 'second');
    expect((await me(app, bystander.tokens.access_token)).status).toBe(200);
    // Nothing left to revoke.
    expect(await ok(app.rest('POST', `/v1/users/${one.user.id}/sessions/revoke`))).toEqual({ user_id: one.user.id, revoked: 0 });

    // Tenant isolation: B cannot revoke A's user's sessions; an end user cannot call it.
    const b = await suite.server.createApp();
    expectError(await b.rest('POST', `/v1/users/${bystander.user.id}/sessions/revoke`), 404, 'not_found', 'other app');
    expectError(
      await endUser(app, 'POST', `/v1/users/${bystander.user.id}/sessions/revoke`, undefined, bystander.tokens.access_token),
      401,
      'invalid_api_key',
      'access token as secret key',
    );
    expect((await me(app, bystander.tokens.access_token)).status).toBe(200);
  });

  it('support: GET /v1/users/{id}/sessions lists a user’s live sessions; DELETE …/sessions/{session_id} ends one (REST and SDK)', async () => {
    const app = await suite.server.createApp();
    const one = await signIn(suite.server, suite.smtp, app, 'ada@example.com');
    const two = await signIn(suite.server, suite.smtp, app, 'ada@example.com');
    const bystander = await signIn(suite.server, suite.smtp, app, 'grace@example.com');

    const listed = await ok(app.rest('GET', `/v1/users/${one.user.id}/sessions`));
    expect(listed.map((s: { id: string }) => s.id)).toEqual([two.tokens.session_id, one.tokens.session_id]);
    expect(listed[0]).toMatchObject({ aal: 1, current: false, organization_id: null, mfa_enrollment_required: false });
    expect(await app.sdk.users.sessions.list({ id: one.user.id })).toEqual(listed);

    // One session ends, at once; the other and the bystander's stay.
    expect(await app.sdk.users.sessions.revoke({ id: one.user.id, session_id: one.tokens.session_id })).toEqual({
      id: one.tokens.session_id,
      deleted: true,
    });
    await expectDead(app, one.tokens, 'revoked by support');
    expect((await me(app, two.tokens.access_token)).status).toBe(200);
    expect((await ok(app.rest('GET', `/v1/users/${one.user.id}/sessions`))).map((s: { id: string }) => s.id)).toEqual([
      two.tokens.session_id,
    ]);
    const revoked = (await eventsOf(app, 'session.revoked')).find((e) => e.data.id === one.tokens.session_id);
    expect(revoked?.data.reason).toBe('revoked_by_admin');
    // Again, another user's session, an unknown one: 404, nothing changes.
    expectError(await app.rest('DELETE', `/v1/users/${one.user.id}/sessions/${one.tokens.session_id}`), 404, 'not_found');
    expectError(await app.rest('DELETE', `/v1/users/${one.user.id}/sessions/${bystander.tokens.session_id}`), 404, 'not_found');
    expectError(await app.rest('GET', `/v1/users/${UNKNOWN_ID}/sessions`), 404, 'not_found');
    expectError(await app.rest('GET', `/v1/users/not-a-uuid/sessions`), 422, 'validation_failed');
    expect((await me(app, bystander.tokens.access_token)).status).toBe(200);

    // Tenant isolation, and the scopes: reading needs users:read, ending one users:write.
    const b = await suite.server.createApp();
    expectError(await b.rest('GET', `/v1/users/${one.user.id}/sessions`), 404, 'not_found');
    expectError(await b.rest('DELETE', `/v1/users/${one.user.id}/sessions/${two.tokens.session_id}`), 404, 'not_found');
    const reader = await ok(app.rest('POST', '/v1/api-keys', { name: 'reader', scopes: ['users:read'] }), 201);
    const asReader = { authorization: `Bearer ${reader.secret}` };
    expect((await app.rest('GET', `/v1/users/${one.user.id}/sessions`, undefined, asReader)).status).toBe(200);
    expectError(
      await app.rest('DELETE', `/v1/users/${one.user.id}/sessions/${two.tokens.session_id}`, undefined, asReader),
      403,
      'insufficient_scope',
    );
    expect((await me(app, two.tokens.access_token)).status).toBe(200);
  });

  it('banning a user revokes their sessions; a banned user cannot sign in, and magic-link start does not tell', async () => {
    const app = await suite.server.createApp();
    const { user, tokens } = await signIn(suite.server, suite.smtp, app, 'ada@example.com');
    // A link mailed before the ban, used after it.
    const pending = await requestMagicLink(suite.smtp, app, 'ada@example.com');

    const banned = await ok(app.rest('PATCH', `/v1/users/${user.id}`, { status: 'banned' }));
    expect(banned.status).toBe('banned');
    await expectDead(app, tokens, 'banned user');

    const verify = await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token: pending.token });
    expectError(verify, 403, 'access_denied', 'banned sign-in');
    expect(await eventsOf(app, 'session.created')).toHaveLength(1);

    // Magic-link start answers a banned address exactly as it answers an active or an unknown one.
    await signIn(suite.server, suite.smtp, app, 'grace@example.com');
    const starts = {
      banned: await endUser(app, 'POST', '/v1/auth/magic-link/start', { email: 'ada@example.com' }),
      active: await endUser(app, 'POST', '/v1/auth/magic-link/start', { email: 'grace@example.com' }),
      unknown: await endUser(app, 'POST', '/v1/auth/magic-link/start', { email: 'nobody@example.com' }),
    };
    const shape = (res: RestResponse) => ({
      status: res.status,
      contentType: res.headers.get('content-type'),
      keys: Object.keys(res.body).sort(),
      success: res.body.success,
      error: res.body.error,
      dataKeys: Object.keys(res.body.data ?? {}).sort(),
      verificationId: UUID.test(res.body.data?.verification_id),
      metaKeys: Object.keys(res.body.meta).sort(),
    });
    expect(shape(starts.banned)).toEqual(shape(starts.active));
    expect(shape(starts.banned)).toEqual(shape(starts.unknown));
    expect(shape(starts.banned)).toMatchObject({ status: 200, success: true, error: null, verificationId: true });
    await suite.smtp.next('grace@example.com');
    await suite.smtp.next('nobody@example.com');
  });

  it('POST /v1/auth/session/organization sets org/org_role (member only), keeps them on refresh, and null clears them', async () => {
    const app = await suite.server.createApp();
    const { user, tokens } = await signIn(suite.server, suite.smtp, app, 'ada@example.com');
    const acme = await ok(app.rest('POST', '/v1/organizations', { name: 'Acme' }), 201);
    const globex = await ok(app.rest('POST', '/v1/organizations', { name: 'Globex' }), 201);
    await ok(app.rest('POST', `/v1/organizations/${acme.id}/members`, { user_id: user.id, role: 'admin' }), 201);
    // Another application's organization, with a member.
    const other = await suite.server.createApp();
    const otherUser = await ok(other.rest('POST', '/v1/users', { primary_email: 'ada@example.com' }), 201);
    const initech = await ok(other.rest('POST', '/v1/organizations', { name: 'Initech' }), 201);
    await ok(other.rest('POST', `/v1/organizations/${initech.id}/members`, { user_id: otherUser.id, role: 'owner' }), 201);

    const switchTo = (organization_id: string | null, token = tokens.access_token) =>
      endUser<Tokens>(app, 'POST', '/v1/auth/session/organization', { organization_id }, token);

    for (const [label, id] of [
      ['not a member', globex.id],
      ["another application's organization", initech.id],
      ['no such organization', UNKNOWN_ID],
    ]) {
      expectError(await switchTo(id!), 404, 'not_found', label);
    }
    expectError(await endUser(app, 'POST', '/v1/auth/session/organization', {}, tokens.access_token), 422, 'validation_failed');
    expectError(await switchTo('acme'), 422, 'validation_failed');
    expectError(
      await endUser(app, 'POST', '/v1/auth/session/organization', { organization_id: acme.id }),
      401,
      'missing_credentials',
    );

    const inAcme = await ok(switchTo(acme.id));
    expect(inAcme.session_id).toBe(tokens.session_id);
    expect(inAcme.refresh_token).not.toBe(tokens.refresh_token);
    expect(decodeJwt(inAcme.access_token)).toMatchObject({
      sub: user.id,
      sid: tokens.session_id,
      org: acme.id,
      org_role: 'admin',
    });
    expect((await me(app, inAcme.access_token)).status).toBe(200);
    const [session] = await ok(endUser(app, 'GET', '/v1/auth/sessions', undefined, inAcme.access_token));
    expect(session.organization_id).toBe(acme.id);

    // Refresh carries the organization, with the member's current role.
    const refreshed = await ok(refresh(app, inAcme.refresh_token));
    expect(decodeJwt(refreshed.access_token)).toMatchObject({ org: acme.id, org_role: 'admin' });
    await ok(app.rest('PATCH', `/v1/organizations/${acme.id}/members/${user.id}`, { role: 'member' }));
    const demoted = await ok(refresh(app, refreshed.refresh_token));
    expect(decodeJwt(demoted.access_token)).toMatchObject({ org: acme.id, org_role: 'member' });

    // null leaves the organization.
    const cleared = await ok(switchTo(null, demoted.access_token));
    expect(decodeJwt(cleared.access_token)).toMatchObject({ org: null, org_role: null });
    const stillCleared = await ok(refresh(app, cleared.refresh_token));
    expect(decodeJwt(stillCleared.access_token)).toMatchObject({ org: null, org_role: null });

    // Removed from the organization: the next refresh no longer carries it.
    const back = await ok(switchTo(acme.id, stillCleared.access_token));
    expect(decodeJwt(back.access_token)).toMatchObject({ org: acme.id, org_role: 'member' });
    await ok(app.rest('DELETE', `/v1/organizations/${acme.id}/members/${user.id}`));
    const removed = await ok(refresh(app, back.refresh_token));
    expect(decodeJwt(removed.access_token)).toMatchObject({ org: null, org_role: null });
  });

  it('PATCH /v1/auth/me updates the profile only (strict schema) and emits user.updated', async () => {
    const app = await suite.server.createApp();
    const { user, tokens } = await signIn(suite.server, suite.smtp, app, 'ada@example.com');
    const patch = (body: unknown, token: string | undefined = tokens.access_token) =>
      endUser(app, 'PATCH', '/v1/auth/me', body, token);
    const before = (await eventsOf(app, 'user.updated')).length;

    const profile = { nickname: 'Ada', prefs: { theme: 'dark', langs: ['en', 'fr'] } };
    const updated = await ok(patch({ profile }));
    expect(updated).toMatchObject({ id: user.id, primary_email: 'ada@example.com', status: 'active', profile });
    expect((await ok(me(app, tokens.access_token))).profile).toEqual(profile);
    expect((await ok(app.rest('GET', `/v1/users/${user.id}`))).profile).toEqual(profile);
    const events = await eventsOf(app, 'user.updated');
    expect(events.length).toBe(before + 1);
    expect(events[0]!.data).toMatchObject({ id: user.id, profile });

    // Non-objects: the body itself, or the profile.
    for (const body of ['"profile"', '[]', '42', 'null']) {
      expectError(await patch(body), 422, 'validation_failed', `body ${body}`);
    }
    for (const bad of ['x', 1, [1, 2], null, true]) {
      expectError(await patch({ profile: bad }), 422, 'validation_failed', `profile ${JSON.stringify(bad)}`);
    }
    expectError(await patch({}), 422, 'validation_failed', 'no profile');
    expectError(await patch({ profile: { blob: 'x'.repeat(17_000) } }), 422, 'validation_failed', 'profile over 8 KiB');
    // Mass assignment: nothing but the profile can be set by the user.
    for (const extra of [
      { status: 'banned' },
      { email_verified: false },
      { primary_email: 'mallory@example.com' },
      { id: UNKNOWN_ID },
      { merged_into: UNKNOWN_ID },
      { application_id: UNKNOWN_ID },
    ]) {
      expectError(await patch({ profile: { hacked: true }, ...extra }), 422, 'validation_failed', JSON.stringify(extra));
    }
    expectError(await patch({ profile: {} }, ''), 401, 'missing_credentials');
    const unchanged = await ok(me(app, tokens.access_token));
    expect(unchanged).toMatchObject({
      id: user.id,
      primary_email: 'ada@example.com',
      email_verified: true,
      status: 'active',
      profile,
    });
    expect((await eventsOf(app, 'user.updated')).length).toBe(before + 1);
  });

  it('writes session.created and session.revoked events', async () => {
    const app = await suite.server.createApp();
    const a = await signIn(suite.server, suite.smtp, app, 'ada@example.com');
    const b = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const c = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const created = await eventsOf(app, 'session.created');
    expect(created.map((e) => e.data.id).sort()).toEqual([a.tokens.session_id, b.session_id, c.session_id].sort());
    for (const e of created) expect(e.data).toMatchObject({ user_id: a.user.id, aal: 1 });

    await ok(endUser(app, 'POST', '/v1/auth/sign-out', undefined, a.tokens.access_token));
    await ok(endUser(app, 'DELETE', `/v1/auth/sessions/${b.session_id}`, undefined, c.access_token));
    await ok(app.rest('POST', `/v1/users/${a.user.id}/sessions/revoke`));
    const revoked = await eventsOf(app, 'session.revoked');
    expect(revoked.map((e) => e.data.id).sort()).toEqual([a.tokens.session_id, b.session_id, c.session_id].sort());
    for (const e of revoked) expect(e.data.id).toMatch(UUID);
    // The reuse detector's revocation is reported too.
    const d = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    await ok(refresh(app, d.refresh_token));
    await pastGrace(d.session_id);
    expectError(await refresh(app, d.refresh_token), 401, 'invalid_token');
    const reuse = (await eventsOf(app, 'session.revoked')).find((e) => e.data.id === d.session_id);
    expect(reuse?.data).toMatchObject({ id: d.session_id, reason: 'refresh_token_reuse' });
    // No secret ever lands in an event.
    const all = JSON.stringify(await ok(app.rest('GET', '/v1/events?limit=100')));
    for (const secret of [a.tokens.refresh_token, a.tokens.access_token, b.refresh_token, c.refresh_token]) {
      expect(all).not.toContain(secret);
    }
  });
});

/**
 * Fault injection: while `run` executes, a trigger on `table` raises (as a failing database would) for the rows
 * `condition` selects. Scoped to one application's rows, so other tests sharing the database are not affected.
 */
async function whileFailing<T>(
  app: TestApp,
  table: 'events' | 'sessions',
  when: 'insert' | 'update',
  condition: string,
  run: () => Promise<T>,
): Promise<T> {
  const name = `gatehouse_test_fail_${table}_${app.id.replaceAll('-', '')}`;
  await sql(
    suite.server,
    `create function ${name}() returns trigger language plpgsql as $$
     begin
       if new.application_id = '${app.id}' and (${condition}) then raise exception 'injected failure'; end if;
       return new;
     end $$`,
  );
  await sql(suite.server, `create trigger ${name} before ${when} on ${table} for each row execute function ${name}()`);
  try {
    return await run();
  } finally {
    await sql(suite.server, `drop trigger if exists ${name} on ${table}`);
    await sql(suite.server, `drop function if exists ${name}()`);
  }
}

describe('revocation is atomic and fails closed (CONTRACT §6 outbox, SECURITY 12)', () => {
  it('a revocation whose session.revoked event cannot be written does not happen either', async () => {
    const app = await suite.server.createApp();
    const user = await signIn(suite.server, suite.smtp, app, 'ada@example.com');
    const second = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const third = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const attempts: Array<[string, () => Promise<RestResponse>, Tokens]> = [
      ['sign-out', () => endUser(app, 'POST', '/v1/auth/sign-out', undefined, user.tokens.access_token), user.tokens],
      [
        'DELETE /v1/auth/sessions/{id}',
        () => endUser(app, 'DELETE', `/v1/auth/sessions/${second.session_id}`, undefined, third.access_token),
        second,
      ],
      ['POST /v1/users/{id}/sessions/revoke', () => app.rest('POST', `/v1/users/${user.user.id}/sessions/revoke`), third],
    ];
    const outcomes = await whileFailing(app, 'events', 'insert', `new.type = 'session.revoked'`, async () => {
      const seen: string[] = [];
      for (const [label, call, tokens] of attempts) {
        const res = await call();
        const live = (await me(app, tokens.access_token)).status === 200;
        seen.push(`${label}: ${res.status}, session ${live ? 'live' : 'revoked'}`);
      }
      return seen;
    });
    // The event is written in the same transaction as the change (transactional outbox): no event, no change.
    // The request fails, the session stays live, and a retry revokes it and reports it.
    expect(await eventsOf(app, 'session.revoked')).toEqual([]);
    expect(outcomes).toEqual(attempts.map(([label]) => `${label}: 500, session live`));
    for (const [, call, tokens] of attempts) {
      expect((await call()).status).toBe(200);
      expect((await me(app, tokens.access_token)).status).toBe(401);
    }
    expect(await eventsOf(app, 'session.revoked')).toHaveLength(3);
  });

  it('a ban whose session revocation fails never leaves the banned user signed in', async () => {
    const app = await suite.server.createApp();
    const { user, tokens } = await signIn(suite.server, suite.smtp, app, 'ada@example.com');
    const res = await whileFailing(app, 'sessions', 'update', 'new.revoked_at is not null and old.revoked_at is null', () =>
      app.rest('PATCH', `/v1/users/${user.id}`, { status: 'banned' }),
    );
    const status = (await ok(app.rest('GET', `/v1/users/${user.id}`))).status;
    const meStatus = (await me(app, tokens.access_token)).status;
    // Fail closed: either the ban did not happen (an error, nothing changed), or the banned user is signed out.
    expect(
      status === 'banned' && meStatus === 200,
      `PATCH answered ${res.status}; user ${status}; access token of the banned user on /me: ${meStatus}`,
    ).toBe(false);
  });
});

describe('S18 GET /v1/applications/{id}/stats', () => {
  const stats = (app: TestApp, id = app.id, headers?: Record<string, string>) =>
    app.rest('GET', `/v1/applications/${id}/stats`, undefined, headers);

  it('counts sessions and users as CONTRACT §5 defines them', async () => {
    const app = await suite.server.createApp();
    expect(await ok(stats(app))).toEqual({ active_sessions: 0, active_users: 0, sign_ins_24h: 0, has_traffic: false });

    const ada1 = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const ada2 = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const grace = (await signIn(suite.server, suite.smtp, app, 'grace@example.com')).tokens;
    expect(await ok(stats(app))).toEqual({ active_sessions: 3, active_users: 2, sign_ins_24h: 3, has_traffic: true });

    // A revoked session leaves active_sessions (it still happened within 24 h, by a user active this month).
    await ok(endUser(app, 'POST', '/v1/auth/sign-out', undefined, ada2.access_token));
    expect(await ok(stats(app))).toEqual({ active_sessions: 2, active_users: 2, sign_ins_24h: 3, has_traffic: true });
    // So does an expired one.
    await sql(suite.server, `update sessions set expires_at = now() - interval '1 second' where id = ?`, [grace.session_id]);
    expect(await ok(stats(app))).toMatchObject({ active_sessions: 1, sign_ins_24h: 3 });
    // A session created more than 24 h ago is not a sign-in of the last 24 h.
    await sql(suite.server, `update sessions set created_at = now() - interval '25 hours' where id = ?`, [ada1.session_id]);
    expect(await ok(stats(app))).toMatchObject({ active_sessions: 1, sign_ins_24h: 2, active_users: 2 });

    // Another application's numbers are its own.
    const other = await suite.server.createApp();
    expect(await ok(stats(other))).toEqual({ active_sessions: 0, active_users: 0, sign_ins_24h: 0, has_traffic: false });
  });

  it('active_users counts users with a session created or refreshed in the last 30 days', async () => {
    const app = await suite.server.createApp();
    const ada = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const grace = (await signIn(suite.server, suite.smtp, app, 'grace@example.com')).tokens;
    // Ada's session is 31 days old and untouched since; Grace signed in 31 days ago but refreshed today.
    const back = `now() - interval '31 days'`;
    await sql(suite.server, `update sessions set created_at = ${back}, last_active_at = ${back} where id = ?`, [ada.session_id]);
    await sql(suite.server, `update sessions set created_at = ${back} where id = ?`, [grace.session_id]);
    expect(await ok(stats(app))).toMatchObject({ active_users: 1, sign_ins_24h: 0, has_traffic: true });
  });

  it('has_traffic is true once a user was ever created, even without a session, and stays true', async () => {
    const app = await suite.server.createApp();
    const user = await ok(app.rest('POST', '/v1/users', { primary_email: 'ada@example.com' }), 201);
    expect(await ok(stats(app))).toEqual({ active_sessions: 0, active_users: 0, sign_ins_24h: 0, has_traffic: true });
    // "At least one user or session was ever created": deleting that user does not undo the traffic.
    await ok(app.rest('DELETE', `/v1/users/${user.id}`));
    expect(await ok(stats(app))).toEqual({ active_sessions: 0, active_users: 0, sign_ins_24h: 0, has_traffic: true });
  });

  it("is 404 for another application's id and needs stats:read", async () => {
    const a = await suite.server.createApp();
    const b = await suite.server.createApp();
    await signIn(suite.server, suite.smtp, b, 'ada@example.com');
    expectError(await stats(a, b.id), 404, 'not_found', "B's id with A's key");
    expectError(await stats(a, UNKNOWN_ID), 404, 'not_found', 'unknown id');

    const usersOnly = await ok(a.rest('POST', '/v1/api-keys', { name: 'users', scopes: ['users:read'] }), 201);
    expectError(await stats(a, a.id, { authorization: `Bearer ${usersOnly.secret}` }), 403, 'insufficient_scope');
    const statsOnly = await ok(a.rest('POST', '/v1/api-keys', { name: 'stats', scopes: ['stats:read'] }), 201);
    expect(await ok(stats(a, a.id, { authorization: `Bearer ${statsOnly.secret}` }))).toMatchObject({ has_traffic: false });
    // Even with the scope, B's id stays 404.
    expectError(await stats(a, b.id, { authorization: `Bearer ${statsOnly.secret}` }), 404, 'not_found');
    // An end user (publishable id, access token) cannot read it.
    const { tokens } = await signIn(suite.server, suite.smtp, a, 'grace@example.com');
    expectError(
      await endUser(a, 'GET', `/v1/applications/${a.id}/stats`, undefined, tokens.access_token),
      401,
      'invalid_api_key',
    );
  });
});

import { verifyToken } from '@gatehouse/sdk';
import { decodeJwt } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { createHost, rule } from './helpers/access-rules.ts';
import { createOrg, createUser, unique, uniqueEmail } from './helpers/fixtures.ts';
import { expectError, isoDate, MISSING, ok, rejection, sql, type TestApp, UUID } from './helpers/server.ts';
import { endUser, requestMagicLink, signIn } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

let app: TestApp;
beforeAll(async () => {
  app = await suite.server.createApp();
});

const createGroup = (on: TestApp) => ok(on.rest('POST', '/v1/os/host-groups', { name: unique('group') }), 201);
const check = (on: TestApp, userId: string, hostId: string) =>
  ok(on.rest('POST', '/v1/os/access-check', { user_id: userId, host_id: hostId }));

describe('hosts, host groups and rules', () => {
  it('create (201) and list newest first; S19 answers exactly the seed fields; DELETE removes a rule', async () => {
    const fresh = await suite.server.createApp();
    const group = await createGroup(fresh);
    expect(group).toEqual({ id: expect.stringMatching(UUID), name: group.name, created_at: isoDate });
    const host = await createHost(fresh, group.id);
    expect(host).toEqual({ id: expect.stringMatching(UUID), name: host.name, host_group_id: group.id, created_at: isoDate });
    const loose = await createHost(fresh);
    expect(loose.host_group_id).toBeNull();
    expect((await ok(fresh.rest('GET', '/v1/os/hosts'))).map((h: any) => h.id)).toEqual([loose.id, host.id]);
    expect(await ok(fresh.rest('GET', '/v1/os/host-groups'))).toEqual([group]);

    const user = await createUser(fresh);
    const first = await rule(fresh, 'allow', ['user', user.id], ['host_group', group.id]);
    expect(first).toEqual({
      id: expect.stringMatching(UUID),
      effect: 'allow',
      subject_kind: 'user',
      subject_id: user.id,
      target_kind: 'host_group',
      target_id: group.id,
      created_at: isoDate,
    });
    const second = await rule(fresh, 'deny', ['user', user.id], ['host', loose.id]);
    const listed = await ok(fresh.rest('GET', '/v1/os/access-rules'));
    expect(listed).toEqual([second, first]);
    expect(await fresh.sdk.access.rules.list()).toEqual(listed);

    expect(await ok(fresh.rest('DELETE', `/v1/os/access-rules/${second.id}`))).toEqual({ id: second.id, deleted: true });
    expect(await ok(fresh.rest('GET', '/v1/os/access-rules'))).toEqual([first]);
    expectError(await fresh.rest('DELETE', `/v1/os/access-rules/${second.id}`), 404, 'not_found');
  });

  it('duplicate host or group names are 409 conflict', async () => {
    const group = await createGroup(app);
    expectError(await app.rest('POST', '/v1/os/host-groups', { name: group.name }), 409, 'conflict');
    const host = await createHost(app);
    expectError(await app.rest('POST', '/v1/os/hosts', { name: host.name }), 409, 'conflict');
  });

  it('deleting a host or a group takes the rules that target it; a grouped host then stands alone', async () => {
    const group = await createGroup(app);
    const host = await createHost(app, group.id);
    const user = await createUser(app);
    const onGroup = await rule(app, 'allow', ['user', user.id], ['host_group', group.id]);
    const onHost = await rule(app, 'allow', ['user', user.id], ['host', host.id]);
    await ok(app.rest('DELETE', `/v1/os/host-groups/${group.id}`));
    const ids = (await ok(app.rest('GET', '/v1/os/access-rules'))).map((r: any) => r.id);
    expect(ids).not.toContain(onGroup.id);
    expect(ids).toContain(onHost.id);
    expect((await ok(app.rest('GET', '/v1/os/hosts'))).find((h: any) => h.id === host.id).host_group_id).toBeNull();
    await ok(app.rest('DELETE', `/v1/os/hosts/${host.id}`));
    expect((await ok(app.rest('GET', '/v1/os/access-rules'))).map((r: any) => r.id)).not.toContain(onHost.id);
    expectError(await app.rest('POST', '/v1/os/access-check', { user_id: user.id, host_id: host.id }), 404, 'not_found');
  });

  it('validation: every broken field is 422 validation_failed naming its path; nothing is created', async () => {
    const user = await createUser(app);
    const host = await createHost(app);
    const valid = { effect: 'allow', subject_kind: 'user', subject_id: user.id, target_kind: 'host', target_id: host.id };
    const before = await ok(app.rest('GET', '/v1/os/access-rules'));
    const rows: Array<[string, string, Record<string, unknown>, string]> = [
      ['POST', '/v1/os/access-rules', { ...valid, effect: 'maybe' }, 'effect'],
      ['POST', '/v1/os/access-rules', { ...valid, subject_kind: 'group' }, 'subject_kind'],
      ['POST', '/v1/os/access-rules', { ...valid, target_kind: 'machine' }, 'target_kind'],
      ['POST', '/v1/os/access-rules', { ...valid, subject_id: 'nope' }, 'subject_id'],
      ['POST', '/v1/os/access-rules', { ...valid, target_id: 42 }, 'target_id'],
      ['POST', '/v1/os/access-rules', { effect: 'allow' }, 'subject_id'],
      ['POST', '/v1/os/access-rules', { ...valid, extra: true }, ''],
      ['POST', '/v1/os/access-check', { user_id: user.id }, 'host_id'],
      ['POST', '/v1/os/access-check', { user_id: 'x', host_id: host.id }, 'user_id'],
      ['POST', '/v1/os/hosts', { name: '' }, 'name'],
      ['POST', '/v1/os/hosts', { name: 'x'.repeat(201) }, 'name'],
      ['POST', '/v1/os/hosts', { name: unique('h'), host_group_id: 'g' }, 'host_group_id'],
      ['POST', '/v1/os/host-groups', {}, 'name'],
    ];
    for (const [method, path, body, field] of rows) {
      const res = await app.rest(method, path, body);
      expectError(res, 422, 'validation_failed', `${path} ${JSON.stringify(body)}`);
      if (field)
        expect(
          res.body.error.details!.map((d) => d.path),
          JSON.stringify(body),
        ).toContain(field);
    }
    expectError(await app.rest('DELETE', '/v1/os/access-rules/not-a-uuid'), 422, 'validation_failed');
    expect(await ok(app.rest('GET', '/v1/os/access-rules'))).toEqual(before);
  });

  it('unknown subjects and targets are 404; another application sees none of this one (404, not listed)', async () => {
    const user = await createUser(app);
    const org = await createOrg(app);
    const host = await createHost(app);
    const group = await createGroup(app);
    const mine = await rule(app, 'allow', ['user', user.id], ['host', host.id]);
    const other = await suite.server.createApp();
    const theirUser = await createUser(other);
    const theirHost = await createHost(other);
    for (const [subject, target] of [
      [
        ['user', MISSING],
        ['host', host.id],
      ],
      [
        ['user', theirUser.id],
        ['host', host.id],
      ],
      [
        ['organization', user.id],
        ['host', host.id],
      ],
      [
        ['user', user.id],
        ['host', theirHost.id],
      ],
      [
        ['user', user.id],
        ['host_group', host.id],
      ],
      [
        ['organization', org.id],
        ['host_group', MISSING],
      ],
    ] as const) {
      const res = await app.rest('POST', '/v1/os/access-rules', {
        effect: 'allow',
        subject_kind: subject[0],
        subject_id: subject[1],
        target_kind: target[0],
        target_id: target[1],
      });
      expectError(res, 404, 'not_found', JSON.stringify([subject, target]));
    }
    void group;
    expectError(await app.rest('POST', '/v1/os/access-check', { user_id: user.id, host_id: theirHost.id }), 404, 'not_found');
    expectError(await app.rest('POST', '/v1/os/access-check', { user_id: theirUser.id, host_id: host.id }), 404, 'not_found');
    expectError(await other.rest('DELETE', `/v1/os/access-rules/${mine.id}`), 404, 'not_found');
    expectError(await other.rest('DELETE', `/v1/os/hosts/${host.id}`), 404, 'not_found');
    expect(await ok(other.rest('GET', '/v1/os/access-rules'))).toEqual([]);
    expect((await ok(other.rest('GET', '/v1/os/hosts'))).map((h: any) => h.id)).toEqual([theirHost.id]);
    expect((await ok(app.rest('GET', '/v1/os/access-rules'))).map((r: any) => r.id)).toContain(mine.id);
  });

  it('scopes: access_rules:read lists and checks but cannot write (403)', async () => {
    const key = await ok(app.rest('POST', '/v1/api-keys', { name: 'reader', scopes: ['access_rules:read'] }), 201);
    const as = { authorization: `Bearer ${key.secret}` };
    const user = await createUser(app);
    const host = await createHost(app);
    await ok(app.rest('GET', '/v1/os/access-rules', undefined, as));
    await ok(app.rest('POST', '/v1/os/access-check', { user_id: user.id, host_id: host.id }, as));
    expectError(await app.rest('POST', '/v1/os/hosts', { name: unique('h') }, as), 403, 'insufficient_scope');
    const users = await ok(app.rest('POST', '/v1/api-keys', { name: 'users', scopes: ['users:read'] }), 201);
    expectError(
      await app.rest('GET', '/v1/os/access-rules', undefined, { authorization: `Bearer ${users.secret}` }),
      403,
      'insufficient_scope',
    );
  });
});

describe('POST /v1/os/access-check', () => {
  it('no rule → deny with rule_id null; an allow on the host → allowed with its id', async () => {
    const user = await createUser(app);
    const host = await createHost(app);
    expect(await check(app, user.id, host.id)).toEqual({ allowed: false, rule_id: null });
    const allow = await rule(app, 'allow', ['user', user.id], ['host', host.id]);
    expect(await check(app, user.id, host.id)).toEqual({ allowed: true, rule_id: allow.id });
    // Someone else's allow does not apply.
    expect(await check(app, (await createUser(app)).id, host.id)).toEqual({ allowed: false, rule_id: null });
    expect(await app.sdk.access.check({ user_id: user.id, host_id: host.id })).toEqual({ allowed: true, rule_id: allow.id });
  });

  it('deny beats allow, whichever is newer and whichever targets the group or the host', async () => {
    const group = await createGroup(app);
    const host = await createHost(app, group.id);
    const user = await createUser(app);
    const deny = await rule(app, 'deny', ['user', user.id], ['host_group', group.id]);
    const allow = await rule(app, 'allow', ['user', user.id], ['host', host.id]);
    expect(await check(app, user.id, host.id)).toEqual({ allowed: false, rule_id: deny.id });
    // A deleted rule no longer applies: without the deny, the allow decides.
    await ok(app.rest('DELETE', `/v1/os/access-rules/${deny.id}`));
    expect(await check(app, user.id, host.id)).toEqual({ allowed: true, rule_id: allow.id });
    await ok(app.rest('DELETE', `/v1/os/access-rules/${allow.id}`));
    expect(await check(app, user.id, host.id)).toEqual({ allowed: false, rule_id: null });
  });

  it('group targets reach every host of the group, and no other host', async () => {
    const group = await createGroup(app);
    const [a, b] = [await createHost(app, group.id), await createHost(app, group.id)];
    const outside = await createHost(app);
    const user = await createUser(app);
    const allow = await rule(app, 'allow', ['user', user.id], ['host_group', group.id]);
    expect(await check(app, user.id, a.id)).toEqual({ allowed: true, rule_id: allow.id });
    expect(await check(app, user.id, b.id)).toEqual({ allowed: true, rule_id: allow.id });
    expect(await check(app, user.id, outside.id)).toEqual({ allowed: false, rule_id: null });
  });

  it('organization subjects reach every member, only while a member; a user-level deny still wins', async () => {
    const org = await createOrg(app);
    const host = await createHost(app);
    const [member, outsider, denied] = [await createUser(app), await createUser(app), await createUser(app)];
    for (const u of [member, denied]) await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: u.id }), 201);
    const allow = await rule(app, 'allow', ['organization', org.id], ['host', host.id]);
    const deny = await rule(app, 'deny', ['user', denied.id], ['host', host.id]);
    expect(await check(app, member.id, host.id)).toEqual({ allowed: true, rule_id: allow.id });
    expect(await check(app, outsider.id, host.id)).toEqual({ allowed: false, rule_id: null });
    expect(await check(app, denied.id, host.id)).toEqual({ allowed: false, rule_id: deny.id });
    await ok(app.rest('DELETE', `/v1/organizations/${org.id}/members/${member.id}`));
    expect(await check(app, member.id, host.id)).toEqual({ allowed: false, rule_id: null });
  });
});

describe('sign-in honours host access rules', () => {
  const sessionsOf = async (userId: string) =>
    (await sql<{ n: number }>(suite.server, 'select count(*)::int as n from sessions where user_id = ?', [userId]))[0]!.n;
  const deniedEvents = async (on: TestApp) =>
    (await ok(on.rest('GET', '/v1/events?type=access.denied&limit=100'))).events.map((e: any) => e.data);

  it('a sign-in to a denied host is 403 access_denied, creates nothing, and emits access.denied', async () => {
    const email = uniqueEmail('denied');
    const user = await createUser(app, { primary_email: email });
    const host = await createHost(app);
    const deny = await rule(app, 'deny', ['user', user.id], ['host', host.id]);
    await rule(app, 'allow', ['user', user.id], ['host', host.id]);
    const mail = await requestMagicLink(suite.smtp, app, email, { hostId: host.id });
    const refused = await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token: mail.token });
    expectError(refused, 403, 'access_denied');
    expect(JSON.stringify(refused.body)).not.toContain(deny.id);
    expect(await sessionsOf(user.id)).toBe(0);
    const [tokens] = await sql<{ n: number }>(
      suite.server,
      'select count(*)::int as n from refresh_tokens r join sessions s on s.id = r.session_id where s.user_id = ?',
      [user.id],
    );
    expect(tokens!.n).toBe(0);
    expect(await deniedEvents(app)).toContainEqual({
      user_id: user.id,
      host_id: host.id,
      first_factor: 'magic_link',
      reason: 'denied_by_rule',
      rule_id: deny.id,
    });
  });

  it('no allow rule, or an unknown host, is refused too; a new address signing up is not created', async () => {
    const host = await createHost(app);
    const email = uniqueEmail('newcomer');
    const mail = await requestMagicLink(suite.smtp, app, email, { hostId: host.id });
    expectError(await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token: mail.token }), 403, 'access_denied');
    const [users] = await sql<{ n: number }>(suite.server, 'select count(*)::int as n from users where email_normalized = ?', [
      email,
    ]);
    expect(users!.n).toBe(0);

    const known = await createUser(app);
    const unknownHost = await requestMagicLink(suite.smtp, app, known.primary_email, { hostId: MISSING });
    expectError(await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token: unknownHost.token }), 403, 'access_denied');
    expect(await sessionsOf(known.id)).toBe(0);
    expect(await deniedEvents(app)).toContainEqual(
      expect.objectContaining({ user_id: known.id, host_id: MISSING, reason: 'unknown_host' }),
    );
  });

  it('an allowed sign-in completes; its access token carries `host`, refreshed tokens too; without a host, no claim', async () => {
    const email = uniqueEmail('allowed');
    const user = await createUser(app, { primary_email: email });
    const group = await createGroup(app);
    const host = await createHost(app, group.id);
    await rule(app, 'allow', ['user', user.id], ['host_group', group.id]);
    const signed = await signIn(suite.server, suite.smtp, app, email, { hostId: host.id });
    expect(decodeJwt(signed.tokens.access_token)).toMatchObject({ sub: user.id, host: host.id });
    const claims = await verifyToken(signed.tokens.access_token, {
      baseUrl: suite.server.url,
      applicationId: app.id,
      issuer: suite.server.started.baseUrl ?? 'http://gatehouse.test',
    });
    expect(claims.host).toBe(host.id);
    const refreshed = await ok(endUser(app, 'POST', '/v1/auth/token/refresh', { refresh_token: signed.tokens.refresh_token }));
    expect(decodeJwt(refreshed.access_token).host).toBe(host.id);

    // A sign-in that names no host is no host sign-in: rules do not apply and the token has no `host`.
    const plain = await signIn(suite.server, suite.smtp, app, email);
    expect(decodeJwt(plain.tokens.access_token)).not.toHaveProperty('host');
  });

  it('a deleted rule no longer applies at sign-in', async () => {
    const email = uniqueEmail('revoked');
    const user = await createUser(app, { primary_email: email });
    const host = await createHost(app);
    const allow = await rule(app, 'allow', ['user', user.id], ['host', host.id]);
    await signIn(suite.server, suite.smtp, app, email, { hostId: host.id });
    await ok(app.rest('DELETE', `/v1/os/access-rules/${allow.id}`));
    const mail = await requestMagicLink(suite.smtp, app, email, { hostId: host.id });
    expectError(await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token: mail.token }), 403, 'access_denied');
  });

  it('the host is carried through a paused sign-in: a rule deleted before consent is accepted refuses the resume', async () => {
    const consented = await suite.server.createApp({
      settings: { consent_documents: [{ doc_type: 'terms', url: 'https://example.com/terms', version: '1' }] },
    });
    const email = uniqueEmail('consent');
    const user = await createUser(consented, { primary_email: email });
    const host = await createHost(consented);
    const allow = await rule(consented, 'allow', ['user', user.id], ['host', host.id]);
    const mail = await requestMagicLink(suite.smtp, consented, email, { hostId: host.id });
    const paused = await ok(endUser(consented, 'POST', '/v1/auth/magic-link/verify', { token: mail.token }));
    expect(paused.status).toBe('consent_required');
    await ok(consented.rest('DELETE', `/v1/os/access-rules/${allow.id}`));
    const resumed = await endUser(consented, 'POST', '/v1/auth/consent/accept', {
      pending_token: paused.pending_token,
      doc_types: ['terms'],
    });
    expectError(resumed, 403, 'access_denied');
    expect(await sessionsOf(user.id)).toBe(0);
  });

  it('the SDK surfaces the refusal as access_denied', async () => {
    const email = uniqueEmail('sdk');
    await createUser(app, { primary_email: email });
    const host = await createHost(app);
    const mail = await requestMagicLink(suite.smtp, app, email, { hostId: host.id });
    const { createGatehouseClient } = await import('@gatehouse/sdk');
    const client = createGatehouseClient({ baseUrl: suite.server.url, applicationId: app.id });
    expect((await rejection(client.magicLink.verify({ token: mail.token }))).code).toBe('access_denied');
  });
});

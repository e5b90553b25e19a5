import { createGatehouseClient } from '@gatehouse/sdk';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, createOrg, createUser, scopedKey, unique, uniqueEmail } from './helpers/fixtures.ts';
import { expectError, isoDate, MISSING, ok, rejection, sql, type TestApp, UUID } from './helpers/server.ts';
import { endUser, requestMagicLink, signIn } from './helpers/sign-in.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();
/** The test server's configured base URL (links and the hosted pages' own origin). */
const BASE = 'http://gatehouse.test';

let app: TestApp;

beforeAll(async () => {
  app = await suite.server.createApp({ name: 'Invite app', allowed_origins: ['https://app.example.com'] });
});

const invitationsPath = (orgId: string) => `/v1/organizations/${orgId}/invitations`;

const invite = (on: TestApp, orgId: string, body: Record<string, unknown>) => on.rest('POST', invitationsPath(orgId), body);

/** An invitation and the token of its mailed link (the only place the token ever is). */
async function invited(on: TestApp, orgId: string, email: string, body: Record<string, unknown> = {}) {
  const invitation = await ok(invite(on, orgId, { email, ...body }), 201);
  const mail = await suite.smtp.next(email);
  return { invitation, mail, token: tokenOf(mail) };
}

const tokenOf = (mail: { html: string }) => {
  const link = linkIn(mail as never);
  return decodeURIComponent(link.pathname.split('/').pop() ?? '');
};

const accept = (on: TestApp, token: string, accessToken?: string) =>
  endUser(on, 'POST', '/v1/auth/invitations/accept', { token }, accessToken);

const list = async (on: TestApp, orgId: string, query = '') =>
  (await ok(on.rest('GET', `${invitationsPath(orgId)}${query}`))) as {
    invitations: any[];
    total: number;
    limit: number;
    offset: number;
  };

const eventsOf = async (on: TestApp, type: string) =>
  (await ok(on.rest('GET', `/v1/events?type=${type}&limit=100`))).events as Array<{ data: any }>;

const expire = (id: string) =>
  sql(suite.server, `update organization_invitations set expires_at = now() - interval '1 second' where id = ?`, [id]);

describe('POST /v1/organizations/{id}/invitations', () => {
  it('201 with the invitation (email lower-case, role member, 7 days), the mail with its link, and an event without the token', async () => {
    const org = await createOrg(app, { name: 'Acme <Labs>' });
    const email = uniqueEmail('Invitee').replace('invitee', 'InViTeE');
    const before = Date.now();
    const res = await invite(app, org.id, { email: `  ${email}  ` });
    expect(res.status).toBe(201);
    const invitation = res.body.data;
    expect(invitation).toEqual({
      id: expect.stringMatching(UUID),
      organization_id: org.id,
      email: email.toLowerCase(),
      role: 'member',
      status: 'pending',
      expires_at: isoDate,
      accepted_at: null,
      revoked_at: null,
      created_at: isoDate,
    });
    const ttl = Date.parse(invitation.expires_at) - before;
    expect(ttl).toBeGreaterThan(7 * 86400_000 - 60_000);
    expect(ttl).toBeLessThan(7 * 86400_000 + 60_000);

    const mail = await suite.smtp.next(email);
    expect(mail.subject).toBe('You are invited to join Acme <Labs> on Invite app');
    expect(mail.html).toContain('Acme &lt;Labs&gt;');
    const link = linkIn(mail);
    expect(`${link.origin}${link.pathname}`).toMatch(new RegExp(`^${BASE}/a/${app.id}/invitations/inv_[A-Za-z0-9]{43}$`));
    const token = tokenOf(mail);

    const [event] = (await eventsOf(app, 'organization_invitation.created')).filter((e) => e.data.id === invitation.id);
    expect(event?.data).toEqual(invitation);
    expect(JSON.stringify(await eventsOf(app, 'organization_invitation.created'))).not.toContain(token);
    // Only the hash is stored.
    const [row] = await sql(suite.server, 'select token_hash from organization_invitations where id = ?', [invitation.id]);
    expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row.token_hash).not.toContain(token);
  });

  it('takes a role, a redirect URL on an allowed origin and a lifetime of 300 s to 30 days', async () => {
    const org = await createOrg(app);
    const email = uniqueEmail();
    const before = Date.now();
    const invitation = await ok(
      invite(app, org.id, { email, role: 'billing:admin', redirect_url: 'https://app.example.com/welcome', expires_in_s: 300 }),
      201,
    );
    expect(invitation.role).toBe('billing:admin');
    expect(Date.parse(invitation.expires_at) - before).toBeLessThan(301_000);
    expect(Date.parse(invitation.expires_at) - before).toBeGreaterThan(240_000);
    const long = await ok(invite(app, org.id, { email: uniqueEmail(), expires_in_s: 30 * 86400 }), 201);
    expect(Date.parse(long.expires_at) - before).toBeGreaterThan(30 * 86400_000 - 60_000);
    // The application's own hosted pages are always allowed.
    await ok(invite(app, org.id, { email: uniqueEmail(), redirect_url: `${BASE}/a/${app.id}/account` }), 201);
  });

  it('422 for a lifetime out of range, a bad address, a bad role, an unknown field; invalid_url for a foreign redirect', async () => {
    const org = await createOrg(app);
    for (const body of [
      { email: uniqueEmail(), expires_in_s: 299 },
      { email: uniqueEmail(), expires_in_s: 30 * 86400 + 1 },
      { email: uniqueEmail(), expires_in_s: 1.5 },
      { email: 'not-an-email' },
      { email: uniqueEmail(), role: 'Admin!' },
      { email: uniqueEmail(), status: 'accepted' },
      { email: uniqueEmail(), token: 'inv_mine' },
      {},
    ]) {
      expectError(await invite(app, org.id, body), 422, 'validation_failed', JSON.stringify(body));
    }
    for (const redirect_url of [
      'https://evil.example.com/x',
      'https://app.example.com.evil.com/',
      'http://app.example.com/',
      'https://user:pw@app.example.com/',
      `${BASE}/a/${MISSING}/account`,
    ]) {
      expectError(await invite(app, org.id, { email: uniqueEmail(), redirect_url }), 422, 'invalid_url', redirect_url);
    }
    expect((await list(app, org.id)).total).toBe(0);
  });

  it('409 already_member for a member’s address (any case), 409 invitation_pending for a pending one', async () => {
    const org = await createOrg(app);
    const user = await createUser(app, { primary_email: uniqueEmail('member') });
    await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id }), 201);
    expectError(await invite(app, org.id, { email: user.primary_email.toUpperCase() }), 409, 'already_member');

    const email = uniqueEmail();
    const { invitation } = await invited(app, org.id, email);
    expectError(await invite(app, org.id, { email: email.toUpperCase() }), 409, 'invitation_pending');
    // Another organization may invite the same address.
    await ok(invite(app, (await createOrg(app)).id, { email }), 201);
    // Once revoked (or expired), the address can be invited again.
    await ok(app.rest('POST', `${invitationsPath(org.id)}/${invitation.id}/revoke`));
    const again = await invited(app, org.id, email);
    await expire(again.invitation.id);
    await ok(invite(app, org.id, { email }), 201);
  });

  it('concurrent invitations of one address: exactly one is made', async () => {
    const org = await createOrg(app);
    const email = uniqueEmail('race');
    const answers = await Promise.all(Array.from({ length: 8 }, () => invite(app, org.id, { email })));
    expect(answers.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of answers.filter((r) => r.status !== 201)) expectError(r, 409, 'invitation_pending');
  });

  it('404 for another application’s organization or an unknown one; 403 without organizations:write', async () => {
    const other = await suite.server.createApp();
    const foreign = await createOrg(other);
    expectError(await invite(app, foreign.id, { email: uniqueEmail() }), 404, 'not_found');
    expectError(await invite(app, MISSING, { email: uniqueEmail() }), 404, 'not_found');
    expectError(await app.rest('GET', invitationsPath(foreign.id)), 404, 'not_found');
    const reader = await scopedKey(app, ['organizations:read']);
    const org = await createOrg(app);
    expectError(
      await app.rest('POST', invitationsPath(org.id), { email: uniqueEmail() }, bearer(reader)),
      403,
      'insufficient_scope',
    );
    await ok(app.rest('GET', invitationsPath(org.id), undefined, bearer(reader)));
  });
});

describe('GET /v1/organizations/{id}/invitations', () => {
  it('newest first, paginated, filtered by status (pending, accepted, revoked, expired)', async () => {
    const org = await createOrg(app);
    const made: any[] = [];
    for (let i = 0; i < 4; i++) made.push((await invited(app, org.id, uniqueEmail(`list${i}`))).invitation);
    const acceptedEmail = uniqueEmail('accepted');
    const toAccept = await invited(app, org.id, acceptedEmail);
    const signedIn = await signIn(suite.server, suite.smtp, app, acceptedEmail);
    await ok(accept(app, toAccept.token, signedIn.tokens.access_token));
    await ok(app.rest('POST', `${invitationsPath(org.id)}/${made[0].id}/revoke`));
    await expire(made[1].id);

    const all = await list(app, org.id);
    expect(all.total).toBe(5);
    expect(all.invitations.map((i) => i.id)).toEqual([toAccept.invitation.id, made[3].id, made[2].id, made[1].id, made[0].id]);
    const page = await list(app, org.id, '?limit=2&offset=1');
    expect(page).toMatchObject({ total: 5, limit: 2, offset: 1 });
    expect(page.invitations.map((i) => i.id)).toEqual([made[3].id, made[2].id]);

    const byStatus = async (status: string) => (await list(app, org.id, `?status=${status}`)).invitations.map((i) => i.id);
    expect(await byStatus('pending')).toEqual([made[3].id, made[2].id]);
    expect(await byStatus('accepted')).toEqual([toAccept.invitation.id]);
    expect(await byStatus('revoked')).toEqual([made[0].id]);
    expect(await byStatus('expired')).toEqual([made[1].id]);
    const expired = all.invitations.find((i) => i.id === made[1].id);
    expect(expired.status).toBe('expired');
    expect(all.invitations.find((i) => i.id === toAccept.invitation.id)).toMatchObject({
      status: 'accepted',
      accepted_at: isoDate,
    });

    for (const query of ['?status=open', '?limit=0', '?limit=101', '?offset=-1', '?limit=2.5', '?other=1']) {
      expectError(await app.rest('GET', `${invitationsPath(org.id)}${query}`), 422, 'validation_failed', query);
    }
  });
});

describe('POST /v1/auth/invitations/accept', () => {
  it('the invited, signed-in address becomes a member (source invitation) with the role; the link works once', async () => {
    const org = await createOrg(app);
    const email = uniqueEmail('joiner');
    const { invitation, token } = await invited(app, org.id, email, {
      role: 'admin',
      redirect_url: 'https://app.example.com/welcome',
    });
    const { tokens, user } = await signIn(suite.server, suite.smtp, app, email);
    const accepted = await ok(accept(app, token, tokens.access_token));
    expect(accepted).toEqual({
      organization_id: org.id,
      role: 'admin',
      redirect_url: 'https://app.example.com/welcome',
      membership: expect.objectContaining({ user_id: user.id, email, role: 'admin', status: 'active', source: 'invitation' }),
    });
    const members = await ok(app.rest('GET', `/v1/organizations/${org.id}/members`));
    expect(members.members).toEqual([expect.objectContaining({ user_id: user.id, role: 'admin', source: 'invitation' })]);

    const [event] = (await eventsOf(app, 'organization_invitation.accepted')).filter((e) => e.data.id === invitation.id);
    expect(event?.data).toEqual({ ...invitation, status: 'accepted', accepted_at: isoDate });
    expect(
      (await eventsOf(app, 'organization_membership.created')).filter((e) => e.data.organization_id === org.id),
    ).toHaveLength(1);

    expectError(await accept(app, token, tokens.access_token), 401, 'invalid_verification');
    // The access token now carries the organization when the person switches to it.
    await ok(endUser(app, 'POST', '/v1/auth/session/organization', { organization_id: org.id }, tokens.access_token));
  });

  it('401 invalid_verification for an unknown, revoked, expired or other application’s token; 401 without a session', async () => {
    const org = await createOrg(app);
    const email = uniqueEmail('refused');
    const revoked = await invited(app, org.id, email);
    await ok(app.rest('POST', `${invitationsPath(org.id)}/${revoked.invitation.id}/revoke`));
    const expired = await invited(app, org.id, email);
    await expire(expired.invitation.id);
    const other = await suite.server.createApp();
    const otherOrg = await createOrg(other);
    const foreign = await ok(invite(other, otherOrg.id, { email }), 201);
    const foreignToken = tokenOf(await suite.smtp.next(email));
    const { tokens } = await signIn(suite.server, suite.smtp, app, email);

    for (const [label, token] of [
      ['unknown', `inv_${'x'.repeat(43)}`],
      ['revoked', revoked.token],
      ['expired', expired.token],
      ['another application', foreignToken],
      ['empty-ish', ' '],
    ] as const) {
      expectError(await accept(app, token, tokens.access_token), 401, 'invalid_verification', label);
    }
    expectError(await accept(app, foreignToken), 401, 'missing_credentials');
    expect(foreign.status).toBe('pending');
    expect((await list(app, org.id)).invitations.every((i) => i.status !== 'accepted')).toBe(true);
  });

  it('403 invitation_email_mismatch for another address or an unverified one; the invitation stays for its owner', async () => {
    const org = await createOrg(app);
    const email = uniqueEmail('owner');
    const { invitation, token } = await invited(app, org.id, email);
    const stranger = await signIn(suite.server, suite.smtp, app, uniqueEmail('stranger'));
    expectError(await accept(app, token, stranger.tokens.access_token), 403, 'invitation_email_mismatch');

    const owner = await signIn(suite.server, suite.smtp, app, email);
    // The same address, but not (or no longer) proven: refused.
    await ok(app.rest('PATCH', `/v1/users/${owner.user.id}`, { email_verified: false }));
    expectError(await accept(app, token, owner.tokens.access_token), 403, 'invitation_email_mismatch');
    expect((await list(app, org.id, '?status=pending')).invitations.map((i) => i.id)).toEqual([invitation.id]);

    await ok(app.rest('PATCH', `/v1/users/${owner.user.id}`, { email_verified: true }));
    await ok(accept(app, token, owner.tokens.access_token));
  });

  it('409 already_member leaves the invitation pending', async () => {
    const org = await createOrg(app);
    const email = uniqueEmail('twice');
    const { token } = await invited(app, org.id, email);
    const { tokens, user } = await signIn(suite.server, suite.smtp, app, email);
    await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id }), 201);
    expectError(await accept(app, token, tokens.access_token), 409, 'already_member');
    expect((await list(app, org.id)).invitations[0].status).toBe('pending');
  });

  it('seats are enforced: 409 seat_limit_reached, and the invitation stays pending until a seat is free', async () => {
    const org = await createOrg(app);
    const plan = await ok(
      app.rest('POST', '/v1/billing/plans', {
        key: unique('plan'),
        name: 'Team',
        interval: 'month',
        currency: 'USD',
        price_cents: 100,
      }),
      201,
    );
    const subscription = await ok(
      app.rest('POST', '/v1/billing/subscriptions', { organization_id: org.id, plan_id: plan.id, seats: 1 }),
      201,
    );
    const first = await createUser(app);
    await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: first.id }), 201);
    const email = uniqueEmail('seat');
    const { token } = await invited(app, org.id, email);
    const { tokens } = await signIn(suite.server, suite.smtp, app, email);
    expectError(await accept(app, token, tokens.access_token), 409, 'seat_limit_reached');
    expect((await list(app, org.id)).invitations[0].status).toBe('pending');
    await ok(app.rest('PATCH', `/v1/billing/subscriptions/${subscription.id}`, { seats: 2 }));
    await ok(accept(app, token, tokens.access_token));
  });

  it('20 parallel accepts of one link: exactly one wins, the others are 401', async () => {
    const org = await createOrg(app);
    const email = uniqueEmail('parallel');
    const { token } = await invited(app, org.id, email);
    const { tokens } = await signIn(suite.server, suite.smtp, app, email);
    const answers = await Promise.all(Array.from({ length: 20 }, () => accept(app, token, tokens.access_token)));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of answers.filter((r) => r.status !== 200)) expectError(r, 401, 'invalid_verification');
    expect((await ok(app.rest('GET', `/v1/organizations/${org.id}/members`))).total).toBe(1);
    expect(
      (await eventsOf(app, 'organization_invitation.accepted')).filter((e) => e.data.organization_id === org.id),
    ).toHaveLength(1);
  });
});

describe('POST /v1/auth/invitations/lookup', () => {
  it('shows the organization, address and role of a pending invitation and consumes nothing', async () => {
    const org = await createOrg(app, { name: 'Lookup Co' });
    const email = uniqueEmail('lookup');
    const { invitation, token } = await invited(app, org.id, email, { role: 'admin' });
    for (let i = 0; i < 2; i++) {
      expect(await ok(endUser(app, 'POST', '/v1/auth/invitations/lookup', { token }))).toEqual({
        organization_id: org.id,
        organization_name: 'Lookup Co',
        email,
        role: 'admin',
        expires_at: invitation.expires_at,
      });
    }
    expect((await list(app, org.id)).invitations[0].status).toBe('pending');
    await ok(app.rest('POST', `${invitationsPath(org.id)}/${invitation.id}/revoke`));
    expectError(await endUser(app, 'POST', '/v1/auth/invitations/lookup', { token }), 401, 'invalid_verification');
    const other = await suite.server.createApp();
    const again = await invited(app, org.id, email);
    expectError(await endUser(other, 'POST', '/v1/auth/invitations/lookup', { token: again.token }), 401, 'invalid_verification');
  });
});

describe('revoke and resend', () => {
  it('revoke stops the link at once, emits organization_invitation.revoked, and is idempotent; an accepted one is 409', async () => {
    const org = await createOrg(app);
    const email = uniqueEmail('revoke');
    const { invitation, token } = await invited(app, org.id, email);
    const revoked = await ok(app.rest('POST', `${invitationsPath(org.id)}/${invitation.id}/revoke`));
    expect(revoked).toEqual({ ...invitation, status: 'revoked', revoked_at: isoDate });
    expect(await ok(app.rest('POST', `${invitationsPath(org.id)}/${invitation.id}/revoke`))).toEqual(revoked);
    const events = (await eventsOf(app, 'organization_invitation.revoked')).filter((e) => e.data.id === invitation.id);
    expect(events.map((e) => e.data)).toEqual([revoked]);
    const { tokens } = await signIn(suite.server, suite.smtp, app, email);
    expectError(await accept(app, token, tokens.access_token), 401, 'invalid_verification');

    const second = await invited(app, org.id, email);
    await ok(accept(app, second.token, tokens.access_token));
    expectError(await app.rest('POST', `${invitationsPath(org.id)}/${second.invitation.id}/revoke`), 409, 'conflict');
    expectError(await app.rest('POST', `${invitationsPath(org.id)}/${second.invitation.id}/resend`), 409, 'conflict');
  });

  it('resend mails a new link and voids the old one; a revoked one is 409; an expired one comes back to life', async () => {
    const org = await createOrg(app, { name: 'Resend Inc' });
    const email = uniqueEmail('resend');
    const first = await invited(app, org.id, email, { expires_in_s: 3600 });
    const resent = await ok(app.rest('POST', `${invitationsPath(org.id)}/${first.invitation.id}/resend`));
    expect(resent).toMatchObject({ id: first.invitation.id, status: 'pending' });
    const mail = await suite.smtp.next(email);
    expect(mail.subject).toContain('Resend Inc');
    const fresh = tokenOf(mail);
    expect(fresh).not.toBe(first.token);
    const { tokens } = await signIn(suite.server, suite.smtp, app, email);
    expectError(await accept(app, first.token, tokens.access_token), 401, 'invalid_verification');

    await expire(first.invitation.id);
    expectError(await accept(app, fresh, tokens.access_token), 401, 'invalid_verification');
    const before = Date.now();
    const revived = await ok(app.rest('POST', `${invitationsPath(org.id)}/${first.invitation.id}/resend`));
    expect(revived.status).toBe('pending');
    // The original lifetime, from now.
    expect(Date.parse(revived.expires_at) - before).toBeGreaterThan(3500_000);
    expect(Date.parse(revived.expires_at) - before).toBeLessThan(3700_000);
    const third = tokenOf(await suite.smtp.next(email));
    expectError(await accept(app, fresh, tokens.access_token), 401, 'invalid_verification');
    await ok(accept(app, third, tokens.access_token));

    const other = await invited(app, org.id, uniqueEmail('gone'));
    await ok(app.rest('POST', `${invitationsPath(org.id)}/${other.invitation.id}/revoke`));
    expectError(await app.rest('POST', `${invitationsPath(org.id)}/${other.invitation.id}/resend`), 409, 'conflict');
  });

  it('an expired invitation whose address was invited anew is 409 invitation_pending on resend', async () => {
    const org = await createOrg(app);
    const email = uniqueEmail('anew');
    const old = await invited(app, org.id, email);
    await expire(old.invitation.id);
    await invited(app, org.id, email);
    expectError(await app.rest('POST', `${invitationsPath(org.id)}/${old.invitation.id}/resend`), 409, 'invitation_pending');
  });

  it('404 for another organization’s or application’s invitation', async () => {
    const org = await createOrg(app);
    const otherOrg = await createOrg(app);
    const { invitation } = await invited(app, org.id, uniqueEmail('scoped'));
    const other = await suite.server.createApp();
    for (const action of ['revoke', 'resend']) {
      expectError(await app.rest('POST', `${invitationsPath(otherOrg.id)}/${invitation.id}/${action}`), 404, 'not_found');
      expectError(await app.rest('POST', `${invitationsPath(org.id)}/${MISSING}/${action}`), 404, 'not_found');
      expectError(await other.rest('POST', `${invitationsPath(org.id)}/${invitation.id}/${action}`), 404, 'not_found');
    }
    expect((await list(app, org.id)).invitations[0].status).toBe('pending');
  });
});

describe('mail and sign-up', () => {
  it('a template marked not delivered is handed over in message.created with its link', async () => {
    const own = await suite.server.createApp();
    await ok(own.rest('PUT', `/v1/applications/${own.id}/templates/organization_invitation`, { delivered: false }));
    const org = await createOrg(own, { name: 'Handed Over' });
    const email = uniqueEmail('handover');
    const invitation = await ok(invite(own, org.id, { email }), 201);
    const [event] = await eventsOf(own, 'message.created');
    expect(event?.data).toMatchObject({
      template_key: 'organization_invitation',
      to: email,
      variables: {
        organization_name: 'Handed Over',
        link: expect.stringMatching(new RegExp(`/a/${own.id}/invitations/inv_`)),
        expires_at: invitation.expires_at,
      },
    });
    // The invitation's own event never carries the token.
    const created = await eventsOf(own, 'organization_invitation.created');
    expect(JSON.stringify(created)).not.toContain('inv_');
  });

  it('with sign-up closed, an invited address may sign up by magic link (and only it)', async () => {
    const closed = await suite.server.createApp({ settings: { sign_up: 'closed' } });
    const org = await createOrg(closed);
    const email = uniqueEmail('closed');
    const invitation = await ok(invite(closed, org.id, { email }), 201);
    const token = tokenOf(await suite.smtp.next(email));
    const { tokens, user } = await signIn(suite.server, suite.smtp, closed, email);
    expect(user).toMatchObject({ primary_email: email, email_verified: true });
    await ok(accept(closed, token, tokens.access_token));
    expect((await list(closed, org.id)).invitations[0]).toMatchObject({ id: invitation.id, status: 'accepted' });

    // Anyone else still cannot: no mail is sent to an uninvited address.
    const stranger = uniqueEmail('uninvited');
    await ok(endUser(closed, 'POST', '/v1/auth/magic-link/start', { email: stranger }));
    await expect(suite.smtp.next(stranger, 1500)).rejects.toThrow(/no mail/);
    // A revoked invitation opens nothing.
    const revokedEmail = uniqueEmail('revoked-closed');
    const revoked = await ok(invite(closed, org.id, { email: revokedEmail }), 201);
    await suite.smtp.next(revokedEmail);
    await ok(closed.rest('POST', `${invitationsPath(org.id)}/${revoked.id}/revoke`));
    await ok(endUser(closed, 'POST', '/v1/auth/magic-link/start', { email: revokedEmail }));
    await expect(suite.smtp.next(revokedEmail, 1500)).rejects.toThrow(/no mail/);
  });
});

describe('SDK', () => {
  it('organizations.invitations.create / list / revoke / resend, with the API’s errors', async () => {
    const org = await createOrg(app);
    const email = uniqueEmail('sdk');
    const invitation = await app.sdk.organizations.invitations.create({ id: org.id, email, role: 'admin' });
    expect(invitation).toMatchObject({ organization_id: org.id, email, role: 'admin', status: 'pending' });
    await suite.smtp.next(email);
    const page = await app.sdk.organizations.invitations.list({ id: org.id, status: 'pending' });
    expect(page.invitations.map((i) => i.id)).toEqual([invitation.id]);
    const conflict = await rejection(app.sdk.organizations.invitations.create({ id: org.id, email }));
    expect(conflict).toMatchObject({ code: 'invitation_pending', status: 409 });
    expect(await app.sdk.organizations.invitations.resend({ id: org.id, invitation_id: invitation.id })).toMatchObject({
      id: invitation.id,
      status: 'pending',
    });
    await suite.smtp.next(email);
    expect(await app.sdk.organizations.invitations.revoke({ id: org.id, invitation_id: invitation.id })).toMatchObject({
      status: 'revoked',
    });
    const missing = await rejection(app.sdk.organizations.invitations.revoke({ id: org.id, invitation_id: MISSING }));
    expect(missing).toMatchObject({ code: 'not_found', status: 404 });
    const invalid = await rejection(app.sdk.organizations.invitations.create({ id: org.id, email, expires_in_s: 10 }));
    expect(invalid).toMatchObject({ code: 'validation_failed', status: 422 });
  });
});

describe('browser SDK (createGatehouseClient)', () => {
  it('invitations.lookup shows it, invitations.accept makes the signed-in user a member', async () => {
    const org = await createOrg(app, { name: 'Client Co' });
    const email = uniqueEmail('client');
    const { token } = await invited(app, org.id, email, { role: 'admin' });
    const client = createGatehouseClient({ baseUrl: suite.server.url, applicationId: app.id });
    expect(await client.invitations.lookup(token)).toMatchObject({ organization_name: 'Client Co', email, role: 'admin' });
    // Not signed in: nothing to accept with.
    expect(await rejection(client.invitations.accept(token))).toMatchObject({ status: 401 });
    const link = await requestMagicLink(suite.smtp, app, email);
    await client.magicLink.verify({ token: link.token });
    const accepted = await client.invitations.accept(token);
    expect(accepted).toMatchObject({ organization_id: org.id, role: 'admin', membership: { email, source: 'invitation' } });
    expect(await rejection(client.invitations.accept(token))).toMatchObject({ code: 'invalid_verification', status: 401 });
    expect(await rejection(client.invitations.lookup(token))).toMatchObject({ code: 'invalid_verification' });
    // The new membership can become the session's organization.
    const session = await client.switchOrganization(org.id);
    expect(session).toMatchObject({ org: org.id, org_role: 'admin' });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { enrolTotp } from './helpers/mfa.ts';
import { APP_CALLBACK, callback, oauthApp, putProvider, startOAuth, throughRelay } from './helpers/oauth.ts';
import { type StandIn, startStandIn } from './helpers/oauth-idp.ts';
import { expectError, isoDate, ok, sql, startServer, type TestApp, type TestServer, UUID } from './helpers/server.ts';
import { endUser } from './helpers/sign-in.ts';

/**
 * Linking provider accounts to the signed-in user (ES★): start/callback, the list, unlinking (never the last way to
 * sign in; aal 2 when the user has a second factor), and the events. Providers are the wire-format stand-ins of
 * oauth-attacks.test.ts (constructor-injected endpoints, a test-only seam).
 */
let server: TestServer;
let standIn: StandIn;

beforeAll(async () => {
  standIn = await startStandIn();
  server = await startServer({ oauth: { endpoints: standIn.endpoints } });
});
afterAll(async () => {
  await server?.close();
  await standIn?.close();
});

/** Numbers the stand-ins' accounts (subjects, GitHub ids): no two tests share one. */
let seq = 0;

async function appWithProviders(): Promise<TestApp> {
  const app = await oauthApp(server);
  for (const provider of ['google', 'github'] as const) {
    const client = standIn.clients[provider];
    await ok(putProvider(app, provider, { client_id: client.id, client_secret: client.secret, enabled: true }));
  }
  return app;
}

/** Signs a person in with Google (a new user unless the subject is known): the tokens and user. */
async function googleSignIn(app: TestApp, user: StandIn['user']['google']) {
  standIn.user.google = user;
  const { authorization_url } = await ok(startOAuth(app, 'google'));
  const { code, state } = await throughRelay(server, await standIn.authorize(authorization_url));
  const result = await ok(callback(app, 'google', { code, state }));
  if (result.status !== 'complete') throw new Error(`sign-in ended ${result.status}`);
  return result as { tokens: { access_token: string; aal: number }; user: { id: string } };
}

const linkStart = (app: TestApp, token: string, provider = 'github') =>
  endUser(app, 'POST', `/v1/auth/identities/oauth/${provider}/start`, { redirect_uri: APP_CALLBACK }, token);
const linkCallback = (app: TestApp, token: string, body: Record<string, unknown>, provider = 'github') =>
  endUser(app, 'POST', `/v1/auth/identities/oauth/${provider}/callback`, body, token);

async function linkGithub(app: TestApp, token: string, user: StandIn['user']['github']) {
  standIn.user.github = user;
  const { authorization_url } = await ok(linkStart(app, token));
  return throughRelay(server, await standIn.authorize(authorization_url));
}

describe('linking accounts (ES★)', () => {
  it('links GitHub to the signed-in user, lists both, unlinks it; events for each', async () => {
    const app = await appWithProviders();
    const { tokens, user } = await googleSignIn(app, { sub: `g-${++seq}`, email: uniqueEmail('lin'), email_verified: true });
    const githubId = `${50_000 + seq}`;
    const { code, state } = await linkGithub(app, tokens.access_token, {
      sub: githubId,
      email: uniqueEmail('other'),
      email_verified: true,
    });
    const identity = await ok(linkCallback(app, tokens.access_token, { code, state }), 201);
    expect(identity).toEqual({
      id: expect.stringMatching(UUID),
      kind: 'oauth',
      provider: 'github',
      name: expect.stringMatching(/^GitHub/),
      created_at: isoDate,
      last_used_at: isoDate,
    });
    const list = await ok(endUser(app, 'GET', '/v1/auth/identities', undefined, tokens.access_token));
    expect(list.map((i: any) => i.provider).sort()).toEqual(['github', 'google']);

    // Signing in with GitHub now signs in the same user.
    standIn.user.github = { sub: githubId, email: null, email_verified: false };
    const started = await ok(startOAuth(app, 'github'));
    const back = await throughRelay(server, await standIn.authorize(started.authorization_url));
    expect((await ok(callback(app, 'github', { code: back.code, state: back.state }))).user.id).toBe(user.id);

    expect(await ok(endUser(app, 'DELETE', `/v1/auth/identities/${identity.id}`, undefined, tokens.access_token))).toEqual({
      id: identity.id,
      deleted: true,
    });
    expectError(
      await endUser(app, 'DELETE', `/v1/auth/identities/${identity.id}`, undefined, tokens.access_token),
      404,
      'not_found',
    );
    const linked = await ok(app.rest('GET', '/v1/events?type=user.identity_linked'));
    expect(linked.events.map((e: any) => e.data.identity.provider).sort()).toEqual(['github', 'google']);
    const unlinked = await ok(app.rest('GET', '/v1/events?type=user.identity_unlinked'));
    expect(unlinked.events).toHaveLength(1);
    expect(unlinked.events[0].data).toMatchObject({ user_id: user.id, identity: { id: identity.id, provider: 'github' } });
  });

  it('a provider account linked to someone else is 409; states do not cross purposes or users', async () => {
    const app = await appWithProviders();
    const alice = await googleSignIn(app, { sub: `a-${++seq}`, email: uniqueEmail('alice'), email_verified: true });
    const bob = await googleSignIn(app, { sub: `b-${++seq}`, email: uniqueEmail('bob'), email_verified: true });
    const githubId = `${60_000 + seq}`;
    const first = await linkGithub(app, alice.tokens.access_token, { sub: githubId, email: null, email_verified: false });
    await ok(linkCallback(app, alice.tokens.access_token, { code: first.code, state: first.state }), 201);
    const second = await linkGithub(app, bob.tokens.access_token, { sub: githubId, email: null, email_verified: false });
    expectError(await linkCallback(app, bob.tokens.access_token, { code: second.code, state: second.state }), 409, 'conflict');

    // A link state of Alice's: not at Bob's callback, not at the sign-in callback.
    const third = await linkGithub(app, alice.tokens.access_token, { sub: `${githubId}9`, email: null, email_verified: false });
    expectError(
      await linkCallback(app, bob.tokens.access_token, { code: third.code, state: third.state }),
      401,
      'invalid_verification',
    );
    expectError(await callback(app, 'github', { code: third.code, state: third.state }), 401, 'invalid_verification');
    // A sign-in state is not a link state.
    const { authorization_url } = await ok(startOAuth(app, 'github'));
    const signInState = await throughRelay(server, await standIn.authorize(authorization_url));
    expectError(
      await linkCallback(app, alice.tokens.access_token, { code: signInState.code, state: signInState.state }),
      401,
      'invalid_verification',
    );
    const rows = await sql(server, `select user_id from identities where application_id = ? and subject = ?`, [
      app.id,
      `github:${githubId}`,
    ]);
    expect(rows).toEqual([{ user_id: alice.user.id }]);
    // Without a session: 401.
    expectError(await endUser(app, 'GET', '/v1/auth/identities'), 401, 'missing_credentials');
    expectError(
      await endUser(app, 'POST', '/v1/auth/identities/oauth/github/start', { redirect_uri: APP_CALLBACK }),
      401,
      'missing_credentials',
    );
    // Another user's identity is 404.
    const [aliceGoogle] = await sql(server, `select id from identities where user_id = ? and subject like 'google:%'`, [
      alice.user.id,
    ]);
    expectError(
      await endUser(app, 'DELETE', `/v1/auth/identities/${aliceGoogle!.id}`, undefined, bob.tokens.access_token),
      404,
      'not_found',
    );
  });

  it('a returning person with a second factor stops at mfa_required, as on a first sign-in that links their account', async () => {
    const app = await appWithProviders();
    const person = { sub: `m-${++seq}`, email: uniqueEmail('mfa'), email_verified: true };
    const token = (await googleSignIn(app, person)).tokens.access_token;
    await enrolTotp(app, token);
    const sessions = async () => (await sql(server, 'select id from sessions where application_id = ?', [app.id])).length;
    const before = await sessions();
    const signIn = async (provider: 'google' | 'github') => {
      const { authorization_url } = await ok(startOAuth(app, provider));
      const { code, state } = await throughRelay(server, await standIn.authorize(authorization_url));
      return ok(callback(app, provider, { code, state }));
    };
    const returning = await signIn('google');
    expect(returning.status).toBe('mfa_required');
    expect(returning.mfa.methods).toContain('totp');
    // GitHub vouches for the same address: its first sign-in links the account, and the account's factor still applies.
    standIn.user.github = { sub: `${80_000 + ++seq}`, email: person.email, email_verified: true };
    const linked = await signIn('github');
    expect(linked.status).toBe('mfa_required');
    expect(linked.mfa.methods).toContain('totp');
    expect(await sessions()).toBe(before);
  });

  it('never unlinks the last way to sign in (409); needs aal 2 when the user has a second factor (403)', async () => {
    const app = await appWithProviders();
    // GitHub with no verified email: the user has no email, so GitHub is their only way in.
    standIn.user.github = { sub: `${70_000 + ++seq}`, email: uniqueEmail('unverified'), email_verified: false };
    const { authorization_url } = await ok(startOAuth(app, 'github'));
    const back = await throughRelay(server, await standIn.authorize(authorization_url));
    const result = await ok(callback(app, 'github', { code: back.code, state: back.state }));
    expect(result.user).toMatchObject({ primary_email: null, email_verified: false });
    const [only] = await ok(endUser(app, 'GET', '/v1/auth/identities', undefined, result.tokens.access_token));
    const last = await endUser(app, 'DELETE', `/v1/auth/identities/${only.id}`, undefined, result.tokens.access_token);
    expectError(last, 409, 'conflict');
    expect(last.body.error.message).toMatch(/only way left to sign in/);

    // A user with TOTP, signed in at aal 1 before enrolling: unlinking needs a step up.
    const signedIn = await googleSignIn(app, { sub: `t-${++seq}`, email: uniqueEmail('totp'), email_verified: true });
    const token = signedIn.tokens.access_token;
    await enrolTotp(app, token);
    const [google] = await ok(endUser(app, 'GET', '/v1/auth/identities', undefined, token));
    expectError(await endUser(app, 'DELETE', `/v1/auth/identities/${google.id}`, undefined, token), 403, 'step_up_required');
    expect(await sql(server, 'select id from identities where id = ?', [google.id])).toHaveLength(1);
  });
});

describe("support's view of a user's linked accounts (secret key)", () => {
  it('lists them newest first, unlinks one (never the last way to sign in), with its event; other tenants see nothing', async () => {
    const app = await appWithProviders();
    const { tokens, user } = await googleSignIn(app, { sub: `s-${++seq}`, email: uniqueEmail('sup'), email_verified: true });
    const { code, state } = await linkGithub(app, tokens.access_token, {
      sub: `${80_000 + seq}`,
      email: uniqueEmail('sup-gh'),
      email_verified: true,
    });
    const github = await ok(linkCallback(app, tokens.access_token, { code, state }), 201);

    const list = await ok(app.rest('GET', `/v1/users/${user.id}/identities`));
    expect(list.map((i: any) => i.provider)).toEqual(['github', 'google']);
    expect(list[0]).toEqual(github);

    expect(await ok(app.rest('DELETE', `/v1/users/${user.id}/identities/${github.id}`))).toEqual({
      id: github.id,
      deleted: true,
    });
    expectError(await app.rest('DELETE', `/v1/users/${user.id}/identities/${github.id}`), 404, 'not_found');
    const unlinked = await ok(app.rest('GET', '/v1/events?type=user.identity_unlinked'));
    expect(unlinked.events[0].data).toMatchObject({ user_id: user.id, identity: { id: github.id, provider: 'github' } });

    // Another application's key: the user is not found there.
    const other = await appWithProviders();
    expectError(await other.rest('GET', `/v1/users/${user.id}/identities`), 404, 'not_found');

    // A user whose only way in is one provider: support cannot unlink it either.
    standIn.user.github = { sub: `${90_000 + ++seq}`, email: uniqueEmail('only'), email_verified: false };
    const started = await ok(startOAuth(app, 'github'));
    const back = await throughRelay(server, await standIn.authorize(started.authorization_url));
    const lone = await ok(callback(app, 'github', { code: back.code, state: back.state }));
    const [only] = await ok(app.rest('GET', `/v1/users/${lone.user.id}/identities`));
    expectError(await app.rest('DELETE', `/v1/users/${lone.user.id}/identities/${only.id}`), 409, 'conflict');
    expect(await sql(server, 'select id from identities where id = ?', [only.id])).toHaveLength(1);
  });
});

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { callback, oauthApp, putProvider, startOAuth, throughRelay } from './helpers/oauth.ts';
import { type StandIn, startStandIn } from './helpers/oauth-idp.ts';
import { acrossServers, expectError, ok, sql, startServer, type TestApp, type TestServer } from './helpers/server.ts';

/**
 * Google (OpenID Connect) and GitHub (plain OAuth 2.0) against local stand-ins that speak their documented wire format,
 * because the real ones cannot be reached from CI. The server under test gets the stand-ins' endpoints by constructor
 * injection (`oauth.endpoints` of `createGatehouseServer`): a test-only seam — no environment variable or API call
 * can point a built-in provider elsewhere in a deployment. Then every attack of the issue, each refused with nothing
 * created.
 */
let server: TestServer;
let standIn: StandIn;

beforeAll(async () => {
  standIn = await startStandIn();
  // The operator's shared Google client is the stand-in's registered client.
  const shared = { clientId: standIn.clients.google.id, clientSecret: standIn.clients.google.secret };
  server = await startServer({ oauth: { endpoints: standIn.endpoints, sharedCredentials: { google: shared } } });
});
afterAll(async () => {
  await server?.close();
  await standIn?.close();
});
beforeEach(() => {
  standIn.tampering = null;
  standIn.githubEmails = null;
});

/** Numbers the stand-ins' accounts (subjects, GitHub ids): no two tests share one. */
let seq = 0;

async function appWith(...providers: Array<'google' | 'github'>): Promise<TestApp> {
  const app = await oauthApp(server);
  for (const provider of providers) {
    const client = standIn.clients[provider];
    await ok(putProvider(app, provider, { client_id: client.id, client_secret: client.secret, enabled: true }));
  }
  return app;
}

/** start → the provider's consent → the relay: the code and state the app's page gets. */
async function authorize(app: TestApp, provider: 'google' | 'github') {
  const { authorization_url } = await ok(startOAuth(app, provider));
  return throughRelay(server, await standIn.authorize(authorization_url));
}

const counts = async (app: TestApp) => {
  const [row] = await sql(
    server,
    `select (select count(*)::int from users where application_id = ?) as users,
            (select count(*)::int from identities where application_id = ?) as identities,
            (select count(*)::int from sessions where application_id = ?) as sessions`,
    [app.id, app.id, app.id],
  );
  return row;
};

describe('built-in providers against stand-ins', () => {
  it('Google: the ID token is verified, the user created with the verified email; GitHub reads /user/emails', async () => {
    const app = await appWith('google', 'github');
    const email = uniqueEmail('grace');
    const googleSub = `g-${++seq}`;
    const githubId = `${9000 + seq}`;
    standIn.user.google = { sub: googleSub, email, email_verified: true, name: 'Grace Hopper' };
    const { authorization_url } = await ok(startOAuth(app, 'google'));
    const url = new URL(authorization_url);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('nonce')).toBeTruthy();
    expect(url.searchParams.get('scope')).toBe('openid email profile');
    const google = await throughRelay(server, await standIn.authorize(authorization_url));
    const signedIn = await ok(callback(app, 'google', { code: google.code, state: google.state }));
    expect(signedIn).toMatchObject({ status: 'complete', user: { primary_email: email, email_verified: true } });

    // GitHub: the primary verified address of /user/emails (not an unverified primary) links the same person.
    standIn.user.github = { sub: githubId, email: null, email_verified: false, name: 'Grace' };
    standIn.githubEmails = [
      { email: uniqueEmail('unverified'), primary: true, verified: false },
      { email, primary: false, verified: true },
    ];
    const github = await authorize(app, 'github');
    const linked = await ok(callback(app, 'github', { code: github.code, state: github.state }));
    expect(linked.status).toBe('complete');
    expect(linked.user.id).toBe(signedIn.user.id);
    const subjects = await sql(server, 'select subject from identities where application_id = ? order by subject', [app.id]);
    expect(subjects.map((r: { subject: string }) => r.subject)).toEqual([`github:${githubId}`, `google:${googleSub}`]);
  });

  it("shared development credentials: a development application signs in end to end with the operator's client", async () => {
    const dev = await oauthApp(server);
    await ok(putProvider(dev, 'google', { enabled: true, use_shared_dev_credentials: true }));
    const email = uniqueEmail('shared');
    standIn.user.google = { sub: `s-${++seq}`, email, email_verified: true };
    const { authorization_url } = await ok(startOAuth(dev, 'google'));
    expect(new URL(authorization_url).searchParams.get('client_id')).toBe(standIn.clients.google.id);
    const { code, state } = await throughRelay(server, await standIn.authorize(authorization_url));
    const result = await ok(callback(dev, 'google', { code, state }));
    expect(result).toMatchObject({ status: 'complete', user: { primary_email: email } });

    const prod = await oauthApp(server, { environment: 'production' });
    expectError(await putProvider(prod, 'google', { enabled: true, use_shared_dev_credentials: true }), 422, 'validation_failed');
    expectError(await startOAuth(prod, 'google'), 404, 'not_found');
    expect(await counts(prod)).toEqual({ users: 0, identities: 0, sessions: 0 });
  });

  it('an unverified provider email matching an existing user is 409 email_taken with a helpful message, not linked', async () => {
    const app = await appWith('github');
    const email = uniqueEmail('owner');
    await ok(app.rest('POST', '/v1/users', { primary_email: email, email_verified: true }), 201);
    standIn.user.github = { sub: `${7000 + ++seq}`, email, email_verified: false };
    const { code, state } = await authorize(app, 'github');
    const refused = await callback(app, 'github', { code, state });
    expectError(refused, 409, 'email_taken');
    expect(refused.body.error.message).toMatch(/sign in to that account another way first, then link GitHub/i);
    expect(await counts(app)).toEqual({ users: 1, identities: 0, sessions: 0 });
  });
});

describe('attacks, each refused with nothing created', () => {
  it('a forged state, and a replayed one', async () => {
    const app = await appWith('google');
    const { code, state } = await authorize(app, 'google');
    expectError(await callback(app, 'google', { code, state: `${state}x` }), 401, 'invalid_verification');
    expectError(await callback(app, 'google', { code, state: 'forged' }), 401, 'invalid_verification');
    expect((await ok(callback(app, 'google', { code, state }))).status).toBe('complete');
    const replay = await callback(app, 'google', { code, state });
    expectError(replay, 401, 'invalid_verification');
    expect(replay.body.error.message).toMatch(/expired|already/);
    expect(await counts(app)).toMatchObject({ users: 1, sessions: 1 });
  });

  it('a state of another application, or of another provider, is refused and stays usable where it belongs', async () => {
    const app = await appWith('google', 'github');
    const other = await appWith('google');
    const { code, state } = await authorize(app, 'google');
    const redeemed = standIn.redeemed;
    expectError(await callback(other, 'google', { code, state }), 401, 'invalid_verification');
    expectError(await callback(app, 'github', { code, state }), 401, 'invalid_verification');
    expect(await counts(other)).toEqual({ users: 0, identities: 0, sessions: 0 });
    expect(await counts(app)).toEqual({ users: 0, identities: 0, sessions: 0 });
    // Refused before the code went anywhere.
    expect(standIn.redeemed).toBe(redeemed);
    expect((await ok(callback(app, 'google', { code, state }))).status).toBe('complete');
  });

  it('a missing or wrong PKCE verifier is refused by the authorization server', async () => {
    const app = await appWith('google');
    const { authorization_url } = await ok(startOAuth(app, 'google'));
    // The verifier is the server's, never the browser's: a code minted for a challenge the server did not make fails.
    const tampered = new URL(authorization_url);
    tampered.searchParams.set('code_challenge', 'A'.repeat(43));
    const wrong = await throughRelay(server, await standIn.authorize(tampered.toString()));
    const refused = await callback(app, 'google', { code: wrong.code, state: wrong.state });
    expectError(refused, 401, 'invalid_verification');
    expect(refused.body.error.message).toMatch(/refused the authorization code/);
    expect(await counts(app)).toEqual({ users: 0, identities: 0, sessions: 0 });
  });

  const idTokenCases: Array<[string, StandIn['tampering'], RegExp]> = [
    ['a wrong nonce', { claims: { nonce: 'not-the-one-we-sent' } }, /did not verify/],
    ['a wrong audience', { claims: { aud: 'another-client.apps.googleusercontent.com' } }, /did not verify/],
    ['a wrong issuer', { claims: { iss: 'https://evil.example' } }, /did not verify/],
    [
      'an expired token',
      { claims: { exp: Math.floor(Date.now() / 1000) - 3600, iat: Math.floor(Date.now() / 1000) - 7200 } },
      /expired|clock/,
    ],
    ['a signature by another key', { otherKey: true }, /did not verify/],
    ['alg: none', { unsigned: true }, /did not verify/],
  ];
  for (const [label, tampering, message] of idTokenCases) {
    it(`an ID token with ${label}`, async () => {
      const app = await appWith('google');
      standIn.user.google = { sub: `t-${++seq}`, email: uniqueEmail('victim'), email_verified: true };
      const { code, state } = await authorize(app, 'google');
      standIn.tampering = tampering;
      const refused = await callback(app, 'google', { code, state });
      expectError(refused, 401, 'invalid_verification', label);
      expect(refused.body.error.message).toMatch(message);
      expect(await counts(app)).toEqual({ users: 0, identities: 0, sessions: 0 });
    });
  }

  it('a redirect_uri outside the allowed origins (422 invalid_url), and a relay of an unknown state (no redirect)', async () => {
    const app = await appWith('google');
    for (const uri of [
      'https://evil.example/cb',
      'http://app.test.evil.example/cb',
      'http://app.test:8080/cb',
      'javascript:alert(1)',
    ]) {
      const res = await startOAuth(app, 'google', uri);
      expect([422], uri).toContain(res.status);
      expect(res.body.error.code, uri).toBe('invalid_url');
    }
    expect(await sql(server, 'select id from oauth_states where application_id = ?', [app.id])).toEqual([]);
    const relay = await fetch(`${server.url}/v1/auth/oauth/redirect?code=x&state=unknown`, { redirect: 'manual' });
    expect(relay.status).toBe(401);
    expect(relay.headers.get('location')).toBeNull();
  });

  it('an http or loopback issuer is refused, naming the reason and GATEHOUSE_ALLOW_INSECURE_OIDC', async () => {
    const app = await oauthApp(server);
    const HINT = 'for local development only, GATEHOUSE_ALLOW_INSECURE_OIDC=1 on the server allows it';
    for (const [issuer, reason] of [
      ['http://localhost:8080/realms/dev', `not https; ${HINT}`],
      ['https://127.0.0.1/realms/dev', `a loopback address; ${HINT}`],
      ['https://172.16.0.9/realms/dev', 'a private address; no setting allows it'],
    ]) {
      const refused = await putProvider(app, 'oidc', { issuer, client_id: 'a', client_secret: 'b', enabled: true });
      expectError(refused, 422, 'invalid_url', issuer);
      expect(refused.body.error.message, issuer).toBe(`The URL is not allowed: ${reason}`);
      expect(refused.body.error.details, issuer).toEqual([{ path: 'issuer', message: reason }]);
    }
  });

  it("GitHub's refusal of a spent code (200 with an error field) is 401 with a helpful message", async () => {
    const app = await appWith('github');
    standIn.user.github = { sub: `${80_000 + ++seq}`, email: uniqueEmail('octo'), email_verified: true };
    const first = await authorize(app, 'github');
    expect((await ok(callback(app, 'github', { code: first.code, state: first.state }))).status).toBe('complete');
    const second = await authorize(app, 'github');
    const refused = await callback(app, 'github', { code: first.code, state: second.state });
    expectError(refused, 401, 'invalid_verification');
    expect(refused.body.error.message).toMatch(/refused the authorization code/);
    expect(refused.body.error.message).not.toContain('bad_verification_code');
    expect(await counts(app)).toEqual({ users: 1, identities: 1, sessions: 1 });
  });

  it('a provider not enabled for the application is 404 at start', async () => {
    const app = await appWith('google');
    expectError(await startOAuth(app, 'github'), 404, 'not_found');
    expectError(await startOAuth(app, 'myspace'), 422, 'validation_failed');
  });

  it('one person signing in for the first time in 10 tabs at once: every tab signed in, one user, one identity', async () => {
    const app = await appWith('google');
    standIn.user.google = { sub: `tabs-${++seq}`, email: uniqueEmail('tabs'), email_verified: true };
    const attempts: Array<Awaited<ReturnType<typeof authorize>>> = [];
    for (let i = 0; i < 10; i++) attempts.push(await authorize(app, 'google'));
    const results = await acrossServers(server, 10, (target, i) =>
      callback(app.via(target), 'google', { code: attempts[i]!.code, state: attempts[i]!.state }),
    );
    for (const r of results) expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(new Set(results.map((r) => r.body.data.user.id)).size).toBe(1);
    expect(await counts(app)).toEqual({ users: 1, identities: 1, sessions: 10 });
  });

  it('20 parallel callbacks with one code and state: exactly one sign-in', async () => {
    const app = await appWith('google');
    standIn.user.google = { sub: `race-${++seq}`, email: uniqueEmail('race'), email_verified: true };
    const { code, state } = await authorize(app, 'google');
    const redeemedBefore = standIn.redeemed;
    const results = await acrossServers(server, 20, (target) => callback(app.via(target), 'google', { code, state }));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    for (const r of results.filter((r) => r.status !== 200)) expectError(r, 401, 'invalid_verification');
    expect(standIn.redeemed - redeemedBefore).toBe(1);
    expect(await counts(app)).toEqual({ users: 1, identities: 1, sessions: 1 });
  });
});

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGatehouseClient } from '@gatehouse/sdk';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEnv, StartupError, sharedOAuthCredentials } from '../src/env.ts';
import { createHost, rule } from './helpers/access-rules.ts';
import { APP_CALLBACK, APP_ORIGIN, callback, oauthApp, putProvider, startOAuth, throughRelay } from './helpers/oauth.ts';
import { startOidcProvider, type TestOidcProvider } from './helpers/oauth-idp.ts';
import { freePort } from './helpers/ports.ts';
import { expectError, isoDate, MISSING, ok, rejection, sql, startServer, type TestServer } from './helpers/server.ts';
import { endUser } from './helpers/sign-in.ts';

/**
 * Provider settings (S3 and its siblings), shared development credentials, and the whole flow against a real
 * OpenID Connect server (panva's oidc-provider on loopback, driven through its login and consent pages over HTTP).
 */
const BUILT_IN = ['google', 'github', 'microsoft', 'apple', 'gitlab', 'discord', 'slack', 'linkedin'];
const SHARED = { clientId: 'operator-google-client', clientSecret: 'operator-google-secret' };

let server: TestServer;
let idp: TestOidcProvider;

beforeAll(async () => {
  // The provider registers the service's own redirect (the test server's configured base URL).
  idp = await startOidcProvider({ redirectUris: ['http://gatehouse.test/v1/auth/oauth/redirect'] });
  server = await startServer({
    oauth: { allowInsecureIssuers: true, sharedCredentials: { google: SHARED } },
  });
});
afterAll(async () => {
  await server?.close();
  await idp?.close();
});

const useIdp = async (app: Awaited<ReturnType<typeof oauthApp>>) =>
  ok(putProvider(app, 'oidc', { issuer: idp.issuer, client_id: idp.clientId, client_secret: idp.clientSecret, enabled: true }));

/** The browser client's `oauth.signIn('oidc')`: where it sends the browser (the provider's authorization URL). */
async function signInRedirect(browser: ReturnType<typeof createGatehouseClient>): Promise<string> {
  let sentTo = '';
  await browser.oauth.signIn('oidc', {
    redirectUri: APP_CALLBACK,
    navigate: (url) => {
      sentTo = url;
    },
  });
  return sentTo;
}
describe('provider settings (S3)', () => {
  it('lists every provider of CONTRACT §3 and oidc, unconfigured ones disabled without a secret', async () => {
    const app = await oauthApp(server);
    const list = await ok(app.rest('GET', `/v1/applications/${app.id}/providers/oauth`));
    expect(list.map((p: any) => p.provider)).toEqual([...BUILT_IN, 'oidc']);
    for (const setting of list) {
      expect(setting).toEqual({
        provider: setting.provider,
        client_id: null,
        enabled: false,
        has_secret: false,
        scopes: expect.any(Array),
        use_shared_dev_credentials: false,
        issuer: null,
        updated_at: null,
      });
    }
  });

  it('PUT stores the secret encrypted, never returns it, and keeps omitted fields; DELETE resets', async () => {
    const app = await oauthApp(server);
    const put = await ok(
      putProvider(app, 'github', {
        client_id: 'gh-client',
        client_secret: 'gh-secret-value',
        enabled: true,
        scopes: ['read:user'],
      }),
    );
    expect(put).toEqual({
      provider: 'github',
      client_id: 'gh-client',
      enabled: true,
      has_secret: true,
      scopes: ['read:user'],
      use_shared_dev_credentials: false,
      issuer: null,
      updated_at: isoDate,
    });
    expect(JSON.stringify(put)).not.toContain('gh-secret-value');
    const [row] = await sql(server, 'select client_secret_sealed from oauth_providers where application_id = ?', [app.id]);
    expect(row!.client_secret_sealed).toMatch(/^v1\./);
    expect(row!.client_secret_sealed).not.toContain('gh-secret-value');

    // Disabling needs no secret again; the stored one stays.
    const disabled = await ok(putProvider(app, 'github', { enabled: false }));
    expect(disabled).toMatchObject({ enabled: false, has_secret: true, client_id: 'gh-client', scopes: ['read:user'] });

    const list = await ok(app.rest('GET', `/v1/applications/${app.id}/providers/oauth`));
    expect(list.find((p: any) => p.provider === 'github')).toMatchObject({ client_id: 'gh-client', has_secret: true });

    expect(await ok(app.rest('DELETE', `/v1/applications/${app.id}/providers/oauth/github`))).toEqual({
      id: 'github',
      deleted: true,
    });
    const after = await ok(app.rest('GET', `/v1/applications/${app.id}/providers/oauth`));
    expect(after.find((p: any) => p.provider === 'github')).toMatchObject({ client_id: null, has_secret: false, enabled: false });
  });

  it('refuses an unknown provider (422), enabling without credentials (422), other applications (404), missing scope (403)', async () => {
    const app = await oauthApp(server);
    const other = await oauthApp(server);
    expectError(
      await putProvider(app, 'myspace', { enabled: true, client_id: 'x', client_secret: 'y' }),
      422,
      'validation_failed',
    );
    expectError(await app.rest('GET', `/v1/applications/${app.id}/providers/oauth/myspace`), 404, 'not_found');
    const noSecret = await putProvider(app, 'google', { enabled: true, client_id: 'only-id' });
    expectError(noSecret, 422, 'validation_failed');
    expect(noSecret.body.error.details).toEqual([{ path: 'client_secret', message: expect.any(String) }]);
    expectError(await putProvider(app, 'oidc', { enabled: true, client_id: 'a', client_secret: 'b' }), 422, 'validation_failed');
    expectError(
      await putProvider(app, 'github', { enabled: true, client_id: 'a', client_secret: 'b', issuer: 'https://x.example' }),
      422,
      'validation_failed',
    );
    expectError(
      await putProvider(app, 'github', { enabled: true, client_id: 'a', client_secret: 'b', extra: 1 }),
      422,
      'validation_failed',
    );
    const noOpenid = await putProvider(app, 'google', { enabled: true, client_id: 'a', client_secret: 'b', scopes: ['email'] });
    expectError(noOpenid, 422, 'validation_failed');
    expect(noOpenid.body.error.details).toEqual([{ path: 'scopes', message: expect.stringContaining('openid') }]);
    expectError(
      await app.rest('PUT', `/v1/applications/${other.id}/providers/oauth/github`, { enabled: false }),
      404,
      'not_found',
    );
    expectError(await app.rest('GET', `/v1/applications/${MISSING}/providers/oauth`), 404, 'not_found');
    const key = await ok(app.rest('POST', '/v1/api-keys', { name: 'reader', scopes: ['settings:read'] }), 201);
    const asReader = { authorization: `Bearer ${key.secret}` };
    expect((await app.rest('GET', `/v1/applications/${app.id}/providers/oauth`, undefined, asReader)).status).toBe(200);
    expectError(
      await app.rest('PUT', `/v1/applications/${app.id}/providers/oauth/github`, { enabled: false }, asReader),
      403,
      'insufficient_scope',
    );
    // Nothing was stored by any refusal.
    expect(await sql(server, 'select provider from oauth_providers where application_id in (?, ?)', [app.id, other.id])).toEqual(
      [],
    );
  });

  it('shared credentials come from GATEHOUSE_SHARED_OAUTH_<PROVIDER>_CLIENT_ID/_SECRET, both or neither', () => {
    const env = readEnv({
      GATEHOUSE_SHARED_OAUTH_GOOGLE_CLIENT_ID: 'gid',
      GATEHOUSE_SHARED_OAUTH_GOOGLE_CLIENT_SECRET: 'gsecret',
      GATEHOUSE_SHARED_OAUTH_MYSPACE_CLIENT_ID: 'ignored',
    });
    expect(sharedOAuthCredentials(env)).toEqual({ google: { clientId: 'gid', clientSecret: 'gsecret' } });
    const half = readEnv({ GATEHOUSE_SHARED_OAUTH_GITHUB_CLIENT_ID: 'only-the-id' });
    expect(() => sharedOAuthCredentials(half)).toThrow(StartupError);
    expect(() => sharedOAuthCredentials(half)).toThrow(/GATEHOUSE_SHARED_OAUTH_GITHUB_CLIENT_ID and _CLIENT_SECRET/);
  });

  it('shared development credentials: a development application signs in with the operator client; production is refused', async () => {
    const dev = await oauthApp(server);
    const setting = await ok(putProvider(dev, 'google', { enabled: true, use_shared_dev_credentials: true }));
    expect(setting).toMatchObject({ enabled: true, use_shared_dev_credentials: true, client_id: null, has_secret: false });
    const { authorization_url } = await ok(startOAuth(dev, 'google'));
    const url = new URL(authorization_url);
    expect(url.origin + url.pathname).toBe('https://accounts.google.com/o/oauth2/v2/auth');
    expect(url.searchParams.get('client_id')).toBe(SHARED.clientId);
    expect(url.searchParams.get('redirect_uri')).toBe('http://gatehouse.test/v1/auth/oauth/redirect');

    const prod = await oauthApp(server, { environment: 'production' });
    const refused = await putProvider(prod, 'google', { enabled: true, use_shared_dev_credentials: true });
    expectError(refused, 422, 'validation_failed');
    expect(refused.body.error.message).toMatch(/development applications only.*Register your own Google OAuth client/);
    // No shared client configured for GitHub on this server: a clear refusal, naming the variable.
    const none = await putProvider(dev, 'github', { enabled: true, use_shared_dev_credentials: true });
    expectError(none, 422, 'validation_failed');
    expect(none.body.error.message).toContain('GATEHOUSE_SHARED_OAUTH_GITHUB_CLIENT_ID');
    expect(await sql(server, 'select provider from oauth_providers where application_id = ?', [prod.id])).toEqual([]);
  });
});

describe('sign-in with a real OpenID Connect server', () => {
  it('start → login and consent at the provider → callback → complete → /v1/auth/me; the second time the same user', async () => {
    const app = await oauthApp(server);
    await useIdp(app);
    const email = `ada.${Date.now()}@example.com`;
    idp.accounts.set('ada', { email, email_verified: true, name: 'Ada Lovelace' });

    let userId: string | undefined;
    for (const round of [1, 2]) {
      const { authorization_url } = await ok(startOAuth(app, 'oidc'));
      const url = new URL(authorization_url);
      expect(url.origin).toBe(idp.issuer);
      expect(url.searchParams.get('code_challenge_method')).toBe('S256');
      expect(url.searchParams.get('nonce')).toBeTruthy();
      expect(url.searchParams.get('state')).toBeTruthy();
      const redirect = await idp.authorize(authorization_url, 'ada');
      const { landing, code, state } = await throughRelay(server, redirect);
      expect(`${landing.origin}${landing.pathname}`).toBe(APP_CALLBACK);
      const result = await ok(callback(app, 'oidc', { code, state }));
      expect(result.status, `round ${round}`).toBe('complete');
      expect(result.user).toMatchObject({ primary_email: email, email_verified: true, profile: { name: 'Ada Lovelace' } });
      userId ??= result.user.id;
      expect(result.user.id).toBe(userId);
      const me = await ok(endUser(app, 'GET', '/v1/auth/me', undefined, result.tokens.access_token));
      expect(me.id).toBe(userId);
      // A federated sign-in (RFC 8176 `fed`), for a new user and a returning one alike.
      const [session] = await sql(server, 'select amr from sessions where id = ?', [result.tokens.session_id]);
      expect(session.amr, `round ${round}`).toEqual(['fed']);
      // The state is single use.
      expectError(await callback(app, 'oidc', { code, state }), 401, 'invalid_verification');
    }
    const identities = await sql(server, `select kind, subject from identities where application_id = ?`, [app.id]);
    expect(identities).toEqual([{ kind: 'oauth', subject: `oidc:${idp.issuer}#ada` }]);
    const events = await ok(app.rest('GET', '/v1/events?type=user.identity_linked'));
    expect(events.events).toHaveLength(1);
    // Provider tokens are not kept unless the application asks.
    expect(await sql(server, 'select id from oauth_provider_tokens where application_id = ?', [app.id])).toEqual([]);
  });

  it('the start may name a host: host access rules decide at the callback (403, nothing created), the token carries it', async () => {
    const app = await oauthApp(server);
    await useIdp(app);
    const email = `grace.${Date.now()}@example.com`;
    idp.accounts.set('grace', { email, email_verified: true });
    const host = await createHost(app);
    const signInTo = async () => {
      const { authorization_url } = await ok(startOAuth(app, 'oidc', APP_CALLBACK, { host_id: host.id }));
      const { code, state } = await throughRelay(server, await idp.authorize(authorization_url, 'grace'));
      return callback(app, 'oidc', { code, state });
    };
    expectError(await signInTo(), 403, 'access_denied');
    expect(await sql(server, 'select id from users where application_id = ?', [app.id])).toEqual([]);

    const user = await ok(app.rest('POST', '/v1/users', { primary_email: email }), 201);
    await rule(app, 'allow', ['user', user.id], ['host', host.id]);
    const result = await ok(signInTo());
    if (result.status !== 'complete') throw new Error(`expected a complete sign-in, got ${result.status}`);
    expect(decodeJwt(result.tokens.access_token)).toMatchObject({ sub: user.id, host: host.id });
  });

  it('a returning person: the identity is marked used only when the sign-in goes on; a host rule or a ban changes nothing', async () => {
    const app = await oauthApp(server);
    await useIdp(app);
    idp.accounts.set('hedy', { email: `hedy.${Date.now()}@example.com`, email_verified: true });
    const host = await createHost(app);
    const signIn = async (hostId?: string) => {
      const { authorization_url } = await ok(startOAuth(app, 'oidc', APP_CALLBACK, hostId ? { host_id: hostId } : {}));
      const { code, state } = await throughRelay(server, await idp.authorize(authorization_url, 'hedy'));
      return callback(app, 'oidc', { code, state });
    };
    const first = await ok(signIn());
    expect(first.status).toBe('complete');
    const userId = first.user.id as string;
    const LONG_AGO = '2001-01-01T00:00:00.000Z';
    await sql(server, 'update identities set last_used_at = ? where user_id = ?', [LONG_AGO, userId]);
    const lastUsed = async () =>
      new Date(
        (await sql(server, 'select last_used_at from identities where user_id = ?', [userId]))[0]!.last_used_at,
      ).toISOString();
    const sessions = async () => (await sql(server, 'select id from sessions where user_id = ?', [userId])).length;
    const opened = await sessions();

    expectError(await signIn(host.id), 403, 'access_denied');
    await ok(app.rest('PATCH', `/v1/users/${userId}`, { status: 'banned' }));
    expectError(await signIn(), 403, 'access_denied');
    expect(await lastUsed()).toBe(LONG_AGO);
    expect(await sessions()).toBe(opened);
    const denied = await ok(app.rest('GET', '/v1/events?type=access.denied'));
    expect(denied.events.map((e: { data: { reason: string } }) => e.data.reason).sort()).toEqual([
      'no_allow_rule',
      'user_banned',
    ]);

    await ok(app.rest('PATCH', `/v1/users/${userId}`, { status: 'active' }));
    const returning = await ok(signIn());
    expect(returning).toMatchObject({ status: 'complete', user: { id: userId } });
    expect(await lastUsed()).not.toBe(LONG_AGO);
    const created = await ok(app.rest('GET', '/v1/events?type=session.created&limit=1'));
    expect(created.events[0].data).toEqual({ id: returning.tokens.session_id, user_id: userId, aal: 1 });
    const me = await ok(endUser(app, 'GET', '/v1/auth/me', undefined, returning.tokens.access_token));
    expect(me.id).toBe(userId);

    await sql(server, 'update identities set last_used_at = ? where user_id = ?', [LONG_AGO, userId]);
    await rule(app, 'allow', ['user', userId], ['host', host.id]);
    const toHost = await ok(signIn(host.id));
    expect(decodeJwt(toHost.tokens.access_token)).toMatchObject({ sub: userId, host: host.id });
    expect(await lastUsed()).not.toBe(LONG_AGO);
    expect(await sessions()).toBe(opened + 2);
  });

  it('a returning person stops at consent_required when the application has documents; the identity is marked used', async () => {
    const terms = { doc_type: 'terms', url: `${APP_ORIGIN}/terms`, version: '2026-01' };
    const app = await oauthApp(server, { settings: { consent_documents: [terms] } });
    await useIdp(app);
    idp.accounts.set('lin', { email: `lin.${Date.now()}@example.com`, email_verified: true });
    const signIn = async () => {
      const { authorization_url } = await ok(startOAuth(app, 'oidc'));
      const { code, state } = await throughRelay(server, await idp.authorize(authorization_url, 'lin'));
      return ok(callback(app, 'oidc', { code, state }));
    };
    const accept = async (pendingToken: string) =>
      ok(endUser(app, 'POST', '/v1/auth/consent/accept', { pending_token: pendingToken, doc_types: ['terms'] }));
    const first = await signIn();
    expect(first).toMatchObject({ status: 'consent_required', consent_documents: [terms] });
    const userId = (await accept(first.pending_token)).user.id as string;
    const LONG_AGO = '2001-01-01T00:00:00.000Z';
    await sql(server, 'update identities set last_used_at = ? where user_id = ?', [LONG_AGO, userId]);

    // A new version of the terms: the returning person is asked again, and their identity counts as used.
    const terms2 = { ...terms, version: '2026-06' };
    await ok(app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { consent_documents: [terms2] } }));
    const returning = await signIn();
    expect(returning).toMatchObject({ status: 'consent_required', consent_documents: [terms2] });
    const [identity] = await sql(server, 'select last_used_at from identities where user_id = ?', [userId]);
    expect(new Date(identity!.last_used_at).toISOString()).not.toBe(LONG_AGO);
    const completed = await accept(returning.pending_token);
    expect(completed).toMatchObject({ status: 'complete', user: { id: userId } });
  });

  it('the callback judges its application and origin in the statement that spends the state: a refused call spends nothing', async () => {
    const app = await oauthApp(server);
    await useIdp(app);
    idp.accounts.set('ida', { email: `ida.${Date.now()}@example.com`, email_verified: true });
    const { authorization_url } = await ok(startOAuth(app, 'oidc'));
    const { code, state } = await throughRelay(server, await idp.authorize(authorization_url, 'ida'));
    const path = '/v1/auth/oauth/oidc/callback';
    const post = (headers: Record<string, string | undefined>, body: Record<string, unknown> = { code, state }) =>
      app.rest('POST', path, body, { authorization: undefined, ...headers });

    for (const id of [MISSING, 'not-a-uuid', undefined]) {
      const headers = { 'x-application-id': id };
      expectError(await post(headers), 401, 'application_not_resolved', String(id));
      // The application is judged first, as on every end-user route: a bad body does not come before it.
      expectError(await post(headers, { state: 42 }), 401, 'application_not_resolved', `bad body, ${id}`);
    }
    expectError(await post({}, { state: 42 }), 422, 'validation_failed');
    const other = await oauthApp(server, { allowed_origins: ['https://other.example'] });
    for (const origin of ['https://other.example', 'null', `${APP_ORIGIN}:8443`, 'https://evil.example']) {
      const refused = await post({ origin });
      expectError(refused, 403, 'origin_not_allowed', origin);
      expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    }
    // Another application's id with this state: that application has no such state.
    expectError(
      await app.rest('POST', path, { code, state }, { authorization: undefined, 'x-application-id': other.id }),
      401,
      'invalid_verification',
    );
    const sessions = await sql(server, 'select id from sessions where application_id = ?', [app.id]);
    expect(sessions).toEqual([]);

    // Nothing above spent the state: the browser on the allowed origin signs in with it, once.
    const signedIn = await post({ origin: APP_ORIGIN });
    expect((await ok(signedIn)).status).toBe('complete');
    expect(signedIn.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN);
    expectError(await post({ origin: APP_ORIGIN }), 401, 'invalid_verification');
    // The service's own origin (its hosted pages) is allowed for every application, as on every end-user route.
    const again = await ok(startOAuth(app, 'oidc'));
    const next = await throughRelay(server, await idp.authorize(again.authorization_url, 'ida'));
    const own = await post({ origin: 'http://gatehouse.test' }, { code: next.code, state: next.state });
    expect((await ok(own)).status).toBe('complete');
    expect(own.headers.get('access-control-allow-origin')).toBe('http://gatehouse.test');
  });

  it('keeps the provider tokens, sealed, when settings.oauth.store_provider_tokens is on', async () => {
    const app = await oauthApp(server, { settings: { oauth: { store_provider_tokens: true } } });
    await useIdp(app);
    idp.accounts.set('bob', { email: `bob.${Date.now()}@example.com`, email_verified: true });
    const { authorization_url } = await ok(startOAuth(app, 'oidc'));
    const { code, state } = await throughRelay(server, await idp.authorize(authorization_url, 'bob'));
    expect((await ok(callback(app, 'oidc', { code, state }))).status).toBe('complete');
    const rows = await sql(server, 'select tokens_sealed from oauth_provider_tokens where application_id = ?', [app.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.tokens_sealed).toMatch(/^v1\./);
  });

  it('the callback uses the provider setting as it is then: a changed secret or a disabled provider counts at once', async () => {
    const app = await oauthApp(server);
    await useIdp(app);
    idp.accounts.set('cid', { email: `cid.${Date.now()}@example.com`, email_verified: true });
    const started = async () => {
      const { authorization_url } = await ok(startOAuth(app, 'oidc'));
      const { code, state } = await throughRelay(server, await idp.authorize(authorization_url, 'cid'));
      return { code, state };
    };
    expect((await ok(callback(app, 'oidc', await started()))).status).toBe('complete');
    // Started with the right secret, finished after it changed: the exchange uses the new (wrong) one.
    let attempt = await started();
    await ok(putProvider(app, 'oidc', { client_secret: 'not-the-secret', enabled: true }));
    expectError(await callback(app, 'oidc', attempt), 401, 'invalid_verification');
    await ok(putProvider(app, 'oidc', { client_secret: idp.clientSecret, enabled: true }));
    attempt = await started();
    await ok(putProvider(app, 'oidc', { enabled: false }));
    expectError(await callback(app, 'oidc', attempt), 404, 'not_found');
    await ok(putProvider(app, 'oidc', { enabled: true }));
    expect((await ok(callback(app, 'oidc', await started()))).status).toBe('complete');
  });

  it('the person declining at the provider is 401 invalid_verification with a helpful message; nothing is created', async () => {
    const app = await oauthApp(server);
    await useIdp(app);
    const { authorization_url } = await ok(startOAuth(app, 'oidc'));
    const { error, state } = await throughRelay(server, await idp.authorize(authorization_url, 'nobody', { deny: true }));
    expect(error).toBe('access_denied');
    const refused = await callback(app, 'oidc', { error, state });
    expectError(refused, 401, 'invalid_verification');
    expect(refused.body.error.message).toContain('declined');
    expect(await sql(server, 'select id from users where application_id = ?', [app.id])).toEqual([]);
  });

  it('a code the provider refuses (PKCE verifier of another attempt) is 401 with a helpful message, no provider text', async () => {
    const app = await oauthApp(server);
    await useIdp(app);
    idp.accounts.set('eve', { email: `eve.${Date.now()}@example.com`, email_verified: true });
    // Two attempts: the code of the first is presented with the state (so the verifier) of the second.
    const first = await ok(startOAuth(app, 'oidc'));
    const second = await ok(startOAuth(app, 'oidc'));
    const a = await throughRelay(server, await idp.authorize(first.authorization_url, 'eve'));
    const b = await throughRelay(server, await idp.authorize(second.authorization_url, 'eve'));
    const refused = await callback(app, 'oidc', { code: a.code, state: b.state });
    expectError(refused, 401, 'invalid_verification');
    expect(refused.body.error.message).toMatch(/Start the sign-in again/);
    expect(refused.body.error.message).not.toMatch(/invalid_grant|PKCE|grant request/i);
    expect(await sql(server, 'select id from users where application_id = ?', [app.id])).toEqual([]);
  });
});

describe('a generic issuer is loaded when it is saved; one that fails at sign-in is 503 naming it', () => {
  /** Issuers on loopback, one per path: `/<kind>` serves the discovery document of that kind. */
  let documents: Server;
  let base: string;
  beforeAll(async () => {
    documents = createServer((req, res) => {
      const kind = req.url?.split('/')[1] ?? '';
      const issuer = `${base}/${kind}`;
      const json = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (!req.url?.endsWith('/.well-known/openid-configuration')) res.writeHead(404).end();
      else if (kind === 'html') res.writeHead(200, { 'content-type': 'text/html' }).end('<html>Welcome</html>');
      else if (kind === 'mismatch') json({ issuer: 'https://elsewhere.example', authorization_endpoint: `${issuer}/auth` });
      else if (kind === 'partial') json({ issuer, authorization_endpoint: `${issuer}/auth` });
      else if (kind.startsWith('good'))
        // Everything but the token endpoint answers: it is on a port nobody listens on.
        json({ issuer, authorization_endpoint: `${issuer}/auth`, token_endpoint: deadTokenEndpoint, jwks_uri: `${issuer}/jwks` });
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(documents.address() as AddressInfo).port}`;
    deadTokenEndpoint = `http://127.0.0.1:${await freePort()}/token`;
  });
  let deadTokenEndpoint: string;
  afterAll(() => new Promise((resolve) => documents?.close(resolve)));

  const saveIssuer = (app: Awaited<ReturnType<typeof oauthApp>>, issuer: string) =>
    putProvider(app, 'oidc', { issuer, client_id: 'gatehouse-client', client_secret: 'secret', enabled: true });

  it('PUT refuses an issuer whose discovery document cannot be used (422 invalid_url, the reason), and stores nothing', async () => {
    const app = await oauthApp(server);
    const cases: Array<[string, RegExp]> = [
      [`http://127.0.0.1:${await freePort()}`, /discovery document .*could not be loaded \(connection refused\)/],
      [`${base}/missing`, /discovery document .*answered HTTP 404/],
      [`${base}/html`, /discovery document .*is not JSON/],
      [`${base}/mismatch`, /discovery document .*names another issuer \(https:\/\/elsewhere\.example\)/],
      [`${base}/partial`, /discovery document .*lacks token_endpoint, jwks_uri/],
    ];
    for (const [issuer, reason] of cases) {
      const refused = await saveIssuer(app, issuer);
      expectError(refused, 422, 'invalid_url', issuer);
      expect(refused.body.error.message, issuer).toMatch(reason);
      expect(refused.body.error.details, issuer).toEqual([{ path: 'issuer', message: expect.stringMatching(reason) }]);
    }
    const list = await ok(app.rest('GET', `/v1/applications/${app.id}/providers/oauth`));
    expect(list.find((p: any) => p.provider === 'oidc')).toMatchObject({ issuer: null, enabled: false, has_secret: false });
  });

  it('an issuer that stops answering, or whose token endpoint is down, is 503 service_unavailable naming it (never 401)', async () => {
    const app = await oauthApp(server);
    const issuerHost = new URL(base).host;
    await ok(saveIssuer(app, `${base}/good`));
    // The token endpoint is down at the callback.
    const { authorization_url } = await ok(startOAuth(app, 'oidc'));
    expect(authorization_url.startsWith(`${base}/good/auth?`)).toBe(true);
    const state = new URL(authorization_url).searchParams.get('state');
    const atCallback = await callback(app, 'oidc', { code: 'a-code', state });
    expectError(atCallback, 503, 'service_unavailable');
    expect(atCallback.body.error.message).toContain(`Sign-in with OpenID Connect (${issuerHost}) is unavailable`);
    expect(atCallback.headers.get('retry-after')).toBe('30');
    // The issuer itself stops answering after it was saved: the start says so.
    await ok(putProvider(app, 'oidc', { issuer: `${base}/good-again`, client_id: 'another-client', enabled: true }));
    await new Promise((resolve) => documents.close(resolve));
    const atStart = await startOAuth(app, 'oidc');
    expectError(atStart, 503, 'service_unavailable');
    expect(atStart.body.error.message).toContain(`Sign-in with OpenID Connect (${issuerHost}) is unavailable`);
    expect(
      await sql(server, 'select count(*)::int as n from oauth_states where application_id = ? and consumed_at is null', [app.id]),
    ).toEqual([{ n: 0 }]);
  });
});

describe('the SDK', () => {
  it('management providers.* and the browser client: oauth.signIn → provider → handleCallback → me(); identities', async () => {
    const app = await oauthApp(server);
    const settings = await app.sdk.providers.put({
      id: app.id,
      provider: 'oidc',
      issuer: idp.issuer,
      client_id: idp.clientId,
      client_secret: idp.clientSecret,
      enabled: true,
    });
    expect(settings).toMatchObject({ provider: 'oidc', enabled: true, has_secret: true, issuer: idp.issuer });
    expect((await app.sdk.providers.list({ id: app.id })).find((p) => p.provider === 'oidc')?.client_id).toBe(idp.clientId);
    const unknown = await rejection(app.sdk.providers.put({ id: app.id, provider: 'myspace' as 'oidc', enabled: false }));
    expect(unknown).toMatchObject({ code: 'validation_failed', status: 422 });

    const email = `sdk.${Date.now()}@example.com`;
    idp.accounts.set('sdk-user', { email, email_verified: true });
    const browser = createGatehouseClient({ baseUrl: server.url, applicationId: app.id });
    const sentTo = await signInRedirect(browser);
    expect(sentTo.startsWith(`${idp.issuer}/`)).toBe(true);
    const { landing } = await throughRelay(server, await idp.authorize(sentTo, 'sdk-user'));
    expect(landing.searchParams.get('provider')).toBe('oidc');
    const result = await browser.oauth.handleCallback({ url: landing.toString() });
    expect(result.status).toBe('complete');
    expect((await browser.me()).primary_email).toBe(email);
    const [identity] = await browser.identities.list();
    expect(identity).toMatchObject({ kind: 'oauth', provider: 'oidc' });
    // Its only other way in is the (verified) email, so unlinking is allowed.
    expect(await browser.identities.remove(identity!.id)).toEqual({ id: identity!.id, deleted: true });
    // The same landing URL again: the state is spent.
    expect(await rejection(browser.oauth.handleCallback({ url: landing.toString() }))).toMatchObject({
      code: 'invalid_verification',
      status: 401,
    });
    await expect(browser.oauth.handleCallback({ url: `${APP_CALLBACK}?nothing=here` })).rejects.toMatchObject({
      code: 'validation_failed',
    });
  });
  it('handleCallback refuses a redirect this tab did not start (login CSRF), sending nothing', async () => {
    const app = await oauthApp(server);
    await useIdp(app);
    idp.accounts.set('victim', { email: `victim.${Date.now()}@example.com`, email_verified: true });
    idp.accounts.set('attacker', { email: `attacker.${Date.now()}@example.com`, email_verified: true });
    // A browser tab's sessionStorage (Node has none; the SDK uses it where it exists).
    const store = new Map<string, string>();
    const tab = {
      getItem: (k: string) => store.get(k) ?? null,
      setItem: (k: string, v: string) => void store.set(k, v),
      removeItem: (k: string) => void store.delete(k),
    };
    Object.assign(globalThis, { sessionStorage: tab });
    try {
      // The attacker runs a sign-in of their own and stops before the callback.
      const attackers = await ok(startOAuth(app, 'oidc'));
      const forged = await throughRelay(server, await idp.authorize(attackers.authorization_url, 'attacker'));
      // The victim's tab starts a sign-in, then is sent to the attacker's landing URL.
      const browser = createGatehouseClient({ baseUrl: server.url, applicationId: app.id });
      await signInRedirect(browser);
      const refused = await rejection(browser.oauth.handleCallback({ url: forged.landing.toString() }));
      expect(refused).toMatchObject({ code: 'invalid_verification', status: 401 });
      expect(browser.getSession()).toBeNull();
      // Nothing was sent: the attacker's state is still unspent.
      const [row] = await sql(
        server,
        "select consumed_at from oauth_states where state_hash = encode(sha256(convert_to(?, 'UTF8')), 'hex')",
        [forged.state],
      );
      expect(row).toEqual({ consumed_at: null });
      // The tab's own sign-in still works.
      const own = await throughRelay(server, await idp.authorize(await signInRedirect(browser), 'victim'));
      expect((await browser.oauth.handleCallback({ url: own.landing.toString() })).status).toBe('complete');
    } finally {
      Reflect.deleteProperty(globalThis, 'sessionStorage');
    }
  });
});

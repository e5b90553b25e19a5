import { createGatehouseClient } from '@gatehouse/sdk';
import { describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import {
  authorize,
  createClient,
  LOGIN_URL,
  NATIVE_CALLBACK,
  oauthApp,
  oidc,
  relyingParty,
  startAuthorization,
  WEB_CALLBACK,
} from './helpers/oauth2.ts';
import { expectError, isoDate, MISSING, ok, sql, UUID } from './helpers/server.ts';
import { endUser } from './helpers/sign-in.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

/** OAuth clients (SK, `oauth2:*` scopes) and the management view of grants, merge and ban. */
const suite = serverSuite();

describe('OAuth clients', () => {
  it('create answers 201 with the secret once; it is stored as SHA-256; get/list/patch/delete', async () => {
    const app = await oauthApp(suite.server);
    const res = await app.rest('POST', '/v1/oauth2/clients', {
      name: 'Partner',
      type: 'confidential',
      redirect_uris: [WEB_CALLBACK],
      scopes: ['openid', 'read:docs'],
      logo_url: 'https://thirdparty.example.test/logo.png',
    });
    const created = await ok(res, 201);
    expect(created).toEqual({
      id: expect.stringMatching(UUID),
      name: 'Partner',
      type: 'confidential',
      redirect_uris: [WEB_CALLBACK],
      post_logout_redirect_uris: [],
      scopes: ['openid', 'read:docs'],
      logo_url: 'https://thirdparty.example.test/logo.png',
      dynamic: false,
      client_secret: expect.stringMatching(/^gcs_[0-9A-Za-z]{43}$/),
      created_at: isoDate,
      updated_at: isoDate,
    });
    const [row] = await sql(suite.server, 'select secret_hash from oauth2_clients where id = ?', [created.id]);
    expect(row!.secret_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row!.secret_hash).not.toContain(created.client_secret);

    const fetched = await ok(app.rest('GET', `/v1/oauth2/clients/${created.id}`));
    expect(fetched.client_secret).toBeUndefined();
    expect(await ok(app.rest('GET', '/v1/oauth2/clients'))).toEqual([fetched]);
    const patched = await ok(
      app.rest('PATCH', `/v1/oauth2/clients/${created.id}`, { name: 'Renamed', redirect_uris: [NATIVE_CALLBACK] }),
    );
    expect(patched).toMatchObject({ name: 'Renamed', redirect_uris: [NATIVE_CALLBACK], scopes: ['openid', 'read:docs'] });
    // Where RP-initiated logout may return: URIs like redirect URIs (no fragment, https or loopback).
    const loggedOut = 'https://thirdparty.example.test/signed-out';
    expect(
      await ok(app.rest('PATCH', `/v1/oauth2/clients/${created.id}`, { post_logout_redirect_uris: [loggedOut, loggedOut] })),
    ).toMatchObject({ post_logout_redirect_uris: [loggedOut], redirect_uris: [NATIVE_CALLBACK] });
    const bad = await app.rest('PATCH', `/v1/oauth2/clients/${created.id}`, {
      post_logout_redirect_uris: ['http://thirdparty.example.test/out', `${loggedOut}#x`],
    });
    expectError(bad, 422, 'invalid_url');
    expect(bad.body.error.details!.map((d) => d.path).sort()).toEqual([
      'post_logout_redirect_uris.0',
      'post_logout_redirect_uris.1',
    ]);
    expect(await ok(app.rest('DELETE', `/v1/oauth2/clients/${created.id}`))).toEqual({ id: created.id, deleted: true });
    expectError(await app.rest('GET', `/v1/oauth2/clients/${created.id}`), 404, 'not_found');
  });

  it('a public client gets no secret, and rotate-secret refuses it', async () => {
    const app = await oauthApp(suite.server);
    const client = await createClient(app, { type: 'public', redirect_uris: [NATIVE_CALLBACK] });
    expect(client.client_secret).toBeNull();
    expectError(await app.rest('POST', `/v1/oauth2/clients/${client.id}/rotate-secret`), 422, 'validation_failed');
  });

  it('redirect URIs: https, loopback http for native apps, reverse-domain schemes; everything else is 422 invalid_url', async () => {
    const app = await oauthApp(suite.server);
    for (const uri of ['https://a.example/cb', 'http://127.0.0.1:9000/cb', 'http://[::1]/cb', 'com.example.app:/oauth']) {
      await ok(app.rest('POST', '/v1/oauth2/clients', { name: 'ok', type: 'public', redirect_uris: [uri] }), 201);
    }
    for (const uri of [
      'http://a.example/cb',
      'http://localhost.evil.example/cb',
      'https://a.example/cb#fragment',
      'https://user:pass@a.example/cb',
      'javascript:alert(1)',
      'data:text/html,hi',
      'not a url',
    ]) {
      expectError(
        await app.rest('POST', '/v1/oauth2/clients', { name: 'bad', type: 'public', redirect_uris: [uri] }),
        422,
        'invalid_url',
        uri,
      );
    }
  });

  it('scopes must be offered (422 unknown_scope); bodies are strict; another application sees 404', async () => {
    const app = await oauthApp(suite.server);
    expectError(
      await app.rest('POST', '/v1/oauth2/clients', {
        name: 'x',
        type: 'public',
        redirect_uris: [WEB_CALLBACK],
        scopes: ['admin'],
      }),
      422,
      'unknown_scope',
    );
    expectError(
      await app.rest('POST', '/v1/oauth2/clients', { name: 'x', type: 'public', redirect_uris: [WEB_CALLBACK], dynamic: true }),
      422,
      'validation_failed',
    );
    expectError(
      await app.rest('POST', '/v1/oauth2/clients', { name: 'x', type: 'secret', redirect_uris: [WEB_CALLBACK] }),
      422,
      'validation_failed',
    );
    const client = await createClient(app);
    const other = await oauthApp(suite.server);
    expectError(await other.rest('GET', `/v1/oauth2/clients/${client.id}`), 404, 'not_found');
    expectError(await other.rest('DELETE', `/v1/oauth2/clients/${client.id}`), 404, 'not_found');
    expectError(await app.rest('GET', `/v1/oauth2/clients/${MISSING}`), 404, 'not_found');
  });

  it('a key without oauth2 scopes is refused (403 insufficient_scope)', async () => {
    const app = await oauthApp(suite.server);
    const key = await ok(app.rest('POST', '/v1/api-keys', { name: 'users only', scopes: ['users:read'] }), 201);
    const res = await app.rest('GET', '/v1/oauth2/clients', undefined, { authorization: `Bearer ${key.secret}` });
    expectError(res, 403, 'insufficient_scope');
    const reader = await ok(app.rest('POST', '/v1/api-keys', { name: 'reader', scopes: ['oauth2:read'] }), 201);
    expect((await app.rest('GET', '/v1/oauth2/clients', undefined, { authorization: `Bearer ${reader.secret}` })).status).toBe(
      200,
    );
    const write = await app.rest(
      'POST',
      '/v1/oauth2/clients',
      { name: 'x', type: 'public', redirect_uris: [WEB_CALLBACK] },
      {
        authorization: `Bearer ${reader.secret}`,
      },
    );
    expectError(write, 403, 'insufficient_scope');
  });
});

describe('Grants: management, consent memory, merge and ban', () => {
  it('the same scopes later need no consent; management lists and revokes a user grant', async () => {
    const app = await oauthApp(suite.server);
    const client = await createClient(app);
    const config = await relyingParty(suite.server, app, client);
    const email = uniqueEmail('again');
    const first = await authorize(suite.server, suite.smtp, app, config, { email, scope: 'openid email', prompt: null });
    // The same browser asking for the same scopes again goes straight back with a code: no login, no consent.
    const again = await startAuthorization(suite.server, config, { scope: 'openid email', prompt: null }, first.browser);
    const callback = new URL(again.first.location);
    expect(`${callback.origin}${callback.pathname}`).toBe(WEB_CALLBACK);
    expect(callback.searchParams.get('code')).toBeTruthy();
    // Asking for more scopes asks again.
    const more = await startAuthorization(suite.server, config, { scope: 'openid email read:docs', prompt: null }, first.browser);
    expect(more.first.location.startsWith(`${LOGIN_URL}?interaction=`)).toBe(true);
    const user = (await endUser(app, 'GET', '/v1/auth/me', undefined, first.accessToken)).body.data;
    const grants = await ok(app.rest('GET', `/v1/users/${user.id}/grants`));
    expect(grants).toHaveLength(1);
    expect(grants[0]).toMatchObject({ client_id: client.id, created_at: isoDate, updated_at: isoDate });
    expectError(await app.rest('GET', `/v1/users/${MISSING}/grants`), 404, 'not_found');
    expectError(await app.rest('DELETE', `/v1/users/${user.id}/grants/unknown`), 404, 'not_found');
    const other = await oauthApp(suite.server);
    expectError(await other.rest('GET', `/v1/users/${user.id}/grants`), 404, 'not_found');
    expect(await ok(app.rest('DELETE', `/v1/users/${user.id}/grants/${grants[0].id}`))).toEqual({
      id: grants[0].id,
      deleted: true,
    });
    expect(await ok(app.rest('GET', `/v1/users/${user.id}/grants`))).toEqual([]);
  });

  it("a user cannot revoke another user's grant (404)", async () => {
    const app = await oauthApp(suite.server);
    const client = await createClient(app);
    const config = await relyingParty(suite.server, app, client);
    const alice = await authorize(suite.server, suite.smtp, app, config, { scope: 'openid' });
    const bob = await authorize(suite.server, suite.smtp, app, config, { scope: 'openid' });
    const [aliceGrant] = await ok(endUser(app, 'GET', '/v1/auth/me/grants', undefined, alice.accessToken));
    expectError(
      await endUser(app, 'DELETE', `/v1/auth/me/grants/${aliceGrant.id}`, undefined, bob.accessToken),
      404,
      'not_found',
    );
    expect(await ok(endUser(app, 'GET', '/v1/auth/me/grants', undefined, alice.accessToken))).toHaveLength(1);
    expectError(await endUser(app, 'GET', '/v1/auth/me/grants'), 401, 'missing_credentials');
  });

  it('merge moves grants to the target, whose tokens keep working; banning revokes them', async () => {
    const app = await oauthApp(suite.server);
    const client = await createClient(app);
    const config = await relyingParty(suite.server, app, client);
    const flow = await authorize(suite.server, suite.smtp, app, config);
    const tokens = await oidc.authorizationCodeGrant(config, flow.callback, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
    });
    const source = (await endUser(app, 'GET', '/v1/auth/me', undefined, flow.accessToken)).body.data;
    const target = await ok(app.rest('POST', '/v1/users', { primary_email: uniqueEmail('target') }), 201);
    await ok(app.rest('POST', '/v1/users/merge', { source_user_id: source.id, target_user_id: target.id }));
    const moved = await ok(app.rest('GET', `/v1/users/${target.id}/grants`));
    expect(moved).toHaveLength(1);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.claims()?.sub).toBe(target.id);
    expect((await oidc.tokenIntrospection(config, refreshed.access_token)).sub).toBe(target.id);

    await ok(app.rest('PATCH', `/v1/users/${target.id}`, { status: 'banned' }));
    expect(await ok(app.rest('GET', `/v1/users/${target.id}/grants`))).toEqual([]);
    await expect(oidc.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await oidc.tokenIntrospection(config, refreshed.access_token)).active).toBe(false);
  });
});

describe('SDK: oauth2.clients (server) and grants / oauth2 interaction (browser)', () => {
  it('a third-party authorization driven through both SDKs', async () => {
    const app = await suite.server.createApp({
      allowed_origins: [new URL(LOGIN_URL).origin],
      settings: { oauth2: { login_url: LOGIN_URL } },
    });
    const created = await app.sdk.oauth2.clients.create({
      name: 'Via SDK',
      type: 'confidential',
      redirect_uris: [WEB_CALLBACK],
      scopes: ['openid'],
    });
    expect(created.client_secret).toMatch(/^gcs_/);
    expect((await app.sdk.oauth2.clients.list()).map((c) => c.id)).toEqual([created.id]);
    expect((await app.sdk.oauth2.clients.update({ id: created.id, name: 'Renamed' })).name).toBe('Renamed');
    const rotated = await app.sdk.oauth2.clients.rotateSecret({ id: created.id });
    expect(rotated.client_secret).not.toBe(created.client_secret);

    const config = await relyingParty(suite.server, app, { ...created, client_secret: rotated.client_secret });
    const started = await startAuthorization(suite.server, config, { scope: 'openid', prompt: null });
    const uid = new URL(started.first.location).searchParams.get('interaction')!;

    const browser = createGatehouseClient({ baseUrl: suite.server.url, applicationId: app.id });
    const email = uniqueEmail('sdk');
    expect(await browser.magicLink.start({ email, redirect_url: LOGIN_URL })).toMatchObject({ status: 'link_sent' });
    const token = linkIn(await suite.smtp.next(email)).searchParams.get('token')!;
    const result = await browser.magicLink.verify({ token });
    expect(result.status).toBe('complete');

    const interaction = await browser.oauth2.interaction(uid);
    expect(interaction).toMatchObject({ uid, client: { id: created.id, name: 'Renamed' }, scopes: [{ name: 'openid' }] });
    const { redirect_to } = await browser.oauth2.complete(uid, ['openid']);
    const back = await started.browser.follow(redirect_to);
    expect(new URL(back.location).searchParams.get('code')).toBeTruthy();

    const grants = await browser.grants.list();
    expect(grants).toHaveLength(1);
    expect(await browser.grants.revoke(grants[0]!.id)).toEqual({ id: grants[0]!.id, deleted: true });
    expect(await browser.grants.list()).toEqual([]);
    expect(await app.sdk.oauth2.clients.delete({ id: created.id })).toEqual({ id: created.id, deleted: true });
  });

  it('deny sends the browser back to the client with access_denied', async () => {
    const app = await oauthApp(suite.server);
    const client = await createClient(app);
    const config = await relyingParty(suite.server, app, client);
    const started = await startAuthorization(suite.server, config, { scope: 'openid' });
    const uid = new URL(started.first.location).searchParams.get('interaction')!;
    const { signIn } = await import('./helpers/sign-in.ts');
    const { tokens } = await signIn(suite.server, suite.smtp, app, uniqueEmail('deny'));
    const { redirect_to } = await ok(endUser(app, 'POST', `/v1/oauth2/interactions/${uid}/deny`, undefined, tokens.access_token));
    const back = new URL((await started.browser.follow(redirect_to)).location);
    expect(`${back.origin}${back.pathname}`).toBe(WEB_CALLBACK);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(await sql(suite.server, 'select id from oauth2_grants where application_id = ?', [app.id])).toEqual([]);
    // Unknown interaction: 404; completing needs the user's access token.
    expectError(await endUser(app, 'GET', '/v1/oauth2/interactions/unknown'), 404, 'not_found');
    expectError(
      await endUser(app, 'POST', `/v1/oauth2/interactions/${uid}/complete`, { approved_scopes: [] }),
      401,
      'missing_credentials',
    );
  });
});

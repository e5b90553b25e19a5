import { purgeExpired } from '@gatehouse/api';
import { describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import {
  authorize,
  createClient,
  interactionUid,
  NATIVE_CALLBACK,
  oauthApp,
  oidc,
  relyingParty,
  startAuthorization,
  storedTokens,
  tokenRequest,
  WEB_CALLBACK,
} from './helpers/oauth2.ts';
import { acrossServers, rawRequest, sql } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

/** RFC 9700 attacks against each application's authorization server; each one must fail closed. */
const suite = serverSuite();

async function setup(clientInput: Record<string, unknown> = {}) {
  const app = await oauthApp(suite.server);
  const client = await createClient(app, clientInput);
  const config = await relyingParty(suite.server, app, client);
  return { app, client, config };
}

const codeOf = (callback: URL) => callback.searchParams.get('code')!;

/** The token request that redeems a flow's code with its own verifier. */
const codeExchange = (flow: { callback: URL; verifier: string }, redirectUri = WEB_CALLBACK) => ({
  grant_type: 'authorization_code',
  code: codeOf(flow.callback),
  redirect_uri: redirectUri,
  code_verifier: flow.verifier,
});

describe('OAuth provider attacks', () => {
  it('a redirect_uri that is not registered exactly is refused without a redirect (prefix, suffix, case, port, path tricks)', async () => {
    const { config } = await setup();
    for (const redirectUri of [
      `${WEB_CALLBACK}/extra`,
      `${WEB_CALLBACK}x`,
      `${WEB_CALLBACK}?next=https://evil.example`,
      WEB_CALLBACK.replace('thirdparty', 'THIRDPARTY').replace('/callback', '/Callback'),
      WEB_CALLBACK.replace('https://', 'http://'),
      WEB_CALLBACK.replace('.test/', '.test:444/'),
      'https://evil.example/callback',
      `https://thirdparty.example.test.evil.example/callback`,
    ]) {
      const { first } = await startAuthorization(suite.server, config, { redirectUri });
      expect(first.response.status, redirectUri).toBe(400);
      expect(first.location, redirectUri).toBe('');
      expect(await first.response.text()).toContain('redirect_uri');
    }
  });

  it('PKCE is required of every client, S256 only: none or plain is an error sent back to the client', async () => {
    const { config } = await setup();
    for (const options of [{ withoutPkce: true }, { codeChallengeMethod: 'plain' }]) {
      const { first } = await startAuthorization(suite.server, config, options);
      const callback = new URL(first.location);
      expect(`${callback.origin}${callback.pathname}`).toBe(WEB_CALLBACK);
      expect(callback.searchParams.get('error')).toBe('invalid_request');
      expect(callback.searchParams.get('code')).toBeNull();
    }
  });

  it('a wrong code_verifier is refused', async () => {
    const { app, client, config } = await setup();
    const flow = await authorize(suite.server, suite.smtp, app, config);
    const res = await tokenRequest(
      suite.server,
      app,
      {
        grant_type: 'authorization_code',
        code: codeOf(flow.callback),
        redirect_uri: WEB_CALLBACK,
        code_verifier: oidc.randomPKCECodeVerifier(),
      },
      { id: client.id, secret: client.client_secret },
    );
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_grant');
  });

  it('code replay: of 20 parallel exchanges (two processes on PostgreSQL) exactly one gets tokens', async () => {
    const { app, client, config } = await setup();
    const flow = await authorize(suite.server, suite.smtp, app, config);
    const form = codeExchange(flow);
    const results = await acrossServers(suite.server, 20, (target) =>
      tokenRequest(target, app, form, { id: client.id, secret: client.client_secret }),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status !== 200).every((r) => r.body.error === 'invalid_grant')).toBe(true);
    // Replayed again later (the racers' 10 s grace over, by the database clock): refused, and the grant with the tokens
    // the code gave is revoked (RFC 9700 §4.14).
    const winner = results.find((r) => r.status === 200)!;
    expect((await oidc.tokenIntrospection(config, winner.body.access_token)).active).toBe(true);
    await sql(
      suite.server,
      `update oauth2_artifacts set consumed_at = consumed_at - interval '1 minute' where consumed_at is not null`,
    );
    const late = await tokenRequest(suite.server, app, form, { id: client.id, secret: client.client_secret });
    expect(late.body.error).toBe('invalid_grant');
    expect((await oidc.tokenIntrospection(config, winner.body.access_token)).active).toBe(false);
  });

  it("another client's code is refused, and so is an expired one (60 s, judged by the database clock)", async () => {
    const { app, client, config } = await setup();
    const other = await createClient(app, { name: 'Other' });
    const flow = await authorize(suite.server, suite.smtp, app, config);
    const form = codeExchange(flow);
    const stolen = await tokenRequest(suite.server, app, form, { id: other.id, secret: other.client_secret });
    expect(stolen.body.error).toBe('invalid_grant');

    const lifetimes = await sql<{ ttl: number }>(
      suite.server,
      `select extract(epoch from expires_at - created_at)::int as ttl from oauth2_artifacts where kind = 'AuthorizationCode' and application_id = ?`,
      [app.id],
    );
    expect(lifetimes.every((r: { ttl: number }) => Number(r.ttl) <= 60)).toBe(true);

    const second = await authorize(suite.server, suite.smtp, app, config);
    await sql(
      suite.server,
      `update oauth2_artifacts set expires_at = now() - interval '1 second' where kind = 'AuthorizationCode' and application_id = ?`,
      [app.id],
    );
    const expired = await tokenRequest(
      suite.server,
      app,
      { ...form, code: codeOf(second.callback), code_verifier: second.verifier },
      { id: client.id, secret: client.client_secret },
    );
    expect(expired.body.error).toBe('invalid_grant');
    // Housekeeping removes artifacts a day after they expired.
    await sql(
      suite.server,
      `update oauth2_artifacts set expires_at = now() - interval '2 days' where kind = 'AuthorizationCode' and application_id = ?`,
      [app.id],
    );
    await purgeExpired(suite.server.server.orm);
    expect(
      await sql(suite.server, `select id from oauth2_artifacts where kind = 'AuthorizationCode' and application_id = ?`, [
        app.id,
      ]),
    ).toEqual([]);
  });

  it('codes and refresh tokens are stored hashed', async () => {
    const { app, config } = await setup();
    const flow = await authorize(suite.server, suite.smtp, app, config);
    const tokens = await oidc.authorizationCodeGrant(config, flow.callback, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
    });
    const ids = (
      await sql<{ id: string }>(suite.server, 'select id from oauth2_artifacts where application_id = ?', [app.id])
    ).map((r: { id: string }) => r.id);
    for (const secret of [codeOf(flow.callback), tokens.refresh_token!, tokens.access_token]) expect(ids).not.toContain(secret);
  });

  it('refresh-token reuse revokes the grant: the rotated token and its successor are both refused', async () => {
    const { app, config } = await setup();
    const flow = await authorize(suite.server, suite.smtp, app, config);
    const tokens = await oidc.authorizationCodeGrant(config, flow.callback, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
    });
    const rotated = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    // Reused after the racers' 10 s grace (by the database clock): a replay.
    await sql(
      suite.server,
      `update oauth2_artifacts set consumed_at = consumed_at - interval '1 minute' where consumed_at is not null`,
    );
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(oidc.refreshTokenGrant(config, rotated.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await oidc.tokenIntrospection(config, rotated.access_token)).active).toBe(false);
  });

  it('20 parallel refreshes with one refresh token: exactly one succeeds', async () => {
    const { app, client, config } = await setup();
    const flow = await authorize(suite.server, suite.smtp, app, config);
    const tokens = await oidc.authorizationCodeGrant(config, flow.callback, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
    });
    const results = await acrossServers(suite.server, 20, (target) =>
      tokenRequest(
        target,
        app,
        { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! },
        { id: client.id, secret: client.client_secret },
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status !== 200).every((r) => r.body.error === 'invalid_grant')).toBe(true);
    // The racers lost without revoking anything: the winner's tokens work.
    const winner = results.find((r) => r.status === 200)!;
    expect((await oidc.tokenIntrospection(config, winner.body.access_token)).active).toBe(true);
    // Nothing was stored for the losers: the code's tokens and the winner's, one refresh token spent.
    const stored = await storedTokens(suite.server, app);
    expect(stored).toEqual([
      { kind: 'AccessToken', consumed: false },
      { kind: 'AccessToken', consumed: false },
      { kind: 'RefreshToken', consumed: false },
      { kind: 'RefreshToken', consumed: true },
    ]);
  });

  it('scope escalation on refresh is refused (invalid_scope)', async () => {
    const { app, config } = await setup();
    const flow = await authorize(suite.server, suite.smtp, app, config, { approve: ['openid', 'offline_access'] });
    const tokens = await oidc.authorizationCodeGrant(config, flow.callback, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
    });
    await expect(
      oidc.refreshTokenGrant(config, tokens.refresh_token!, { scope: 'openid offline_access email' }),
    ).rejects.toMatchObject({
      error: 'invalid_scope',
    });
  });

  it('approving a scope that was not requested is 422 and grants nothing', async () => {
    const { app, config } = await setup();
    const started = await startAuthorization(suite.server, config, { scope: 'openid' });
    const uid = interactionUid(started.first.location);
    const { signIn } = await import('./helpers/sign-in.ts');
    const { tokens } = await signIn(suite.server, suite.smtp, app, uniqueEmail());
    const res = await app.rest(
      'POST',
      `/v1/oauth2/interactions/${uid}/complete`,
      { approved_scopes: ['openid', 'read:docs'] },
      {
        authorization: `Bearer ${tokens.access_token}`,
      },
    );
    expect(res.status).toBe(422);
    expect(await sql(suite.server, 'select id from oauth2_grants where application_id = ?', [app.id])).toEqual([]);
  });

  it('a public client presenting a secret is refused; a public client without one works with PKCE', async () => {
    const { app, client, config } = await setup({ type: 'public', redirect_uris: [NATIVE_CALLBACK] });
    expect(client.client_secret).toBeNull();
    const flow = await authorize(suite.server, suite.smtp, app, config, { redirectUri: NATIVE_CALLBACK });
    const form = codeExchange(flow, NATIVE_CALLBACK);
    const withSecret = await tokenRequest(suite.server, app, form, { id: client.id, secret: 'gcs_madeup' });
    expect(withSecret.body.error).toBe('invalid_client');
    const ok = await tokenRequest(suite.server, app, form, { id: client.id });
    expect(ok.status).toBe(200);
    expect(ok.body.access_token).toBeTruthy();
  });

  it('a wrong or rotated client secret is refused', async () => {
    const { app, client, config } = await setup();
    const flow = await authorize(suite.server, suite.smtp, app, config);
    const form = codeExchange(flow);
    const wrong = await tokenRequest(suite.server, app, form, { id: client.id, secret: `${client.client_secret}x` });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_client');
    const rotated = (await app.rest('POST', `/v1/oauth2/clients/${client.id}/rotate-secret`)).body.data;
    const old = await tokenRequest(
      suite.server,
      app,
      { grant_type: 'client_credentials' },
      { id: client.id, secret: client.client_secret },
    );
    expect(old.body.error).toBe('invalid_client');
    const fresh = await tokenRequest(
      suite.server,
      app,
      { grant_type: 'client_credentials' },
      { id: client.id, secret: rotated.client_secret },
    );
    expect(fresh.status).toBe(200);
  });

  it('dynamic registration: absent while disabled; when enabled, registered clients are public and marked dynamic', async () => {
    const { app } = await setup();
    const metadata = { redirect_uris: [NATIVE_CALLBACK], client_name: 'Agent', token_endpoint_auth_method: 'none' };
    const disabled = await rawRequest(suite.server.url, 'POST', `/oauth2/${app.id}/reg`, { body: metadata });
    expect(disabled.status).toBe(404);
    expect(JSON.stringify(disabled.body)).not.toContain('client_id');

    const enabled = await oauthApp(suite.server, { dynamic_registration: true });
    const discovery = await rawRequest(suite.server.url, 'GET', `/oauth2/${enabled.id}/.well-known/openid-configuration`);
    expect(discovery.body.registration_endpoint).toBe(`http://gatehouse.test/oauth2/${enabled.id}/reg`);
    const registered = await rawRequest(suite.server.url, 'POST', `/oauth2/${enabled.id}/reg`, { body: metadata });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    expect(registered.body.client_secret).toBeUndefined();
    // A confidential client cannot register itself.
    const confidential = await rawRequest(suite.server.url, 'POST', `/oauth2/${enabled.id}/reg`, {
      body: { ...metadata, token_endpoint_auth_method: 'client_secret_basic' },
    });
    expect(confidential.status).toBe(400);
    expect(confidential.body.error).toBe('invalid_client_metadata');
    const listed = (await enabled.rest('GET', `/v1/oauth2/clients/${registered.body.client_id}`)).body.data;
    expect(listed).toMatchObject({ type: 'public', dynamic: true, redirect_uris: [NATIVE_CALLBACK] });
    // A registered client completes code + PKCE like any public client.
    const config = await relyingParty(suite.server, enabled, { ...listed, id: listed.id, client_secret: null });
    const probe = await startAuthorization(suite.server, config, { redirectUri: NATIVE_CALLBACK, scope: 'openid' });
    expect(probe.first.location, await probe.first.response.text()).not.toBe('');
    const flow = await authorize(suite.server, suite.smtp, enabled, config, { redirectUri: NATIVE_CALLBACK, scope: 'openid' });
    expect(flow.callback.searchParams.get('code')).toBeTruthy();
  });
});

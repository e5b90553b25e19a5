import { verifyToken } from '@gatehouse/sdk';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import {
  API_RESOURCE,
  authorize,
  createClient,
  issuerOf,
  oauthApp,
  oidc,
  relyingParty,
  resourceTokens,
  storedTokens,
  WEB_CALLBACK,
} from './helpers/oauth2.ts';
import { expectError, ok, rawRequest } from './helpers/server.ts';
import { endUser } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * A third-party app, played by openid-client (a certified relying party), signs a user in with an application:
 * authorization code + PKCE through the application's own sign-in page (magic link) and consent, then tokens,
 * userinfo, refresh rotation, the grant in S6, and revocation by the user.
 */
const suite = serverSuite();

describe('OAuth 2.1 / OpenID Connect provider: the third-party flow', () => {
  it('discovery names the issuer, the application JWKS, S256 only and EdDSA; RFC 8414 metadata is the same', async () => {
    const app = await oauthApp(suite.server);
    const discovery = await rawRequest(suite.server.url, 'GET', `/oauth2/${app.id}/.well-known/openid-configuration`);
    expect(discovery.status).toBe(200);
    expect(discovery.body.issuer).toBe(issuerOf(app));
    expect(discovery.body.jwks_uri).toBe(`${issuerOf(app)}/jwks`);
    // One key set: the provider's JWKS is the application's.
    const providerKeys = await rawRequest(suite.server.url, 'GET', `/oauth2/${app.id}/jwks`);
    const applicationKeys = await rawRequest(suite.server.url, 'GET', `/v1/applications/${app.id}/jwks.json`);
    expect(providerKeys.body).toEqual(applicationKeys.body);
    expect(providerKeys.body.keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA' });
    expect(discovery.body.code_challenge_methods_supported).toEqual(['S256']);
    expect(discovery.body.id_token_signing_alg_values_supported).toEqual(['EdDSA']);
    expect(discovery.body.response_types_supported).toEqual(['code']);
    expect(discovery.body.authorization_endpoint).toBe(`${issuerOf(app)}/auth`);
    const metadata = await rawRequest(suite.server.url, 'GET', `/.well-known/oauth-authorization-server/oauth2/${app.id}`);
    expect(metadata.status).toBe(200);
    expect(metadata.body.issuer).toBe(issuerOf(app));
    expect(metadata.body.token_endpoint).toBe(discovery.body.token_endpoint);
  });

  it('links come from configuration: a forged Host or X-Forwarded-Host changes no URL in discovery', async () => {
    const app = await oauthApp(suite.server);
    const forged = await rawRequest(suite.server.url, 'GET', `/oauth2/${app.id}/.well-known/openid-configuration`, {
      headers: { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
    });
    expect(forged.status).toBe(200);
    expect(JSON.stringify(forged.body)).not.toContain('evil.example');
    expect(forged.body.token_endpoint).toBe(`${issuerOf(app)}/token`);
  });

  it('an unknown application has no provider (404)', async () => {
    const res = await rawRequest(
      suite.server.url,
      'GET',
      '/oauth2/00000000-0000-7000-8000-000000000000/.well-known/openid-configuration',
    );
    expectError(res, 404, 'not_found');
  });

  it('code + PKCE end to end: tokens, userinfo, refresh rotation, S6, revocation by the user', async () => {
    const app = await oauthApp(suite.server);
    const client = await createClient(app);
    const config = await relyingParty(suite.server, app, client);
    const email = uniqueEmail('rp');
    const flow = await authorize(suite.server, suite.smtp, app, config, { email });
    expect(flow.interaction.client).toEqual({ id: client.id, name: 'Third-party app', logo_url: null });
    expect(flow.callback.href.startsWith(`${WEB_CALLBACK}?code=`)).toBe(true);

    const tokens = await oidc.authorizationCodeGrant(config, flow.callback, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
    });
    expect(tokens.refresh_token).toBeTruthy();
    const claims = tokens.claims()!;
    expect(claims.iss).toBe(issuerOf(app));
    expect(claims.aud).toBe(client.id);
    // Scope claims go to userinfo when an access token is issued (OIDC Core 5.4): the ID token identifies.
    expect(claims.email).toBeUndefined();
    // The Gatehouse session that completed the interaction: a magic link at aal 1, and when it signed in.
    expect(claims.acr).toBe('urn:gatehouse:aal1');
    expect(claims.amr).toEqual(['email']);
    const session = await ok(endUser(app, 'GET', '/v1/auth/session', undefined, flow.accessToken));
    expect(claims.auth_time).toBe(Math.floor(Date.parse(session.created_at) / 1000));

    // The ID token verifies against the application's JWKS with jose (EdDSA only).
    const jwks = createRemoteJWKSet(new URL(`${suite.server.url}/v1/applications/${app.id}/jwks.json`));
    const verified = await jwtVerify(tokens.id_token!, jwks, {
      issuer: issuerOf(app),
      audience: client.id,
      algorithms: ['EdDSA'],
    });
    expect(verified.payload.sub).toBe(claims.sub);

    const me = await endUser(app, 'GET', '/v1/auth/me', undefined, flow.accessToken);
    expect(claims.sub).toBe(me.body.data.id);
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
    expect(userinfo.email).toBe(email);
    expect(userinfo.email_verified).toBe(true);

    // Refresh rotates: a new refresh token, the old one is spent.
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).toBeTruthy();
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);

    // S6 lists the grant with exactly its fields; the user revokes it.
    const grants = await ok(endUser(app, 'GET', '/v1/auth/me/grants', undefined, flow.accessToken));
    expect(grants).toHaveLength(1);
    expect(Object.keys(grants[0]).sort()).toEqual(['client_id', 'created_at', 'id', 'scopes', 'updated_at']);
    expect(grants[0].client_id).toBe(client.id);
    expect(grants[0].scopes.sort()).toEqual(['email', 'offline_access', 'openid', 'profile', 'read:docs']);
    const introspectedBefore = await oidc.tokenIntrospection(config, refreshed.access_token);
    expect(introspectedBefore.active).toBe(true);

    expect(await ok(endUser(app, 'DELETE', `/v1/auth/me/grants/${grants[0].id}`, undefined, flow.accessToken))).toEqual({
      id: grants[0].id,
      deleted: true,
    });
    expect(await ok(endUser(app, 'GET', '/v1/auth/me/grants', undefined, flow.accessToken))).toEqual([]);
    // Every token issued under it is refused at once.
    await expect(oidc.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await oidc.tokenIntrospection(config, refreshed.access_token)).active).toBe(false);
    await expect(oidc.fetchUserInfo(config, refreshed.access_token, claims.sub)).rejects.toThrow();
    // The events of the grant's life.
    const events = await ok(app.rest('GET', '/v1/events'));
    const types = events.events.map((e: { type: string }) => e.type);
    expect(types).toContain('oauth2_grant.created');
    expect(types).toContain('oauth2_grant.revoked');
    // Revoking it again: 404.
    expectError(
      await endUser(app, 'DELETE', `/v1/auth/me/grants/${grants[0].id}`, undefined, flow.accessToken),
      404,
      'not_found',
    );
  });

  it('an access token for a resource server is a JWT that jose and the SDK verifyToken accept; another application refuses it', async () => {
    const app = await oauthApp(suite.server);
    const client = await createClient(app);
    const config = await relyingParty(suite.server, app, client);
    const tokens = await resourceTokens(suite.server, suite.smtp, app, config);
    const jwks = createRemoteJWKSet(new URL(`${suite.server.url}/v1/applications/${app.id}/jwks.json`));
    const { payload, protectedHeader } = await jwtVerify(tokens.access_token, jwks, {
      issuer: issuerOf(app),
      audience: API_RESOURCE,
      algorithms: ['EdDSA'],
      typ: 'at+jwt',
    });
    expect(protectedHeader.alg).toBe('EdDSA');
    expect(payload.scope).toBe('read:docs');
    expect(payload.client_id).toBe(client.id);

    const claims = await verifyToken(tokens.access_token, {
      baseUrl: suite.server.url,
      applicationId: app.id,
      issuer: issuerOf(app),
      audience: API_RESOURCE,
    });
    expect(claims).toMatchObject({ sub: payload.sub, scope: 'read:docs', client_id: client.id });

    // Application B: its issuer and key set refuse A's token; its introspection does not know it.
    const other = await oauthApp(suite.server);
    await expect(
      verifyToken(tokens.access_token, {
        baseUrl: suite.server.url,
        applicationId: other.id,
        issuer: issuerOf(other),
        audience: API_RESOURCE,
      }),
    ).rejects.toMatchObject({ code: 'invalid_token' });
    const otherClient = await createClient(other);
    const otherConfig = await relyingParty(suite.server, other, otherClient);
    expect((await oidc.tokenIntrospection(otherConfig, tokens.refresh_token!)).active).toBe(false);
    // A's client secret does not authenticate at B.
    const forged = await relyingParty(suite.server, other, { ...otherClient, id: client.id }, client.client_secret);
    const refused = await oidc.tokenIntrospection(forged, tokens.refresh_token!).then(
      () => undefined,
      (error: { status?: number; cause?: Array<{ parameters: { error?: string } }> }) => error,
    );
    expect(refused?.status).toBe(401);
    expect(refused?.cause?.[0]?.parameters.error).toBe('invalid_client');
    // A Gatehouse session route refuses the OAuth token (another issuer).
    expectError(await endUser(app, 'GET', '/v1/auth/me', undefined, tokens.access_token), 401, 'invalid_token');
  });

  it('a refresh for a resource server rotates: a new JWT and refresh token, the old one spent, nothing else stored', async () => {
    const app = await oauthApp(suite.server);
    const client = await createClient(app);
    const config = await relyingParty(suite.server, app, client);
    const tokens = await resourceTokens(suite.server, suite.smtp, app, config);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!, { resource: API_RESOURCE });
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    const verify = (token: string) =>
      verifyToken(token, { baseUrl: suite.server.url, applicationId: app.id, issuer: issuerOf(app), audience: API_RESOURCE });
    const [before, after] = [await verify(tokens.access_token), await verify(refreshed.access_token)];
    expect([after.sub, after.sid]).toEqual([before.sub, before.sid]);
    // JWT access tokens are not stored: the rotation wrote the spent mark and the new refresh token only.
    const stored = await storedTokens(suite.server, app);
    expect(stored).toEqual([
      { kind: 'RefreshToken', consumed: false },
      { kind: 'RefreshToken', consumed: true },
    ]);
    expect((await oidc.tokenIntrospection(config, refreshed.refresh_token!)).active).toBe(true);
  });
});

import { createLocalJWKSet, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { API_RESOURCE, authorize, createClient, issuerOf, oauthApp, oidc, relyingParty } from './helpers/oauth2.ts';
import { ok, rawRequest } from './helpers/server.ts';
import { endUser, signIn, type Tokens } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * The `organization` scope: the provider's ID tokens, userinfo and access tokens name the organization the user was
 * working in when they signed in for the client (`org`, `org_role`, as in the service's own tokens), only while they
 * are still a member, and only to a client granted the scope.
 */
const suite = serverSuite();

async function memberSignedIn(role: string) {
  const app = await oauthApp(suite.server);
  const email = uniqueEmail('org');
  const { user, tokens } = await signIn(suite.server, suite.smtp, app, email);
  const acme = await ok(app.rest('POST', '/v1/organizations', { name: 'Acme' }), 201);
  await ok(app.rest('POST', `/v1/organizations/${acme.id}/members`, { user_id: user.id, role }), 201);
  return { app, user, tokens, acme, email };
}

const switchTo = (app: Parameters<typeof endUser>[0], organization_id: string | null, token: string) =>
  ok(endUser<Tokens>(app, 'POST', '/v1/auth/session/organization', { organization_id }, token));

describe('the organization claims of the OpenID provider', () => {
  it('userinfo names the active organization and role; refresh keeps them; removal from it clears them', async () => {
    const { app, user, tokens, acme, email } = await memberSignedIn('admin');
    const inAcme = await switchTo(app, acme.id, tokens.access_token);
    const client = await createClient(app, { scopes: ['openid', 'email', 'organization', 'offline_access'] });
    const config = await relyingParty(suite.server, app, client);
    const flow = await authorize(suite.server, suite.smtp, app, config, {
      scope: 'openid email organization offline_access',
      accessToken: inAcme.access_token,
    });
    const grant = await oidc.authorizationCodeGrant(config, flow.callback, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
    });
    expect(grant.scope?.split(' ').sort()).toEqual(['email', 'offline_access', 'openid', 'organization']);
    const sub = grant.claims()!.sub;
    expect(sub).toBe(user.id);
    // The organization is in the ID token too (as in the service's own tokens); email stays in userinfo (OIDC Core 5.4).
    expect(grant.claims()).toMatchObject({ org: acme.id, org_role: 'admin' });
    expect(grant.claims()!.email).toBeUndefined();
    const userinfo = await oidc.fetchUserInfo(config, grant.access_token, sub);
    expect(userinfo).toMatchObject({ sub, email, org: acme.id, org_role: 'admin' });

    const refreshed = await oidc.refreshTokenGrant(config, grant.refresh_token!);
    expect(await oidc.fetchUserInfo(config, refreshed.access_token, sub)).toMatchObject({ org: acme.id, org_role: 'admin' });
    expect(refreshed.claims()).toMatchObject({ org: acme.id, org_role: 'admin' });

    // A changed role shows at once; a removed member no longer has the organization.
    await ok(app.rest('PATCH', `/v1/organizations/${acme.id}/members/${user.id}`, { role: 'member' }));
    expect(await oidc.fetchUserInfo(config, refreshed.access_token, sub)).toMatchObject({ org: acme.id, org_role: 'member' });
    await ok(app.rest('DELETE', `/v1/organizations/${acme.id}/members/${user.id}`));
    const after = await oidc.refreshTokenGrant(config, refreshed.refresh_token!);
    const removed = await oidc.fetchUserInfo(config, after.access_token, sub);
    expect(removed.org).toBeNull();
    expect(removed.org_role).toBeNull();
    // The ID token a refresh gives says so as well: no stale organization.
    expect(after.claims()!.org).toBeNull();
    expect(after.claims()!.org_role).toBeNull();
  });

  it('a deleted organization is no longer named, even if the user joins a new one', async () => {
    const { app, user, tokens, acme } = await memberSignedIn('admin');
    const inAcme = await switchTo(app, acme.id, tokens.access_token);
    const client = await createClient(app, { scopes: ['openid', 'organization'] });
    const config = await relyingParty(suite.server, app, client);
    const flow = await authorize(suite.server, suite.smtp, app, config, {
      scope: 'openid organization',
      accessToken: inAcme.access_token,
    });
    const grant = await oidc.authorizationCodeGrant(config, flow.callback, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
    });
    expect(await oidc.fetchUserInfo(config, grant.access_token, user.id)).toMatchObject({ org: acme.id });
    await ok(app.rest('DELETE', `/v1/organizations/${acme.id}`));
    const globex = await ok(app.rest('POST', '/v1/organizations', { name: 'Globex' }), 201);
    await ok(app.rest('POST', `/v1/organizations/${globex.id}/members`, { user_id: user.id, role: 'owner' }), 201);
    const userinfo = await oidc.fetchUserInfo(config, grant.access_token, user.id);
    expect(userinfo.org).toBeNull();
    expect(userinfo.org_role).toBeNull();
  });

  it('a session without an active organization: org and org_role are null', async () => {
    const { app, tokens } = await memberSignedIn('owner');
    const client = await createClient(app, { scopes: ['openid', 'organization'] });
    const config = await relyingParty(suite.server, app, client);
    const flow = await authorize(suite.server, suite.smtp, app, config, {
      scope: 'openid organization',
      accessToken: tokens.access_token,
    });
    const grant = await oidc.authorizationCodeGrant(config, flow.callback, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
    });
    const userinfo = await oidc.fetchUserInfo(config, grant.access_token, grant.claims()!.sub);
    expect(userinfo.org).toBeNull();
    expect(userinfo.org_role).toBeNull();
  });

  it('without the organization scope (not asked, or not approved) the claims are absent', async () => {
    const { app, tokens, acme } = await memberSignedIn('admin');
    const inAcme = await switchTo(app, acme.id, tokens.access_token);
    const client = await createClient(app, { scopes: ['openid', 'email', 'organization'] });
    const config = await relyingParty(suite.server, app, client);
    const cases: Array<[string, { scope: string; approve?: string[] }]> = [
      ['not asked', { scope: 'openid email' }],
      ['not approved', { scope: 'openid email organization', approve: ['openid', 'email'] }],
    ];
    for (const [label, options] of cases) {
      const flow = await authorize(suite.server, suite.smtp, app, config, { ...options, accessToken: inAcme.access_token });
      const grant = await oidc.authorizationCodeGrant(config, flow.callback, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
      });
      const userinfo = await oidc.fetchUserInfo(config, grant.access_token, grant.claims()!.sub);
      expect(userinfo.email, label).toBeTruthy();
      expect('org' in userinfo, label).toBe(false);
      expect('org_role' in userinfo, label).toBe(false);
      expect('org' in grant.claims()!, label).toBe(false);
      expect('org_role' in grant.claims()!, label).toBe(false);
    }
  });

  it('a JWT access token for a resource server carries org and org_role when organization is granted; none without', async () => {
    const { app, user, tokens, acme } = await memberSignedIn('admin');
    const inAcme = await switchTo(app, acme.id, tokens.access_token);
    const client = await createClient(app, { scopes: ['openid', 'organization', 'read:docs', 'offline_access'] });
    const config = await relyingParty(suite.server, app, client);
    const keys = createLocalJWKSet((await rawRequest(suite.server.url, 'GET', `/oauth2/${app.id}/jwks`)).body);
    const resourceToken = async (scope: string) => {
      const flow = await authorize(suite.server, suite.smtp, app, config, {
        scope,
        resource: API_RESOURCE,
        accessToken: inAcme.access_token,
      });
      return oidc.authorizationCodeGrant(
        config,
        flow.callback,
        { pkceCodeVerifier: flow.verifier, expectedState: flow.state },
        { resource: API_RESOURCE },
      );
    };
    const granted = await resourceToken('openid organization read:docs offline_access');
    // The resource server verifies the token against the provider's keys, for its own audience.
    const { payload } = await jwtVerify(granted.access_token, keys, { issuer: issuerOf(app), audience: API_RESOURCE });
    expect(payload).toMatchObject({ sub: user.id, org: acme.id, org_role: 'admin', scope: 'read:docs' });
    // A refresh reads the membership again: a changed role is in the next token.
    await ok(app.rest('PATCH', `/v1/organizations/${acme.id}/members/${user.id}`, { role: 'member' }));
    const refreshed = await oidc.refreshTokenGrant(config, granted.refresh_token!, { resource: API_RESOURCE });
    const again = await jwtVerify(refreshed.access_token, keys, { issuer: issuerOf(app), audience: API_RESOURCE });
    expect(again.payload).toMatchObject({ org: acme.id, org_role: 'member' });

    const without = await resourceToken('openid read:docs');
    const plain = await jwtVerify(without.access_token, keys, { issuer: issuerOf(app), audience: API_RESOURCE });
    expect('org' in plain.payload).toBe(false);
    expect('org_role' in plain.payload).toBe(false);
  });

  it('signing in again for the client from another organization moves the grant to it', async () => {
    const { app, user, tokens, acme } = await memberSignedIn('admin');
    const globex = await ok(app.rest('POST', '/v1/organizations', { name: 'Globex' }), 201);
    await ok(app.rest('POST', `/v1/organizations/${globex.id}/members`, { user_id: user.id, role: 'viewer' }), 201);
    const client = await createClient(app, { scopes: ['openid', 'organization'] });
    const config = await relyingParty(suite.server, app, client);
    const through = async (organization: string) => {
      const session = await switchTo(app, organization, tokens.access_token);
      const flow = await authorize(suite.server, suite.smtp, app, config, {
        scope: 'openid organization',
        accessToken: session.access_token,
      });
      const grant = await oidc.authorizationCodeGrant(config, flow.callback, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
      });
      return oidc.fetchUserInfo(config, grant.access_token, user.id);
    };
    expect(await through(acme.id)).toMatchObject({ org: acme.id, org_role: 'admin' });
    expect(await through(globex.id)).toMatchObject({ org: globex.id, org_role: 'viewer' });
  });
});

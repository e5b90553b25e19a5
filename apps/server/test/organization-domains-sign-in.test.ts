import { randomBytes } from 'node:crypto';
import { createGatehouseClient } from '@gatehouse/sdk';
import type { PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SoftwareAuthenticator } from './helpers/authenticator.ts';
import { type LocalDns, startLocalDns } from './helpers/dns.ts';
import { callback, putProvider, startOAuth, throughRelay } from './helpers/oauth.ts';
import { startOidcProvider, type TestOidcProvider } from './helpers/oauth-idp.ts';
import { CALLBACK, complete, createTestIdp, postToAcs, start as ssoStart, type TestIdp } from './helpers/saml.ts';
import {
  expectError,
  ok,
  type RestResponse,
  rejection,
  sql,
  startServer,
  type TestApp,
  type TestServer,
} from './helpers/server.ts';
import { endUser, type SignInResult, type SmtpSink, signIn } from './helpers/sign-in.ts';
import { startSmtpSink } from './helpers/smtp.ts';

/**
 * The sign-in effects of verified organization domains (CONTRACT §8): `join_policy: automatic` makes a person whose
 * verified email is at the domain a member when a sign-in completes (magic link, passkey, OAuth, SAML; seats
 * permitting, never failing the sign-in), and `sso_policy: required` refuses every first factor but the organization's
 * own SAML connections with 403 `sso_required` (the magic link at its start), while `sso/start` sends the address to
 * that organization's connection.
 */

const ORIGIN = 'https://app.example.com';
let server: TestServer;
let dns: LocalDns;
let smtp: SmtpSink;
let oidc: TestOidcProvider;
let idp: TestIdp;

beforeAll(async () => {
  dns = await startLocalDns();
  smtp = await startSmtpSink();
  oidc = await startOidcProvider({ redirectUris: ['http://gatehouse.test/v1/auth/oauth/redirect'] });
  idp = await createTestIdp();
  server = await startServer({
    smtpUrl: smtp.url,
    dnsServers: [dns.address],
    allowInsecureSaml: true,
    oauth: { allowInsecureIssuers: true },
  });
});
afterAll(async () => {
  await server?.close();
  await oidc?.close();
  await smtp?.close();
  await dns?.close();
});

const fresh = () => `acme-${randomBytes(5).toString('hex')}.gatehouse-test.dev`;
const person = (domain: string, label = 'ada') => `${label}.${randomBytes(3).toString('hex')}@${domain}`;

/** An application (its origin allowed for passkeys, OAuth and SAML), an organization and its domain verified by DNS. */
async function enterprise(policies: { join_policy?: string; sso_policy?: string } = {}, appInput: Record<string, unknown> = {}) {
  const app = await server.createApp({ allowed_origins: [ORIGIN, 'http://app.test'], ...appInput });
  const org = await ok(app.rest('POST', '/v1/organizations', { name: 'Acme' }), 201);
  const name = fresh();
  const domain = await ok(app.rest('POST', `/v1/organizations/${org.id}/domains`, { domain: name }), 201);
  dns.zone[domain.verification.name] = { txt: [domain.verification.value] };
  await ok(app.rest('POST', `/v1/organizations/${org.id}/domains/${domain.id}/verify`));
  const setPolicies = (body: Record<string, unknown>) =>
    ok(app.rest('PATCH', `/v1/organizations/${org.id}/domains/${domain.id}`, body));
  if (Object.keys(policies).length) await setPolicies(policies);
  return { app, org, domain, name, setPolicies };
}

const membersOf = async (app: TestApp, orgId: string) =>
  (await ok(app.rest('GET', `/v1/organizations/${orgId}/members?limit=100`))).members as Array<Record<string, any>>;
const eventsOf = async (app: TestApp, type: string) =>
  (await ok(app.rest('GET', `/v1/events?type=${type}&limit=100`))).events as Array<{ data: Record<string, any> }>;

function expectSsoRequired(res: RestResponse, orgId: string) {
  expectError(res, 403, 'sso_required');
  expect(res.body.error.details).toEqual({ organization_id: orgId });
}

const magicLinkStart = (app: TestApp, email: string) => endUser(app, 'POST', '/v1/auth/magic-link/start', { email });

/** Passkey first factor: start, the authenticator's get(), finish. */
async function passkeySignIn(app: TestApp, authenticator: SoftwareAuthenticator) {
  const { options, state } = await ok(
    endUser<{ options: PublicKeyCredentialRequestOptionsJSON; state: string }>(app, 'POST', '/v1/auth/passkeys/sign-in/start'),
  );
  return endUser<SignInResult>(app, 'POST', '/v1/auth/passkeys/sign-in/finish', {
    credential: await authenticator.get(options, ORIGIN),
    state,
  });
}

/** A user signed in by magic link who registers a passkey (before any policy applies to them). */
async function withPasskey(app: TestApp, email: string) {
  const signedIn = await signIn(server, smtp, app, email);
  const authenticator = new SoftwareAuthenticator();
  const token = signedIn.tokens.access_token;
  const { options, state } = await ok(endUser(app, 'POST', '/v1/auth/passkeys/register/start', undefined, token));
  const credential = await authenticator.create(options, ORIGIN);
  await ok(endUser(app, 'POST', '/v1/auth/passkeys/register/finish', { credential, state }, token), 201);
  await smtp.next(email); // the "passkey added" notice
  return { user: signedIn.user, authenticator };
}

/** OAuth (an OpenID Connect provider) start → provider → relay → callback; answers the callback's response. */
async function oauthSignIn(app: TestApp, email: string, verified = true) {
  await ok(
    putProvider(app, 'oidc', { issuer: oidc.issuer, client_id: oidc.clientId, client_secret: oidc.clientSecret, enabled: true }),
  );
  const account = `acct-${randomBytes(4).toString('hex')}`;
  oidc.accounts.set(account, { email, email_verified: verified });
  const { authorization_url } = await ok(startOAuth(app, 'oidc'));
  const { code, state } = await throughRelay(server, await oidc.authorize(authorization_url, account));
  return callback(app, 'oidc', { code, state });
}

/** A SAML connection of the application (of `organization_id` when given). */
async function samlConnection(app: TestApp, body: Record<string, unknown> = {}) {
  const created = await ok(
    app.rest('POST', '/v1/saml/connections', {
      name: 'Acme IdP',
      idp_entity_id: idp.entityId,
      idp_sso_url: idp.ssoUrl,
      idp_certificate: idp.keys.certificate,
      ...body,
    }),
    201,
  );
  const metadata = await (await fetch(`${server.url}/v1/saml/metadata/${created.id}`)).text();
  return { connection: created, metadata };
}

/** SP-initiated SAML: start (by connection id, or by email when `byEmail`), the IdP's answer, the ACS, complete. */
async function samlSignIn(app: TestApp, conn: { connection: any; metadata: string }, email: string) {
  const { redirect_url } = await ok(ssoStart(app, { connection_id: conn.connection.id, redirect_uri: CALLBACK }));
  const acs = await postToAcs(server.url, conn.connection.id, await idp.respond(conn.metadata, redirect_url, { email }));
  expect(acs.status, JSON.stringify(acs.body)).toBe(303);
  return complete(app, acs.code!);
}

describe('join_policy: automatic', () => {
  it('magic link: a sign-up at the domain becomes a member (source domain, role member) once; organization_membership.created', async () => {
    const { app, org, name } = await enterprise({ join_policy: 'automatic' });
    const email = person(name);
    const first = await signIn(server, smtp, app, email);
    const members = await membersOf(app, org.id);
    expect(members).toEqual([
      expect.objectContaining({ user_id: first.user.id, role: 'member', source: 'domain', status: 'active' }),
    ]);
    // Signing in again changes nothing; a member's role set by hand stays.
    await ok(app.rest('PATCH', `/v1/organizations/${org.id}/members/${first.user.id}`, { role: 'admin' }));
    await signIn(server, smtp, app, email);
    expect((await membersOf(app, org.id)).map((m) => [m.user_id, m.role])).toEqual([[first.user.id, 'admin']]);
    const created = await eventsOf(app, 'organization_membership.created');
    expect(created.map((e) => [e.data.organization_id, e.data.user_id, e.data.source])).toEqual([
      [org.id, first.user.id, 'domain'],
    ]);
    // Another domain, and a subdomain of this one, are not this domain.
    await signIn(server, smtp, app, person(fresh()));
    await signIn(server, smtp, app, person(`eng.${name}`));
    expect(await membersOf(app, org.id)).toHaveLength(1);
  });

  it('invite_only (the default), a claim not verified yet, and an unverified email join no one', async () => {
    const { app, org, name, setPolicies } = await enterprise();
    await signIn(server, smtp, app, person(name));
    expect(await membersOf(app, org.id)).toEqual([]);

    const other = await ok(app.rest('POST', '/v1/organizations', { name: 'Pending' }), 201);
    const pendingName = fresh();
    await ok(app.rest('POST', `/v1/organizations/${other.id}/domains`, { domain: pendingName }), 201);
    await signIn(server, smtp, app, person(pendingName));
    expect(await membersOf(app, other.id)).toEqual([]);

    // A user whose address at the domain is not verified (created by the API) signs in by passkey: no membership.
    await setPolicies({ join_policy: 'automatic' });
    const email = person(name, 'unverified');
    const { user, authenticator } = await withPasskey(app, person(fresh(), 'pk'));
    await ok(app.rest('PATCH', `/v1/users/${user.id}`, { email_verified: false }));
    await sql(server, 'update users set primary_email = ?, email_normalized = ? where id = ?', [email, email, user.id]);
    expect((await ok(passkeySignIn(app, authenticator))).status).toBe('complete');
    expect((await membersOf(app, org.id)).map((m) => m.user_id)).not.toContain(user.id);
  });

  it('passkey: a returning user whose verified email is at the domain joins at the passkey sign-in', async () => {
    const { app, org, name, setPolicies } = await enterprise();
    const { user, authenticator } = await withPasskey(app, person(name));
    expect(await membersOf(app, org.id)).toEqual([]);
    await setPolicies({ join_policy: 'automatic' });
    const result = await ok(passkeySignIn(app, authenticator));
    expect(result.status).toBe('complete');
    expect(await membersOf(app, org.id)).toEqual([
      expect.objectContaining({ user_id: user.id, source: 'domain', role: 'member' }),
    ]);
    expect((await ok(passkeySignIn(app, authenticator))).status).toBe('complete');
    expect(await membersOf(app, org.id)).toHaveLength(1);
  });

  it('OAuth: a provider-verified email at the domain joins; an unverified one does not', async () => {
    const { app, org, name } = await enterprise({ join_policy: 'automatic' }, { allowed_origins: ['http://app.test', ORIGIN] });
    const joined = await ok(oauthSignIn(app, person(name)));
    expect(joined.status).toBe('complete');
    const unverified = await oauthSignIn(app, person(name, 'unverified'), false);
    expect(unverified.status, JSON.stringify(unverified.body)).toBe(200);
    expect((await membersOf(app, org.id)).map((m) => m.user_id)).toEqual([joined.user.id]);
  });

  it('SAML: the organization’s IdP vouching for the domain signs the person in and they join', async () => {
    const { app, org, name } = await enterprise({ join_policy: 'automatic' });
    // No email_domain: the organization's verified domain is what the IdP vouches for.
    const conn = await samlConnection(app, { organization_id: org.id });
    const result = await ok(samlSignIn(app, conn, person(name)));
    if (result.status !== 'complete') throw new Error(`expected a complete sign-in, got ${result.status}`);
    expect(await membersOf(app, org.id)).toEqual([expect.objectContaining({ user_id: result.user.id, source: 'domain' })]);
  });

  it('a full organization does not fail the sign-in: no membership, organization_domain.join_skipped says why', async () => {
    const { app, org, name } = await enterprise({ join_policy: 'automatic' });
    const plan = await ok(
      app.rest('POST', '/v1/billing/plans', {
        key: `team-${randomBytes(3).toString('hex')}`,
        name: 'Team',
        interval: 'month',
        currency: 'USD',
        price_cents: 0,
        per_seat_cents: 0,
      }),
      201,
    );
    await ok(app.rest('POST', '/v1/billing/subscriptions', { organization_id: org.id, plan_id: plan.id, seats: 1 }), 201);
    const first = await signIn(server, smtp, app, person(name, 'first'));
    const second = await signIn(server, smtp, app, person(name, 'second'));
    expect(second.result.status).toBe('complete');
    expect((await membersOf(app, org.id)).map((m) => m.user_id)).toEqual([first.user.id]);
    const skipped = await eventsOf(app, 'organization_domain.join_skipped');
    expect(skipped.map((e) => e.data)).toEqual([
      { organization_id: org.id, domain_id: expect.any(String), user_id: second.user.id, reason: 'seat_limit_reached' },
    ]);
  });
});

describe('sso_policy: required', () => {
  it('magic link: the start answers 403 sso_required at once (details.organization_id), whatever the case; sends no mail', async () => {
    const { app, org, name } = await enterprise({ sso_policy: 'required' });
    const before = (await ok(app.rest('GET', '/v1/messages?limit=100'))).total;
    expectSsoRequired(await magicLinkStart(app, person(name)), org.id);
    expectSsoRequired(await magicLinkStart(app, `  ${person(name).toUpperCase()} `), org.id);
    expect((await ok(app.rest('GET', '/v1/messages?limit=100'))).total).toBe(before);
    // Other domains and subdomains are not concerned.
    await ok(magicLinkStart(app, person(fresh())));
    await ok(magicLinkStart(app, person(`eng.${name}`)));
  });

  it('magic link: a link mailed before the policy is refused at verify (403 sso_required), and nobody is signed up', async () => {
    // The application's first sign-in takes the transactional path; later ones, the one statement that signs up.
    for (const warm of [false, true]) {
      const { app, org, name, setPolicies } = await enterprise();
      if (warm) await signIn(server, smtp, app, person(fresh()));
      const email = person(name);
      await ok(magicLinkStart(app, email));
      const link = new URL((await smtp.next(email)).text.match(/https?:\/\/\S+/)![0]);
      await setPolicies({ sso_policy: 'required' });
      expectSsoRequired(
        await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token: link.searchParams.get('token') }),
        org.id,
      );
      const [row] = await sql(server, 'select count(*)::int as n from users where application_id = ?', [app.id]);
      expect(row.n).toBe(warm ? 1 : 0);
      const [spent] = await sql(
        server,
        'select count(*)::int as n from magic_links where consumed_at is null and email_normalized = ?',
        [email.toLowerCase()],
      );
      expect(spent.n).toBe(1);
    }
  });

  it('passkey: refused with 403 sso_required for a verified address at the domain; allowed again once the policy is optional', async () => {
    const { app, org, name, setPolicies } = await enterprise();
    const { authenticator } = await withPasskey(app, person(name));
    await setPolicies({ sso_policy: 'required' });
    expectSsoRequired(await passkeySignIn(app, authenticator), org.id);
    const [sessions] = await sql(server, 'select count(*)::int as n from sessions where application_id = ?', [app.id]);
    await setPolicies({ sso_policy: 'optional' });
    expect((await ok(passkeySignIn(app, authenticator))).status).toBe('complete');
    const [after] = await sql(server, 'select count(*)::int as n from sessions where application_id = ?', [app.id]);
    expect(after.n).toBe(sessions.n + 1);
  });

  it('OAuth, a returning person (the one-statement sign-in): refused once the policy is required; joins once the join is automatic', async () => {
    const { app, org, name, setPolicies } = await enterprise({}, { allowed_origins: ['http://app.test', ORIGIN] });
    await ok(
      putProvider(app, 'oidc', {
        issuer: oidc.issuer,
        client_id: oidc.clientId,
        client_secret: oidc.clientSecret,
        enabled: true,
      }),
    );
    const email = person(name);
    oidc.accounts.set(email, { email, email_verified: true });
    const again = async () => {
      const { authorization_url } = await ok(startOAuth(app, 'oidc'));
      const { code, state } = await throughRelay(server, await oidc.authorize(authorization_url, email));
      return callback(app, 'oidc', { code, state });
    };
    const first = await ok(again());
    expect((await ok(again())).status).toBe('complete');
    expect(await membersOf(app, org.id)).toEqual([]);
    await setPolicies({ join_policy: 'automatic' });
    expect((await ok(again())).status).toBe('complete');
    expect((await membersOf(app, org.id)).map((m) => m.user_id)).toEqual([first.user.id]);
    await setPolicies({ sso_policy: 'required' });
    expectSsoRequired(await again(), org.id);
  });

  it('an internationalised domain is compared as punycode, on the one-statement sign-in of a returning person too', async () => {
    const app = await server.createApp({ allowed_origins: ['http://app.test', ORIGIN] });
    const org = await ok(app.rest('POST', '/v1/organizations', { name: 'Bücher' }), 201);
    const unicode = `bücher-${randomBytes(3).toString('hex')}.de`;
    const domain = await ok(app.rest('POST', `/v1/organizations/${org.id}/domains`, { domain: unicode }), 201);
    expect(domain.domain).toMatch(/^xn--/);
    dns.zone[domain.verification.name] = { txt: [domain.verification.value] };
    await ok(app.rest('POST', `/v1/organizations/${org.id}/domains/${domain.id}/verify`));
    await ok(
      putProvider(app, 'oidc', {
        issuer: oidc.issuer,
        client_id: oidc.clientId,
        client_secret: oidc.clientSecret,
        enabled: true,
      }),
    );
    const email = `ada@${unicode}`;
    oidc.accounts.set(email, { email, email_verified: true });
    const again = async () => {
      const { authorization_url } = await ok(startOAuth(app, 'oidc'));
      const { code, state } = await throughRelay(server, await oidc.authorize(authorization_url, email));
      return callback(app, 'oidc', { code, state });
    };
    const first = await ok(again());
    await ok(app.rest('PATCH', `/v1/organizations/${org.id}/domains/${domain.id}`, { join_policy: 'automatic' }));
    expect((await ok(again())).status).toBe('complete');
    expect((await membersOf(app, org.id)).map((m) => m.user_id)).toEqual([first.user.id]);
    await ok(app.rest('PATCH', `/v1/organizations/${org.id}/domains/${domain.id}`, { sso_policy: 'required' }));
    expectSsoRequired(await again(), org.id);
  });

  it('sso/start by email goes to the organization’s connection when it verified the domain, whatever the policy', async () => {
    const { app, org, name, setPolicies } = await enterprise();
    const other = await createTestIdp();
    const wide = await ok(
      app.rest('POST', '/v1/saml/connections', {
        name: 'Wide',
        idp_entity_id: other.entityId,
        idp_sso_url: other.ssoUrl,
        idp_certificate: other.keys.certificate,
        email_domain: name,
      }),
      201,
    );
    expect((await ok(ssoStart(app, { email: person(name), redirect_uri: CALLBACK }))).redirect_url).toMatch(
      new RegExp(`^${other.ssoUrl}`),
    );
    const own = await samlConnection(app, { organization_id: org.id });
    expect(own.connection.id).not.toBe(wide.id);
    expect((await ok(ssoStart(app, { email: person(name), redirect_uri: CALLBACK }))).redirect_url).toMatch(
      new RegExp(`^${idp.ssoUrl}`),
    );
    // Disabled, the organization's connection leaves the domain to the connection that names it (policy optional)…
    await ok(app.rest('POST', `/v1/saml/connections/${own.connection.id}/disable`));
    expect((await ok(ssoStart(app, { email: person(name), redirect_uri: CALLBACK }))).redirect_url).toMatch(
      new RegExp(`^${other.ssoUrl}`),
    );
    // …but with SSO required there is no other way in.
    await setPolicies({ sso_policy: 'required' });
    expectError(await ssoStart(app, { email: person(name), redirect_uri: CALLBACK }), 404, 'not_found');
  });

  it('the SDK rejects with GatehouseError code sso_required and organizationId', async () => {
    const { app, org, name } = await enterprise({ sso_policy: 'required' });
    const browser = createGatehouseClient({ baseUrl: server.url, applicationId: app.id });
    const error = await rejection(browser.magicLink.start({ email: person(name), redirect_url: `${ORIGIN}/verify` }));
    expect(error).toMatchObject({ code: 'sso_required', status: 403, organizationId: org.id, details: undefined });
  });

  it('OAuth: refused with 403 sso_required', async () => {
    const { app, org, name } = await enterprise({ sso_policy: 'required' }, { allowed_origins: ['http://app.test', ORIGIN] });
    expectSsoRequired(await oauthSignIn(app, person(name)), org.id);
  });

  it('SAML: the organization’s connection signs in; another connection vouching for the domain is refused; sso/start by email goes to the organization’s', async () => {
    const { app, org, name, setPolicies } = await enterprise({ join_policy: 'automatic' });
    const other = await ok(app.rest('POST', '/v1/organizations', { name: 'Other' }), 201);
    // An application-wide connection that names the domain, and one of another organization.
    const wide = await samlConnection(app, { email_domain: name });
    const foreign = await samlConnection(app, { organization_id: other.id });
    const own = await samlConnection(app, { organization_id: org.id });
    const email = person(name);
    // Linked through the other organization's IdP before the policy, the address verified since.
    const linked = await ok(samlSignIn(app, foreign, person(name, 'linked')));
    if (linked.status !== 'complete') throw new Error('expected a complete sign-in');
    await ok(app.rest('PATCH', `/v1/users/${linked.user.id}`, { email_verified: true }));
    await setPolicies({ sso_policy: 'required' });
    const [members] = await sql(server, 'select count(*)::int as n from organization_members where organization_id = ?', [
      org.id,
    ]);

    expectSsoRequired(await samlSignIn(app, wide, email), org.id);
    expectSsoRequired(await samlSignIn(app, foreign, linked.user.primary_email!), org.id);

    const { redirect_url } = await ok(ssoStart(app, { email, redirect_uri: CALLBACK }));
    const form = await idp.respond(own.metadata, redirect_url, { email });
    expect(form.acs).toBe(own.connection.acs_url);
    const acs = await postToAcs(server.url, own.connection.id, form);
    const result = await ok(complete(app, acs.code!));
    if (result.status !== 'complete') throw new Error(`expected a complete sign-in, got ${result.status}`);
    expect(result.user.email_verified).toBe(true);
    expect((await membersOf(app, org.id)).map((m) => m.user_id)).toContain(result.user.id);
    expect(await membersOf(app, org.id)).toHaveLength(members.n + 1);
  });

  it('an address that is not verified is not held to the policy (CONTRACT §8: a verified email at the domain)', async () => {
    const { app, name, setPolicies } = await enterprise();
    const { user, authenticator } = await withPasskey(app, person(fresh(), 'elsewhere'));
    const email = person(name);
    await sql(server, 'update users set primary_email = ?, email_normalized = ?, email_verified = false where id = ?', [
      email,
      email,
      user.id,
    ]);
    await setPolicies({ sso_policy: 'required' });
    expect((await ok(passkeySignIn(app, authenticator))).status).toBe('complete');
  });

  it('a consent step after the organization’s SAML sign-in is not refused (the first factor was judged)', async () => {
    const { app, org, name } = await enterprise(
      { sso_policy: 'required' },
      { settings: { consent_documents: [{ doc_type: 'terms', url: 'https://app.example.com/terms', version: '1' }] } },
    );
    const own = await samlConnection(app, { organization_id: org.id, email_domain: name });
    const pending = await ok(samlSignIn(app, own, person(name)));
    expect(pending.status).toBe('consent_required');
    if (pending.status !== 'consent_required') throw new Error('unreachable');
    const accepted = await ok(
      endUser<SignInResult>(app, 'POST', '/v1/auth/consent/accept', {
        pending_token: pending.pending_token,
        doc_types: ['terms'],
      }),
    );
    expect(accepted.status).toBe('complete');
  });
});

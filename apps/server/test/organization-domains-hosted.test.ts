import { randomBytes } from 'node:crypto';
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SoftwareAuthenticator } from './helpers/authenticator.ts';
import { type LocalDns, startLocalDns } from './helpers/dns.ts';
import { HostedBrowser, type HostedPage, hiddenFields, signInOnHostedPages } from './helpers/hosted.ts';
import { putProvider } from './helpers/oauth.ts';
import { startOidcProvider, type TestOidcProvider } from './helpers/oauth-idp.ts';
import { createTestIdp, postToAcs, type TestIdp } from './helpers/saml-idp.ts';
import { ok, startServer, type TestApp, type TestServer } from './helpers/server.ts';
import type { SmtpSink } from './helpers/sign-in.ts';
import { startSmtpSink } from './helpers/smtp.ts';

/**
 * The hosted pages and organization domains (CONTRACT §8, §9): identifier first, an address at a domain whose
 * organization requires SSO goes straight to that organization's SAML connection (it wins over a connection that
 * names the domain), and a first factor refused with `sso_required` is a message on the sign-in page, not an error page.
 */

const BASE = 'http://gatehouse.test';
const MESSAGE = 'Your organization requires you to sign in with its single sign-on (SSO).';
let dns: LocalDns;
let smtp: SmtpSink;
let server: TestServer;
let oidc: TestOidcProvider;
let orgIdp: TestIdp;
let wideIdp: TestIdp;

beforeAll(async () => {
  dns = await startLocalDns();
  smtp = await startSmtpSink();
  oidc = await startOidcProvider({ redirectUris: [`${BASE}/v1/auth/oauth/redirect`] });
  orgIdp = await createTestIdp();
  wideIdp = await createTestIdp();
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
const path = (url: string) => {
  const parsed = new URL(url, BASE);
  return parsed.pathname + parsed.search;
};

/** An application whose organization verified a fresh domain (through DNS) with `policies`. */
async function enterprise(policies: Record<string, string>) {
  const app = await server.createApp({ name: 'Enterprise app', allowed_origins: [BASE] });
  const org = await ok(app.rest('POST', '/v1/organizations', { name: 'Acme' }), 201);
  const name = fresh();
  const domain = await ok(app.rest('POST', `/v1/organizations/${org.id}/domains`, { domain: name }), 201);
  dns.zone[domain.verification.name] = { txt: [domain.verification.value] };
  await ok(app.rest('POST', `/v1/organizations/${org.id}/domains/${domain.id}/verify`));
  await ok(app.rest('PATCH', `/v1/organizations/${org.id}/domains/${domain.id}`, policies));
  return { app, org, name };
}

async function connection(app: TestApp, idp: TestIdp, body: Record<string, unknown>) {
  const created = await ok(
    app.rest('POST', '/v1/saml/connections', {
      name: 'IdP',
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

async function typeEmail(browser: HostedBrowser, app: TestApp, email: string) {
  const form = await browser.get(`/a/${app.id}/sign-in`);
  expect(form.status).toBe(200);
  return browser.submit(form, `/a/${app.id}/sign-in`, { email });
}

/** A sign-in page (the email form) carrying the SSO message, not the error page. */
function expectSsoMessage(page: { status: number; html: string }, app: TestApp) {
  expect(page.status).toBe(403);
  expect(page.html).toContain(MESSAGE);
  expect(page.html).toContain(`action="/a/${app.id}/sign-in"`);
  expect(page.html).not.toContain('Something went wrong');
}

describe('identifier first', () => {
  it('an address at a required-SSO domain goes to the organization’s connection, not to one naming the domain; and signs in', async () => {
    const { app, org, name } = await enterprise({ sso_policy: 'required', join_policy: 'automatic' });
    await connection(app, wideIdp, { email_domain: name });
    const own = await connection(app, orgIdp, { organization_id: org.id });
    const browser = new HostedBrowser(server);
    const email = `ada@${name}`;
    const started = await typeEmail(browser, app, email);
    expect(started.status).toBe(303);
    expect(started.location?.startsWith(`${orgIdp.ssoUrl}?SAMLRequest=`)).toBe(true);
    const form = await orgIdp.respond(own.metadata, started.location ?? '', { email });
    const acs = await postToAcs(server.url, own.connection.id, {
      SAMLResponse: form.SAMLResponse,
      ...(form.RelayState ? { RelayState: form.RelayState } : {}),
    });
    expect(acs.status).toBe(303);
    const done = await browser.get(path(acs.location ?? ''));
    expect(done.status).toBe(303);
    expect(done.location).toBe(`/a/${app.id}/account`);
    const members = await ok(app.rest('GET', `/v1/organizations/${org.id}/members`));
    expect(members.members.map((m: any) => m.email)).toEqual([email]);
  });

  it('without a usable connection of the organization, the email form answers the SSO message (no magic link, no error page)', async () => {
    const { app, name } = await enterprise({ sso_policy: 'required' });
    // A connection naming the domain is not the organization's: it is not offered.
    await connection(app, wideIdp, { email_domain: name });
    const browser = new HostedBrowser(server);
    expectSsoMessage(await typeEmail(browser, app, `grace@${name}`), app);
    const messages = await ok(app.rest('GET', '/v1/messages'));
    expect(messages.total).toBe(0);
  });
});

describe('a refused first factor', () => {
  it('social sign-in refused with sso_required comes back as the sign-in page with the SSO message', async () => {
    const { app, name } = await enterprise({ sso_policy: 'required' });
    await ok(
      putProvider(app, 'oidc', {
        issuer: oidc.issuer,
        client_id: oidc.clientId,
        client_secret: oidc.clientSecret,
        enabled: true,
      }),
    );
    oidc.accounts.set('hedy', { email: `hedy@${name}`, email_verified: true });
    const browser = new HostedBrowser(server);
    const started = await browser.submit(await browser.get(`/a/${app.id}/sign-in`), `/a/${app.id}/oauth/start`);
    expect(started.status).toBe(303);
    const relay = await browser.get(path(await oidc.authorize(started.location ?? '', 'hedy')));
    const back = await browser.get(path(relay.location ?? ''));
    expectSsoMessage(back, app);
    expect((await browser.get(`/a/${app.id}/account`)).status).not.toBe(200);
  });
});

/** The passkey script's two posts: the options (with the form's fields), then the assertion. */
async function passkeyPost<T>(browser: HostedBrowser, page: HostedPage, route: string, act: (options: T) => Promise<unknown>) {
  const { state: _s, binding: _b, credential: _c, ...fields } = hiddenFields(page.html, route);
  const answer = await browser.post(`${route}/options`, fields);
  expect(answer.status, answer.html).toBe(200);
  const ceremony = JSON.parse(answer.html) as { options: T; state: string; binding: string };
  const credential = await act(ceremony.options);
  return browser.submit(page, route, {
    state: ceremony.state,
    binding: ceremony.binding,
    credential: JSON.stringify(credential),
  });
}

describe('a refused passkey', () => {
  it('a passkey sign-in refused with sso_required is the sign-in page with the SSO message', async () => {
    const { app, org, name } = await enterprise({ join_policy: 'invite_only' });
    const email = `ada@${name}`;
    const authenticator = new SoftwareAuthenticator();
    const owner = new HostedBrowser(server);
    const account = await owner.follow(await signInOnHostedPages(owner, smtp, app, email));
    expect(account.status).toBe(200);
    const added = await passkeyPost<PublicKeyCredentialCreationOptionsJSON>(
      owner,
      account,
      `/a/${app.id}/passkeys/register`,
      (o) => authenticator.create(o, BASE),
    );
    expect(added.status).toBe(303);
    const [domain] = await ok(app.rest('GET', `/v1/organizations/${org.id}/domains`));
    await ok(app.rest('PATCH', `/v1/organizations/${org.id}/domains/${domain.id}`, { sso_policy: 'required' }));

    const browser = new HostedBrowser(server);
    const page = await browser.get(`/a/${app.id}/sign-in`);
    const refused = await passkeyPost<PublicKeyCredentialRequestOptionsJSON>(
      browser,
      page,
      `/a/${app.id}/passkeys/sign-in`,
      (o) => authenticator.get(o, BASE),
    );
    expectSsoMessage(refused, app);
    expect(browser.cookies.get(`gh_session_${app.id}`)).toBeUndefined();
  });
});

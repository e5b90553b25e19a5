import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, hasChromium, launchChromium, screenshot } from './helpers/browser.ts';
import { createOrg, createUser, uniqueEmail } from './helpers/fixtures.ts';
import { HostedBrowser, hiddenFields, signInOnHostedPages } from './helpers/hosted.ts';
import { putProvider } from './helpers/oauth.ts';
import { startOidcProvider, type TestOidcProvider } from './helpers/oauth-idp.ts';
import { createClient, relyingParty, startAuthorization } from './helpers/oauth2.ts';
import { createTestIdp, postToAcs, type TestIdp } from './helpers/saml-idp.ts';
import { expectError, ok, sql, startServer, type TestApp, type TestServer } from './helpers/server.ts';
import { endUser, type SmtpSink } from './helpers/sign-in.ts';
import { linkIn, startSmtpSink } from './helpers/smtp.ts';

/**
 * The hosted pages' federated factors (CONTRACT §9), over plain HTTP as a browser uses them, and clicked through in
 * Chromium: enterprise SSO chosen by the email's domain (against the samlify IdP of the SAML tests), a button per
 * enabled social provider (against a real oidc-provider), the sign-up page, and the organization picker — and the
 * attacks: a stolen SAML code or OAuth state and code replayed in another browser, redirect targets off our pages.
 */
const BASE = 'http://gatehouse.test';

let smtp: SmtpSink;
let server: TestServer;
let oidcIdp: TestOidcProvider;
let samlIdp: TestIdp;

beforeAll(async () => {
  smtp = await startSmtpSink();
  oidcIdp = await startOidcProvider({ redirectUris: [`${BASE}/v1/auth/oauth/redirect`] });
  oidcIdp.accounts.set('ada', { email: 'ada@social.test', email_verified: true, name: 'Ada Lovelace' });
  oidcIdp.accounts.set('eve', { email: 'eve@social.test', email_verified: true, name: 'Eve' });
  samlIdp = await createTestIdp();
  server = await startServer({ smtpUrl: smtp.url, allowInsecureSaml: true, oauth: { allowInsecureIssuers: true } });
});
afterAll(async () => {
  await server?.close();
  await oidcIdp?.close();
  await smtp?.close();
});

const useOidc = (app: TestApp) =>
  ok(
    putProvider(app, 'oidc', {
      issuer: oidcIdp.issuer,
      client_id: oidcIdp.clientId,
      client_secret: oidcIdp.clientSecret,
      enabled: true,
    }),
  );

/** An application with a SAML connection for `domain`; answers the connection and our SP metadata for the IdP. */
async function ssoApp(domain: string, input: Record<string, unknown> = {}, idp = samlIdp) {
  const app = await server.createApp({ name: 'SSO app', ...input });
  const connection = await ok(
    app.rest('POST', '/v1/saml/connections', {
      name: 'Acme Corp',
      idp_entity_id: idp.entityId,
      idp_sso_url: idp.ssoUrl,
      idp_certificate: idp.keys.certificate,
      email_domain: domain,
    }),
    201,
  );
  const spMetadata = await (await fetch(`${server.url}/v1/saml/metadata/${connection.id}`)).text();
  return { app, connection, spMetadata };
}

/** The sign-in form with `email`, in `browser`: answers the form's answer (a redirect to the IdP, for SSO). */
async function typeEmail(browser: HostedBrowser, app: TestApp, email: string, page = 'sign-in') {
  const form = await browser.get(`/a/${app.id}/${page}`);
  expect(form.status).toBe(200);
  return browser.submit(form, `/a/${app.id}/${page}`, { email });
}

/** The IdP signs `email` in and posts to our ACS; answers where the ACS sends the browser (the hosted callback). */
async function throughIdp(sso: Awaited<ReturnType<typeof ssoApp>>, idpUrl: string, email: string): Promise<string> {
  const form = await samlIdp.respond(sso.spMetadata, idpUrl, { email });
  const acs = await postToAcs(server.url, sso.connection.id, {
    SAMLResponse: form.SAMLResponse,
    ...(form.RelayState ? { RelayState: form.RelayState } : {}),
  });
  expect(acs.status).toBe(303);
  return acs.location ?? '';
}

const path = (url: string) => {
  const parsed = new URL(url, BASE);
  return parsed.pathname + parsed.search;
};

async function signedInEmail(browser: HostedBrowser, app: TestApp): Promise<string | undefined> {
  const account = await browser.get(`/a/${app.id}/account`);
  if (account.status !== 200) return undefined;
  return /Signed in as ([^<]+)</.exec(account.html)?.[1];
}

describe('redirect targets of SSO and social sign-in', () => {
  it('the application’s own hosted pages are always allowed; other paths, applications and origins are not', async () => {
    const { app } = await ssoApp('redirects.test', { allowed_origins: ['https://app.example.com'] });
    const other = await server.createApp();
    await useOidc(app);
    const sso = (redirect_uri: string) => endUser(app, 'POST', '/v1/auth/sso/start', { email: 'a@redirects.test', redirect_uri });
    const oauth = (redirect_uri: string) => endUser(app, 'POST', '/v1/auth/oauth/oidc/start', { redirect_uri });
    const magic = (redirect_url: string) =>
      endUser(app, 'POST', '/v1/auth/magic-link/start', { email: uniqueEmail('redirect'), redirect_url });
    for (const start of [sso, oauth]) {
      await ok(start(`${BASE}/a/${app.id}/sso/callback?hop=x`));
      await ok(start('https://app.example.com/callback'));
    }
    await ok(magic(`${BASE}/a/${app.id}/magic-link`));
    const refused = [
      `${BASE}/a/${other.id}/sso/callback`,
      `${BASE}/v1/auth/oauth/redirect`,
      `${BASE}/a/${app.id}`,
      `${BASE}/a/${app.id}/../${other.id}/x`,
      `http://user:pw@gatehouse.test/a/${app.id}/sso/callback`,
      `https://gatehouse.test/a/${app.id}/sso/callback`,
      `https://evil.test/a/${app.id}/sso/callback`,
    ];
    for (const target of refused) {
      expectError(await sso(target), 422, 'invalid_url', `sso ${target}`);
      expectError(await oauth(target), 422, 'invalid_url', `oauth ${target}`);
      expectError(await magic(target), 422, 'invalid_url', `magic link ${target}`);
    }
  });

  it('no parameter of the pages sends the browser off them: a finished sign-in lands on the account page', async () => {
    const app = await server.createApp();
    const browser = new HostedBrowser(server);
    const query = `?redirect_uri=${encodeURIComponent('https://evil.test/')}&return_to=//evil.test&next=https://evil.test`;
    const email = uniqueEmail('stay');
    const done = await signInOnHostedPages(browser, smtp, app, email, query);
    expect(done.status).toBe(303);
    expect(done.location).toBe(`/a/${app.id}/account`);
    // The social start ignores a posted redirect: the provider returns to our relay, which returns to our callback.
    await useOidc(app);
    const fresh = new HostedBrowser(server);
    const page = await fresh.get(`/a/${app.id}/sign-in`);
    const started = await fresh.submit(page, `/a/${app.id}/oauth/start`, { redirect_uri: 'https://evil.test/' });
    expect(started.status).toBe(303);
    const authorization = new URL(started.location ?? '');
    expect(authorization.origin).toBe(oidcIdp.issuer);
    expect(authorization.searchParams.get('redirect_uri')).toBe(`${BASE}/v1/auth/oauth/redirect`);
    const relay = await fresh.get(path(await oidcIdp.authorize(authorization.toString(), 'ada')));
    expect(relay.status).toBe(303);
    expect(new URL(relay.location ?? '').href.startsWith(`${BASE}/a/${app.id}/oauth/callback?`)).toBe(true);
  });
});

describe('enterprise SSO, identifier first', () => {
  it('an email of a connected domain goes to the IdP; the ACS returns to the hosted callback, which signs in', async () => {
    const sso = await ssoApp('acme-sso.test');
    const browser = new HostedBrowser(server);
    const started = await typeEmail(browser, sso.app, 'ada@acme-sso.test');
    expect(started.status).toBe(303);
    expect(started.location?.startsWith(`${samlIdp.ssoUrl}?SAMLRequest=`)).toBe(true);
    // No magic link was sent for this address.
    const back = await throughIdp(sso, started.location ?? '', 'ada@acme-sso.test');
    expect(back.startsWith(`${BASE}/a/${sso.app.id}/sso/callback?hop=`)).toBe(true);
    expect(new URL(back).searchParams.get('code')).toMatch(/^sso_/);
    const done = await browser.get(path(back));
    expect(done.status).toBe(303);
    expect(done.location).toBe(`/a/${sso.app.id}/account`);
    expect(await signedInEmail(browser, sso.app)).toBe('ada@acme-sso.test');
    // The callback is single use: the same URL again is refused (its hop is gone from the flow).
    const again = await browser.get(path(back));
    expect(again.status).toBe(400);
  });

  it('other domains, and a disabled connection, get the magic link', async () => {
    const sso = await ssoApp('disabled-sso.test');
    const browser = new HostedBrowser(server);
    const other = uniqueEmail('other');
    expect((await typeEmail(browser, sso.app, other)).location).toBe(`/a/${sso.app.id}/sign-in/wait`);
    expect(linkIn(await smtp.next(other)).pathname).toBe(`/a/${sso.app.id}/magic-link`);
    await ok(
      sso.app.rest('PATCH', `/v1/saml/connections/${sso.connection.id}`, {
        name: 'Acme Corp',
        idp_entity_id: samlIdp.entityId,
        idp_sso_url: samlIdp.ssoUrl,
        idp_certificate: samlIdp.keys.certificate,
        enabled: false,
      }),
    );
    const email = `${Date.now().toString(36)}@disabled-sso.test`;
    expect((await typeEmail(new HostedBrowser(server), sso.app, email)).location).toBe(`/a/${sso.app.id}/sign-in/wait`);
    await smtp.next(email);
  });

  it('a stolen callback URL signs nobody in another browser, even one with an SSO hop of its own', async () => {
    const sso = await ssoApp('stolen-sso.test');
    const victim = new HostedBrowser(server);
    const victimBack = await throughIdp(
      sso,
      (await typeEmail(victim, sso.app, 'vic@stolen-sso.test')).location ?? '',
      'vic@stolen-sso.test',
    );
    const code = new URL(victimBack).searchParams.get('code') ?? '';

    // A browser without the flow cookie.
    const thief = new HostedBrowser(server);
    const refused = await thief.get(path(victimBack));
    expect(refused.status).toBe(400);
    expect(refused.html).toContain('started in another browser');
    expect(thief.cookies.has(`gh_session_${sso.app.id}`)).toBe(false);

    // A browser that started its own hop and puts its own hop with the victim's code: the code was issued for the
    // victim's redirect_uri and is refused (and not spent).
    const attacker = new HostedBrowser(server);
    const ownBack = await throughIdp(
      sso,
      (await typeEmail(attacker, sso.app, 'eve@stolen-sso.test')).location ?? '',
      'eve@stolen-sso.test',
    );
    const forged = new URL(ownBack);
    forged.searchParams.set('code', code);
    const swapped = await attacker.get(path(forged.toString()));
    expect(swapped.status).toBe(401);
    expect(attacker.cookies.has(`gh_session_${sso.app.id}`)).toBe(false);

    // The victim's own browser still signs in with it.
    expect((await victim.get(path(victimBack))).location).toBe(`/a/${sso.app.id}/account`);
    expect(await signedInEmail(victim, sso.app)).toBe('vic@stolen-sso.test');
    // Each code was stored with the redirect_uri it was sent to (an SDK's sso/complete without one is unchanged).
    const [row] = await sql<{ n: number }>(
      server,
      'select count(*)::int as n from saml_codes where application_id = ? and redirect_uri is not null',
      [sso.app.id],
    );
    expect(row?.n).toBe(2);
  });

  it('the IdP’s refusal (the connection disabled meanwhile) comes back to a page of ours in the same browser', async () => {
    const sso = await ssoApp('refused-sso.test');
    const browser = new HostedBrowser(server);
    const started = await typeEmail(browser, sso.app, 'x@refused-sso.test');
    await ok(
      sso.app.rest('PATCH', `/v1/saml/connections/${sso.connection.id}`, {
        name: 'Acme Corp',
        idp_entity_id: samlIdp.entityId,
        idp_sso_url: samlIdp.ssoUrl,
        idp_certificate: samlIdp.keys.certificate,
        enabled: false,
      }),
    );
    const back = await throughIdp(sso, started.location ?? '', 'x@refused-sso.test');
    expect(new URL(back).searchParams.get('error')).toBe('access_denied');
    const page = await browser.get(path(back));
    expect(page.status).toBe(403);
    expect(page.html).toContain('cannot sign in');
    expect(browser.cookies.has(`gh_session_${sso.app.id}`)).toBe(false);
  });

  it('a callback without the hop is a page of ours and signs nobody in', async () => {
    const sso = await ssoApp('error-sso.test');
    const browser = new HostedBrowser(server);
    const started = await typeEmail(browser, sso.app, 'x@error-sso.test');
    expect(new URL(started.location ?? '').searchParams.get('SAMLRequest')).toBeTruthy();
    const noHop = await browser.get(`/a/${sso.app.id}/sso/callback?code=sso_x`);
    expect(noHop.status).toBe(400);
    expect(noHop.html).toContain('started in another browser');
    expect(browser.cookies.has(`gh_session_${sso.app.id}`)).toBe(false);
  });
});

describe('at the root of a verified custom domain', () => {
  async function withDomain(app: TestApp, status = 'verified') {
    const domain = `login-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}.acme-notes.com`;
    const added = await ok(app.rest('POST', `/v1/applications/${app.id}/domains`, { domain }));
    await sql(server, 'update custom_domains set status = ? where id = ?', [status, added.id]);
    return domain;
  }

  it('SSO and social hops return to the domain’s own pages (its flow cookie) and sign in there', async () => {
    const sso = await ssoApp('domain-sso.test');
    const domain = await withDomain(sso.app);
    const browser = new HostedBrowser(server, { host: domain });
    const form = await browser.get('/sign-in');
    const toIdp = await browser.submit(form, '/sign-in', { email: 'ada@domain-sso.test' });
    const back = await throughIdp(sso, toIdp.location ?? '', 'ada@domain-sso.test');
    expect(back.startsWith(`http://${domain}/sso/callback?hop=`)).toBe(true);
    expect((await browser.get(path(back))).location).toBe('/account');

    await useOidc(sso.app);
    const social = new HostedBrowser(server, { host: domain });
    const button = await social.get('/sign-in');
    const toProvider = await social.submit(button, '/oauth/start');
    const relay = await social.get(path(await oidcIdp.authorize(toProvider.location ?? '', 'ada')));
    expect(relay.location?.startsWith(`http://${domain}/oauth/callback?`)).toBe(true);
    expect((await social.get(path(relay.location ?? ''))).location).toBe('/account');
  });

  it('a pending domain, or another application’s, is no redirect target', async () => {
    const { app } = await ssoApp('pending-domain.test');
    const other = await server.createApp();
    for (const domain of [await withDomain(app, 'pending_verification'), await withDomain(other)]) {
      expectError(
        await endUser(app, 'POST', '/v1/auth/sso/start', {
          email: 'a@pending-domain.test',
          redirect_uri: `http://${domain}/sso/callback`,
        }),
        422,
        'invalid_url',
        domain,
      );
    }
  });
});

describe('social sign-in', () => {
  it('a button per enabled provider; the provider’s way back signs in on the hosted pages', async () => {
    const app = await server.createApp({ name: 'Social app' });
    const browser = new HostedBrowser(server);
    expect((await browser.get(`/a/${app.id}/sign-in`)).html).not.toContain('/oauth/start');
    await useOidc(app);
    const page = await browser.get(`/a/${app.id}/sign-in`);
    expect(page.html).toContain('Continue with OpenID Connect');
    expect(hiddenFields(page.html, `/a/${app.id}/oauth/start`)).toMatchObject({ provider: 'oidc' });
    const started = await browser.submit(page, `/a/${app.id}/oauth/start`);
    expect(started.status).toBe(303);
    const relay = await browser.get(path(await oidcIdp.authorize(started.location ?? '', 'ada')));
    const done = await browser.get(path(relay.location ?? ''));
    expect(done.status).toBe(303);
    expect(done.location).toBe(`/a/${app.id}/account`);
    expect(await signedInEmail(browser, app)).toBe('ada@social.test');
  });

  it('a disabled or unknown provider posted to the start is 404, and starts nothing', async () => {
    const app = await server.createApp();
    await useOidc(app);
    const browser = new HostedBrowser(server);
    const page = await browser.get(`/a/${app.id}/sign-in`);
    for (const provider of ['google', 'nope', '']) {
      expect((await browser.submit(page, `/a/${app.id}/oauth/start`, { provider })).status).toBe(404);
    }
    // A forged post (no CSRF token) is 403.
    expect((await new HostedBrowser(server).post(`/a/${app.id}/oauth/start`, { provider: 'oidc' })).status).toBe(403);
  });

  it('a stolen state and code replayed in another browser are refused there, and still work in the browser that started', async () => {
    const app = await server.createApp();
    await useOidc(app);
    const victim = new HostedBrowser(server);
    const started = await victim.submit(await victim.get(`/a/${app.id}/sign-in`), `/a/${app.id}/oauth/start`);
    const relay = await victim.get(path(await oidcIdp.authorize(started.location ?? '', 'ada')));
    const callback = path(relay.location ?? '');

    const thief = new HostedBrowser(server);
    const refused = await thief.get(callback);
    expect(refused.status).toBe(400);
    expect(refused.html).toContain('started in another browser');

    // An attacker with a social hop of their own, replaying the victim's state and code: refused (state not theirs).
    const attacker = new HostedBrowser(server);
    const own = await attacker.submit(await attacker.get(`/a/${app.id}/sign-in`), `/a/${app.id}/oauth/start`);
    expect((await attacker.get(callback)).status).toBe(400);
    // Their own state with the victim's code: the code was issued for the victim's PKCE verifier — refused.
    const ownState = new URL(own.location ?? '').searchParams.get('state') ?? '';
    const swapped = new URL(callback, BASE);
    swapped.searchParams.set('state', ownState);
    expect((await attacker.get(path(swapped.toString()))).status).toBe(401);
    expect(attacker.cookies.has(`gh_session_${app.id}`)).toBe(false);

    const done = await victim.get(callback);
    expect(done.location).toBe(`/a/${app.id}/account`);
    expect(await signedInEmail(victim, app)).toBe('ada@social.test');
  });

  it('the provider’s refusal comes back as a page of ours', async () => {
    const app = await server.createApp();
    await useOidc(app);
    const browser = new HostedBrowser(server);
    const started = await browser.submit(await browser.get(`/a/${app.id}/sign-in`), `/a/${app.id}/oauth/start`);
    const relay = await browser.get(path(await oidcIdp.authorize(started.location ?? '', 'ada', { deny: true })));
    const page = await browser.get(path(relay.location ?? ''));
    expect(page.status).toBe(403);
    expect(page.html).toContain('cannot sign in');
    expect(browser.cookies.has(`gh_session_${app.id}`)).toBe(false);
  });
});

describe('the sign-up page', () => {
  it('open: linked from sign-in and back; the account is made when the link is opened, with the name typed', async () => {
    const app = await server.createApp({ name: 'Open app' });
    const browser = new HostedBrowser(server);
    expect((await browser.get(`/a/${app.id}/sign-in`)).html).toContain(`href="/a/${app.id}/sign-up"`);
    const page = await browser.get(`/a/${app.id}/sign-up`);
    expect(page.status).toBe(200);
    expect(page.html).toContain('Create your Open app account');
    expect(page.html).toContain('your account is created when you open it');
    expect(page.html).toContain(`href="/a/${app.id}/sign-in"`);
    const email = uniqueEmail('signup');
    const started = await browser.submit(page, `/a/${app.id}/sign-up`, { email, name: 'Grace <Hopper>' });
    expect(started.location).toBe(`/a/${app.id}/sign-in/wait`);
    expect(
      (await sql(server, 'select id from users where application_id = ? and primary_email = ?', [app.id, email])).length,
    ).toBe(0);
    const link = linkIn(await smtp.next(email));
    const landing = await browser.get(link.pathname + link.search);
    const done = await browser.submit(landing, `/a/${app.id}/magic-link`);
    expect(done.location).toBe(`/a/${app.id}/account`);
    const [user] = await sql<{ profile: { name?: string } | string }>(
      server,
      'select profile from users where application_id = ? and primary_email = ?',
      [app.id, email],
    );
    const profile = typeof user?.profile === 'string' ? JSON.parse(user.profile) : user?.profile;
    expect(profile).toEqual({ name: 'Grace <Hopper>' });
  });

  it('an existing account signing up keeps its own name', async () => {
    const app = await server.createApp();
    const email = uniqueEmail('existing');
    await createUser(app, { primary_email: email, profile: { name: 'Original' } });
    const browser = new HostedBrowser(server);
    await browser.submit(await browser.get(`/a/${app.id}/sign-up`), `/a/${app.id}/sign-up`, { email, name: 'Changed' });
    const link = linkIn(await smtp.next(email));
    await browser.submit(await browser.get(link.pathname + link.search), `/a/${app.id}/magic-link`);
    const [user] = await sql<{ profile: unknown }>(
      server,
      'select profile from users where application_id = ? and primary_email = ?',
      [app.id, email],
    );
    const profile = typeof user?.profile === 'string' ? JSON.parse(user.profile) : user?.profile;
    expect(profile).toEqual({ name: 'Original' });
  });

  it('closed: no link on the sign-in page, the page and its form are 404 with a clear message', async () => {
    const app = await server.createApp({ name: 'Closed app' });
    await ok(app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { sign_up: 'closed' } }));
    const browser = new HostedBrowser(server);
    const signIn = await browser.get(`/a/${app.id}/sign-in`);
    expect(signIn.html).not.toContain('/sign-up');
    const page = await browser.get(`/a/${app.id}/sign-up`);
    expect(page.status).toBe(404);
    expect(page.html).toContain('New accounts cannot be created for Closed app here');
    const posted = await browser.submit(signIn, `/a/${app.id}/sign-in`, { email: uniqueEmail('x') });
    expect(posted.status).toBe(303);
    const csrf = hiddenFields(signIn.html, `/a/${app.id}/sign-in`).csrf ?? '';
    expect((await browser.post(`/a/${app.id}/sign-up`, { csrf, email: uniqueEmail('closed') })).status).toBe(404);
  });

  it('an email of a connected domain goes to its IdP from the sign-up page too', async () => {
    const sso = await ssoApp('signup-sso.test');
    const browser = new HostedBrowser(server);
    const started = await typeEmail(browser, sso.app, 'new@signup-sso.test', 'sign-up');
    expect(started.location?.startsWith(`${samlIdp.ssoUrl}?SAMLRequest=`)).toBe(true);
    const done = await browser.get(path(await throughIdp(sso, started.location ?? '', 'new@signup-sso.test')));
    expect(done.location).toBe(`/a/${sso.app.id}/account`);
  });
});

describe('the organization picker', () => {
  async function member(app: TestApp, email: string, names: string[]) {
    const user = await createUser(app, { primary_email: email });
    const orgs = [];
    for (const name of names) {
      const org = await createOrg(app, { name });
      await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id }), 201);
      orgs.push(org);
    }
    return { user, orgs };
  }
  const activeOrganization = async (app: TestApp, email: string) =>
    (
      await sql<{ organization_id: string | null }>(
        server,
        `select s.organization_id from sessions s join users u on u.id = s.user_id
          where s.application_id = ? and u.primary_email = ? and s.revoked_at is null and s.browser_token_hash is not null`,
        [app.id, email],
      )
    )[0]?.organization_id;

  it('one organization: no picker, it becomes the active one', async () => {
    const app = await server.createApp();
    const email = uniqueEmail('one-org');
    const { orgs } = await member(app, email, ['Solo']);
    const browser = new HostedBrowser(server);
    const done = await signInOnHostedPages(browser, smtp, app, email, '?organization=select');
    expect(done.location).toBe(`/a/${app.id}/organization`);
    const next = await browser.get(done.location ?? '');
    expect(next.status).toBe(303);
    expect(next.location).toBe(`/a/${app.id}/account`);
    expect(await activeOrganization(app, email)).toBe(orgs[0]?.id);
  });

  it('several: the picker lists them (names escaped); a choice becomes active; a foreign organization is refused', async () => {
    const app = await server.createApp();
    const other = await server.createApp();
    const foreign = await createOrg(other, { name: 'Elsewhere' });
    const notMine = await createOrg(app, { name: 'Not mine' });
    const email = uniqueEmail('many-orgs');
    const { orgs } = await member(app, email, ['Alpha <b>', 'Beta']);
    const browser = new HostedBrowser(server);
    const done = await signInOnHostedPages(browser, smtp, app, email, '?organization=select');
    const picker = await browser.follow(done);
    expect(picker.status).toBe(200);
    expect(picker.html).toContain('Choose an organization');
    expect(picker.html).toContain('Alpha &lt;b&gt;');
    expect(picker.html).toContain('Beta');
    expect(picker.html).not.toContain('Not mine');
    for (const id of [foreign.id, notMine.id, 'not-an-id']) {
      const refused = await browser.submit(picker, `/a/${app.id}/organization`, { organization_id: id });
      expect(refused.status, id).toBe(404);
      expect(refused.html).toContain('You are not a member of that organization.');
    }
    expect(await activeOrganization(app, email)).toBeNull();
    const chosen = await browser.submit(picker, `/a/${app.id}/organization`, { organization_id: orgs[1]?.id ?? '' });
    expect(chosen.status).toBe(303);
    expect(chosen.location).toBe(`/a/${app.id}/account`);
    expect(await activeOrganization(app, email)).toBe(orgs[1]?.id);
  });

  it('an OAuth client asking for the `organization` scope gets the picker; one that does not, none', async () => {
    const app = await server.createApp();
    const issuer = `${BASE}/oauth2/${app.id}`;
    const discovery = await (await fetch(`${server.url}/oauth2/${app.id}/.well-known/openid-configuration`)).json();
    // The provider offers `organization` as a standard scope, or (before it did) as one of the application's own.
    const offered = (discovery.scopes_supported as string[]).includes('organization');
    await ok(
      app.rest('PATCH', `/v1/applications/${app.id}`, {
        settings: {
          oauth2: {
            login_url: `${BASE}/a/${app.id}/sign-in`,
            scopes: offered ? [] : [{ name: 'organization', description: 'Your organization' }],
          },
        },
      }),
    );
    expect(discovery.issuer).toBe(issuer);
    const client = await createClient(app, { scopes: ['openid', 'email', 'organization'] });
    const config = await relyingParty(server, app, client);
    const email = uniqueEmail('oauth-orgs');
    await member(app, email, ['North', 'South']);
    // The authorization request from the browser that then signs in (an interaction belongs to the browser that
    // started it).
    const uidFor = async (scope: string, browser: HostedBrowser) => {
      const { url } = await startAuthorization(server, config, { scope, prompt: null });
      const started = await browser.get(url.href);
      const location = new URL(started.location ?? '', BASE);
      expect(`${location.origin}${location.pathname}`).toBe(`${BASE}/a/${app.id}/sign-in`);
      return location.searchParams.get('interaction') ?? '';
    };
    const browser = new HostedBrowser(server);
    const askedUid = await uidFor('openid email organization', browser);
    const asked = await signInOnHostedPages(browser, smtp, app, email, `?interaction=${askedUid}`);
    expect(asked.location).toBe(`/a/${app.id}/organization`);
    // The choice made, the sign-in goes on with the client's interaction.
    const picker = await browser.get(asked.location ?? '');
    const choice = hiddenFields(picker.html, `/a/${app.id}/organization`).organization_id ?? '';
    const chosen = await browser.submit(picker, `/a/${app.id}/organization`, { organization_id: choice });
    expect(chosen.location).toBe(`/a/${app.id}/sign-in?interaction=${askedUid}`);
    const other = new HostedBrowser(server);
    const uid = await uidFor('openid email', other);
    const notAsked = await signInOnHostedPages(other, smtp, app, email, `?interaction=${uid}`);
    expect(notAsked.location).toBe(`/a/${app.id}/sign-in?interaction=${uid}`);
  });

  it('from the account page: the list with the active one marked; signed out it asks to sign in first', async () => {
    const app = await server.createApp();
    const email = uniqueEmail('account-orgs');
    const { orgs } = await member(app, email, ['One', 'Two']);
    const browser = new HostedBrowser(server);
    await signInOnHostedPages(browser, smtp, app, email);
    const account = await browser.get(`/a/${app.id}/account`);
    expect(account.html).toContain(`href="/a/${app.id}/organization"`);
    const list = await browser.get(`/a/${app.id}/organization`);
    expect(list.status).toBe(200);
    await browser.submit(list, `/a/${app.id}/organization`, { organization_id: orgs[0]?.id ?? '' });
    const marked = await browser.get(`/a/${app.id}/organization`);
    expect(marked.html).toMatch(/aria-current="true">One/);
    const signedOut = await new HostedBrowser(server).get(`/a/${app.id}/organization`);
    expect(signedOut.status).toBe(303);
    expect(signedOut.location).toBe(`/a/${app.id}/sign-in?organization=select`);
    // A forged post (no CSRF token) is 403.
    expect(
      (await new HostedBrowser(server).post(`/a/${app.id}/organization`, { organization_id: orgs[0]?.id ?? '' })).status,
    ).toBe(403);
  });
});

// ——— Chromium ———

if (!hasChromium) console.warn('hosted-federated: /usr/bin/chromium not found, the real-browser tests are skipped.');

describe.skipIf(!hasChromium)('federated sign-in on the hosted pages in Chromium', () => {
  let browser: Browser;
  let idpServer: Server;
  let httpIdp: TestIdp;
  let spMetadata = '';

  beforeAll(async () => {
    httpIdp = await createTestIdp({ entityId: 'http://idp.test/metadata', ssoUrl: 'http://idp.test/sso' });
    // The SAML IdP's page: the person is signed in there already; a click posts the assertion to our ACS.
    idpServer = createServer((req, res) => {
      void (async () => {
        const form = await httpIdp.respond(spMetadata, new URL(req.url ?? '/', 'http://idp.test').toString(), {
          email: 'ada@chromium-sso.test',
        });
        const escapeAttr = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
        const inputs = Object.entries(form)
          .filter(([name]) => name !== 'acs')
          .map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeAttr(String(value))}">`)
          .join('');
        res
          .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
          .end(
            `<!doctype html><form method="post" action="${escapeAttr(form.acs)}">${inputs}<button id="continue">Continue</button></form>`,
          );
      })().catch((error: Error) => res.writeHead(500).end(error.message));
    });
    await new Promise<void>((resolve) => idpServer.listen(0, '127.0.0.1', resolve));
    browser = await launchChromium(
      `MAP gatehouse.test:80 ${new URL(server.url).host}, MAP idp.test:80 127.0.0.1:${(idpServer.address() as AddressInfo).port}`,
    );
  });
  afterAll(async () => {
    await browser?.close();
    idpServer?.closeAllConnections();
    await new Promise<void>((resolve) => (idpServer ? idpServer.close(() => resolve()) : resolve()));
  });

  it('social: the button, the provider’s login and consent, back on the account page', async () => {
    const app = await server.createApp({ name: 'Chromium social' });
    await useOidc(app);
    const { page } = browser;
    await browser.context.clearCookies();
    await page.goto(`${BASE}/a/${app.id}/sign-in`);
    await screenshot(page, 'hosted-federated-sign-in');
    await page.click('#social-oidc');
    await page.waitForURL((url) => url.origin === oidcIdp.issuer);
    // oidc-provider's development login page, then its consent page.
    await page.fill('input[name=login]', 'eve');
    await page.fill('input[name=password]', 'any');
    await page.click('button[type=submit]');
    await page.click('button[type="submit"]:has-text("Continue")');
    await page.waitForURL(`${BASE}/a/${app.id}/account`);
    expect(await page.textContent('main')).toContain('Signed in as eve@social.test');
  });

  it('SAML: the email of a connected domain, the IdP, the ACS, back on the account page', async () => {
    const sso = await ssoApp('chromium-sso.test', {}, httpIdp);
    spMetadata = sso.spMetadata;
    const { page } = browser;
    await browser.context.clearCookies();
    await page.goto(`${BASE}/a/${sso.app.id}/sign-up`);
    await screenshot(page, 'hosted-federated-sign-up');
    await page.goto(`${BASE}/a/${sso.app.id}/sign-in`);
    await page.fill('#email', 'ada@chromium-sso.test');
    await page.click('button[type=submit]');
    await page.waitForURL((url) => url.href.startsWith('http://idp.test/sso?SAMLRequest='));
    await page.click('#continue');
    await page.waitForURL(`${BASE}/a/${sso.app.id}/account`);
    expect(await page.textContent('main')).toContain('Signed in as ada@chromium-sso.test');
  });

  it('the organization picker, as a screenshot', async () => {
    const app = await server.createApp({ name: 'Chromium orgs' });
    const email = uniqueEmail('chromium-orgs');
    const user = await createUser(app, { primary_email: email });
    for (const name of ['Research', 'Operations']) {
      const org = await createOrg(app, { name });
      await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id }), 201);
    }
    // Signed in over HTTP; the browser gets the session cookie.
    const http = new HostedBrowser(server);
    await signInOnHostedPages(http, smtp, app, email);
    const cookie = http.cookies.get(`gh_session_${app.id}`) ?? '';
    await browser.context.clearCookies();
    await browser.context.addCookies([{ name: `gh_session_${app.id}`, value: cookie, url: BASE }]);
    const { page } = browser;
    await page.goto(`${BASE}/a/${app.id}/organization`);
    await screenshot(page, 'hosted-federated-organization');
    await page.click('button:has-text("Research")');
    await page.waitForURL(`${BASE}/a/${app.id}/account`);
  });
});

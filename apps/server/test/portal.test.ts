import { describe, expect, it } from 'vitest';
import { createOrg, scopedKey } from './helpers/fixtures.ts';
import { HostedBrowser, type HostedPage, hiddenFields } from './helpers/hosted.ts';
import {
  CALLBACK,
  complete,
  counts,
  createTestIdp,
  makeKeyPair,
  ORIGIN,
  postToAcs,
  start,
  type TestIdp,
} from './helpers/saml.ts';
import { expectError, MISSING, ok, sql, type TestApp, type TestServer } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * The admin portal (CONTRACT §8): links that open once within 5 minutes, sessions of at most an hour bound to one
 * organization and one intent, and the SSO intent's set-up and connection test — each rule tried by a test that tries
 * to break it.
 */
const suite = serverSuite({ smtp: false });
/** The test servers' configured base URL (helpers/server.ts). */
const BASE_URL = 'http://gatehouse.test';

async function portalApp(server: TestServer) {
  const app = await server.createApp({ allowed_origins: [ORIGIN] });
  const org = await createOrg(app);
  return { app, org };
}

const link = (app: TestApp, orgId: string, body: Record<string, unknown> = { intent: 'sso' }) =>
  app.rest('POST', `/v1/organizations/${orgId}/portal-links`, body);

/** Opens a new link for `orgId` in a fresh browser: the browser holds the portal session. */
async function openPortal(app: TestApp, orgId: string, body: Record<string, unknown> = { intent: 'sso' }) {
  const { url } = await ok(link(app, orgId, body), 201);
  const browser = new HostedBrowser(suite.server);
  const opened = await browser.get(new URL(url).pathname + new URL(url).search);
  expect(opened.status, opened.html).toBe(303);
  return { browser, opened, url };
}

const pathOf = (url: string) => {
  const u = new URL(url);
  return u.pathname + u.search;
};

describe('portal links (API)', () => {
  it('answers 201 {url, expires_at}: under the base URL, 5 minutes, the token stored as SHA-256 only', async () => {
    const { app, org } = await portalApp(suite.server);
    const before = Date.now();
    const res = await link(app, org.id, { intent: 'sso', return_url: `${ORIGIN}/settings` });
    const body = await ok(res, 201);
    expect(Object.keys(body).sort()).toEqual(['expires_at', 'url']);
    const url = new URL(body.url);
    // Built from the configured base URL (never from the request's Host).
    expect(url.origin).toBe(BASE_URL);
    expect(url.pathname).toBe('/portal/open');
    const forged = await ok(
      app.rest('POST', `/v1/organizations/${org.id}/portal-links`, { intent: 'sso' }, { 'x-forwarded-host': 'evil.example.com' }),
      201,
    );
    expect(new URL(forged.url).origin).toBe(BASE_URL);
    const token = url.searchParams.get('token')!;
    expect(token).toMatch(/^portal_[A-Za-z0-9]{43}$/);
    const expires = Date.parse(body.expires_at);
    expect(expires - before).toBeGreaterThan(4.9 * 60_000);
    expect(expires - before).toBeLessThanOrEqual(5 * 60_000 + 5_000);
    const rows = await sql(suite.server, 'select * from portal_links where application_id = ? order by created_at', [app.id]);
    expect(rows).toHaveLength(2);
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(rows[0].intent).toBe('sso');
  });

  it('refuses: another application’s or an unknown organization (404), a return_url off the allowed origins (422 invalid_url), an unknown intent (422), a read-only key (403)', async () => {
    const { app, org } = await portalApp(suite.server);
    const other = await portalApp(suite.server);
    expectError(await link(app, other.org.id), 404, 'not_found', 'other tenant');
    expectError(await link(app, MISSING), 404, 'not_found', 'missing');
    for (const return_url of [
      'https://evil.example.com/',
      'https://app.example.com.evil.com/',
      'javascript:alert(1)',
      '//evil.example.com',
    ]) {
      expectError(await link(app, org.id, { intent: 'sso', return_url }), 422, 'invalid_url', return_url);
    }
    expectError(await link(app, org.id, { intent: 'users' }), 422, 'validation_failed');
    expectError(await link(app, org.id, { intent: 'sso', organization_id: other.org.id }), 422, 'validation_failed', 'strict');
    const reader = await scopedKey(app, ['organizations:read']);
    expectError(
      await app.rest(
        'POST',
        `/v1/organizations/${org.id}/portal-links`,
        { intent: 'sso' },
        { authorization: `Bearer ${reader}` },
      ),
      403,
      'insufficient_scope',
    );
    expect(await sql(suite.server, 'select count(*)::int as n from portal_links where application_id = ?', [app.id])).toEqual([
      { n: 0 },
    ]);
  });

  it('the SDK creates one (organizations.portalLinks.create)', async () => {
    const { app, org } = await portalApp(suite.server);
    const created = await app.sdk.organizations.portalLinks.create({ id: org.id, intent: 'domains' });
    expect(created.url).toContain('/portal/open?token=portal_');
  });
});

describe('portal sessions', () => {
  it('a link opens once: a session cookie (HttpOnly, SameSite=Lax, path /portal, ≤ 1 h) and the intent’s page; the second open is refused', async () => {
    const { app, org } = await portalApp(suite.server);
    const { browser, opened, url } = await openPortal(app, org.id);
    expect(opened.location).toBe('/portal/sso');
    const cookie = opened.headers.getSetCookie().find((c) => c.startsWith('gh_portal='))!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Path=\/portal/i);
    expect(cookie).toMatch(/Max-Age=3600/i);
    // The test server's base URL is http: no Secure (it would be on https).
    expect(cookie).not.toMatch(/Secure/i);
    const sessionToken = cookie.split(';')[0]!.slice('gh_portal='.length);
    const rows = await sql(
      suite.server,
      'select session_hash, session_expires_at, consumed_at from portal_links where application_id = ?',
      [app.id],
    );
    expect(JSON.stringify(rows)).not.toContain(sessionToken);
    expect(Date.parse(rows[0].session_expires_at) - Date.parse(rows[0].consumed_at)).toBe(3_600_000);
    const page = await browser.get('/portal/sso');
    expect(page.status).toBe(200);
    expect(page.html).toContain(org.name);
    // Reuse, in the same browser or another: refused, and the first session is unchanged.
    const again = await new HostedBrowser(suite.server).get(pathOf(url));
    expect(again.status).toBe(404);
    expect(again.html).toContain('already used');
    expect((await browser.get(pathOf(url))).status).toBe(404);
    expect((await browser.get('/portal/sso')).status).toBe(200);
  });

  it('20 parallel opens of one link: exactly one session', async () => {
    const { app, org } = await portalApp(suite.server);
    const { url } = await ok(link(app, org.id), 201);
    const opens = await Promise.all(Array.from({ length: 20 }, () => new HostedBrowser(suite.server).get(pathOf(url))));
    expect(opens.filter((o) => o.status === 303)).toHaveLength(1);
    expect(opens.filter((o) => o.status === 404)).toHaveLength(19);
  });

  it('an expired link (past 5 minutes) and an expired session (past its hour) are refused', async () => {
    const { app, org } = await portalApp(suite.server);
    const { url } = await ok(link(app, org.id), 201);
    await sql(suite.server, `update portal_links set expires_at = now() - interval '1 second' where application_id = ?`, [
      app.id,
    ]);
    expect((await new HostedBrowser(suite.server).get(pathOf(url))).status).toBe(404);

    const { browser } = await openPortal(app, org.id);
    expect((await browser.get('/portal/sso')).status).toBe(200);
    await sql(
      suite.server,
      `update portal_links set session_expires_at = now() - interval '1 second' where application_id = ? and session_hash is not null`,
      [app.id],
    );
    const ended = await browser.get('/portal/sso');
    expect(ended.status).toBe(401);
    expect(ended.html).toContain('has ended');
  });

  it('no cookie, a forged cookie: refused', async () => {
    expect((await new HostedBrowser(suite.server).get('/portal/sso')).status).toBe(401);
    const forged = new HostedBrowser(suite.server);
    forged.cookies.set('gh_portal', `portal_session_${'A'.repeat(43)}`);
    expect((await forged.get('/portal/sso')).status).toBe(401);
  });

  it('a session reaches its intent only: another intent’s pages are 404', async () => {
    const { app, org } = await portalApp(suite.server);
    const sso = (await openPortal(app, org.id)).browser;
    for (const path of ['/portal/directory', '/portal/domains', '/portal/audit-log']) {
      expect((await sso.get(path)).status, path).toBe(404);
    }
    const directory = await openPortal(app, org.id, { intent: 'directory' });
    expect(directory.opened.location).toBe('/portal/directory');
    const page = await directory.browser.get('/portal/directory');
    expect(page.status).toBe(200);
    expect(page.html).toContain('Directory sync (SCIM)');
    expect((await directory.browser.get('/portal/sso')).status).toBe(404);
    const start = await sso.get('/portal/sso');
    expect(
      (
        await directory.browser.post('/portal/sso/connections', {
          ...hiddenFields(start.html, '/portal/sso/connections'),
          idp: 'okta',
        })
      ).status,
    ).toBe(404);
    expect(await sql(suite.server, 'select count(*)::int as n from saml_connections where application_id = ?', [app.id])).toEqual(
      [{ n: 0 }],
    );
  });

  it('the portal cookie is no credential of the API', async () => {
    const { app, org } = await portalApp(suite.server);
    const { browser } = await openPortal(app, org.id);
    const cookie = `gh_portal=${browser.cookies.get('gh_portal')}`;
    for (const path of ['/v1/saml/connections', `/v1/organizations/${org.id}`, '/v1/users']) {
      const res = await fetch(`${suite.server.url}${path}`, { headers: { cookie, 'x-application-id': app.id } });
      expect(res.status, path).toBe(401);
      expect((await res.json()).error.code).toBe('missing_credentials');
    }
  });

  it('every page answers a nonce CSP without framing; every form needs this session’s CSRF token', async () => {
    const { app, org } = await portalApp(suite.server);
    const { browser } = await openPortal(app, org.id);
    const page = await browser.get('/portal/sso');
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toMatch(/script-src 'nonce-[^']+'/);
    expect(csp).toContain("default-src 'none'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('cache-control')).toBe('no-store');
    // Without the token, with a wrong one, with another session's: 403 and nothing made.
    expect((await browser.post('/portal/sso/connections', { idp: 'okta' })).status).toBe(403);
    expect((await browser.post('/portal/sso/connections', { idp: 'okta', csrf: 'x'.repeat(43) })).status).toBe(403);
    const other = await openPortal(app, org.id);
    const otherPage = await other.browser.get('/portal/sso');
    const foreign = hiddenFields(otherPage.html, '/portal/sso/connections');
    expect((await browser.post('/portal/sso/connections', { ...foreign, idp: 'okta' })).status).toBe(403);
    // A cross-site post (another Origin) with a valid token: refused too.
    const crossSite = new HostedBrowser(suite.server, { origin: 'https://evil.example.com' }, browser.cookies);
    expect((await crossSite.submit(page, '/portal/sso/connections', { idp: 'okta' })).status).toBe(403);
    expect(await sql(suite.server, 'select count(*)::int as n from saml_connections where application_id = ?', [app.id])).toEqual(
      [{ n: 0 }],
    );
    for (const done of ['/portal/sso/done']) {
      expect((await browser.post(done, {})).status).toBe(403);
    }
    expect((await browser.get('/portal/sso')).status).toBe(200);
  });

  it('“Done” ends the session and returns to the link’s return_url (never anywhere else)', async () => {
    const { app, org } = await portalApp(suite.server);
    const { browser } = await openPortal(app, org.id, { intent: 'sso', return_url: `${ORIGIN}/settings/sso` });
    const page = await browser.get('/portal/sso');
    const done = await browser.submit(page, '/portal/sso/done');
    expect(done.status).toBe(303);
    expect(done.location).toBe(`${ORIGIN}/settings/sso`);
    expect((await browser.get('/portal/sso')).status).toBe(401);
    // Without a return_url: a page that says so.
    const second = await openPortal(app, org.id);
    const closed = await second.browser.submit(await second.browser.get('/portal/sso'), '/portal/sso/done');
    expect(closed.status).toBe(200);
    expect(closed.html).toContain('close this tab');
  });
});

// ——— The SSO intent ———

async function spMetadataOf(connectionId: string) {
  return (await fetch(`${suite.server.url}/v1/saml/metadata/${connectionId}`)).text();
}

/** Picks the IdP, uploads its metadata: answers the draft-then-configured connection's id and its page. */
async function setUpConnection(browser: HostedBrowser, idp: TestIdp, choice = 'okta') {
  const overview = await browser.get('/portal/sso');
  const created = await browser.submit(overview, '/portal/sso/connections', { idp: choice });
  expect(created.status, created.html).toBe(303);
  const connectionId = created.location!.split('/').pop()!;
  const draft = await browser.get(created.location!);
  expect(draft.status).toBe(200);
  const saved = await browser.submit(draft, `/portal/sso/connections/${connectionId}/metadata`, {
    metadata_xml: idp.metadataXml,
  });
  expect(saved.status, saved.html).toBe(303);
  return { connectionId, page: await browser.follow(saved) };
}

/** Runs the connection test through `idp` as `email`: the IdP's answer posted to the ACS, and where it sends back. */
async function runTest(browser: HostedBrowser, page: HostedPage, connectionId: string, idp: TestIdp, email: string) {
  const started = await browser.submit(page, `/portal/sso/connections/${connectionId}/test`);
  expect(started.status, started.html).toBe(303);
  expect(started.location!.startsWith(`${idp.ssoUrl}?SAMLRequest=`)).toBe(true);
  const form = await idp.respond(await spMetadataOf(connectionId), started.location!, { email });
  return postToAcs(suite.server.url, connectionId, form);
}

describe('the SSO intent', () => {
  it('picks the IdP, shows its steps and the values to copy, takes the metadata, passes the test (nobody signed in), shows the attributes, enables', async () => {
    const { app, org } = await portalApp(suite.server);
    const { browser } = await openPortal(app, org.id);
    const idp = await createTestIdp();
    const overview = await browser.get('/portal/sso');
    for (const name of ['Okta', 'Microsoft Entra ID', 'Google Workspace', 'Another SAML provider'])
      expect(overview.html).toContain(name);
    const created = await browser.submit(overview, '/portal/sso/connections', { idp: 'entra' });
    const connectionId = created.location!.split('/').pop()!;
    const [row] = await sql(
      suite.server,
      'select organization_id, enabled, idp_certificate, email_domain from saml_connections where id = ?',
      [connectionId],
    );
    expect(row).toEqual({ organization_id: org.id, enabled: false, idp_certificate: null, email_domain: null });
    const draft = await browser.get(created.location!);
    const record = await ok(app.rest('GET', `/v1/saml/connections/${connectionId}`));
    expect(draft.html).toContain(record.acs_url);
    expect(draft.html).toContain(record.metadata_url);
    expect(draft.html).toContain('Microsoft Entra admin center');
    expect(draft.html).toContain('Save your identity provider’s metadata first');
    expect(draft.html).not.toContain(`action="/portal/sso/connections/${connectionId}/test"`);
    // Enabling a draft is refused.
    expect(
      (
        await browser.post(
          `/portal/sso/connections/${connectionId}/enable`,
          hiddenFields(draft.html, `/portal/sso/connections/${connectionId}/metadata`),
        )
      ).status,
    ).toBe(409);

    // Unusable metadata: the page says why, nothing changes.
    const bad = await browser.submit(draft, `/portal/sso/connections/${connectionId}/metadata`, { metadata_xml: '<nope/>' });
    expect(bad.status).toBe(422);
    expect(bad.html).toContain('no EntityDescriptor');
    const saved = await browser.submit(draft, `/portal/sso/connections/${connectionId}/metadata`, {
      metadata_xml: idp.metadataXml,
    });
    const page = await browser.follow(saved);
    expect(page.html).toContain('The metadata was saved');
    expect(page.html).toMatch(/Certificate expires on/);
    const configured = await ok(app.rest('GET', `/v1/saml/connections/${connectionId}`));
    expect(configured).toMatchObject({
      idp_entity_id: idp.entityId,
      idp_sso_url: idp.ssoUrl,
      enabled: false,
      organization_id: org.id,
    });
    expect(configured.certificate_expires_at).not.toBeNull();

    // The test, while the connection is still disabled.
    const email = `it.admin.${Date.now()}@acme.test`;
    const acs = await runTest(browser, page, connectionId, idp, email);
    expect(acs.status, JSON.stringify(acs.body)).toBe(303);
    expect(acs.location!.startsWith(`${BASE_URL}/portal/sso/test?hop=`)).toBe(true);
    // A test's code signs nobody in through sso/complete (and is not spent by trying).
    expectError(await complete(app, acs.code!), 401, 'invalid_verification');
    const result = await browser.get(pathOf(acs.location!));
    expect(result.status, result.html).toBe(200);
    expect(result.html).toContain('The connection works');
    expect(result.html).toContain(email);
    expect((await counts(suite.server, app)).users).toBe(0);
    expect((await counts(suite.server, app)).sessions).toBe(0);
    // The result is shown once.
    expect((await browser.get(pathOf(acs.location!))).status).toBe(401);

    const enabled = await browser.follow(await browser.submit(page, `/portal/sso/connections/${connectionId}/enable`));
    expect(enabled.html).toContain('The connection is enabled.');
    expect((await ok(app.rest('GET', `/v1/saml/connections/${connectionId}`))).enabled).toBe(true);
    const disabled = await browser.follow(await browser.submit(enabled, `/portal/sso/connections/${connectionId}/disable`));
    expect(disabled.html).toContain('The connection is disabled.');
  });

  it('a test’s result opens only in the portal session that started it; a sign-in code is never a test result', async () => {
    const { app, org } = await portalApp(suite.server);
    const { browser } = await openPortal(app, org.id);
    const idp = await createTestIdp();
    const { connectionId, page } = await setUpConnection(browser, idp);
    const acs = await runTest(browser, page, connectionId, idp, `x.${Date.now()}@acme.test`);
    // Another admin's session (same organization) cannot read it: its hop differs.
    const other = await openPortal(app, org.id);
    expect((await other.browser.get(pathOf(acs.location!))).status).toBe(400);
    const otherHop = new URL(acs.location!);
    // The stolen URL as is, in the other session: refused before the code is spent.
    const theirs = await other.browser.get(
      `/portal/sso/test?hop=${encodeURIComponent(otherHop.searchParams.get('hop')!)}&code=${acs.code}`,
    );
    expect(theirs.status).toBe(400);
    // The rightful session still reads it.
    expect((await browser.get(pathOf(acs.location!))).status).toBe(200);

    // A sign-in's code (the connection enabled, an ordinary sso/start) with this session's hop: refused.
    await browser.submit(
      await browser.get(`/portal/sso/connections/${connectionId}`),
      `/portal/sso/connections/${connectionId}/enable`,
    );
    const { redirect_url } = await ok(start(app, { connection_id: connectionId, redirect_uri: CALLBACK }));
    const signIn = await postToAcs(
      suite.server.url,
      connectionId,
      await idp.respond(await spMetadataOf(connectionId), redirect_url, { email: `y.${Date.now()}@acme.test` }),
    );
    expect(signIn.location!.startsWith(CALLBACK)).toBe(true);
    const hop = new URL(acs.location!).searchParams.get('hop')!;
    expect((await browser.get(`/portal/sso/test?hop=${encodeURIComponent(hop)}&code=${signIn.code}`)).status).toBe(401);
    // …and it still signs in where it belongs.
    expect((await ok(complete(app, signIn.code!))).status).toBe('complete');
  });

  it('a disabled connection answers tests only: a sign-in response to it is still refused by the ACS', async () => {
    const { app, org } = await portalApp(suite.server);
    const { browser } = await openPortal(app, org.id);
    const idp = await createTestIdp();
    const { connectionId } = await setUpConnection(browser, idp);
    await ok(
      app.rest('PATCH', `/v1/saml/connections/${connectionId}`, {
        name: 'x',
        idp_entity_id: idp.entityId,
        idp_sso_url: idp.ssoUrl,
        idp_certificate: idp.keys.certificate,
        allow_idp_initiated: true,
      }),
    );
    // IdP-initiated (no request): refused while disabled.
    const unsolicited = await postToAcs(
      suite.server.url,
      connectionId,
      await idp.respond(await spMetadataOf(connectionId), null, { email: 'z@acme.test' }, `${ORIGIN}/`),
    );
    expect(unsolicited.error ?? unsolicited.status).not.toBe(null);
    expect(unsolicited.code).toBeNull();
    // A request stored as a sign-in cannot be made for a disabled connection at all.
    expectError(await start(app, { connection_id: connectionId, redirect_uri: CALLBACK }), 404, 'not_found');
    expect((await counts(suite.server, app)).users).toBe(0);
  });

  it('nothing of another organization or application is reachable: listed, shown, changed or tested', async () => {
    const { app, org } = await portalApp(suite.server);
    const orgB = await createOrg(app);
    const idp = await createTestIdp();
    const mine = (await openPortal(app, org.id)).browser;
    const theirs = (await openPortal(app, orgB.id)).browser;
    const { connectionId: theirId } = await setUpConnection(theirs, idp);
    const appWide = await ok(
      app.rest('POST', '/v1/saml/connections', {
        name: 'App-wide',
        idp_entity_id: idp.entityId,
        idp_sso_url: idp.ssoUrl,
        idp_certificate: idp.keys.certificate,
      }),
      201,
    );
    const other = await portalApp(suite.server);
    const otherAppConn = await ok(
      other.app.rest('POST', '/v1/saml/connections', {
        name: 'Other app',
        idp_entity_id: idp.entityId,
        idp_sso_url: idp.ssoUrl,
        idp_certificate: idp.keys.certificate,
        organization_id: other.org.id,
      }),
      201,
    );
    const overview = await mine.get('/portal/sso');
    expect(overview.html).not.toContain(theirId);
    expect(overview.html).not.toContain('App-wide');
    const fields = hiddenFields(overview.html, '/portal/sso/connections');
    for (const id of [theirId, appWide.id, otherAppConn.id, MISSING, 'not-a-uuid']) {
      expect((await mine.get(`/portal/sso/connections/${id}`)).status, id).toBe(404);
      for (const verb of ['enable', 'disable', 'test', 'metadata']) {
        const res = await mine.post(`/portal/sso/connections/${id}/${verb}`, { ...fields, metadata_xml: idp.metadataXml });
        expect(res.status, `${verb} ${id}`).toBe(404);
      }
    }
    expect((await ok(app.rest('GET', `/v1/saml/connections/${appWide.id}`))).enabled).toBe(true);
    expect((await ok(other.app.rest('GET', `/v1/saml/connections/${otherAppConn.id}`))).enabled).toBe(true);
    expect(
      await sql(suite.server, 'select count(*)::int as n from saml_requests where application_id in (?, ?)', [
        app.id,
        other.app.id,
      ]),
    ).toEqual([{ n: 0 }]);
  });
});

/** Every route of the portal, as the server registered it (fastify's route tree, `/portal/…`). */
function portalRoutes(): Array<{ path: string; methods: string[] }> {
  const routes: Array<{ path: string; methods: string[] }> = [];
  const stack: string[] = [];
  for (const line of suite.server.server.app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)[├└]── (\S+) \(([A-Z, ]+)\)/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    stack.length = depth;
    stack.push(match[2]!);
    const path = stack.join('');
    if (path.startsWith('/portal/')) routes.push({ path, methods: match[3]!.split(', ') });
  }
  return routes;
}

const INTENT_OF_PATH: Array<[string, string]> = [
  ['/portal/sso', 'sso'],
  ['/portal/directory', 'directory'],
  ['/portal/domains', 'domains'],
  ['/portal/audit-log', 'audit_log'],
];

describe('every portal route (read from the server, so none is forgotten)', () => {
  it('a post without the session’s CSRF token is 403 in its intent’s session, 404 in another’s, 401 without one', async () => {
    const { app, org } = await portalApp(suite.server);
    const idp = await createTestIdp();
    const sessions = new Map<string, HostedBrowser>();
    for (const [, intent] of INTENT_OF_PATH) sessions.set(intent, (await openPortal(app, org.id, { intent })).browser);
    const { connectionId } = await setUpConnection(sessions.get('sso')!, idp);
    const posts = portalRoutes().filter((r) => r.methods.includes('POST'));
    expect(posts.length).toBeGreaterThanOrEqual(9);
    for (const { path } of posts) {
      const concrete = path.replace(':connectionId', connectionId);
      const owner = INTENT_OF_PATH.find(([prefix]) => path.startsWith(prefix))?.[1];
      expect(owner, path).toBeDefined();
      for (const [intent, browser] of sessions) {
        const answer = await browser.post(concrete, { idp: 'okta', metadata_xml: idp.metadataXml });
        expect(answer.status, `${path} in a ${intent} session`).toBe(intent === owner ? 403 : 404);
      }
      expect((await new HostedBrowser(suite.server).post(concrete, {})).status, path).toBe(401);
    }
    // Still one connection, still disabled, every session still live.
    const rows = await sql(suite.server, 'select enabled from saml_connections where application_id = ?', [app.id]);
    expect(rows).toEqual([{ enabled: false }]);
    for (const [prefix, intent] of INTENT_OF_PATH) expect((await sessions.get(intent)!.get(prefix)).status, intent).toBe(200);
  });

  it('every page answers a CSP with a nonce, frame-ancestors none, no caching', async () => {
    const { app, org } = await portalApp(suite.server);
    const { browser } = await openPortal(app, org.id);
    const { connectionId } = await setUpConnection(browser, await createTestIdp());
    const pages = portalRoutes().filter((r) => r.methods.includes('GET'));
    expect(pages.length).toBeGreaterThanOrEqual(7);
    for (const { path } of pages) {
      const answer = await browser.get(path.replace(':connectionId', connectionId));
      const csp = answer.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).toMatch(/script-src 'nonce-[^']+'/);
      expect(answer.headers.get('x-frame-options'), path).toBe('DENY');
      expect(answer.headers.get('cache-control'), path).toBe('no-store');
    }
  });
});

describe('the SSO intent, further', () => {
  it('speaks French; warns of a certificate that expires within 30 days', async () => {
    const { app, org } = await portalApp(suite.server);
    const fr = new HostedBrowser(suite.server, { 'accept-language': 'fr-FR,fr;q=0.9' });
    const { url } = await ok(link(app, org.id), 201);
    await fr.get(pathOf(url));
    const overview = await fr.get('/portal/sso');
    expect(overview.html).toContain('<html lang="fr">');
    expect(overview.html).toContain('Authentification unique (SAML)');
    const soon = await createTestIdp({ keys: await makeKeyPair(2048, 10) });
    const { page } = await setUpConnection(fr, soon, 'generic');
    expect(page.html).toContain('Le certificat expire bientôt');
  });

  it('metadata by URL goes through the outbound guard: a loopback address is refused on the page', async () => {
    const { app, org } = await portalApp(suite.server);
    const { browser } = await openPortal(app, org.id);
    const overview = await browser.get('/portal/sso');
    const created = await browser.submit(overview, '/portal/sso/connections', { idp: 'generic' });
    const draft = await browser.get(created.location!);
    const connectionId = created.location!.split('/').pop()!;
    const refused = await browser.submit(draft, `/portal/sso/connections/${connectionId}/metadata`, {
      metadata_url: 'https://127.0.0.1/metadata.xml',
    });
    expect(refused.status).toBe(422);
    expect(refused.html).toContain('This metadata cannot be used.');
    expect((await ok(app.rest('GET', `/v1/saml/connections/${connectionId}`))).certificate_expires_at).toBeNull();
  });
});

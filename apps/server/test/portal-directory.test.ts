import { describe, expect, it } from 'vitest';
import { createOrg } from './helpers/fixtures.ts';
import { HostedBrowser, type HostedPage, hiddenFields } from './helpers/hosted.ts';
import { MISSING, ok, sql, type TestApp } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * The admin portal's `directory` intent (CONTRACT §8): a SCIM directory created for the session's organization, its
 * base URL and token shown once with Copy buttons (the token working at the SCIM endpoint), the token rotated (the old
 * one refused at once), group → role mappings, disabling (SCIM answers 403). Another organization's or application's
 * directory is not reachable through any form or address.
 */
const suite = serverSuite({ smtp: false });

async function openPortal(app: TestApp, orgId: string, intent = 'directory') {
  const { url } = await ok(app.rest('POST', `/v1/organizations/${orgId}/portal-links`, { intent }), 201);
  const browser = new HostedBrowser(suite.server);
  const opened = await browser.get(new URL(url).pathname + new URL(url).search);
  expect(opened.status, opened.html).toBe(303);
  return browser;
}

const textOf = (page: HostedPage, id: string) => new RegExp(`id="${id}"[^>]*>([^<]*)<`).exec(page.html)?.[1];
const directoriesOf = async (app: TestApp, orgId: string) =>
  (await ok(app.rest('GET', `/v1/organizations/${orgId}/directories`))) as Array<Record<string, any>>;
/** A SCIM request as the IdP makes it (to the test server, whatever the configured base URL). */
const scim = (baseUrl: string, token: string) =>
  fetch(`${suite.server.url}${new URL(baseUrl).pathname}/Users`, { headers: { authorization: `Bearer ${token}` } });

async function create(browser: HostedBrowser, name: string, provider: string) {
  const overview = await browser.get('/portal/directory');
  return browser.submit(overview, '/portal/directory/create', { name, provider });
}

describe('the directory intent', () => {
  it('creates a directory: the SCIM base URL and the token shown once (not in an address), the token works, per-provider steps', async () => {
    const app = await suite.server.createApp();
    const org = await createOrg(app);
    const browser = await openPortal(app, org.id);
    expect((await browser.get('/portal/directory')).html).toContain('No directory yet.');
    const created = await create(browser, 'Okta production', 'okta');
    expect(created.status, created.html).toBe(201);
    expect(created.location).toBeUndefined();
    const [directory] = await directoriesOf(app, org.id);
    expect(directory).toMatchObject({ name: 'Okta production', provider: 'okta', status: 'active', organization_id: org.id });
    expect(textOf(created, 'scim-base-url')).toBe(directory!.scim_base_url);
    const token = textOf(created, 'scim-token')!;
    expect(token).toMatch(/^scim_[A-Za-z0-9]{43}$/);
    expect(created.html).toContain('data-copy="scim-token"');
    expect(created.html).toContain('Okta Admin Console');
    expect((await scim(directory!.scim_base_url, token)).status).toBe(200);
    expect(JSON.stringify(await sql(suite.server, 'select * from directories where id = ?', [directory!.id]))).not.toContain(
      token,
    );
    // Shown once: the directory's page does not show it again.
    const again = await browser.get(`/portal/directory/${directory!.id}`);
    expect(again.html).not.toContain(token);
    expect(textOf(again, 'scim-token')).toBeUndefined();
    for (const [provider, words] of [
      ['entra', 'Microsoft Entra admin center'],
      ['google', 'Google Admin console'],
      ['generic', 'SCIM 2.0 application'],
    ] as const) {
      const page = await create(browser, `${provider} directory`, provider);
      expect(page.status).toBe(201);
      expect(page.html, provider).toContain(words);
    }
    for (const [name, provider] of [
      ['', 'okta'],
      ['x', 'onelogin'],
      ['y'.repeat(201), 'okta'],
    ]) {
      const refused = await create(browser, name!, provider!);
      expect(refused.status, `${name}/${provider}`).toBe(422);
    }
    expect(await directoriesOf(app, org.id)).toHaveLength(4);
  });

  it('rotates the token (the old one refused at once), maps groups to roles, disables (SCIM 403) and enables', async () => {
    const app = await suite.server.createApp();
    const org = await createOrg(app);
    const browser = await openPortal(app, org.id);
    const created = await create(browser, 'Entra', 'entra');
    const [directory] = await directoriesOf(app, org.id);
    const id = directory!.id as string;
    const first = textOf(created, 'scim-token')!;
    const rotated = await browser.submit(created, `/portal/directory/${id}/rotate-token`);
    expect(rotated.status).toBe(200);
    const second = textOf(rotated, 'scim-token')!;
    expect(second).toMatch(/^scim_/);
    expect(second).not.toBe(first);
    expect((await scim(directory!.scim_base_url, first)).status).toBe(401);
    expect((await scim(directory!.scim_base_url, second)).status).toBe(200);

    const page = await browser.get(`/portal/directory/${id}`);
    const saved = await browser.submit(page, `/portal/directory/${id}/mappings`, {
      group_0: 'Engineering Admins',
      role_0: 'admin',
      group_1: 'Everyone',
      role_1: 'member',
    });
    expect(saved.status, saved.html).toBe(303);
    expect((await directoriesOf(app, org.id))[0]!.group_role_mappings).toEqual([
      { group: 'Engineering Admins', role: 'admin' },
      { group: 'Everyone', role: 'member' },
    ]);
    const bad = await browser.submit(page, `/portal/directory/${id}/mappings`, { group_0: 'No role', role_0: '' });
    expect(bad.status).toBe(422);
    const badRole = await browser.submit(page, `/portal/directory/${id}/mappings`, { group_0: 'G', role_0: 'Not A Role!' });
    expect(badRole.status).toBe(422);
    expect((await directoriesOf(app, org.id))[0]!.group_role_mappings).toHaveLength(2);

    const disabled = await browser.submit(await browser.get(`/portal/directory/${id}`), `/portal/directory/${id}/disable`);
    expect(disabled.status).toBe(303);
    expect((await directoriesOf(app, org.id))[0]!.status).toBe('disabled');
    expect((await scim(directory!.scim_base_url, second)).status).toBe(403);
    const enabled = await browser.submit(await browser.get(`/portal/directory/${id}`), `/portal/directory/${id}/enable`);
    expect(enabled.status).toBe(303);
    expect((await scim(directory!.scim_base_url, second)).status).toBe(200);
  });

  it('a directory of another organization or application is not reachable; every form wants the session’s CSRF token', async () => {
    const app = await suite.server.createApp();
    const org = await createOrg(app);
    const orgB = await createOrg(app);
    const other = await suite.server.createApp();
    const otherOrg = await createOrg(other);
    const theirs = await ok(app.rest('POST', `/v1/organizations/${orgB.id}/directories`, { name: 'B', provider: 'okta' }), 201);
    const otherApps = await ok(
      other.rest('POST', `/v1/organizations/${otherOrg.id}/directories`, { name: 'O', provider: 'okta' }),
      201,
    );
    const browser = await openPortal(app, org.id);
    const overview = await browser.get('/portal/directory');
    expect(overview.html).not.toContain(theirs.id);
    const fields = hiddenFields(overview.html, '/portal/directory/create');
    for (const id of [theirs.id, otherApps.id, MISSING, 'not-a-uuid']) {
      expect((await browser.get(`/portal/directory/${id}`)).status, id).toBe(404);
      for (const verb of ['rotate-token', 'mappings', 'disable', 'enable']) {
        const res = await browser.post(`/portal/directory/${id}/${verb}`, { ...fields, group_0: 'G', role_0: 'admin' });
        expect(res.status, `${verb} ${id}`).toBe(404);
        expect(res.html).not.toContain('scim_');
      }
    }
    expect((await scim(theirs.scim_base_url, theirs.token)).status).toBe(200);
    expect((await directoriesOf(app, orgB.id))[0]).toMatchObject({ status: 'active', group_role_mappings: [] });
    // A form naming another organization creates in the session's.
    await browser.submit(overview, '/portal/directory/create', { name: 'Mine', provider: 'okta', id: orgB.id });
    expect(await directoriesOf(app, org.id)).toHaveLength(1);
    expect(await directoriesOf(app, orgB.id)).toHaveLength(1);
    // CSRF: none, a wrong one, or another session's.
    const second = await openPortal(app, org.id);
    const foreign = hiddenFields((await second.get('/portal/directory')).html, '/portal/directory/create');
    for (const form of [{}, { csrf: 'x'.repeat(43) }, foreign]) {
      expect((await browser.post('/portal/directory/create', { ...form, name: 'X', provider: 'okta' })).status).toBe(403);
    }
    expect(await directoriesOf(app, org.id)).toHaveLength(1);
    // Another intent's session: 404.
    const domains = await openPortal(app, org.id, 'domains');
    expect((await domains.get('/portal/directory')).status).toBe(404);
  });
});

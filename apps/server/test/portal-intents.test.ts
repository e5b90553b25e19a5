import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalDns, startLocalDns } from './helpers/dns.ts';
import { createOrg } from './helpers/fixtures.ts';
import { HostedBrowser, type HostedPage, hiddenFields } from './helpers/hosted.ts';
import { MISSING, ok, sql, startServer, type TestApp, type TestServer } from './helpers/server.ts';

/**
 * The admin portal's `domains` and `audit_log` intents (CONTRACT §8): domains added, verified against a real local
 * DNS server, their policies set and removed; the organization's audit log read, filtered, paged and exported. Every
 * test tries to reach another organization's (or application's) domains and entries through the forms and the
 * addresses, and every change is checked to be the portal session's in the audit log.
 */
let server: TestServer;
let dns: LocalDns;

beforeAll(async () => {
  dns = await startLocalDns();
  server = await startServer({ dnsServers: [dns.address] });
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

const fresh = (label = 'acme') => `${label}-${randomBytes(5).toString('hex')}.gatehouse-test.dev`;

/** Opens a portal link of `intent` for `orgId` in a fresh browser. */
async function openPortal(app: TestApp, orgId: string, intent: string) {
  const { url } = await ok(app.rest('POST', `/v1/organizations/${orgId}/portal-links`, { intent }), 201);
  const browser = new HostedBrowser(server);
  const opened = await browser.get(new URL(url).pathname + new URL(url).search);
  expect(opened.status, opened.html).toBe(303);
  const session = await sql(
    server,
    'select id from portal_links where application_id = ? and consumed_at is not null order by consumed_at desc limit 1',
    [app.id],
  );
  return { browser, sessionId: session[0].id as string };
}

/** The text of the element with `id` (first match), unescaped. */
const textOf = (page: HostedPage, id: string) => {
  const match = new RegExp(`id="${id}"[^>]*>([^<]*)<`).exec(page.html);
  return match?.[1]
    ?.replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'");
};

const domainsOf = async (app: TestApp, orgId: string) =>
  (await ok(app.rest('GET', `/v1/organizations/${orgId}/domains`))) as Array<Record<string, any>>;

describe('the domains intent', () => {
  it('adds a domain (its TXT record to copy), verifies it through DNS, sets its policies and removes it — all as the portal session', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const { browser, sessionId } = await openPortal(app, org.id, 'domains');
    const overview = await browser.get('/portal/domains');
    expect(overview.status).toBe(200);
    expect(overview.html).toContain('No domain yet.');
    const name = fresh();
    const added = await browser.submit(overview, '/portal/domains/add', { domain: ` ${name.toUpperCase()} ` });
    expect(added.status, added.html).toBe(303);
    const record = (await domainsOf(app, org.id))[0]!;
    expect(record).toMatchObject({ domain: name, status: 'pending_verification', organization_id: org.id });
    expect(added.location).toBe(`/portal/domains/${record.id}?done=added`);
    const page = await browser.follow(added);
    expect(page.status).toBe(200);
    expect(textOf(page, 'record-type')).toBe('TXT');
    expect(textOf(page, 'record-name')).toBe(record.verification.name);
    expect(textOf(page, 'record-value')).toBe(record.verification.value);
    expect(page.html).toContain('data-copy="record-value"');
    // Policies wait for verification.
    expect(page.html).toContain('Verify the domain first.');
    expect(page.html).not.toContain(`action="/portal/domains/${record.id}/policies"`);

    // Not published yet: still pending, and the page says so.
    const early = await browser.submit(page, `/portal/domains/${record.id}/verify`);
    expect(early.status).toBe(200);
    expect(early.html).toContain('The record was not found yet');
    expect((await domainsOf(app, org.id))[0]!.status).toBe('pending_verification');
    // Published at the test DNS server: verified.
    dns.zone[record.verification.name] = { txt: [record.verification.value] };
    const verified = await browser.submit(early, `/portal/domains/${record.id}/verify`);
    expect(verified.status, verified.html).toBe(303);
    expect(verified.location).toBe(`/portal/domains/${record.id}?done=verified`);
    expect((await domainsOf(app, org.id))[0]!.status).toBe('verified');
    const shown = await browser.follow(verified);
    expect(shown.html).toContain('The domain is verified.');

    const saved = await browser.submit(shown, `/portal/domains/${record.id}/policies`, {
      join_policy: 'automatic',
      sso_policy: 'required',
    });
    expect(saved.status, saved.html).toBe(303);
    expect((await domainsOf(app, org.id))[0]!).toMatchObject({ join_policy: 'automatic', sso_policy: 'required' });
    const after = await browser.follow(saved);
    expect(after.html).toContain('The policies were saved.');
    expect(after.html).toMatch(/<option value="automatic" selected>/);

    const removed = await browser.submit(after, `/portal/domains/${record.id}/remove`);
    expect(removed.status).toBe(303);
    expect(removed.location).toBe('/portal/domains?done=removed');
    expect(await domainsOf(app, org.id)).toEqual([]);
    expect((await browser.follow(removed)).html).toContain('The domain was removed.');

    // Every change was the portal session's, with the browser's origin.
    const events = await sql(
      server,
      `select type, actor_type, actor_id, organization_id from events where application_id = ? and type like 'organization_domain.%' order by created_at`,
      [app.id],
    );
    expect(events.map((e: { type: string }) => e.type)).toEqual([
      'organization_domain.created',
      'organization_domain.verified',
      'organization_domain.updated',
      'organization_domain.deleted',
    ]);
    for (const event of events) {
      expect(event).toMatchObject({ actor_type: 'portal', actor_id: sessionId, organization_id: org.id });
    }
  });

  it('refuses on the page: a name that is no domain (422), one another organization verified (409), policies before verification (409), unknown policy values (422)', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const rival = await createOrg(app);
    const { browser } = await openPortal(app, org.id, 'domains');
    const overview = await browser.get('/portal/domains');
    for (const domain of ['', 'com', 'co.uk', 'not a domain', 'localhost', 'x'.repeat(300)]) {
      const refused = await browser.submit(overview, '/portal/domains/add', { domain });
      expect(refused.status, domain).toBe(422);
      expect(refused.html).toContain('This is not a domain that can be claimed');
    }
    const taken = fresh('taken');
    const theirs = await ok(app.rest('POST', `/v1/organizations/${rival.id}/domains`, { domain: taken }), 201);
    dns.zone[theirs.verification.name] = { txt: [theirs.verification.value] };
    await ok(app.rest('POST', `/v1/organizations/${rival.id}/domains/${theirs.id}/verify`));
    const claimed = await browser.submit(overview, '/portal/domains/add', { domain: taken });
    expect(claimed.status).toBe(409);
    expect(claimed.html).toContain('This domain is already claimed.');
    // The value typed is kept, escaped.
    const escaped = await browser.submit(overview, '/portal/domains/add', { domain: '"><script>x</script>' });
    expect(escaped.html).not.toContain('<script>x</script>');

    const pending = await browser.follow(await browser.submit(overview, '/portal/domains/add', { domain: fresh() }));
    const id = (await domainsOf(app, org.id))[0]!.id as string;
    const fields = hiddenFields(pending.html, `/portal/domains/${id}/verify`);
    const early = await browser.post(`/portal/domains/${id}/policies`, {
      ...fields,
      join_policy: 'automatic',
      sso_policy: 'optional',
    });
    expect(early.status).toBe(409);
    expect(early.html).toContain('Verify the domain first.');
    for (const [join_policy, sso_policy] of [
      ['everyone', 'optional'],
      ['automatic', 'never'],
      ['', ''],
    ]) {
      const bad = await browser.post(`/portal/domains/${id}/policies`, {
        ...fields,
        join_policy: join_policy!,
        sso_policy: sso_policy!,
      });
      expect(bad.status, `${join_policy}/${sso_policy}`).toBe(422);
    }
    expect((await domainsOf(app, org.id))[0]!).toMatchObject({ join_policy: 'invite_only', sso_policy: 'optional' });
  });

  it('each verify queries DNS: past 60 a minute for the application, the page says to wait (429) and the domain is unchanged', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const { browser } = await openPortal(app, org.id, 'domains');
    const page = await browser.follow(
      await browser.submit(await browser.get('/portal/domains'), '/portal/domains/add', { domain: fresh() }),
    );
    const id = (await domainsOf(app, org.id))[0]!.id as string;
    const fields = hiddenFields(page.html, `/portal/domains/${id}/verify`);
    for (let i = 0; i < 60; i++) expect((await browser.post(`/portal/domains/${id}/verify`, fields)).status).toBe(200);
    const limited = await browser.post(`/portal/domains/${id}/verify`, fields);
    expect(limited.status).toBe(429);
    expect(limited.html).toContain('Too many checks in a short time.');
    expect((await domainsOf(app, org.id))[0]!.status).toBe('pending_verification');
  });

  it('speaks French', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const { browser } = await openPortal(app, org.id, 'domains');
    const page = await browser.get('/portal/domains?ui_locales=fr');
    expect(page.html).toContain('Ajouter un domaine');
    const audit = await openPortal(app, org.id, 'audit_log');
    expect((await audit.browser.get('/portal/audit-log?ui_locales=fr')).html).toContain('Journal d’audit');
  });

  it('a domain of another organization or application is not reachable: listed, shown, verified, changed or removed', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const orgB = await createOrg(app);
    const other = await server.createApp();
    const otherOrg = await createOrg(other);
    const theirs = await ok(app.rest('POST', `/v1/organizations/${orgB.id}/domains`, { domain: fresh('theirs') }), 201);
    dns.zone[theirs.verification.name] = { txt: [theirs.verification.value] };
    const theirsVerified = await ok(app.rest('POST', `/v1/organizations/${orgB.id}/domains`, { domain: fresh('verified') }), 201);
    dns.zone[theirsVerified.verification.name] = { txt: [theirsVerified.verification.value] };
    await ok(app.rest('POST', `/v1/organizations/${orgB.id}/domains/${theirsVerified.id}/verify`));
    const otherApps = await ok(other.rest('POST', `/v1/organizations/${otherOrg.id}/domains`, { domain: fresh('other') }), 201);
    dns.zone[otherApps.verification.name] = { txt: [otherApps.verification.value] };

    const { browser } = await openPortal(app, org.id, 'domains');
    const overview = await browser.get('/portal/domains');
    for (const d of [theirs, theirsVerified, otherApps]) {
      expect(overview.html).not.toContain(d.id);
      expect(overview.html).not.toContain(d.domain);
    }
    const fields = hiddenFields(overview.html, '/portal/domains/add');
    for (const id of [theirs.id, theirsVerified.id, otherApps.id, MISSING, 'not-a-uuid', theirs.id.toUpperCase()]) {
      expect((await browser.get(`/portal/domains/${id}`)).status, id).toBe(404);
      for (const verb of ['verify', 'policies', 'remove']) {
        const res = await browser.post(`/portal/domains/${id}/${verb}`, {
          ...fields,
          join_policy: 'automatic',
          sso_policy: 'required',
        });
        expect(res.status, `${verb} ${id}`).toBe(404);
      }
    }
    // A form field naming another organization changes nothing: the organization is the session's.
    const sneaky = await browser.submit(overview, '/portal/domains/add', {
      domain: fresh('mine'),
      id: orgB.id,
      organization_id: orgB.id,
    });
    expect(sneaky.status).toBe(303);
    expect(await domainsOf(app, org.id)).toHaveLength(1);
    expect(await domainsOf(app, orgB.id)).toHaveLength(2);
    expect((await domainsOf(app, orgB.id)).map((d) => [d.id, d.status, d.join_policy]).sort()).toEqual(
      [
        [theirs.id, 'pending_verification', 'invite_only'],
        [theirsVerified.id, 'verified', 'invite_only'],
      ].sort(),
    );
    expect((await domainsOf(other, otherOrg.id))[0]).toMatchObject({ id: otherApps.id, status: 'pending_verification' });
  });

  it('every form wants this session’s CSRF token; another intent’s session reaches none of its pages', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const { browser } = await openPortal(app, org.id, 'domains');
    const second = await openPortal(app, org.id, 'domains');
    const audit = await openPortal(app, org.id, 'audit_log');
    const overview = await browser.get('/portal/domains');
    const foreign = hiddenFields((await second.browser.get('/portal/domains')).html, '/portal/domains/add');
    expect((await browser.post('/portal/domains/add', { domain: fresh() })).status).toBe(403);
    expect((await browser.post('/portal/domains/add', { domain: fresh(), csrf: 'x'.repeat(43) })).status).toBe(403);
    expect((await browser.post('/portal/domains/add', { ...foreign, domain: fresh() })).status).toBe(403);
    const crossSite = new HostedBrowser(server, { origin: 'https://evil.example.com' }, browser.cookies);
    expect((await crossSite.submit(overview, '/portal/domains/add', { domain: fresh() })).status).toBe(403);
    expect(await domainsOf(app, org.id)).toEqual([]);
    // The audit log's session: 404 on every domains page and form, with or without a token of its own.
    const own = hiddenFields((await audit.browser.get('/portal/audit-log')).html, '/portal/audit-log/done');
    expect((await audit.browser.get('/portal/domains')).status).toBe(404);
    expect((await audit.browser.post('/portal/domains/add', { ...own, domain: fresh() })).status).toBe(404);
    expect((await browser.get('/portal/audit-log')).status).toBe(404);
    expect((await browser.get('/portal/audit-log/export?format=csv')).status).toBe(404);
    expect(await domainsOf(app, org.id)).toEqual([]);
  });
});

/** Makes `count` audit log entries of `orgId` (its renames, through the API). */
async function renames(app: TestApp, orgId: string, count: number, prefix: string) {
  for (let i = 0; i < count; i++) await ok(app.rest('PATCH', `/v1/organizations/${orgId}`, { name: `${prefix} ${i}` }));
}

describe('the audit log intent', () => {
  it('shows the organization’s entries only, newest first, a page of 50 at a time; another organization’s id in the address changes nothing', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const orgB = await createOrg(app);
    await renames(app, org.id, 52, 'Mine');
    await renames(app, orgB.id, 3, 'Theirs');
    const { browser } = await openPortal(app, org.id, 'audit_log');
    const first = await browser.get('/portal/audit-log');
    expect(first.status).toBe(200);
    const total = (
      await sql(server, 'select count(*)::int as n from events where application_id = ? and organization_id = ?', [
        app.id,
        org.id,
      ])
    )[0].n as number;
    expect(total).toBeGreaterThanOrEqual(53);
    expect(first.html).toContain(`Entries 1 to 50 of ${total}`);
    expect(first.html).toContain('organization.updated');
    expect(first.html).not.toContain(orgB.id);
    const rows = [...first.html.matchAll(/<tr>\n<td>([^<]+)<\/td>/g)].map((m) => m[1]!);
    expect(rows).toHaveLength(50);
    expect([...rows].sort().reverse()).toEqual(rows);
    expect(first.html).not.toContain('id="newer"');
    const older = /id="older"/.test(first.html) ? /href="([^"]+)" id="older"/.exec(first.html)![1]!.replace(/&amp;/g, '&') : '';
    expect(older).toBe('/portal/audit-log?offset=50');
    const second = await browser.get(older);
    expect(second.html).toContain(`Entries 51 to ${total} of ${total}`);
    expect(second.html).toContain('id="newer"');
    // The organization comes from the session: an id in the address is no filter of the portal.
    for (const query of [`organization_id=${orgB.id}`, `organization=${orgB.id}`, `actor_id=x&target_id=${orgB.id}`]) {
      const tried = await browser.get(`/portal/audit-log?${query}`);
      expect(tried.html, query).toContain(`of ${total}`);
      expect(tried.html, query).not.toContain('Theirs');
    }
  });

  it('filters by action and by days; a filter it cannot use is 422 and shows the unfiltered log', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    await renames(app, org.id, 2, 'Renamed');
    await ok(app.rest('POST', `/v1/organizations/${org.id}/domains`, { domain: fresh() }), 201);
    const { browser } = await openPortal(app, org.id, 'audit_log');
    const byAction = await browser.get('/portal/audit-log?action=organization_domain.created');
    expect(byAction.html).toContain('Entries 1 to 1 of 1');
    expect(byAction.html).toMatch(/<option value="organization_domain.created" selected>/);
    const byPrefix = await browser.get('/portal/audit-log?action=organization.*');
    const table = (page: HostedPage) => page.html.slice(page.html.indexOf('id="entries"'), page.html.indexOf('</table>'));
    expect(byPrefix.html).toMatch(/<option value="organization.\*" selected>/);
    expect(table(byPrefix)).not.toContain('organization_domain.created');
    expect(table(byPrefix)).toContain('organization.updated');
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    expect(table(await browser.get(`/portal/audit-log?from=${today}&to=${today}`))).toContain('organization_domain.created');
    const later = await browser.get(`/portal/audit-log?from=${tomorrow}`);
    expect(later.html).toContain('No entry.');
    for (const query of ['action=DROP%20TABLE', 'from=yesterday', 'to=2026-13-45x', 'offset=-1', 'offset=abc']) {
      const refused = await browser.get(`/portal/audit-log?${query}`);
      expect(refused.status, query).toBe(422);
      expect(refused.html).toContain('These filters cannot be used.');
    }
  });

  it('exports the organization’s entries under the filters as CSV and NDJSON; never another organization’s', async () => {
    const app = await server.createApp();
    const org = await createOrg(app);
    const orgB = await createOrg(app);
    await renames(app, org.id, 3, 'Mine');
    await renames(app, orgB.id, 3, 'Theirs');
    const { browser } = await openPortal(app, org.id, 'audit_log');
    const page = await browser.get('/portal/audit-log?action=organization.updated');
    const csvLink = /href="([^"]+)" id="export-csv"/.exec(page.html)![1]!.replace(/&amp;/g, '&');
    expect(csvLink).toBe('/portal/audit-log/export?action=organization.updated&format=csv');
    const csv = await browser.get(csvLink);
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toContain('text/csv');
    expect(csv.headers.get('content-disposition')).toBe('attachment; filename="audit-log.csv"');
    expect(csv.headers.get('cache-control')).toBe('no-store');
    const lines = csv.html.trim().split('\r\n');
    expect(lines[0]).toBe('id,action,occurred_at,actor_type,actor_id,target_type,target_id,organization_id,ip,user_agent,data');
    expect(lines).toHaveLength(4);
    for (const line of lines.slice(1)) expect(line).toContain(org.id);
    expect(csv.html).not.toContain(orgB.id);
    const ndjson = await browser.get(`/portal/audit-log/export?format=ndjson&organization_id=${orgB.id}`);
    expect(ndjson.headers.get('content-type')).toContain('application/x-ndjson');
    const entries = ndjson.html
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(entries.length).toBeGreaterThanOrEqual(4);
    expect(entries.every((e) => e.organization_id === org.id)).toBe(true);
    expect(ndjson.html).not.toContain('Theirs');
    // An unknown format or filter: no export, the page.
    expect((await browser.get('/portal/audit-log/export?format=xml')).headers.get('content-type')).toContain('text/html');
    expect((await browser.get('/portal/audit-log/export?format=csv&action=%27')).status).toBe(422);
  });
});

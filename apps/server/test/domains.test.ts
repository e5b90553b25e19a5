import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalDns, startLocalDns } from './helpers/dns.ts';
import { expectExactlyOneWinner } from './helpers/fixtures.ts';
import {
  acrossServers,
  expectError,
  isoDate,
  MISSING,
  ok,
  rawRequest,
  rejection,
  sql,
  startServer,
  type TestApp,
  type TestServer,
  UUID,
} from './helpers/server.ts';

/**
 * Custom domains (S7, issue 10): canonicalisation and refusals, uniqueness across applications, verification through
 * a real local DNS server (GATEHOUSE_DNS_SERVERS), the background re-check, and the public `allowed` endpoint that
 * Caddy's on-demand TLS asks.
 */

const CNAME_TARGET = 'edge.gatehouse-test.dev';
let server: TestServer;
let dns: LocalDns;

beforeAll(async () => {
  dns = await startLocalDns();
  server = await startServer({ cnameTarget: CNAME_TARGET, dnsServers: [dns.address] });
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

/** A fresh registrable name under a real public suffix (`.dev`), so tests never collide. */
const fresh = (label = 'app') => `${label}-${randomBytes(5).toString('hex')}.gatehouse-test.dev`;
const add = (app: TestApp, domain: unknown) => app.rest('POST', `/v1/applications/${app.id}/domains`, { domain });
const verify = (app: TestApp, domainId: string) => app.rest('POST', `/v1/applications/${app.id}/domains/${domainId}/verify`);
/** Publishes the TXT record a domain asks for (or any other values) on the local DNS server. */
const publish = (record: { name: string; value: string }, values: string[] = [record.value]) => {
  dns.zone[record.name] = { txt: values };
};
const eventsOf = async (app: TestApp, type: string) =>
  (await ok(app.rest('GET', `/v1/events?type=${type}&limit=100`))).events as Array<{ data: Record<string, unknown> }>;
const allowed = (domain: string) => rawRequest(server.url, 'GET', `/v1/domains/allowed?domain=${encodeURIComponent(domain)}`);

describe('S7: adding a domain', () => {
  it('answers 200 with a pending domain, the TXT challenge (random per domain) and the CNAME target; custom_domain.added once', async () => {
    const app = await server.createApp();
    const name = fresh();
    const res = await add(app, name);
    const domain = await ok(res, 200);
    expect(domain).toEqual({
      id: expect.stringMatching(UUID),
      domain: name,
      status: 'pending_verification',
      tls_status: 'pending',
      dns_records: {
        txt: {
          type: 'TXT',
          name: `_gatehouse-challenge.${name}`,
          value: expect.stringMatching(/^gatehouse-domain-verification=[A-Za-z0-9]{43}$/),
        },
        cname: { type: 'CNAME', name, value: CNAME_TARGET },
      },
      verification_error: null,
      last_checked_at: null,
      created_at: isoDate,
      verified_at: null,
    });
    const other = await ok(add(app, fresh()));
    expect(other.dns_records.txt.value).not.toBe(domain.dns_records.txt.value);

    const added = await eventsOf(app, 'custom_domain.added');
    expect(added.filter((e) => e.data.id === domain.id)).toEqual([
      expect.objectContaining({ data: { id: domain.id, domain: name, status: 'pending_verification' } }),
    ]);
    expect(added).toHaveLength(2);

    expect(await ok(app.rest('GET', `/v1/applications/${app.id}/domains`))).toEqual([other, domain]);
  });

  it('without GATEHOUSE_CNAME_TARGET the CNAME target is the host name of the base URL', async () => {
    const plain = await startServer({ baseUrl: 'https://id.example.org' });
    try {
      const app = await plain.createApp();
      const domain = await ok(add(app, fresh('default')));
      expect(domain.dns_records.cname).toEqual({ type: 'CNAME', name: domain.domain, value: 'id.example.org' });
    } finally {
      await plain.close();
    }
  });

  it('canonicalises before checking and storing: trim, lower-case, one trailing dot, IDN to punycode', async () => {
    const app = await server.createApp();
    const base = fresh('canon');
    for (const [input, stored] of [
      [`  Auth.${base.toUpperCase()}.  `, `auth.${base}`],
      [`bücher.${base}`, `xn--bcher-kva.${base}`],
      [`ÉXAMPLE.${base}`, `xn--xample-9ua.${base}`],
      [`xn--mnchen-3ya.${base}`, `xn--mnchen-3ya.${base}`],
      [`münchen.${base}`.replace('münchen', 'MÜNCHEN'), null],
    ] as const) {
      if (stored === null) {
        // The same name as the punycode one above, spelled in Unicode and upper case: the same domain.
        expectError(await add(app, input), 409, 'domain_already_configured', input);
        continue;
      }
      expect((await ok(add(app, input))).domain, input).toBe(stored);
    }
    // The canonical form is what is unique: another spelling of a configured name is a duplicate.
    expectError(await add(app, `AUTH.${base}.`), 409, 'domain_already_configured');
    const stored = await sql(server, 'select domain from custom_domains where application_id = ? order by domain', [app.id]);
    expect(stored.map((r: { domain: string }) => r.domain)).toEqual([
      `auth.${base}`,
      `xn--bcher-kva.${base}`,
      `xn--mnchen-3ya.${base}`,
      `xn--xample-9ua.${base}`,
    ]);
  });

  it('the longest valid labels and names are accepted: 63-character labels, 232-character names (the TXT name is 253)', async () => {
    const app = await server.createApp();
    const label63 = `${'a'.repeat(57)}${randomBytes(3).toString('hex')}`;
    expect((await ok(add(app, `${label63}.gatehouse-test.dev`))).domain).toBe(`${label63}.gatehouse-test.dev`);
    const tail = `${randomBytes(3).toString('hex')}.gatehouse-test.dev`;
    const ofLength = (n: number) =>
      `${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.${'e'.repeat(n - 63 * 3 - 3 - tail.length - 1)}.${tail}`;
    const long = ofLength(232);
    expect(long).toHaveLength(232);
    const domain = await ok(add(app, long));
    expect(domain.domain).toBe(long);
    expect(domain.dns_records.txt.name).toHaveLength(253);
    // One more character and its challenge record could not exist: refused, saying why.
    const res = await add(app, ofLength(233));
    expectError(res, 422, 'invalid_domain');
    expect(res.body.error.message).toContain('_gatehouse-challenge');
    // Verifiable through the local DNS server at that length.
    publish(domain.dns_records.txt);
    expect((await ok(verify(app, domain.id))).status).toBe('verified');
  });

  it('refuses every name that is not a public host name with 422 invalid_domain, and stores nothing', async () => {
    const app = await server.createApp();
    const tail = `${randomBytes(3).toString('hex')}.gatehouse-test.dev`;
    const refused = [
      // Bare IP addresses, in every spelling.
      '127.0.0.1',
      '8.8.8.8',
      '[::1]',
      '::1',
      '2001:db8::1',
      '2130706433',
      '0x7f.1',
      '0177.0.0.1',
      // Local names.
      'localhost',
      'LOCALHOST.',
      'app.localhost',
      'printer.local',
      'db.internal',
      'intranet',
      // Wildcards, ports, paths, schemes, userinfo.
      `*.${tail}`,
      `a*.${tail}`,
      `${tail}:443`,
      `${tail}:`,
      `${tail}/path`,
      `${tail}?q=1`,
      `${tail}#x`,
      `https://${tail}`,
      `http://${tail}/`,
      `//${tail}`,
      `user@${tail}`,
      // Length: a label over 63, a name over 253.
      `${'a'.repeat(64)}.${tail}`,
      `${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.${'e'.repeat(254 - 63 * 3 - 3 - tail.length - 1)}.${tail}`,
      'x'.repeat(5000),
      // No public suffix, or a public suffix itself.
      'example.invalidtld',
      'com',
      'co.uk',
      'gatehouse-test.notatld',
      // Not a host name at all.
      '',
      '   ',
      '.',
      `exa mple.${tail}`,
      `ex%41mple.${tail}`,
      `a..${tail}`,
      `-a.${tail}`,
      `a-.${tail}`,
      `under_score.${tail}`,
      `${tail}..`,
      'xn--.com',
    ];
    for (const domain of refused) {
      const res = await add(app, domain);
      expectError(res, 422, 'invalid_domain', JSON.stringify(domain).slice(0, 80));
      expect(res.body.error.details).toEqual([{ path: 'domain', message: expect.any(String) }]);
    }
    expect(await ok(app.rest('GET', `/v1/applications/${app.id}/domains`))).toEqual([]);
    expect(await eventsOf(app, 'custom_domain.added')).toEqual([]);
  });

  it('a missing or non-string domain is 422 validation_failed; unknown fields too', async () => {
    const app = await server.createApp();
    expectError(await app.rest('POST', `/v1/applications/${app.id}/domains`, {}), 422, 'validation_failed');
    expectError(await add(app, 42), 422, 'validation_failed');
    expectError(await add(app, null), 422, 'validation_failed');
    expectError(
      await app.rest('POST', `/v1/applications/${app.id}/domains`, { domain: fresh(), status: 'verified' }),
      422,
      'validation_failed',
    );
    expectError(await app.rest('POST', `/v1/applications/${app.id}/domains`, '{"domain":'), 400, 'invalid_json');
  });

  it('is unique across all applications: 409 domain_already_configured, the same answer whoever holds it', async () => {
    const holder = await server.createApp({ name: 'Holder Inc' });
    const other = await server.createApp();
    const name = fresh('taken');
    await ok(add(holder, name));
    const mine = await add(holder, name);
    const theirs = await add(other, name.toUpperCase());
    expectError(mine, 409, 'domain_already_configured');
    expectError(theirs, 409, 'domain_already_configured');
    expect(theirs.body.error).toEqual(mine.body.error);
    const text = JSON.stringify(theirs.body);
    expect(text).not.toContain(holder.id);
    expect(text).not.toContain('Holder');
    expect(await ok(other.rest('GET', `/v1/applications/${other.id}/domains`))).toEqual([]);
    expect(await eventsOf(other, 'custom_domain.added')).toEqual([]);
    expect(await eventsOf(holder, 'custom_domain.added')).toHaveLength(1);
  });

  it('20 concurrent adds of one name from two applications (across processes on PostgreSQL): exactly one wins', async () => {
    const apps = [await server.createApp(), await server.createApp()];
    const name = fresh('race');
    const results = await acrossServers(server, 20, (target, i) => add(apps[i % 2]!.via(target), name));
    expectExactlyOneWinner(results, 200, 'domain_already_configured');
    const rows = await sql(server, 'select application_id from custom_domains where domain = ?', [name]);
    expect(rows).toHaveLength(1);
    const events = await sql(server, `select 1 from events where type = 'custom_domain.added' and data->>'domain' = ?`, [name]);
    expect(events).toHaveLength(1);
  });

  it('an Idempotency-Key replays the first answer and emits the event once', async () => {
    const app = await server.createApp();
    const name = fresh('idem');
    const headers = { 'idempotency-key': `k-${name}` };
    const first = await app.rest('POST', `/v1/applications/${app.id}/domains`, { domain: name }, headers);
    const again = await app.rest('POST', `/v1/applications/${app.id}/domains`, { domain: name }, headers);
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(first.body.data);
    expect(await eventsOf(app, 'custom_domain.added')).toHaveLength(1);
  });
});

describe('tenancy and scopes', () => {
  it("another application's domain id, or another application's id in the path, is 404; so is an unknown id", async () => {
    const owner = await server.createApp();
    const stranger = await server.createApp();
    const domain = await ok(add(owner, fresh('owned')));
    expectError(await verify(stranger, domain.id), 404, 'not_found');
    expectError(await stranger.rest('DELETE', `/v1/applications/${stranger.id}/domains/${domain.id}`), 404, 'not_found');
    expectError(await verify(owner, MISSING), 404, 'not_found');
    // The owner's id in the path with the stranger's credentials: the application is not theirs.
    for (const [method, path] of [
      ['GET', `/v1/applications/${owner.id}/domains`],
      ['POST', `/v1/applications/${owner.id}/domains`],
      ['POST', `/v1/applications/${owner.id}/domains/${domain.id}/verify`],
      ['DELETE', `/v1/applications/${owner.id}/domains/${domain.id}`],
    ] as const) {
      const body = path.endsWith('/domains') && method === 'POST' ? { domain: fresh() } : undefined;
      expectError(await stranger.rest(method, path, body), 404, 'not_found', path);
    }
    expectError(await stranger.rest('GET', `/v1/applications/not-a-uuid/domains`), 422, 'validation_failed');
    expect(await ok(owner.rest('GET', `/v1/applications/${owner.id}/domains`))).toEqual([domain]);
  });

  it('settings:read lists but cannot add, verify or remove; a key without settings scopes is 403', async () => {
    const app = await server.createApp();
    const domain = await ok(add(app, fresh('scoped')));
    const reader = await ok(app.rest('POST', '/v1/api-keys', { name: 'reader', scopes: ['settings:read'] }), 201);
    const other = await ok(app.rest('POST', '/v1/api-keys', { name: 'other', scopes: ['webhooks:write'] }), 201);
    const as = (secret: string) => ({ authorization: `Bearer ${secret}` });
    expect((await app.rest('GET', `/v1/applications/${app.id}/domains`, undefined, as(reader.secret))).status).toBe(200);
    for (const [method, path] of [
      ['POST', `/v1/applications/${app.id}/domains`],
      ['POST', `/v1/applications/${app.id}/domains/${domain.id}/verify`],
      ['DELETE', `/v1/applications/${app.id}/domains/${domain.id}`],
    ] as const) {
      const body = path.endsWith('/domains') ? { domain: fresh() } : undefined;
      expectError(await app.rest(method, path, body, as(reader.secret)), 403, 'insufficient_scope', path);
    }
    expectError(
      await app.rest('GET', `/v1/applications/${app.id}/domains`, undefined, as(other.secret)),
      403,
      'insufficient_scope',
    );
    expectError(
      await app.rest('GET', `/v1/applications/${app.id}/domains`, undefined, { authorization: undefined }),
      401,
      'missing_credentials',
    );
  });
});

describe('verification through a real DNS server', () => {
  it('no TXT record: stays pending with txt_not_found; the wrong token: txt_mismatch; the right one: verified, once', async () => {
    const app = await server.createApp();
    const domain = await ok(add(app, fresh('verify')));
    const record = domain.dns_records.txt;

    const missing = await ok(verify(app, domain.id));
    expect(missing).toMatchObject({
      status: 'pending_verification',
      tls_status: 'pending',
      verification_error: 'txt_not_found',
      verified_at: null,
    });
    expect(missing.last_checked_at).toEqual(isoDate);

    // The name exists but has no TXT record (only an address).
    dns.zone[record.name] = { a: ['192.0.2.1'] };
    expect(await ok(verify(app, domain.id))).toMatchObject({
      status: 'pending_verification',
      verification_error: 'txt_not_found',
    });

    // Another domain's token, and a near miss of this one.
    const otherDomain = await ok(add(app, fresh('other')));
    publish(record, [otherDomain.dns_records.txt.value, `${record.value}x`, 'v=spf1 -all']);
    expect(await ok(verify(app, domain.id))).toMatchObject({
      status: 'pending_verification',
      verification_error: 'txt_mismatch',
      verified_at: null,
    });
    expect(await eventsOf(app, 'custom_domain.verified')).toEqual([]);

    // The right token beside other TXT records at the name.
    publish(record, ['v=spf1 -all', record.value]);
    const verified = await ok(verify(app, domain.id));
    expect(verified).toEqual({
      ...domain,
      status: 'verified',
      tls_status: 'active',
      verification_error: null,
      last_checked_at: isoDate,
      verified_at: isoDate,
    });
    // Verifying again changes nothing and emits nothing (the record may even be gone).
    delete dns.zone[record.name];
    expect(await ok(verify(app, domain.id))).toEqual(verified);
    const events = await eventsOf(app, 'custom_domain.verified');
    expect(events).toEqual([
      expect.objectContaining({ data: { id: domain.id, domain: domain.domain, verified_at: verified.verified_at } }),
    ]);
  });

  it('a TXT value split into several strings (over 255 bytes) is joined before comparing', async () => {
    const app = await server.createApp();
    const domain = await ok(add(app, fresh('chunks')));
    const record = domain.dns_records.txt;
    dns.zone[record.name] = { txt: [[record.value.slice(0, 20), record.value.slice(20)] as never] };
    expect((await ok(verify(app, domain.id))).status).toBe('verified');
  });

  it('a DNS server that does not answer is dns_failed (and the domain stays pending)', async () => {
    // A port nobody listens on: the lookup times out or is refused.
    const unanswered = await startServer({ dnsServers: ['127.0.0.1:9'] });
    try {
      const app = await unanswered.createApp();
      const domain = await ok(add(app, fresh('down')));
      expect(await ok(verify(app, domain.id))).toMatchObject({
        status: 'pending_verification',
        verification_error: 'dns_failed',
      });
    } finally {
      await unanswered.close();
    }
  });

  it('20 concurrent verifications (across processes on PostgreSQL) verify once and emit custom_domain.verified once', async () => {
    const app = await server.createApp();
    const domain = await ok(add(app, fresh('verify-race')));
    publish(domain.dns_records.txt);
    const results = await acrossServers(server, 20, (target) => verify(app.via(target), domain.id));
    for (const r of results) expect(r.body.data?.status, JSON.stringify(r.body)).toBe('verified');
    expect(new Set(results.map((r) => r.body.data.verified_at)).size).toBe(1);
    expect(await eventsOf(app, 'custom_domain.verified')).toHaveLength(1);
  });

  it('verify is rate-limited per application (each one queries DNS): 429 with retry-after, other applications unaffected', async () => {
    const app = await server.createApp();
    const domain = await ok(add(app, fresh('busy')));
    let limited: Awaited<ReturnType<typeof verify>> | undefined;
    for (let i = 0; i < 61 && !limited; i++) {
      const res = await verify(app, domain.id);
      if (res.status === 429) limited = res;
      else expect(res.status).toBe(200);
    }
    expect(limited, 'no 429 within 61 verifies').toBeDefined();
    expectError(limited!, 429, 'rate_limited');
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0);
    const other = await server.createApp();
    const theirs = await ok(add(other, fresh('calm')));
    expect((await ok(verify(other, theirs.id))).status).toBe('pending_verification');
  });

  it('removing a domain answers {id, deleted}; the name can then be added by another application', async () => {
    const app = await server.createApp();
    const next = await server.createApp();
    const domain = await ok(add(app, fresh('removed')));
    expect(await ok(app.rest('DELETE', `/v1/applications/${app.id}/domains/${domain.id}`))).toEqual({
      id: domain.id,
      deleted: true,
    });
    expectError(await app.rest('DELETE', `/v1/applications/${app.id}/domains/${domain.id}`), 404, 'not_found');
    expect(await ok(app.rest('GET', `/v1/applications/${app.id}/domains`))).toEqual([]);
    expect((await ok(add(next, domain.domain))).domain).toBe(domain.domain);
  });
});

describe('the background re-check (housekeeping)', () => {
  it('verifies a due pending domain, backs off on one still missing, marks one pending for over 7 days failed, and leaves the rest', async () => {
    const app = await server.createApp();
    const ready = await ok(add(app, fresh('ready')));
    const missing = await ok(add(app, fresh('missing')));
    const old = await ok(add(app, fresh('old')));
    const notDue = await ok(add(app, fresh('notdue')));
    publish(ready.dns_records.txt);
    publish(notDue.dns_records.txt);
    await sql(server, `update custom_domains set next_check_at = now() - interval '1 second' where id in (?, ?, ?)`, [
      ready.id,
      missing.id,
      old.id,
    ]);
    await sql(server, `update custom_domains set created_at = now() - interval '8 days' where id = ?`, [old.id]);

    await server.server.housekeeping();

    const byId = Object.fromEntries(
      ((await ok(app.rest('GET', `/v1/applications/${app.id}/domains`))) as any[]).map((d) => [d.id, d]),
    );
    expect(byId[ready.id]).toMatchObject({ status: 'verified', tls_status: 'active', verified_at: isoDate });
    expect(byId[missing.id]).toMatchObject({
      status: 'pending_verification',
      tls_status: 'pending',
      verification_error: 'txt_not_found',
    });
    expect(byId[old.id]).toMatchObject({
      status: 'failed',
      tls_status: 'failed',
      verification_error: 'txt_not_found',
      verified_at: null,
    });
    // Not due yet: not looked at, though its record is published.
    expect(byId[notDue.id]).toMatchObject({ status: 'pending_verification', last_checked_at: null });

    const [backedOff] = await sql(
      server,
      `select check_count, extract(epoch from next_check_at - now()) as wait_s from custom_domains where id = ?`,
      [missing.id],
    );
    expect(backedOff!.check_count).toBe(1);
    // The second step of the back-off (5 minutes), give or take the run.
    expect(Number(backedOff!.wait_s)).toBeGreaterThan(200);
    expect(Number(backedOff!.wait_s)).toBeLessThanOrEqual(300);
    const [failed] = await sql(server, 'select next_check_at from custom_domains where id = ?', [old.id]);
    expect(failed!.next_check_at).toBeNull();

    expect((await eventsOf(app, 'custom_domain.verified')).map((e) => e.data.id)).toEqual([ready.id]);
    // A failed domain is never re-checked in the background; a manual verify still can succeed.
    publish(old.dns_records.txt);
    await server.server.housekeeping();
    expect((await ok(app.rest('GET', `/v1/applications/${app.id}/domains`))).find((d: any) => d.id === old.id).status).toBe(
      'failed',
    );
    expect(await ok(verify(app, old.id))).toMatchObject({ status: 'verified', tls_status: 'active' });
  });

  it('several processes re-checking at once take each domain once: one custom_domain.verified per domain', async () => {
    const app = await server.createApp();
    const domains = [];
    for (let i = 0; i < 6; i++) domains.push(await ok(add(app, fresh(`multi${i}`))));
    for (const d of domains) publish(d.dns_records.txt);
    await sql(server, `update custom_domains set next_check_at = now() - interval '1 second' where application_id = ?`, [app.id]);
    await acrossServers(server, 4, (target) => target.server.housekeeping());
    const listed = (await ok(app.rest('GET', `/v1/applications/${app.id}/domains`))) as any[];
    expect(listed.map((d) => d.status)).toEqual(domains.map(() => 'verified'));
    const events = await eventsOf(app, 'custom_domain.verified');
    expect(events.map((e) => e.data.id).sort()).toEqual(domains.map((d) => d.id).sort());
    const [{ checks }] = (await sql(
      server,
      'select sum(check_count)::int as checks from custom_domains where application_id = ?',
      [app.id],
    )) as any;
    expect(checks).toBe(6);
  });
});

describe('SDK domains.*', () => {
  it('add, list, verify and delete, with the REST errors', async () => {
    const app = await server.createApp();
    const name = fresh('sdk');
    const domain = await app.sdk.domains.add({ id: app.id, domain: `${name.toUpperCase()}.` });
    expect(domain).toMatchObject({ domain: name, status: 'pending_verification', tls_status: 'pending' });
    expect(await app.sdk.domains.list({ id: app.id })).toEqual([domain]);
    publish(domain.dns_records.txt);
    expect(await app.sdk.domains.verify({ id: app.id, domain_id: domain.id })).toMatchObject({ status: 'verified' });
    expect((await rejection(app.sdk.domains.add({ id: app.id, domain: name }))).code).toBe('domain_already_configured');
    const invalid = await rejection(app.sdk.domains.add({ id: app.id, domain: 'localhost' }));
    expect([invalid.code, invalid.status]).toEqual(['invalid_domain', 422]);
    expect(await app.sdk.domains.delete({ id: app.id, domain_id: domain.id })).toEqual({ id: domain.id, deleted: true });
    expect((await rejection(app.sdk.domains.verify({ id: app.id, domain_id: domain.id }))).status).toBe(404);
  });
});

describe("GET /v1/domains/allowed (Caddy's on-demand TLS ask)", () => {
  it('without credentials: 200 for a verified domain (in any spelling), 404 for pending, failed, unknown and invalid names', async () => {
    const app = await server.createApp();
    const verified = await ok(add(app, fresh('tls')));
    publish(verified.dns_records.txt);
    await ok(verify(app, verified.id));
    const pending = await ok(add(app, fresh('tls-pending')));
    const failed = await ok(add(app, fresh('tls-failed')));
    await sql(server, `update custom_domains set status = 'failed', tls_status = 'failed' where id = ?`, [failed.id]);

    const yes = await allowed(verified.domain);
    expect(yes.status).toBe(200);
    expect(yes.body.data).toEqual({ domain: verified.domain, allowed: true });
    const text = JSON.stringify(yes.body);
    expect(text).not.toContain(app.id);
    expect(text).not.toContain(verified.id);
    expect((await allowed(`${verified.domain.toUpperCase()}.`)).status).toBe(200);
    for (const name of [
      pending.domain,
      failed.domain,
      fresh('unknown'),
      `sub.${verified.domain}`,
      'localhost',
      '127.0.0.1',
      '*.x.dev',
    ]) {
      const res = await allowed(name);
      expectError(res, 404, 'not_found', name);
      expect(JSON.stringify(res.body)).not.toContain(app.id);
    }
    expectError(await rawRequest(server.url, 'GET', '/v1/domains/allowed'), 422, 'validation_failed');
    expectError(await allowed(''), 422, 'validation_failed');
  });

  it('is rate-limited per client address (429 with retry-after)', async () => {
    const name = fresh('flood');
    let limited: Awaited<ReturnType<typeof allowed>> | undefined;
    // 300 a minute per address; the other tests of this file asked a few times already.
    for (let round = 0; round < 8 && !limited; round++) {
      const answers = await Promise.all(Array.from({ length: 50 }, () => allowed(name)));
      limited = answers.find((r) => r.status === 429);
      for (const r of answers.filter((r) => r.status !== 429)) expect(r.status).toBe(404);
    }
    expect(limited, 'no 429 within 400 requests').toBeDefined();
    expectError(limited!, 429, 'rate_limited');
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

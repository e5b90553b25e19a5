import { createHash } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { createUser, uniqueEmail } from './helpers/fixtures.ts';
import { acrossServers, expectError, type RestResponse, sql, type TestApp, type TestServer, UUID } from './helpers/server.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

const ORIGIN = 'https://app.example.com';

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

/** An end-user REST call: publishable application id only, never the secret key. */
const endUser = (app: TestApp, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  app.rest(method, path, body, { authorization: undefined, ...headers });

const start = (app: TestApp, address: string, extra: Record<string, unknown> = {}) =>
  endUser(app, 'POST', '/v1/auth/magic-link/start', { email: address, ...extra });
const verify = (app: TestApp, token: string) => endUser(app, 'POST', '/v1/auth/magic-link/verify', { token });

/** Starts a magic link and reads it from the real mail. */
async function mailedLink(
  app: TestApp,
  address: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  const started = await endUser(app, 'POST', '/v1/auth/magic-link/start', { email: address, ...extra }, headers);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const mail = await suite.smtp.next(address);
  const link = linkIn(mail);
  return { started, mail, link, token: link.searchParams.get('token')! };
}

async function patchSettings(app: TestApp, settings: Record<string, unknown>) {
  const res = await app.rest('PATCH', `/v1/applications/${app.id}`, { settings });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

const messageCount = async (app: TestApp) => {
  const res = await app.rest('GET', '/v1/messages?limit=1');
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.total as number;
};

/**
 * Proves that no mail went to `absent`: a later mail to `witness` (sent after it) has arrived, plus a margin for the
 * asynchronous delivery, and nothing reached `absent`.
 */
async function expectNoMail(app: TestApp, absent: string, witness: string) {
  await mailedLink(app, witness);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(suite.smtp.inbox.filter((m) => m.to.toLowerCase() === absent.toLowerCase())).toEqual([]);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

describe('magic-link token lifecycle', () => {
  it('is single use: the second verify is 401 invalid_verification', async () => {
    const app = await suite.server.createApp();
    const { token } = await mailedLink(app, uniqueEmail('once'));
    const first = await verify(app, token);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data.status).toBe('complete');
    expectError(await verify(app, token), 401, 'invalid_verification', 'replay');
    expectError(await verify(app, `ml_${'x'.repeat(43)}`), 401, 'invalid_verification', 'unknown token');
  });

  it('honours settings.magic_link.ttl_s and refuses an expired link (database clock)', async () => {
    const app = await suite.server.createApp({ settings: { magic_link: { ttl_s: 60, redirect_url: null } } });
    const { started, token } = await mailedLink(app, uniqueEmail('expiry'));
    const [row] = await sql<{ ttl: number }>(
      suite.server,
      'select extract(epoch from (expires_at - created_at))::float8 as ttl from magic_links where id = ?',
      [started.body.data.verification_id],
    );
    expect(Number(row!.ttl)).toBeGreaterThan(55);
    expect(Number(row!.ttl)).toBeLessThanOrEqual(61);

    await sql(suite.server, `update magic_links set expires_at = now() - interval '1 second' where id = ?`, [
      started.body.data.verification_id,
    ]);
    expectError(await verify(app, token), 401, 'invalid_verification', 'expired');
  });

  it('lives 10 minutes by default, and a longer lifetime cannot be configured', async () => {
    const app = await suite.server.createApp();
    const { started } = await mailedLink(app, uniqueEmail('default-ttl'));
    const [row] = await sql<{ ttl: number }>(
      suite.server,
      'select extract(epoch from (expires_at - created_at))::float8 as ttl from magic_links where id = ?',
      [started.body.data.verification_id],
    );
    expect(Number(row!.ttl)).toBeGreaterThan(595);
    expect(Number(row!.ttl)).toBeLessThanOrEqual(601);
    const tooLong = await app.rest('PATCH', `/v1/applications/${app.id}`, {
      settings: { magic_link: { ttl_s: 601, redirect_url: null } },
    });
    expectError(tooLong, 422, 'validation_failed');
  });

  it('a token of one application does not verify with another, and stays usable where it belongs', async () => {
    const app = await suite.server.createApp();
    const other = await suite.server.createApp();
    const { token } = await mailedLink(app, uniqueEmail('tenant'));
    expectError(await verify(other, token), 401, 'invalid_verification');
    expect((await verify(app, token)).status).toBe(200);
  });

  it('stores only the SHA-256 of the token, never the token', async () => {
    const app = await suite.server.createApp({ allowed_origins: [ORIGIN] });
    const { started, token } = await mailedLink(app, uniqueEmail('hashed'), { redirect_url: `${ORIGIN}/callback` });
    const rows = await sql(suite.server, 'select * from magic_links where application_id = ?', [app.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.id).toBe(started.body.data.verification_id);
    expect(rows[0]!.token_hash).toBe(sha256(token));
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(JSON.stringify(rows)).not.toContain(token.slice(3));
  });

  it('20 concurrent verifies of one token (over two servers on PostgreSQL): exactly one sign-in and one session', async () => {
    const app = await suite.server.createApp();
    const { token } = await mailedLink(app, uniqueEmail('race'));
    const results = await acrossServers(suite.server, 20, (server) => verify(app.via(server), token));
    const ok = results.filter((r) => r.status === 200);
    expect(ok, JSON.stringify(results.map((r) => r.status))).toHaveLength(1);
    expect(ok[0]!.body.data.status).toBe('complete');
    const refused = results.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(19);
    for (const r of refused) expectError(r, 401, 'invalid_verification');

    const [sessions] = await sql<{ n: number }>(
      suite.server,
      'select count(*)::int as n from sessions where application_id = ?',
      [app.id],
    );
    expect(Number(sessions!.n)).toBe(1);
    const [users] = await sql<{ n: number }>(suite.server, 'select count(*)::int as n from users where application_id = ?', [
      app.id,
    ]);
    expect(Number(users!.n)).toBe(1);
    const events = (await app.rest('GET', '/v1/events?type=session.created')).body.data;
    expect(events.total).toBe(1);
  });

  it('concurrent first sign-ins of one new address (a link each, over two servers): one user, each link signs in once', async () => {
    // The application's first sign-in takes the transactional path (it marks the first traffic); later ones, one statement.
    for (const warm of [false, true]) {
      const app = await suite.server.createApp({
        settings: { rate_limits: { magic_link_per_address: 100, magic_link_per_email: 10, window_s: 900 } },
      });
      if (warm) expect((await verify(app, (await mailedLink(app, uniqueEmail('first'))).token)).status).toBe(200);
      const email = uniqueEmail('race-new');
      const tokens: string[] = [];
      for (let i = 0; i < 6; i++) tokens.push((await mailedLink(app, email)).token);
      const results = await acrossServers(suite.server, tokens.length, (server, i) => verify(app.via(server), tokens[i]!));
      for (const r of results) expect(r.status, JSON.stringify(r.body)).toBe(200);
      const ids = new Set(results.map((r) => r.body.data.user.id));
      expect(ids.size).toBe(1);
      const [users] = await sql<{ n: number }>(
        suite.server,
        'select count(*)::int as n from users where application_id = ? and email_normalized = ?',
        [app.id, email.toLowerCase()],
      );
      expect(Number(users!.n)).toBe(1);
      const created = (await app.rest('GET', '/v1/events?type=user.created')).body.data.events;
      expect(created.filter((e: { data: { id: string } }) => ids.has(e.data.id))).toHaveLength(1);
      const sessions = (await app.rest('GET', '/v1/events?type=session.created')).body.data.events;
      expect(sessions.filter((e: { data: { user_id: string } }) => ids.has(e.data.user_id))).toHaveLength(tokens.length);
      for (const token of tokens) expectError(await verify(app, token), 401, 'invalid_verification', 'replay');
    }
  });

  it('a new user signed up by a link: the user, user.created (with the address) and the session, in one statement', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('New-Person');
    const { token } = await mailedLink(app, email);
    const res = await verify(app, token);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const user = res.body.data.user;
    expect(user).toMatchObject({ primary_email: email, email_verified: true, status: 'active', profile: {}, merged_into: null });
    const [row] = await sql<{ email_normalized: string; primary_email: string }>(
      suite.server,
      'select email_normalized, primary_email from users where id = ?',
      [user.id],
    );
    expect(row).toEqual({ email_normalized: email.toLowerCase(), primary_email: email });
    const created = (await app.rest('GET', '/v1/events?type=user.created')).body.data.events;
    expect(created).toHaveLength(1);
    expect(created[0].data).toEqual(user);
    const sessions = (await app.rest('GET', '/v1/events?type=session.created')).body.data.events;
    expect(sessions).toHaveLength(1);
    expect(sessions[0].data).toMatchObject({ user_id: user.id, id: res.body.data.tokens.session_id });
  });

  it('20 concurrent verifies of a returning user\u2019s link (one statement each, over two servers): exactly one session', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('race-returning');
    const first = await verify(app, (await mailedLink(app, email)).token);
    expect(first.body.data.status).toBe('complete');
    const { token } = await mailedLink(app, email);
    const results = await acrossServers(suite.server, 20, (server) => verify(app.via(server), token));
    const ok = results.filter((r) => r.status === 200);
    expect(ok, JSON.stringify(results.map((r) => r.status))).toHaveLength(1);
    expect(ok[0]!.body.data.status).toBe('complete');
    expect(ok[0]!.body.data.user.id).toBe(first.body.data.user.id);
    for (const r of results.filter((r) => r.status !== 200)) expectError(r, 401, 'invalid_verification');
    const [sessions] = await sql<{ n: number }>(
      suite.server,
      'select count(*)::int as n from sessions where application_id = ?',
      [app.id],
    );
    expect(Number(sessions!.n)).toBe(2);
    const events = (await app.rest('GET', '/v1/events?type=session.created')).body.data;
    expect(events.total).toBe(2);
    const [link] = await sql<{ consumed: boolean }>(
      suite.server,
      'select consumed_at is not null as consumed from magic_links where application_id = ? order by created_at desc limit 1',
      [app.id],
    );
    expect(link!.consumed).toBe(true);
  });
});

describe('where the link leads', () => {
  it('uses redirect_url on an allowed origin, keeping its query and appending token', async () => {
    const app = await suite.server.createApp({ allowed_origins: [ORIGIN] });
    const { link, token } = await mailedLink(app, uniqueEmail('redirect'), {
      redirect_url: `${ORIGIN}/auth/done?next=%2Fdash&a=1`,
    });
    expect(link.origin).toBe(ORIGIN);
    expect(link.pathname).toBe('/auth/done');
    expect(link.searchParams.get('next')).toBe('/dash');
    expect(link.searchParams.get('a')).toBe('1');
    expect(token).toMatch(/^ml_/);
    expect([...link.searchParams.keys()].at(-1)).toBe('token');
    expect((await verify(app, token)).status).toBe(200);
  });

  it('refuses a redirect_url on any other origin with 422 invalid_url, and sends no mail', async () => {
    const app = await suite.server.createApp({ allowed_origins: [ORIGIN] });
    const victim = uniqueEmail('victim');
    for (const url of [
      'https://evil.example.com/cb',
      'http://app.example.com/cb',
      'https://app.example.com:8443/cb',
      'https://app.example.com.evil.com/cb',
      'https://sub.app.example.com/cb',
    ]) {
      expectError(await start(app, victim, { redirect_url: url }), 422, 'invalid_url', url);
    }
    await expectNoMail(app, victim, uniqueEmail('witness'));
    expect(await messageCount(app)).toBe(1);
  });

  it('settings.magic_link.redirect_url must sit on an allowed origin, now and after the origins change', async () => {
    const app = await suite.server.createApp({ allowed_origins: [ORIGIN] });
    for (const url of ['https://evil.example.com/magic', 'http://app.example.com/magic', 'https://app.example.com:8443/magic']) {
      const res = await app.rest('PATCH', `/v1/applications/${app.id}`, {
        settings: { magic_link: { ttl_s: 600, redirect_url: url } },
      });
      expectError(res, 422, 'invalid_url', url);
    }
    await patchSettings(app, { magic_link: { ttl_s: 600, redirect_url: `${ORIGIN}/magic` } });
    const dropped = await app.rest('PATCH', `/v1/applications/${app.id}`, { allowed_origins: ['https://other.example.com'] });
    expectError(dropped, 422, 'invalid_url');
  });

  it('builds the link from configuration, never from Host or X-Forwarded-* headers', async () => {
    const app = await suite.server.createApp();
    const { link } = await mailedLink(app, uniqueEmail('forged-host'), undefined, {
      host: 'evil.example.com',
      'x-forwarded-host': 'evil.example.com',
      'x-forwarded-proto': 'https',
      forwarded: 'host=evil.example.com;proto=https',
    });
    expect(link.origin + link.pathname).toBe(`http://gatehouse.test/a/${app.id}/magic-link`);
  });

  it('uses settings.magic_link.redirect_url when the request has none', async () => {
    const app = await suite.server.createApp({
      allowed_origins: [ORIGIN],
      settings: { magic_link: { ttl_s: 600, redirect_url: `${ORIGIN}/magic?from=mail` } },
    });
    const { link, token } = await mailedLink(app, uniqueEmail('configured'));
    expect(link.origin + link.pathname).toBe(`${ORIGIN}/magic`);
    expect(link.searchParams.get('from')).toBe('mail');
    expect(token).toMatch(/^ml_/);
    expect((await verify(app, token)).status).toBe(200);
  });
});

describe('who signs in', () => {
  it('sign-up closed: an unknown email gets the same 200 but no mail', async () => {
    const app = await suite.server.createApp({ settings: { sign_up: 'closed' } });
    const known = uniqueEmail('member');
    await createUser(app, { primary_email: known });
    const stranger = uniqueEmail('stranger');
    const answer = await start(app, stranger);
    expect(answer.status).toBe(200);
    expect(answer.body.data).toEqual({
      verification_id: expect.stringMatching(UUID),
      poll_secret: expect.stringMatching(/^mlp_/),
    });
    await expectNoMail(app, stranger, known);
    expect(await messageCount(app)).toBe(1);
  });

  it('sign-up closed after the link was mailed: verify is 403 access_denied and creates nobody', async () => {
    const app = await suite.server.createApp();
    const address = uniqueEmail('late');
    const { token } = await mailedLink(app, address);
    await patchSettings(app, { sign_up: 'closed' });
    expectError(await verify(app, token), 403, 'access_denied');
    expect((await app.rest('GET', `/v1/users?search=${encodeURIComponent(address)}`)).body.data.total).toBe(0);
  });

  it('a user banned after the link was mailed is refused on verify with 403 access_denied', async () => {
    const app = await suite.server.createApp();
    const address = uniqueEmail('banned-later');
    const user = await createUser(app, { primary_email: address });
    const { token } = await mailedLink(app, address);
    expect((await app.rest('PATCH', `/v1/users/${user.id}`, { status: 'banned' })).status).toBe(200);
    expectError(await verify(app, token), 403, 'access_denied');
    const [sessions] = await sql<{ n: number }>(
      suite.server,
      'select count(*)::int as n from sessions where application_id = ?',
      [app.id],
    );
    expect(Number(sessions!.n)).toBe(0);
  });

  it('matches the address case-insensitively and after trimming', async () => {
    const app = await suite.server.createApp();
    const address = uniqueEmail('cased');
    const user = await createUser(app, { primary_email: address });
    const shouted = address.toUpperCase();
    await start(app, `  ${shouted} `);
    const token = linkIn(await suite.smtp.next(shouted)).searchParams.get('token')!;
    const result = await verify(app, token);
    expect(result.status).toBe(200);
    expect(result.body.data.user.id).toBe(user.id);
  });

  it('sets email_verified on an existing unverified user', async () => {
    const app = await suite.server.createApp();
    const address = uniqueEmail('unverified');
    const user = await createUser(app, { primary_email: address });
    expect(user.email_verified).toBe(false);
    const { token } = await mailedLink(app, address);
    const result = await verify(app, token);
    expect(result.status).toBe(200);
    expect(result.body.data.status).toBe('complete');
    expect(result.body.data.user).toMatchObject({ id: user.id, email_verified: true });
    expect((await app.rest('GET', `/v1/users/${user.id}`)).body.data.email_verified).toBe(true);
  });

  it('after merging A into B, a link to A’s email signs in B', async () => {
    const app = await suite.server.createApp();
    const a = await createUser(app, { primary_email: uniqueEmail('source') });
    const b = await createUser(app, { primary_email: uniqueEmail('target') });
    const merged = await app.rest('POST', '/v1/users/merge', { source_user_id: a.id, target_user_id: b.id });
    expect(merged.status, JSON.stringify(merged.body)).toBe(200);
    const { token } = await mailedLink(app, a.primary_email);
    const result = await verify(app, token);
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expect(result.body.data.status).toBe('complete');
    expect(result.body.data.user.id).toBe(b.id);
    const me = await endUser(app, 'GET', '/v1/auth/me', undefined, {
      authorization: `Bearer ${result.body.data.tokens.access_token}`,
    });
    expect(me.body.data.id).toBe(b.id);
  });
});

describe('no enumeration', () => {
  it.each(['open', 'closed'])(
    'sign-up %s: known, unknown and banned emails get the same answer, byte for byte apart from ids and meta',
    async (signUp) => {
      const app = await suite.server.createApp({ settings: { sign_up: signUp } });
      const known = uniqueEmail('known');
      const banned = uniqueEmail('banned');
      await createUser(app, { primary_email: known });
      const bannedUser = await createUser(app, { primary_email: banned });
      expect((await app.rest('PATCH', `/v1/users/${bannedUser.id}`, { status: 'banned' })).status).toBe(200);

      const answers = [await start(app, known), await start(app, uniqueEmail('unknown')), await start(app, banned)];
      const ids = new Set<string>();
      const shape = (res: RestResponse) => {
        expect(res.status).toBe(200);
        expect(Object.keys(res.body).sort()).toEqual(['data', 'error', 'meta', 'success']);
        expect(Object.keys(res.body.data)).toEqual(['verification_id', 'poll_secret']);
        expect(res.body.data.verification_id).toMatch(UUID);
        expect(res.body.data.poll_secret).toMatch(/^mlp_[\w-]{43}$/);
        ids.add(res.body.data.verification_id);
        const headers = Object.fromEntries([...res.headers].filter(([name]) => name !== 'date' && name !== 'x-request-id'));
        return {
          status: res.status,
          headerNames: [...res.headers.keys()].sort(),
          headers,
          body: { ...res.body, data: { verification_id: '*', poll_secret: '*' }, meta: Object.keys(res.body.meta).sort() },
        };
      };
      const [first, ...rest] = answers.map(shape);
      for (const other of rest) expect(other).toEqual(first);
      expect(ids.size).toBe(3);
    },
  );

  // Sign-up closed is the hard case: only the known address gets a mail, so the work behind the two answers differs.
  it('answers known and unknown emails in the same time (medians over many calls)', async () => {
    const app = await suite.server.createApp({
      settings: { sign_up: 'closed', rate_limits: { magic_link_per_email: 1000, magic_link_per_address: 1000, window_s: 60 } },
    });
    const known = uniqueEmail('timing-known');
    const unknown = uniqueEmail('timing-unknown');
    await createUser(app, { primary_email: known });
    const { knownTimes, unknownTimes } = await timeStarts({ url: suite.server.url, applicationId: app.id, known, unknown });
    const k = median(knownTimes);
    const u = median(unknownTimes);
    // The difference within each round (its two starts back to back): what the machine's load does to one, it does to
    // the other, so a load that rises or falls during the test (a CI run's other files) cancels out, while a cost only
    // one kind pays shows in every round. Its median must be under a quarter of the time of a start.
    const difference = median(knownTimes.map((time, i) => time - (unknownTimes[i] ?? Number.NaN)));
    const bound = Math.max(0.25 * Math.max(k, u), 5);
    expect(
      Math.abs(difference),
      `median known ${k.toFixed(2)} ms, unknown ${u.toFixed(2)} ms, median difference ${difference.toFixed(2)} ms`,
    ).toBeLessThan(bound);
    // Only the known address got mail; let it land, then drop it from the shared sink.
    const deadline = Date.now() + 10_000;
    while (suite.smtp.inbox.filter((m) => m.to === known).length < knownTimes.length + WARM_UP && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(suite.smtp.inbox.filter((m) => m.to === unknown)).toEqual([]);
    suite.smtp.inbox.splice(0, suite.smtp.inbox.length, ...suite.smtp.inbox.filter((m) => m.to !== known));
  });
});

const WARM_UP = 10;
const ROUNDS = 50;

/**
 * Times alternating starts for a known and an unknown address from a worker thread: its event loop is its own, so
 * what the server does after answering (the mail, in this process) does not delay reading the answer, as it would
 * not for a client on another machine. The order alternates each round, so work left behind weighs on both kinds.
 */
function timeStarts(input: {
  url: string;
  applicationId: string;
  known: string;
  unknown: string;
}): Promise<{ knownTimes: number[]; unknownTimes: number[] }> {
  const source = `
    const { parentPort, workerData } = require('node:worker_threads');
    const { url, applicationId, known, unknown, warmUp, rounds } = workerData;
    const timed = async (email) => {
      const t0 = performance.now();
      const res = await fetch(url + '/v1/auth/magic-link/start', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-application-id': applicationId },
        body: JSON.stringify({ email }),
      });
      await res.text();
      const elapsed = performance.now() - t0;
      if (res.status !== 200) throw new Error('start answered ' + res.status);
      return elapsed;
    };
    (async () => {
      for (let i = 0; i < warmUp; i++) { await timed(known); await timed(unknown); }
      const knownTimes = [];
      const unknownTimes = [];
      for (let i = 0; i < rounds; i++) {
        if (i % 2) { knownTimes.push(await timed(known)); unknownTimes.push(await timed(unknown)); }
        else { unknownTimes.push(await timed(unknown)); knownTimes.push(await timed(known)); }
      }
      parentPort.postMessage({ knownTimes, unknownTimes });
    })().catch((error) => parentPort.postMessage({ error: String(error) }));
  `;
  return new Promise((resolve, reject) => {
    const worker = new Worker(source, { eval: true, workerData: { ...input, warmUp: WARM_UP, rounds: ROUNDS } });
    worker.once('message', (message: { knownTimes: number[]; unknownTimes: number[]; error?: string }) => {
      void worker.terminate();
      if (message.error) reject(new Error(message.error));
      else resolve(message);
    });
    worker.once('error', reject);
  });
}

const LIMITS = { magic_link_per_email: 3, magic_link_per_address: 100, window_s: 60 };
const ADDRESS_LIMITS = { magic_link_per_email: 100, magic_link_per_address: 3, window_s: 60 };

function expectRateLimited(res: RestResponse, window: number) {
  expectError(res, 429, 'rate_limited');
  const retryAfter = res.headers.get('retry-after');
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(window);
}

/** The rate-limit cases, run against the server's default store and against Redis. */
function rateLimitCases(current: () => TestServer) {
  it('the 4th start for one email is 429 rate_limited with retry-after; limits are per application', async () => {
    const app = await current().createApp({ settings: { rate_limits: LIMITS } });
    const other = await current().createApp({ settings: { rate_limits: LIMITS } });
    const address = uniqueEmail('limited');
    for (let i = 0; i < 3; i++) expect((await start(app, address)).status).toBe(200);
    expectRateLimited(await start(app, address), LIMITS.window_s);
    expectRateLimited(await start(app, address.toUpperCase()), LIMITS.window_s);
    // Another address is still served; the same address in another application too.
    expect((await start(app, uniqueEmail('limited-other'))).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await start(other, address)).status).toBe(200);
    expectRateLimited(await start(other, address), LIMITS.window_s);
  });

  it('the per-address limit: the 4th start from one client, whatever the email, is 429; per application', async () => {
    const app = await current().createApp({ settings: { rate_limits: ADDRESS_LIMITS } });
    const other = await current().createApp({ settings: { rate_limits: ADDRESS_LIMITS } });
    for (let i = 0; i < 3; i++) expect((await start(app, uniqueEmail(`addr${i}`))).status).toBe(200);
    expectRateLimited(await start(app, uniqueEmail('addr-over')), ADDRESS_LIMITS.window_s);
    expect((await start(other, uniqueEmail('addr-elsewhere'))).status).toBe(200);
  });
}

describe('rate limits (default store)', () => {
  rateLimitCases(() => suite.server);
});

describe('rate limits (Redis store)', () => {
  const redis = serverSuite({ redisUrl: 'redis://127.0.0.1:6379' });
  rateLimitCases(() => redis.server);
});

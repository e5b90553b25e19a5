import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGatehouseClient } from '@gatehouse/sdk';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../../packages/api/src/lib/crypto.ts';
import { acrossServers, expectError, ok, rawRequest, sql, startServer, type TestApp, type TestServer } from './helpers/server.ts';
import { endUser, signIn, type Tokens } from './helpers/sign-in.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * The refresh-token grace (GATEHOUSE_REFRESH_GRACE_S, default 30 s): a client whose answer was lost presents the
 * rotated token again and gets the very pair the first use issued — the same session, the same one successor, never a
 * second refresh token. Reuse detection stays: a replay after the grace, a replay of an older token, or a replay once
 * the successor has been used revokes the session; a replay under another application is refused and changes nothing.
 */
const suite = serverSuite();

const refresh = (app: TestApp, refreshToken: string) =>
  endUser<Tokens>(app, 'POST', '/v1/auth/token/refresh', { refresh_token: refreshToken });
const me = (app: TestApp, token: string) => endUser(app, 'GET', '/v1/auth/me', undefined, token);

/** Moves the session's rotations back in time (the grace is judged by the database clock). */
const age = (sessionId: string, seconds: number) =>
  sql(suite.server, `update refresh_tokens set created_at = created_at - make_interval(secs => ?) where session_id = ?`, [
    seconds,
    sessionId,
  ]);
const currentHash = async (sessionId: string) =>
  (await sql(suite.server, 'select refresh_token_hash from sessions where id = ?', [sessionId]))[0].refresh_token_hash as string;
const revokedAt = async (sessionId: string) =>
  (await sql(suite.server, 'select revoked_at from sessions where id = ?', [sessionId]))[0].revoked_at as Date | null;
const issuedCount = async (sessionId: string) =>
  (await sql(suite.server, 'select count(*)::int as n from refresh_tokens where session_id = ?', [sessionId]))[0].n as number;
async function reuseRevocations(app: TestApp) {
  const page = await ok(app.rest('GET', '/v1/events?limit=100&type=session.revoked'));
  return (page.events as Array<{ data: { id: string; reason: string } }>).filter((e) => e.data.reason === 'refresh_token_reuse');
}

/**
 * A proxy in front of the server that forwards each request, lets the server answer in full, and then cuts the
 * client's connection before a byte of the answer reaches it: the refresh happened, the client never learns the new pair.
 */
async function droppingProxy(upstream: string) {
  const forwarded: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const answer = await fetch(`${upstream}${req.url}`, {
        method: req.method,
        headers: Object.fromEntries(
          Object.entries(req.headers).filter(([name]) => !['host', 'connection', 'content-length'].includes(name)),
        ) as Record<string, string>,
        body: chunks.length ? Buffer.concat(chunks) : undefined,
      });
      forwarded.push(`${answer.status} ${await answer.text()}`);
      res.socket?.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    forwarded,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('refresh-token grace: a lost answer does not sign anyone out', () => {
  it('a refresh whose answer is dropped, retried with the same token, gets the pair the server issued; the session lives on', async () => {
    const app = await suite.server.createApp();
    const t0 = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const proxy = await droppingProxy(suite.server.url);
    try {
      const lost = await rawRequest(proxy.url, 'POST', '/v1/auth/token/refresh', {
        body: { refresh_token: t0.refresh_token },
        headers: { 'x-application-id': app.id },
      }).then(
        () => 'answered',
        (error: unknown) => (error instanceof Error ? 'dropped' : 'answered'),
      );
      expect(lost).toBe('dropped');
      // The server did rotate: its answer carried a new pair, which never reached the client.
      expect(proxy.forwarded).toHaveLength(1);
      expect(proxy.forwarded[0]).toMatch(/^200 /);
      const issued = JSON.parse(proxy.forwarded[0]!.slice(4)).data as Tokens;
      expect(await currentHash(t0.session_id)).toBe(sha256(issued.refresh_token));
    } finally {
      await proxy.close();
    }

    // The client retries with the token it still has: the same successor, a working access token, the same session.
    const retried = await ok(refresh(app, t0.refresh_token));
    expect(retried.session_id).toBe(t0.session_id);
    expect(retried.refresh_token).not.toBe(t0.refresh_token);
    expect(sha256(retried.refresh_token)).toBe(await currentHash(t0.session_id));
    expect(decodeJwt(retried.access_token)).toMatchObject({ sid: t0.session_id, sub: decodeJwt(t0.access_token).sub });
    expect((await me(app, retried.access_token)).status).toBe(200);
    // No second token was minted: the sign-in's and the one rotation's.
    expect(await issuedCount(t0.session_id)).toBe(2);
    // And the chain goes on from there.
    const t2 = await ok(refresh(app, retried.refresh_token));
    expect((await me(app, t2.access_token)).status).toBe(200);
    expect(await revokedAt(t0.session_id)).toBeNull();
    expect(await reuseRevocations(app)).toEqual([]);
  });

  it('20 parallel replays within the grace (over two servers on PostgreSQL) all get the one successor; no extra family', async () => {
    const app = await suite.server.createApp();
    const t0 = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const t1 = await ok(refresh(app, t0.refresh_token));
    const replays = await acrossServers(suite.server, 20, (server) => refresh(app.via(server), t0.refresh_token));
    expect(replays.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(new Set(replays.map((r) => r.body.data.refresh_token))).toEqual(new Set([t1.refresh_token]));
    for (const r of replays) {
      expect(r.body.data.session_id).toBe(t0.session_id);
      expect((await me(app, r.body.data.access_token)).status).toBe(200);
    }
    expect(await issuedCount(t0.session_id)).toBe(2);
    expect(await currentHash(t0.session_id)).toBe(sha256(t1.refresh_token));

    // The one successor rotates once, too: of 20 parallel uses, every answer is its one successor.
    const onward = await acrossServers(suite.server, 20, (server) => refresh(app.via(server), t1.refresh_token));
    expect(onward.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(new Set(onward.map((r) => r.body.data.refresh_token)).size).toBe(1);
    expect(await issuedCount(t0.session_id)).toBe(3);
    expect(await revokedAt(t0.session_id)).toBeNull();
  });

  it('a replay after the grace is reuse: the whole session is revoked', async () => {
    const app = await suite.server.createApp();
    const t0 = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const t1 = await ok(refresh(app, t0.refresh_token));
    await age(t0.session_id, 31);
    expectError(await refresh(app, t0.refresh_token), 401, 'invalid_token', 'replay after the grace');
    expect(await revokedAt(t0.session_id)).not.toBeNull();
    expectError(await refresh(app, t1.refresh_token), 401, 'invalid_token', 'the successor too');
    expectError(await me(app, t1.access_token), 401, 'invalid_token', 'its access token too');
    expect((await reuseRevocations(app)).map((e) => e.data.id)).toEqual([t0.session_id]);
  });

  it('a replay once the successor has been used is reuse, even within the grace (the first answer was not lost)', async () => {
    const app = await suite.server.createApp();
    const t0 = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const t1 = await ok(refresh(app, t0.refresh_token));
    const t2 = await ok(refresh(app, t1.refresh_token));
    // t0 is two rotations back: another credential than the one rotated last.
    expectError(await refresh(app, t0.refresh_token), 401, 'invalid_token', 'older token within the grace');
    expect(await revokedAt(t0.session_id)).not.toBeNull();
    expectError(await refresh(app, t2.refresh_token), 401, 'invalid_token', 'newest after the revocation');
    expectError(await me(app, t2.access_token), 401, 'invalid_token');
  });

  it('a replay under another application is refused and changes nothing: the grace stays with the session’s own', async () => {
    const a = await suite.server.createApp();
    const b = await suite.server.createApp();
    const t0 = (await signIn(suite.server, suite.smtp, a, 'ada@example.com')).tokens;
    const t1 = await ok(refresh(a, t0.refresh_token));
    expectError(await refresh(b, t0.refresh_token), 401, 'invalid_token', 'replay at B');
    expectError(await refresh(b, t1.refresh_token), 401, 'invalid_token', 'successor at B');
    expect(await revokedAt(t0.session_id)).toBeNull();
    expect(await currentHash(t0.session_id)).toBe(sha256(t1.refresh_token));
    // A's own replay still gets its successor.
    expect((await ok(refresh(a, t0.refresh_token))).refresh_token).toBe(t1.refresh_token);
  });

  it('a guessed or forged token gets no grace: nothing it could be the predecessor of', async () => {
    const app = await suite.server.createApp();
    const t0 = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    await ok(refresh(app, t0.refresh_token));
    for (const forged of ['rt_garbage', `${t0.refresh_token}x`, t0.refresh_token.slice(0, -1)]) {
      expectError(await refresh(app, forged), 401, 'invalid_token', forged);
    }
    expect(await revokedAt(t0.session_id)).toBeNull();
  });

  it('the grace never revives a session: signed out, banned or revoked, a replay is refused', async () => {
    const app = await suite.server.createApp();
    const signedOut = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    const next = await ok(refresh(app, signedOut.refresh_token));
    await ok(endUser(app, 'POST', '/v1/auth/sign-out', undefined, next.access_token));
    expectError(await refresh(app, signedOut.refresh_token), 401, 'invalid_token', 'after sign-out');

    const banned = await signIn(suite.server, suite.smtp, app, 'grace@example.com');
    await ok(refresh(app, banned.tokens.refresh_token));
    await ok(app.rest('PATCH', `/v1/users/${banned.user.id}`, { status: 'banned' }));
    expectError(await refresh(app, banned.tokens.refresh_token), 401, 'invalid_token', 'after a ban');

    const expired = (await signIn(suite.server, suite.smtp, app, 'ada@example.com')).tokens;
    await ok(refresh(app, expired.refresh_token));
    await sql(suite.server, `update sessions set expires_at = now() - interval '1 second' where id = ?`, [expired.session_id]);
    expectError(await refresh(app, expired.refresh_token), 401, 'invalid_token', 'after the absolute lifetime');
  });
});

describe('the SDK across a lost refresh answer', () => {
  it('retries the refresh, gets the pair the server issued, and the person stays signed in', async () => {
    const app = await suite.server.createApp({ settings: { session: { access_token_ttl_s: 60 } } });
    let clock = Date.now();
    let refreshes = 0;
    const client = createGatehouseClient({
      baseUrl: suite.server.url,
      applicationId: app.id,
      now: () => clock,
      // The first refresh reaches the server, which rotates; its answer is lost on the way back.
      fetch: async (input, init) => {
        if (!String(input).includes('/trpc/auth.token.refresh')) return fetch(input, init);
        const answer = await fetch(input, init);
        if (++refreshes > 1) return answer;
        await answer.text();
        throw new TypeError('fetch failed', { cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }) });
      },
    });
    const started = client.magicLink.start({ email: 'sdk@example.com' }, { pollIntervalMs: 50 });
    const link = linkIn(await suite.smtp.next('sdk@example.com'));
    await ok(
      rawRequest(suite.server.url, 'POST', '/v1/auth/magic-link/confirm', {
        body: { token: link.searchParams.get('token') },
        headers: { 'x-application-id': app.id },
      }),
    );
    const outcome = await started;
    if (outcome.status !== 'complete') throw new Error(`expected complete, got ${outcome.status}`);
    const sessionId = outcome.tokens.session_id;

    // 40 s later the token is due for a refresh: the next call refreshes first, loses the answer, and retries.
    clock += 40_000;
    const me = await client.me();
    expect(me.id).toBe(outcome.user.id);
    expect(refreshes).toBe(2);
    // The client holds the pair the server issued: the session's current refresh token, and it keeps working.
    expect(await revokedAt(sessionId)).toBeNull();
    expect(await issuedCount(sessionId)).toBe(2);
    clock += 45_000;
    await client.me();
    expect(refreshes).toBe(3);
    expect(await issuedCount(sessionId)).toBe(3);
    expect(client.getSession()).toMatchObject({ session_id: sessionId });
    expect(await reuseRevocations(app)).toEqual([]);
  });
});

describe('refresh-token grace turned off (GATEHOUSE_REFRESH_GRACE_S=0)', () => {
  let strict: TestServer;
  beforeAll(async () => {
    strict = await startServer({ smtpUrl: suite.smtp.url, refreshGraceS: 0 });
  });
  afterAll(async () => {
    await strict?.close();
  });

  it('an immediate replay revokes the session, as reuse always did', async () => {
    const app = await strict.createApp();
    const t0 = (await signIn(strict, suite.smtp, app, 'ada@example.com')).tokens;
    const t1 = await ok(refresh(app, t0.refresh_token));
    expectError(await refresh(app, t0.refresh_token), 401, 'invalid_token', 'replay');
    expectError(await refresh(app, t1.refresh_token), 401, 'invalid_token', 'successor');
  });
});

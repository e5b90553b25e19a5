import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { startReceiver } from './helpers/receiver.ts';
import { hasPostgresBinaries, startReplicatedPair, startTcpProxy } from './helpers/replication.ts';
import { startServer, type TestApp, type TestServer } from './helpers/server.ts';
import { endUser, requestMagicLink, type SmtpSink, type Tokens } from './helpers/sign-in.ts';
import { startSmtpSink } from './helpers/smtp.ts';

/**
 * Failover that loses nothing (docs/scaling.md): a primary with a synchronous streaming replica (two private
 * PostgreSQL 15 clusters), Gatehouse behind a TCP proxy (as behind HAProxy or a cloud endpoint). Under load — user
 * creates, magic-link sign-ins (each link verified twice at once), refresh-token rotations, webhook deliveries of every
 * user.created — the primary crashes (`pg_ctl stop -m immediate`), the replica is promoted and the proxy pointed at
 * it. Then: every acknowledged write (a user, a refresh-token rotation) is on the new primary, no magic link was
 * accepted twice and no spent refresh token rotated again (within the grace it answers its one successor), before or
 * after, every acknowledged user's user.created was delivered, the service answered again
 * within 10 s, no connection of its pool stays taken, and it is the same server that never stopped. Runs once, in
 * the PostgreSQL run of the suite (17–45 s on the two-core machine, most of it the two clusters' initdb and copy).
 */
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

describe.runIf(inject('databaseUrl') && !inject('poolerUrl') && hasPostgresBinaries())(
  'failover to a synchronous replica',
  () => {
    it('loses no acknowledged write, spends no one-time secret twice, answers again within 10 s', async () => {
      const began = performance.now();
      const step = (what: string) => console.log(`failover: ${what} at ${Math.round(performance.now() - began)} ms`);
      const pair = await startReplicatedPair('gatehouse');
      step('clusters up');
      cleanups.push(pair.cleanup);
      const proxy = await startTcpProxy(pair.primary.port);
      cleanups.push(proxy.close);
      const smtp: SmtpSink = await startSmtpSink();
      cleanups.push(smtp.close);
      const receiver = await startReceiver();
      cleanups.push(receiver.close);
      const server: TestServer = await startServer({
        smtpUrl: smtp.url,
        database: { kind: 'postgres', url: `postgres://postgres@127.0.0.1:${proxy.port}/gatehouse`, poolSize: 10 },
        webhooks: { allowInsecure: true, retryScheduleS: [0.5, 0.5, 1, 1, 2, 2, 2, 2], timeoutMs: 3000 },
      });
      cleanups.push(server.close);
      step('server up');
      const app: TestApp = await server.createApp();
      const created = await app.rest('POST', '/v1/webhooks', { url: `${receiver.url}/hooks`, event_types: ['user.created'] });
      expect(created.status).toBe(201);

      const acknowledgedUsers: string[] = [];
      /** Per magic-link token: how many verifies answered 200 (must never exceed 1). */
      const linkWins = new Map<string, number>();
      /**
       * Refresh tokens whose rotation was acknowledged, each with the successor it was answered: spent. Presented again,
       * one may answer only that same successor (the refresh-token grace), never rotate into an independent token.
       */
      const spentRefreshTokens = new Map<string, string>();
      let running = true;
      let failures = 0;

      const createUsers = async () => {
        while (running) {
          const res = await app
            .rest('POST', '/v1/users', { primary_email: `failover.${randomUUID()}@example.com` })
            .catch(() => undefined);
          if (res?.status === 201) acknowledgedUsers.push(res.body.data.id);
          else {
            failures++;
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        }
      };
      const verifyLink = async (token: string) => {
        const res = await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token }).catch(() => undefined);
        if (res?.status === 200) linkWins.set(token, (linkWins.get(token) ?? 0) + 1);
        return res;
      };
      const signIns = async () => {
        while (running) {
          try {
            const { token } = await requestMagicLink(smtp, app, `signin.${randomUUID()}@example.com`);
            linkWins.set(token, 0);
            const [a, b] = await Promise.all([verifyLink(token), verifyLink(token)]);
            const won = [a, b].find((r) => r?.status === 200);
            const tokens: Tokens | undefined = won?.body.data.tokens;
            if (!tokens) continue;
            let refresh = tokens.refresh_token;
            for (let i = 0; i < 3 && running; i++) {
              const next = await endUser(app, 'POST', '/v1/auth/token/refresh', { refresh_token: refresh });
              if (next.status !== 200) break;
              spentRefreshTokens.set(refresh, next.body.data.refresh_token);
              refresh = next.body.data.refresh_token;
            }
          } catch {
            failures++;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
      };
      const load = [createUsers(), createUsers(), createUsers(), signIns(), signIns()];

      // Under load for a while, then the primary crashes.
      await new Promise((resolve) => setTimeout(resolve, 4000));
      const beforeCrash = acknowledgedUsers.length;
      step('crash');
      const crashedAt = performance.now();
      proxy.cut();
      await pair.crashPrimary();
      await pair.promoteReplica();
      proxy.point(pair.replica.port);
      step('promoted');
      // The first write acknowledged after the crash.
      let recoveredMs = Number.POSITIVE_INFINITY;
      while (performance.now() - crashedAt < 30_000) {
        const res = await app
          .rest('POST', '/v1/users', { primary_email: `probe.${randomUUID()}@example.com` })
          .catch(() => undefined);
        if (res?.status === 201) {
          recoveredMs = performance.now() - crashedAt;
          acknowledgedUsers.push(res.body.data.id);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // Load on the new primary for a while, then stop it.
      const atRecovery = acknowledgedUsers.length;
      await new Promise((resolve) => setTimeout(resolve, 3000));
      running = false;
      await Promise.all(load);
      step('load ended');

      // No connection of the server's pool stays taken by a transaction that died with the primary (a leak would shrink
      // the pool at every failover until the server stopped answering).
      const connection = server.server.orm.em.getConnection() as unknown as { getNativeClient(): Promise<pg.Pool> };
      const pool = await connection.getNativeClient();
      const settle = Date.now() + 10_000;
      while (pool.totalCount !== pool.idleCount && Date.now() < settle) await new Promise((resolve) => setTimeout(resolve, 100));
      const taken = pool.totalCount - pool.idleCount;

      // Every acknowledged user is on the new primary.
      const direct = new pg.Client({ connectionString: pair.replica.url('gatehouse') });
      await direct.connect();
      cleanups.push(() => direct.end());
      const { rows } = await direct.query<{ id: string }>('select id from users where id = any($1::uuid[])', [acknowledgedUsers]);
      const present = new Set(rows.map((r) => r.id));
      const lost = acknowledgedUsers.filter((id) => !present.has(id));

      // Every acknowledged rotation is on the new primary: no session's current refresh token is a spent one (a lost
      // rotation would leave the spent token current, and the replays below could not tell: its successor is the same).
      const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
      const { rows: unrotated } = await direct.query<{ refresh_token_hash: string }>(
        'select refresh_token_hash from sessions where refresh_token_hash = any($1::text[])',
        [[...spentRefreshTokens.keys()].map(sha256)],
      );
      const lostRotations = unrotated.map((row) => row.refresh_token_hash);

      // No magic link verifies a second time, not even now; no spent refresh token rotates again: presented again, it
      // is refused, or (the grace) answers the very successor it was answered the first time.
      for (const token of linkWins.keys()) await verifyLink(token);
      const spentTwice = [...linkWins.values()].filter((wins) => wins > 1).length;
      const reused: string[] = [];
      for (const [token, successor] of spentRefreshTokens) {
        const res = await endUser(app, 'POST', '/v1/auth/token/refresh', { refresh_token: token });
        if (res.status === 200 && res.body.data.refresh_token !== successor) reused.push(token);
      }

      // Every acknowledged user's user.created reaches the receiver (at least once).
      const delivered = () =>
        new Set(
          receiver.received
            .map((r) => JSON.parse(r.body))
            .filter((event) => event.type === 'user.created')
            .map((event) => event.data.id as string),
        );
      const deadline = Date.now() + 60_000;
      while (acknowledgedUsers.some((id) => !delivered().has(id)) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      step('deliveries checked');
      const undelivered = acknowledgedUsers.filter((id) => !delivered().has(id));

      const report = {
        acknowledgedUsers: acknowledgedUsers.length,
        beforeCrash,
        afterRecovery: acknowledgedUsers.length - atRecovery,
        lost: lost.length,
        magicLinks: linkWins.size,
        magicLinksSignedIn: [...linkWins.values()].filter((wins) => wins === 1).length,
        spentTwice,
        refreshRotations: spentRefreshTokens.size,
        refreshRotationsLost: lostRotations.length,
        refreshReused: reused.length,
        undelivered: undelivered.length,
        failedRequests: failures,
        poolConnectionsTaken: taken,
        recoveredMs: Math.round(recoveredMs),
      };
      console.log(`failover: ${JSON.stringify(report)}`);
      expect(beforeCrash).toBeGreaterThan(0);
      expect(report.afterRecovery).toBeGreaterThan(0);
      expect(report.magicLinksSignedIn).toBeGreaterThan(0);
      expect(lost).toEqual([]);
      expect(spentTwice).toBe(0);
      expect(lostRotations).toEqual([]);
      expect(reused).toEqual([]);
      expect(undelivered).toEqual([]);
      expect(recoveredMs).toBeLessThan(10_000);
      expect(taken).toBe(0);
      // The server that served before the crash serves after it: nothing restarted it.
      expect((await app.rest('GET', `/v1/users/${acknowledgedUsers[0]}`)).status).toBe(200);
    });
  },
);

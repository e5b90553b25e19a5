import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOT_MS, WAIT_MS } from './helpers/limits.ts';
import { freePort } from './helpers/ports.ts';
import { type PrivatePostgres, privatePostgresAvailable, startPrivatePostgres } from './helpers/private-postgres.ts';
import { onDatabase, processTestbed } from './helpers/processes.ts';
import { startReceiver } from './helpers/receiver.ts';
import { embeddedRun } from './helpers/runs.ts';
import { rawRequest, until } from './helpers/server.ts';
import { startSmtpSink } from './helpers/smtp.ts';

/**
 * Three server processes on one PostgreSQL database behind HAProxy (Debian's package), with /readyz health checks —
 * the deployment docs/production.md describes. Background work (webhook deliveries, mail, housekeeping) is done once
 * whichever process takes it; and restarting the processes one at a time under steady load fails no request: SIGTERM
 * turns /readyz to 503 `draining`, the process keeps serving until the balancer has taken it out, then drains.
 */
const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const haproxyBinary = (() => {
  try {
    return execFileSync('sh', ['-c', 'command -v haproxy'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
})();
const { children, cleanups } = processTestbed();

/** Seconds each process keeps serving after SIGTERM (GATEHOUSE_SHUTDOWN_DELAY_S): several health checks' worth. */
const SHUTDOWN_DELAY_S = 4;

interface Running {
  child: ChildProcess;
  port: number;
  exited: Promise<number | null>;
  stderr: () => string;
}

describe.runIf(embeddedRun && privatePostgresAvailable && haproxyBinary)(
  'three processes behind HAProxy on one database',
  { timeout: 900_000 },
  () => {
    let postgres: PrivatePostgres;
    let balancer: string;
    let stats: string;
    const ports: number[] = [];
    const processes: Running[] = [];
    let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    let env: NodeJS.ProcessEnv;

    async function start(port: number): Promise<Running> {
      const child = spawn(process.execPath, [main], { env: { ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
      children.push(child);
      let stderr = '';
      child.stderr?.on('data', (chunk) => {
        stderr += chunk;
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      await until(
        async () => {
          if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}):\n${stderr}`);
          return (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined;
        },
        'a server process to be ready',
        BOOT_MS,
      );
      return { child, port, exited, stderr: () => stderr };
    }

    /** The balancer's view of each server: `UP`, `DOWN`, … by name (`s0`, `s1`, `s2`). */
    async function serverStates(): Promise<Record<string, string>> {
      const csv = await (await fetch(`${stats}/stats;csv`)).text();
      const [header, ...rows] = csv.trim().split('\n');
      const columns = header!.replace(/^# /, '').split(',');
      const status = columns.indexOf('status');
      const name = columns.indexOf('svname');
      return Object.fromEntries(
        rows
          .map((row) => row.split(','))
          .filter((cells) => cells[0] === 'gatehouse' && /^s\d$/.test(cells[name]!))
          .map((c) => [c[name], c[status]]),
      );
    }
    const untilState = (server: string, state: string) =>
      until(
        async () => ((await serverStates())[server]?.startsWith(state) ? true : undefined),
        `HAProxy to see ${server} ${state}`,
        WAIT_MS,
      );

    beforeAll(async () => {
      postgres = await startPrivatePostgres();
      cleanups.push(() => postgres.dispose());
      smtp = await startSmtpSink();
      cleanups.push(() => smtp.close());
      receiver = await startReceiver();
      cleanups.push(() => receiver.close());
      const front = await freePort();
      const statsPort = await freePort();
      for (let i = 0; i < 3; i++) ports.push(await freePort());
      balancer = `http://127.0.0.1:${front}`;
      stats = `http://127.0.0.1:${statsPort}`;
      const dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-scale-out-'));
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
      env = {
        ...process.env,
        HOST: '127.0.0.1',
        DATABASE_URL: postgres.url,
        GATEHOUSE_DATA_DIR: dataDir,
        GATEHOUSE_BASE_URL: balancer,
        GATEHOUSE_LOG_LEVEL: 'warn',
        GATEHOUSE_OPERATOR_TOKEN: `op_${randomBytes(24).toString('hex')}`,
        GATEHOUSE_MASTER_KEY: randomBytes(32).toString('base64'),
        GATEHOUSE_SMTP_URL: smtp.url,
        GATEHOUSE_ALLOW_INSECURE_WEBHOOKS: '1',
        GATEHOUSE_SHUTDOWN_DELAY_S: String(SHUTDOWN_DELAY_S),
        GATEHOUSE_HOUSEKEEPING_INTERVAL_S: '1',
      };
      // The configuration docs/production.md recommends: health checks on /readyz, a refused connection retried on
      // another server (a process that has just closed its socket), nothing else retried.
      const config = join(dataDir, 'haproxy.cfg');
      await writeFile(
        config,
        [
          'global',
          '  maxconn 2000',
          'defaults',
          '  mode http',
          '  timeout connect 5s',
          '  timeout client 120s',
          '  timeout server 120s',
          '  retries 3',
          '  option redispatch',
          '  retry-on conn-failure',
          'frontend api',
          `  bind 127.0.0.1:${front}`,
          '  default_backend gatehouse',
          'frontend stats',
          `  bind 127.0.0.1:${statsPort}`,
          '  stats enable',
          '  stats uri /stats',
          'backend gatehouse',
          '  balance roundrobin',
          '  option httpchk GET /readyz',
          '  http-check expect status 200',
          // A check answered slowly (a busy machine) is not a failed one; a draining process answers 503 at once.
          '  timeout check 5s',
          '  default-server inter 500ms fall 2 rise 2',
          ...ports.map((port, i) => `  server s${i} 127.0.0.1:${port} check`),
          '',
        ].join('\n'),
      );
      const haproxy = spawn(haproxyBinary!, ['-db', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
      children.push(haproxy);
      // The first process migrates the empty database; the others wait on its lock, then find nothing to do.
      processes.push(...(await Promise.all(ports.map((port) => start(port)))));
      for (let i = 0; i < 3; i++) await untilState(`s${i}`, 'UP');
    }, 900_000);

    afterAll(async () => {
      for (const running of processes) if (running.child.exitCode === null) running.child.kill('SIGKILL');
    });

    const operator = () => ({ authorization: `Bearer ${env.GATEHOUSE_OPERATOR_TOKEN}` });
    async function createApp() {
      const created = await rawRequest(balancer, 'POST', '/v1/applications', {
        body: { name: 'Scale out' },
        headers: operator(),
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      return {
        id: created.body.data.application.id as string,
        auth: {
          authorization: `Bearer ${created.body.data.secret_key.secret}`,
          'x-application-id': created.body.data.application.id as string,
        },
      };
    }

    it('each webhook delivery, mail and housekeeping task is done once, whichever of the three processes takes it', async () => {
      const app = await createApp();
      const hook = await rawRequest(balancer, 'POST', '/v1/webhooks', {
        body: { url: `${receiver.url}/hooks` },
        headers: app.auth,
      });
      expect(hook.status, JSON.stringify(hook.body)).toBe(201);

      // Webhooks: 30 users created across the processes, 30 user.created events, each delivered once.
      const USERS = 30;
      for (let i = 0; i < USERS; i++) {
        const res = await rawRequest(balancer, 'POST', '/v1/users', {
          body: { primary_email: `user${i}@example.com` },
          headers: app.auth,
        });
        expect(res.status).toBe(201);
      }
      // Mail: 10 magic links, each sent once.
      const MAILS = 10;
      for (let i = 0; i < MAILS; i++) {
        const res = await rawRequest(balancer, 'POST', '/v1/auth/magic-link/start', {
          body: { email: `mail${i}@example.com` },
          headers: { 'x-application-id': app.id },
        });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
      }
      // Housekeeping: a subscription whose period is over moves on by one period, once (every process runs
      // housekeeping every second here).
      const plan = await rawRequest(balancer, 'POST', '/v1/billing/plans', {
        body: { key: 'team', name: 'Team', interval: 'month', currency: 'USD', price_cents: 2900, per_seat_cents: 900 },
        headers: app.auth,
      });
      const org = await rawRequest(balancer, 'POST', '/v1/organizations', { body: { name: 'Acme' }, headers: app.auth });
      const subscription = await rawRequest(balancer, 'POST', '/v1/billing/subscriptions', {
        body: { organization_id: org.body.data.id, plan_id: plan.body.data.id, seats: 3 },
        headers: app.auth,
      });
      expect(subscription.status, JSON.stringify(subscription.body)).toBe(201);
      const [{ ended }] = (await onDatabase<{ ended: string }>(
        postgres.url,
        `update billing_subscriptions set current_period_end = now() - interval '1 minute'
        where id = '${subscription.body.data.id}' returning current_period_end::text as ended`,
      )) as [{ ended: string }];
      const events = async (type: string) =>
        (await rawRequest(balancer, 'GET', `/v1/events?type=${type}&limit=100`, { headers: app.auth })).body.data
          .events as Array<{
          data: { id: string; current_period_end: string };
        }>;

      const userCreated = () => receiver.at('/hooks').filter((r) => JSON.parse(r.body).type === 'user.created');
      await until(() => (userCreated().length >= USERS ? true : undefined), 'every user.created delivery');
      await until(() => (smtp.inbox.length >= MAILS ? true : undefined), 'every magic-link mail');
      await until(async () => ((await events('subscription.updated')).length ? true : undefined), 'the renewal');
      // Time for a second delivery, mail or renewal to show up, were any done twice (each process polls every second).
      await new Promise((resolve) => setTimeout(resolve, 5_000));

      const ids = userCreated().map((r) => r.headers['webhook-id']);
      expect(ids).toHaveLength(USERS);
      expect(new Set(ids).size).toBe(USERS);
      expect(smtp.inbox.map((m) => m.to).sort()).toEqual(Array.from({ length: MAILS }, (_, i) => `mail${i}@example.com`).sort());
      const renewals = await events('subscription.updated');
      expect(renewals).toHaveLength(1);
      const [{ moved }] = (await onDatabase<{ moved: boolean }>(
        postgres.url,
        `select current_period_end = '${ended}'::timestamptz + interval '1 month' as moved
         from billing_subscriptions where id = '${subscription.body.data.id}'`,
      )) as [{ moved: boolean }];
      expect(moved).toBe(true);
    });

    it('restarting the processes one at a time under steady load fails no request', async () => {
      const app = await createApp();
      const failures: string[] = [];
      let sent = 0;
      let loading = true;
      const worker = async (n: number) => {
        for (let i = 0; loading; i++) {
          const write = i % 3 === 2;
          try {
            const res = write
              ? await rawRequest(balancer, 'POST', '/v1/organizations', { body: { name: `load ${n}.${i}` }, headers: app.auth })
              : await rawRequest(balancer, 'GET', '/v1/users?limit=1', { headers: app.auth });
            sent++;
            if (res.status !== (write ? 201 : 200)) failures.push(`${res.status} ${JSON.stringify(res.body)}`);
          } catch (error) {
            sent++;
            failures.push(`no answer: ${(error as Error).message} ${String((error as Error).cause ?? '')}`);
          }
        }
      };
      const load = Promise.all(Array.from({ length: 4 }, (_, n) => worker(n)));
      try {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        for (let i = 0; i < 3; i++) {
          const old = processes[i]!;
          old.child.kill('SIGTERM');
          // At once: not ready (the balancer takes it out), while it still answers what it is sent.
          const seen = await until(async () => {
            const res = await fetch(`http://127.0.0.1:${old.port}/readyz`).catch(() => undefined);
            return res?.status === 503 ? ((await res.json()) as { status: string }) : undefined;
          }, 'the draining process to answer /readyz 503');
          expect(seen).toEqual({ status: 'draining' });
          await untilState(`s${i}`, 'DOWN');
          expect(await old.exited, old.stderr()).toBe(0);
          processes[i] = await start(old.port);
          await untilState(`s${i}`, 'UP');
        }
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      } finally {
        loading = false;
        await load;
      }
      console.log(`rolling restart: ${sent} requests, ${failures.length} failed`);
      expect(failures).toEqual([]);
      expect(sent).toBeGreaterThan(30);
    });
  },
);

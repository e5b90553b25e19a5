import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { BOOT_MS } from './helpers/limits.ts';
import { freePort } from './helpers/ports.ts';
import { seedEmbeddedDatabase } from './helpers/processes.ts';
import { rawRequest, sql, startServer, type TestServer, until } from './helpers/server.ts';
import { endUser } from './helpers/sign-in.ts';
import { startSmtpSink } from './helpers/smtp.ts';

const servers: Array<{ close(): Promise<unknown> }> = [];
afterAll(async () => {
  for (const server of servers.reverse()) await server.close();
});

async function withServer(options: Parameters<typeof startServer>[0]): Promise<TestServer> {
  const server = await startServer(options);
  servers.push(server);
  return server;
}

const messageOf = async (server: TestServer, to: string) => {
  const [row] = await sql(server, 'select * from messages where "to" = ?', [to]);
  return row!;
};

describe('mail goes through a durable outbox', () => {
  it('a refused send is retried on the schedule until the SMTP server takes it; the sealed copy is then gone', async () => {
    const smtp = await startSmtpSink({ refuse: 2 });
    servers.push(smtp);
    const server = await withServer({ smtpUrl: smtp.url, mailRetryScheduleS: [0.2, 0.2, 0.2] });
    const app = await server.createApp();
    const email = uniqueEmail('retry');
    expect((await endUser(app, 'POST', '/v1/auth/magic-link/start', { email })).status).toBe(200);
    const mail = await smtp.next(email);
    expect(mail.text).toContain('token=ml_');
    expect(smtp.refused()).toBe(2);
    const row = await until(async () => {
      const r = await messageOf(server, email);
      return r.status === 'sent' ? r : undefined;
    }, 'sent');
    expect(row).toMatchObject({ attempts: 3, payload_sealed: null, last_error: null });
    const listed = (await app.rest('GET', '/v1/messages')).body.data.messages;
    expect(listed.find((m: { to: string }) => m.to === email)).toMatchObject({ status: 'sent', template_key: 'magic_link' });
  });

  it('ends in failed after the last attempt, visible in GET /v1/messages; the link never sits readable in the table', async () => {
    const smtp = await startSmtpSink({ refuse: 1000 });
    servers.push(smtp);
    const server = await withServer({ smtpUrl: smtp.url, mailRetryScheduleS: [0.2] });
    const app = await server.createApp({ environment: 'production' });
    const email = uniqueEmail('fails');
    expect((await endUser(app, 'POST', '/v1/auth/magic-link/start', { email })).status).toBe(200);
    const queued = await messageOf(server, email);
    // Sealed with the master key: the one-time token is not in the row in clear, and production bodies hide links. The
    // sealed payload is base64url ciphertext (which may spell `ml_` by chance), never the JSON it seals.
    const { payload_sealed: sealed, ...clear } = queued;
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(JSON.stringify(clear)).not.toContain('ml_');
    const row = await until(async () => {
      const r = await messageOf(server, email);
      return r.status === 'failed' ? r : undefined;
    }, 'failed');
    expect(row).toMatchObject({ attempts: 2, payload_sealed: null });
    expect(row.last_error).toBeTruthy();
    const listed = (await app.rest('GET', '/v1/messages')).body.data.messages;
    expect(listed.find((m: { to: string }) => m.to === email)).toMatchObject({ status: 'failed' });
  });

  it('an address that cannot sign in gets no mail and no listed message, with the same answer', async () => {
    const smtp = await startSmtpSink();
    servers.push(smtp);
    const server = await withServer({ smtpUrl: smtp.url });
    const app = await server.createApp({ settings: { sign_up: 'closed' } });
    const email = uniqueEmail('unknown');
    const res = await endUser(app, 'POST', '/v1/auth/magic-link/start', { email });
    expect(res.status).toBe(200);
    expect((await messageOf(server, email)).status).toBe('suppressed');
    await expect(smtp.next(email, 1500)).rejects.toThrow(/no mail/);
    const listed = (await app.rest('GET', '/v1/messages')).body.data.messages;
    expect(listed.some((m: { to: string }) => m.to === email)).toBe(false);
  });
});

/** The real entry point, killed with SIGKILL while a mail waits; the next process sends it. */
// Real server processes, each opening an embedded database: more than the default 30 s when
// the suite's other files load the same two cores.
describe('durable across kill -9', { timeout: 600_000 }, () => {
  const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
  const children: ChildProcess[] = [];
  let dataDir: string;
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  async function start(port: number, smtpUrl: string): Promise<ChildProcess> {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_LOG_LEVEL: 'warn',
      GATEHOUSE_SMTP_URL: smtpUrl,
      GATEHOUSE_MAIL_RETRY_SCHEDULE: Array(100).fill('0.3').join(','),
    };
    delete env.DATABASE_URL;
    const child = spawn(process.execPath, [main], { env, stdio: ['ignore', 'ignore', 'ignore'] });
    children.push(child);
    await until(
      async () => ((await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined),
      'the server to start',
      BOOT_MS,
    );
    return child;
  }

  it('a magic link queued while SMTP is down is mailed by the next process after the first is killed', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-outbox-'));
    await seedEmbeddedDatabase(dataDir);
    // SMTP is down: its port is held by a listener that hangs up at once, so every attempt fails and the mail stays
    // queued. Held, not merely picked: a free port can meanwhile become some connection's ephemeral port (EADDRINUSE).
    const down = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
    const smtpPort = (down.address() as AddressInfo).port;
    const port = await freePort();
    const first = await start(port, `smtp://127.0.0.1:${smtpPort}`);
    const url = `http://127.0.0.1:${port}`;
    const token = (await readFile(join(dataDir, 'operator-token'), 'utf8')).trim();
    const created = await rawRequest(url, 'POST', '/v1/applications', {
      body: { name: 'Outbox' },
      headers: { authorization: `Bearer ${token}` },
    });
    const appId = created.body.data.application.id;
    const email = uniqueEmail('killed');
    const started = await rawRequest(url, 'POST', '/v1/auth/magic-link/start', {
      body: { email },
      headers: { 'x-application-id': appId },
    });
    expect(started.status).toBe(200);
    await new Promise((r) => setTimeout(r, 500));
    const killed = new Promise((resolve) => first.once('exit', resolve));
    first.kill('SIGKILL');
    await killed;

    await new Promise((resolve) => down.close(resolve));
    const smtp = await startSmtpSink({ port: smtpPort });
    servers.push(smtp);
    await start(port, smtp.url);
    const mail = await smtp.next(email);
    expect(mail.text).toContain('token=ml_');
  });
});

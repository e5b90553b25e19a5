import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { describe, expect, inject, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { BOOT_MS } from './helpers/limits.ts';
import { freePort } from './helpers/ports.ts';
import { processTestbed } from './helpers/processes.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';
import { rawRequest, until } from './helpers/server.ts';

/**
 * The real entry point as separate processes. On PostgreSQL two processes share the work (SKIP LOCKED), then one is
 * killed with SIGKILL while deliveries are in flight and the other finishes them after the lease. On PGlite (one
 * process per database) the one process is killed and started again.
 */
const onPostgres = Boolean(inject('databaseUrl'));
/** Events in the normal-case run: 1,000 on PostgreSQL as the issue asks; fewer on PGlite, whose writes are serial. */
const EVENTS = onPostgres ? 1000 : 150;
const IN_FLIGHT_EVENTS = 100;

const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const { children, cleanups, deployment: ownDeployment } = processTestbed();

/** A database of this file's own, its receiver timeout the deployment's (15 s): with 2 s, then 5 s, a two-core machine
 * under load 33 saw ordinary answers time out and be retried (109, then 33 of 150 events arrived twice). The claims of
 * the killed process lapse with the lease (the timeout + 10 s), which the in-flight phase waits out once. */
const deployment = () =>
  ownDeployment('hooks', {
    GATEHOUSE_ALLOW_INSECURE_WEBHOOKS: '1',
    GATEHOUSE_WEBHOOK_RETRY_SCHEDULE: Array(30).fill('0.5').join(','),
  });

async function start(env: NodeJS.ProcessEnv, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [main], { env: { ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'ignore'] });
  children.push(child);
  await until(
    async () => ((await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined),
    'the server to start',
    BOOT_MS,
  );
  return child;
}

/** Runs `count` calls, `width` at a time. */
async function inBatches(count: number, width: number, run: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) await run(next++);
    }),
  );
}

const userIdsOf = (receiver: Receiver, path: string) => receiver.at(path).map((r) => JSON.parse(r.body).data.id as string);

describe(`webhook delivery is durable (${onPostgres ? 'PostgreSQL, two processes' : 'PGlite, one process'}, kill -9)`, () => {
  it(`delivers ${EVENTS} events once each, then every event in flight after a kill -9`, { timeout: 600_000 }, async () => {
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const { env } = await deployment();
    const ports = [await freePort(), await freePort()];
    const first = await start(env, ports[0]!);
    const second = onPostgres ? await start(env, ports[1]!) : undefined;
    const urls = ports.slice(0, second ? 2 : 1).map((p) => `http://127.0.0.1:${p}`);

    const created = await rawRequest(urls[0]!, 'POST', '/v1/applications', {
      body: { name: 'Durable hooks' },
      headers: { authorization: `Bearer ${env.GATEHOUSE_OPERATOR_TOKEN}` },
    });
    expect(created.status).toBe(201);
    const appId = created.body.data.application.id;
    const auth = { authorization: `Bearer ${created.body.data.secret_key.secret}`, 'x-application-id': appId };
    const path = '/hooks/durable';
    const endpoint = await rawRequest(urls[0]!, 'POST', '/v1/webhooks', {
      body: { url: `${receiver.url}${path}`, event_types: ['user.created'] },
      headers: auth,
    });
    expect(endpoint.status).toBe(201);
    const wh = new Webhook(endpoint.body.data.secret);

    // The normal case: every event delivered once, none twice, whichever process sent it.
    const users: string[] = [];
    await inBatches(EVENTS, 16, async (i) => {
      const res = await rawRequest(urls[i % urls.length]!, 'POST', '/v1/users', {
        body: { primary_email: uniqueEmail('durable') },
        headers: auth,
      });
      expect(res.status).toBe(201);
      users.push(res.body.data.id);
    });
    await until(() => (new Set(userIdsOf(receiver, path)).size >= EVENTS ? true : undefined), `${EVENTS} deliveries`, 300_000);
    await new Promise((r) => setTimeout(r, 1000));
    const delivered = receiver.at(path);
    for (const request of delivered)
      expect(() => wh.verify(request.body, request.headers as Record<string, string>)).not.toThrow();
    expect(new Set(userIdsOf(receiver, path))).toEqual(new Set(users));
    const ids = delivered.map((r) => r.headers['webhook-id']);
    expect(ids.length, 'no event delivered twice in the normal case').toBe(new Set(ids).size);
    expect(ids.length).toBe(EVENTS);

    // In flight: a slow receiver, a kill -9 while deliveries are claimed; every event still arrives (at least once).
    receiver.state.delayMs = 300;
    const before = receiver.at(path).length;
    const more: string[] = [];
    await inBatches(IN_FLIGHT_EVENTS, 8, async (i) => {
      const res = await rawRequest(urls[i % urls.length]!, 'POST', '/v1/users', {
        body: { primary_email: uniqueEmail('inflight') },
        headers: auth,
      });
      expect(res.status).toBe(201);
      more.push(res.body.data.id);
    });
    await until(() => (receiver.at(path).length >= before + 5 ? true : undefined), 'some deliveries in flight');
    const killed = new Promise((resolve) => first.once('exit', resolve));
    first.kill('SIGKILL');
    await killed;
    receiver.state.delayMs = 0;
    if (!second) await start(env, ports[0]!);
    await until(
      () => {
        const got = new Set(userIdsOf(receiver, path));
        return more.every((id) => got.has(id)) ? true : undefined;
      },
      'every in-flight event after the kill',
      120_000,
    );
    for (const request of receiver.at(path).slice(before))
      expect(() => wh.verify(request.body, request.headers as Record<string, string>)).not.toThrow();
  });
});

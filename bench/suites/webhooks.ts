/**
 * webhooks: deliveries per second from the outbox to a local receiver on PostgreSQL, Gatehouse's worker against
 * `minimal/webhooks.ts` (one table, `SKIP LOCKED`, node:http keep-alive, HMAC signing) in the same run, each draining
 * the same backlog; then the time from an API change (`POST /v1/users`) to the receipt of its `user.created` delivery
 * at a steady 100 changes per second. Targets: throughput ≥ 0.7× the minimal sender; that latency's p99 ≤ 1 s.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import { Webhook } from 'standardwebhooks';
import { config, log, onCleanup, sleep } from '../harness/env.ts';
import { api, startGatehouse } from '../harness/gatehouse.ts';
import { type ScratchDatabase, scratchDatabase } from '../harness/postgres.ts';
import { type ServerProcess, startServer } from '../harness/processes.ts';
import { limitTarget, num, ratioTarget, type SuiteResult } from '../harness/report.ts';

const BACKLOG = config.webhookEvents;
const LATENCY_RATE = 100;
const DRAIN_TIMEOUT_MS = 300_000;

/** The receiver: verifies every delivery (Standard Webhooks) and keeps when each `webhook-id` first arrived. */
async function startReceiver() {
  let verifier: Webhook | undefined;
  const arrivals = new Map<string, number>();
  const bodies: Array<(body: { type: string; data: { id?: string } }, at: number) => void> = [];
  let duplicates = 0;
  let refused = 0;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = performance.now();
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        verifier!.verify(body, request.headers as Record<string, string>);
      } catch {
        refused++;
        response.writeHead(400).end();
        return;
      }
      const id = String(request.headers['webhook-id']);
      if (arrivals.has(id)) duplicates++;
      else arrivals.set(id, at);
      for (const listener of bodies) listener(JSON.parse(body), at);
      response.end('ok');
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onCleanup('close the webhook receiver', () => new Promise((resolve) => server.close(resolve)));
  const address = server.address();
  if (!address || typeof address !== 'object') throw new Error('no receiver port');
  return {
    url: `http://127.0.0.1:${address.port}/hooks`,
    /** Forgets what arrived and verifies with `secret` from now on. */
    reset(secret: string) {
      verifier = new Webhook(secret);
      arrivals.clear();
      bodies.length = 0;
      duplicates = 0;
      refused = 0;
    },
    arrivals,
    onBody: (listener: (body: { type: string; data: { id?: string } }, at: number) => void) => bodies.push(listener),
    counts: () => ({ duplicates, refused }),
  };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** A user record like the API's, as the backlog's event data. */
const userData = `jsonb_build_object('id', gen_random_uuid(), 'primary_email', 'user' || i || '@bench.example.com',
  'email_verified', false, 'status', 'active', 'profile', '{}'::jsonb, 'created_at', now(), 'updated_at', now())`;

export interface Drain {
  sender: string;
  events: number;
  /** Deliveries per second from the 10th to the 90th percentile of arrivals (the steady state). */
  perSecond: number;
  totalSeconds: number;
  senderCpuMs: number;
  databaseCpuMs: number;
  duplicates: number;
}

/**
 * Writes `BACKLOG` due rows with `insert` (one statement: they become visible together) and waits for all of them at
 * the receiver; CPU per delivery of the sender process (the whole drain) and the database backends (from the first arrival).
 */
async function drain(
  label: string,
  db: ScratchDatabase,
  sender: ServerProcess,
  receiver: Receiver,
  insert: string,
): Promise<Drain> {
  const cpuBefore = sender.cpuSeconds();
  const started = performance.now();
  await db.client.query(insert, [BACKLOG]);
  // The database's CPU is read from the first arrival on: the sender's pool opens its connections lazily.
  let dbFrom: { cpu: number; arrived: number } | undefined;
  while (receiver.arrivals.size < BACKLOG) {
    if (performance.now() - started > DRAIN_TIMEOUT_MS)
      throw new Error(`${label}: ${receiver.arrivals.size} of ${BACKLOG} deliveries arrived in ${DRAIN_TIMEOUT_MS / 1000} s`);
    if (receiver.counts().refused) throw new Error(`${label}: the receiver refused a signature`);
    if (!dbFrom && receiver.arrivals.size > 0) {
      await db.refreshBackends();
      dbFrom = { cpu: db.cpuSeconds(), arrived: receiver.arrivals.size };
    }
    await sleep(20);
  }
  const seconds = (performance.now() - started) / 1000;
  const senderCpu = sender.cpuSeconds() - cpuBefore;
  const dbCpuMs = dbFrom ? ((db.cpuSeconds() - dbFrom.cpu) * 1000) / (BACKLOG - dbFrom.arrived) : Number.NaN;
  await sleep(1000); // anything sent twice arrives meanwhile
  const times = [...receiver.arrivals.values()].sort((a, b) => a - b);
  const low = Math.floor(BACKLOG * 0.1);
  const high = Math.floor(BACKLOG * 0.9);
  const perSecond = ((high - low) * 1000) / (times[high]! - times[low]!);
  log(`webhooks: ${label} delivered ${BACKLOG} in ${num(seconds, 1)} s, ${num(perSecond)} per second (steady)`);
  return {
    sender: label,
    events: BACKLOG,
    perSecond,
    totalSeconds: seconds,
    senderCpuMs: (senderCpu * 1000) / BACKLOG,
    databaseCpuMs: dbCpuMs,
    duplicates: receiver.counts().duplicates,
  };
}

/** `POST /v1/users` at `LATENCY_RATE` per second for the window: ms from each request's start to its delivery. */
async function apiToDelivery(url: string, sk: Record<string, string>, receiver: Receiver) {
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  const answered: number[] = [];
  const early = new Map<string, number>();
  receiver.onBody((body, at) => {
    if (body.type !== 'user.created' || !body.data.id) return;
    const sent = sentAt.get(body.data.id);
    if (sent === undefined) early.set(body.data.id, at);
    else latencies.push(at - sent);
  });
  const total = LATENCY_RATE * config.durationSeconds;
  const tag = randomBytes(4).toString('hex');
  const requests: Promise<void>[] = [];
  const started = performance.now();
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / LATENCY_RATE;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    const sent = performance.now();
    requests.push(
      api(url, 'POST', '/v1/users', sk, { primary_email: `lat-${tag}-${i}@bench.example.com` }, 201).then((data) => {
        answered.push(performance.now() - sent);
        const id = (data as { id: string }).id;
        const arrived = early.get(id);
        if (arrived !== undefined) latencies.push(arrived - sent);
        else sentAt.set(id, sent);
      }),
    );
  }
  await Promise.all(requests);
  const deadline = performance.now() + 60_000;
  while (latencies.length < total) {
    if (performance.now() > deadline) throw new Error(`only ${latencies.length} of ${total} changes were delivered`);
    await sleep(50);
  }
  const percentiles = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
    return { p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1]! };
  };
  return { count: total, ...percentiles(latencies), api: percentiles(answered) };
}

export async function webhooksSuite(): Promise<SuiteResult> {
  const db = await scratchDatabase();
  const receiver = await startReceiver();
  const { server, app } = await startGatehouse('Gatehouse', db.url, { env: { GATEHOUSE_ALLOW_INSECURE_WEBHOOKS: '1' } });
  const endpoint = await api(server.url, 'POST', '/v1/webhooks', app.sk, { url: receiver.url, event_types: [] }, 201);
  receiver.reset(endpoint.secret);

  log(`webhooks: ${LATENCY_RATE} API changes per second for ${config.durationSeconds} s`);
  const latency = await apiToDelivery(server.url, app.sk, receiver);
  log(`webhooks: API change to delivery p50 ${num(latency.p50)} ms, p99 ${num(latency.p99)} ms`);

  receiver.reset(endpoint.secret);
  const gatehouse = await drain(
    'Gatehouse',
    db,
    server,
    receiver,
    `insert into events (id, application_id, type, data, created_at, actor_type, actor_id)
       select gen_random_uuid(), '${app.id}', 'user.created', ${userData}, now(), 'system', 'gatehouse' from generate_series(1, $1) i`,
  );
  await server.stop();

  await db.client.query(
    `create table minimal_outbox (id uuid primary key, type text not null, data jsonb not null, status text not null default 'pending',
       attempts int not null default 0, locked_until timestamptz, created_at timestamptz not null default now(), sent_at timestamptz);
     create index minimal_outbox_pending on minimal_outbox (created_at) where status = 'pending'`,
  );
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const minimal = await startServer(
    'minimal',
    { DATABASE_URL: db.url, MINIMAL_SECRET: secret, MINIMAL_TARGET: receiver.url },
    'bench/minimal/webhooks.ts',
  );
  receiver.reset(secret);
  const baseline = await drain(
    'minimal',
    db,
    minimal,
    receiver,
    `insert into minimal_outbox (id, type, data) select gen_random_uuid(), 'user.created', ${userData} from generate_series(1, $1) i`,
  );
  await minimal.stop();

  const row = (d: Drain) =>
    `| ${d.sender} | ${num(d.events)} | ${num(d.totalSeconds, 1)} | ${num(d.perSecond)} | ${num(d.senderCpuMs, 3)} | ` +
    `${num(d.databaseCpuMs, 3)} | ${num(d.duplicates)} |`;
  return {
    title: 'Webhooks: outbox deliveries per second, and API change to delivery',
    software: [db.version],
    targets: [
      ratioTarget('deliveries per second (outbox → local receiver)', gatehouse.perSecond, baseline.perSecond, '/s', '≥', 0.7),
      limitTarget(`API change → delivery p99 at ${LATENCY_RATE} changes/s`, latency.p99, 'ms', 1000),
    ],
    method: [
      'Each sender is a child process on 127.0.0.1, one after the other on the same scratch database; the receiver is ' +
        'node:http in the benchmark process and verifies every delivery with `standardwebhooks` (a refused signature ' +
        'fails the run). Gatehouse: one application, one endpoint for every event type, ' +
        '`GATEHOUSE_ALLOW_INSECURE_WEBHOOKS=1` (an `http://127.0.0.1` receiver).',
      `Throughput: ${num(BACKLOG)} due rows written by one statement (Gatehouse: \`user.created\` rows in \`events\`, fanned ` +
        'out to `webhook_deliveries` by its trigger; minimal: rows in its own `minimal_outbox`), then the time until every ' +
        'one has arrived. Deliveries per second are counted from the 10th to the 90th percentile of arrivals (the steady ' +
        'state); CPU per delivery: the sender process over the whole drain, the scratch database\u2019s backends from the first ' +
        'arrival on.',
      '`minimal/webhooks.ts`: one table, a batch of 32 claimed with `FOR UPDATE SKIP LOCKED` and a lease in one ' +
        'statement, sent concurrently over node:http with a keep-alive agent, signed HMAC-SHA256 (Standard Webhooks), ' +
        'one UPDATE per delivered row: no attempt log, no retry schedule, no SSRF guard, no secret decryption.',
      `Latency: \`POST /v1/users\` at ${LATENCY_RATE} per second (open loop) for ${config.durationSeconds} s; for each, the ` +
        'time from sending the request to the arrival of its `user.created` delivery (matched on the user id).',
    ],
    measurements: [],
    details: [
      [
        '| sender | events | drained in s | deliveries/s (steady) | sender CPU ms/delivery | PostgreSQL CPU ms/delivery | duplicates |',
        '|---|---:|---:|---:|---:|---:|---:|',
        row(gatehouse),
        row(baseline),
      ].join('\n'),
      [
        '| scenario | changes | p50 ms | p99 ms | max ms |',
        '|---|---:|---:|---:|---:|',
        `| \`POST /v1/users\` → \`user.created\` delivered, ${LATENCY_RATE}/s | ${num(latency.count)} | ${num(latency.p50)} | ` +
          `${num(latency.p99)} | ${num(latency.max)} |`,
        `| \`POST /v1/users\` answered (the API alone), ${LATENCY_RATE}/s | ${num(latency.count)} | ${num(latency.api.p50)} | ` +
          `${num(latency.api.p99)} | ${num(latency.api.max)} |`,
      ].join('\n'),
    ],
    notes: [],
  };
}

/**
 * The baseline of the webhooks suite: the least an outbox sender can do. `node bench/minimal/webhooks.ts`, configured
 * by PORT, HOST (it answers `GET /readyz` there), DATABASE_URL (the scratch database, with the benchmark's
 * `minimal_outbox` table), MINIMAL_SECRET (`whsec_…`) and MINIMAL_TARGET (the receiver's URL).
 *
 * One table; a batch of 32 due rows claimed with `FOR UPDATE SKIP LOCKED` and a lease in one statement, sent
 * concurrently over node:http with a keep-alive agent, each signed HMAC-SHA256 the Standard Webhooks way, then marked
 * sent with one UPDATE per row (one round trip; no attempt log, no retry schedule, no SSRF guard). The same batch size
 * and the same one-batch-at-a-time loop as Gatehouse's worker.
 */
import { createHmac } from 'node:crypto';
import http from 'node:http';
import pg from 'pg';

const env = (name: string) => process.env[name] ?? `${name} missing`;
const BATCH = 32;
const POLL_MS = 500;
const pool = new pg.Pool({ connectionString: env('DATABASE_URL'), max: 20 });
const key = Buffer.from(env('MINIMAL_SECRET').replace(/^whsec_/, ''), 'base64');
const target = new URL(env('MINIMAL_TARGET'));
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

interface Row {
  id: string;
  type: string;
  data: unknown;
  created_at: Date;
}

const claim = async () =>
  (
    await pool.query<Row>(
      `update minimal_outbox set locked_until = now() + interval '30 seconds', attempts = attempts + 1
        where id in (select id from minimal_outbox where status = 'pending' and (locked_until is null or locked_until < now())
                      order by created_at limit ${BATCH} for update skip locked)
        returning id, type, data, created_at`,
    )
  ).rows;

function post(row: Row): Promise<number> {
  const body = JSON.stringify({ type: row.type, timestamp: row.created_at.toISOString(), data: row.data });
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = createHmac('sha256', key).update(`${row.id}.${timestamp}.${body}`).digest('base64');
  return new Promise((resolve, reject) => {
    const request = http.request(
      target,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'webhook-id': row.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': `v1,${signature}`,
        },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

async function deliver(row: Row) {
  const status = await post(row).catch(() => 0);
  // A failure keeps its lease: the row is sent again when it runs out.
  if (status >= 200 && status < 300)
    await pool.query(`update minimal_outbox set status = 'sent', sent_at = now(), locked_until = null where id = $1`, [row.id]);
}

async function loop() {
  for (;;) {
    const rows = await claim().catch(() => []);
    await Promise.all(rows.map(deliver));
    if (rows.length < BATCH) await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

http
  .createServer((request, response) => {
    pool.query('select 1').then(
      () => response.end(request.url === '/readyz' ? 'ok' : ''),
      () => response.writeHead(503).end(),
    );
  })
  .listen(Number(env('PORT')), env('HOST'));
void loop();

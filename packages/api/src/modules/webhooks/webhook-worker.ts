import { Webhook } from 'standardwebhooks';
import type { Services } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { newId } from '../../lib/ids.ts';
import { PollingWorker } from '../../lib/polling-worker.ts';
import { guardedRequest, OutboundBlockedError } from '../../lib/ssrf.ts';
import { disableEndpoint, sealContext, webhookSettings } from './webhooks.service.ts';

/**
 * Webhook delivery: a worker in every process. Delivery rows are created by the fan-out trigger on `events` in the
 * event's own transaction; the worker claims due rows with `FOR UPDATE SKIP LOCKED` and a lease (so any number of
 * processes share the work and each claim belongs to one of them), sends each signed per Standard Webhooks through
 * the SSRF guard, and records the attempt. A process killed mid-delivery leaves its rows claimable again once the
 * lease has passed: at-least-once, never lost (a receiver deduplicates on `webhook-id`, the event id).
 */

/** Seconds before each retry: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h; after the last failure the delivery is `failed`. */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE_S = [5, 300, 1800, 7200, 18000, 36000, 36000];
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 15_000;
/** An endpoint whose every attempt has failed for this long is disabled (`webhook_endpoint.disabled`, reason `failing`). */
export const FAILING_DISABLE_MS = 5 * 24 * 60 * 60 * 1000;
const BATCH = 32;
const POLL_MS = 500;
const NUDGE_MS = 10;
const EXCERPT_BYTES = 1024;
/** A `Retry-After` is honoured up to this (a receiver cannot park a delivery for ever). */
const MAX_RETRY_AFTER_S = 36000;

export interface WebhookWorkerOptions {
  /** `GATEHOUSE_ALLOW_INSECURE_WEBHOOKS=1`: also `http` and loopback receivers. */
  allowInsecure?: boolean;
  /** `GATEHOUSE_WEBHOOK_RETRY_SCHEDULE`. */
  retryScheduleS?: readonly number[];
  /** `GATEHOUSE_WEBHOOK_TIMEOUT_MS` (tests); default 15 s. */
  timeoutMs?: number;
}

interface ClaimedDelivery {
  id: string;
  attempts: number;
  endpoint_id: string;
  event_id: string;
  url: string;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_valid: boolean | null;
  failing_since: Date | string | null;
  type: string;
  data: Record<string, unknown> | string;
  event_created_at: Date | string;
}

interface Outcome {
  ok: boolean;
  status: number | null;
  error: string | null;
  excerpt: string | null;
  retryAfterS?: number;
  gone?: boolean;
}

/** Printable text only, at most 1 KB (UTF-8), for the attempt log. */
export function sanitiseExcerpt(body: Buffer): string | null {
  if (!body.length) return null;
  const decoded = body
    .subarray(0, EXCERPT_BYTES)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
  // Control characters (but tab and newline) are dropped: the excerpt is shown in terminals and dashboards.
  let text = [...decoded].filter((c) => c === '\t' || c === '\n' || (c >= ' ' && c !== '\u007F')).join('');
  while (Buffer.byteLength(text) > EXCERPT_BYTES) text = text.slice(0, -1);
  return text;
}

/** Seconds of a `Retry-After` (delta-seconds or an HTTP date), or undefined. */
export function retryAfterSeconds(value: string | string[] | undefined): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (!raw) return undefined;
  if (/^\d+$/.test(raw.trim())) return Math.min(Number(raw.trim()), MAX_RETRY_AFTER_S);
  const date = Date.parse(raw);
  if (Number.isNaN(date)) return undefined;
  return Math.min(Math.max(0, Math.ceil((date - Date.now()) / 1000)), MAX_RETRY_AFTER_S);
}

const errorCode = (error: unknown): string => {
  if (error instanceof OutboundBlockedError) return error.code;
  const code = (error as { code?: unknown })?.code;
  return String(typeof code === 'string' ? code : ((error as Error)?.name ?? 'error')).slice(0, 64);
};

export class WebhookWorker {
  readonly #poller: PollingWorker;

  readonly services: Services;
  readonly allowInsecure: boolean;
  readonly retryScheduleS: readonly number[];
  readonly timeoutMs: number;
  /** Longer than the whole attempt, so a live process never loses its claim mid-send. */
  readonly leaseS: number;

  constructor(services: Services, options: WebhookWorkerOptions = {}) {
    this.services = services;
    this.allowInsecure = options.allowInsecure ?? false;
    this.retryScheduleS = options.retryScheduleS ?? DEFAULT_WEBHOOK_RETRY_SCHEDULE_S;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS;
    this.leaseS = Math.ceil(this.timeoutMs / 1000) + 10;
    this.#poller = new PollingWorker({
      pollMs: POLL_MS,
      nudgeMs: NUDGE_MS,
      runBatch: () => this.#runBatch(),
      onError: (error) => this.services.log.warn({ err: { type: (error as Error)?.name } }, 'webhook delivery poll failed'),
    });
  }

  start(): void {
    webhookSettings.set(this.services, { allowInsecure: this.allowInsecure, nudge: () => this.nudge() });
    this.#poller.start();
  }

  nudge(): void {
    this.#poller.nudge();
  }

  /** Waits for the batch in hand; what is not finished stays claimable by another process after the lease. */
  stop(): Promise<void> {
    return this.#poller.stop();
  }

  /** Claims one batch and sends it concurrently; answers whether it was full. */
  async #runBatch(): Promise<boolean> {
    const claimed = await this.#claim();
    await Promise.all(claimed.map((row) => this.#deliver(row)));
    return claimed.length === BATCH;
  }

  /** Claims due deliveries of active endpoints and reads what sending them needs, in one statement. */
  #claim(): Promise<ClaimedDelivery[]> {
    const em = this.services.orm.em.fork() as EntityManager;
    return em.execute<ClaimedDelivery[]>(
      `with claimed as (
         update webhook_deliveries set locked_until = now() + interval '${this.leaseS} seconds', attempts = attempts + 1
          where id in (select d.id from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
                        where d.status = 'pending' and d.next_attempt_at <= now()
                          and (d.locked_until is null or d.locked_until < now()) and e.status = 'active'
                        order by d.next_attempt_at limit ${BATCH} for update of d skip locked)
          returning id, attempts, endpoint_id, event_id)
       select c.id, c.attempts, c.endpoint_id, c.event_id, e.url, e.secret_sealed, e.previous_secret_sealed,
              e.previous_secret_expires_at > now() as previous_valid, e.failing_since,
              ev.type, ev.data, ev.created_at as event_created_at
         from claimed c join webhook_endpoints e on e.id = c.endpoint_id join events ev on ev.id = c.event_id`,
    );
  }

  async #deliver(row: ClaimedDelivery) {
    const started = Date.now();
    const attemptedAt = new Date(started);
    let outcome: Outcome;
    try {
      outcome = await this.#send(row);
    } catch (error) {
      outcome = { ok: false, status: null, error: errorCode(error), excerpt: null };
    }
    const durationMs = Date.now() - started;
    try {
      await this.#record(row, outcome, attemptedAt, durationMs);
    } catch (error) {
      // The lease runs out and the delivery is attempted again: at-least-once.
      this.services.log.warn({ err: { type: (error as Error)?.name } }, 'recording a webhook attempt failed');
    }
  }

  async #send(row: ClaimedDelivery): Promise<Outcome> {
    const secrets = [this.services.secretBox.decrypt(row.secret_sealed, sealContext(row.endpoint_id))];
    if (row.previous_secret_sealed && row.previous_valid)
      secrets.push(this.services.secretBox.decrypt(row.previous_secret_sealed, sealContext(row.endpoint_id)));
    const data = typeof row.data === 'string' ? JSON.parse(row.data) : row.data;
    const body = JSON.stringify({ type: row.type, timestamp: new Date(row.event_created_at).toISOString(), data });
    const now = new Date();
    // Several `v1,` signatures separated by spaces: each secret of the rotation window signs (Standard Webhooks).
    const signature = secrets.map((secret) => new Webhook(secret).sign(row.event_id, now, body)).join(' ');
    const response = await guardedRequest(row.url, {
      allowInsecure: this.allowInsecure,
      timeoutMs: this.timeoutMs,
      keepBytes: EXCERPT_BYTES,
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Gatehouse-Webhooks/1',
        'webhook-id': row.event_id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': signature,
      },
    });
    const excerpt = sanitiseExcerpt(response.body);
    const status = response.status;
    if (status >= 200 && status < 300) return { ok: true, status, error: null, excerpt };
    return {
      ok: false,
      status,
      error: status >= 300 && status < 400 ? 'redirect_not_followed' : `http_${status}`,
      excerpt,
      gone: status === 410,
      retryAfterS: status === 429 || status === 503 ? retryAfterSeconds(response.headers['retry-after']) : undefined,
    };
  }

  async #record(row: ClaimedDelivery, outcome: Outcome, attemptedAt: Date, durationMs: number) {
    const em = this.services.orm.em.fork() as EntityManager;
    const attempt = [newId(), row.id, attemptedAt, outcome.status, durationMs, outcome.excerpt, outcome.error];
    const insertAttempt = `insert into webhook_attempts (id, delivery_id, attempted_at, response_status, duration_ms, response_excerpt, error)
                           values (?, ?, ?, ?, ?, ?, ?)`;
    if (outcome.ok) {
      await em.transactional(async (tx) => {
        await tx.execute(insertAttempt, attempt);
        await tx.execute(
          `update webhook_deliveries set status = 'succeeded', response_status = ?, last_attempt_at = ?, next_attempt_at = null,
                  locked_until = null, last_error = null where id = ?`,
          [outcome.status, attemptedAt, row.id],
        );
        await tx.execute(`update webhook_endpoints set failing_since = null where id = ? and failing_since is not null`, [
          row.endpoint_id,
        ]);
      });
      return;
    }
    const scheduled = this.retryScheduleS[row.attempts - 1];
    const delayS = outcome.gone ? undefined : scheduled === undefined ? undefined : (outcome.retryAfterS ?? scheduled);
    await em.transactional(async (tx) => {
      await tx.execute(insertAttempt, attempt);
      await tx.execute(
        `update webhook_deliveries set status = ?, response_status = ?, last_attempt_at = ?, locked_until = null, last_error = ?,
                next_attempt_at = ${delayS === undefined ? 'null' : `now() + interval '1 millisecond' * ${Math.round(delayS * 1000)}`}
          where id = ?`,
        [delayS === undefined ? 'failed' : 'pending', outcome.status, attemptedAt, outcome.error, row.id],
      );
      await tx.execute(`update webhook_endpoints set failing_since = coalesce(failing_since, ?) where id = ?`, [
        attemptedAt,
        row.endpoint_id,
      ]);
    });
    const failingSince = row.failing_since ? new Date(row.failing_since).getTime() : attemptedAt.getTime();
    if (outcome.gone) await disableEndpoint(em, row.endpoint_id, 'gone');
    else if (attemptedAt.getTime() - failingSince >= FAILING_DISABLE_MS) await disableEndpoint(em, row.endpoint_id, 'failing');
  }
}

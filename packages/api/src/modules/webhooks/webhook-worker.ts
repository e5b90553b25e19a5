import { Webhook } from 'standardwebhooks';
import type { Services } from '../../context.ts';
import { errorName, fieldOf } from '../../errors.ts';
import { newId } from '../../lib/ids.ts';
import { PollingWorker } from '../../lib/polling-worker.ts';
import { guardedRequest, OutboundBlockedError } from '../../lib/ssrf.ts';
import { EventEntity } from '../events/event.entity.ts';
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
  /** `GATEHOUSE_ALLOW_INSECURE_WEBHOOKS=1`: also `http` and loopback receivers, of development applications. */
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
  /** The endpoint's application is a development one: only those may use the insecure development setting. */
  development: boolean;
}

interface Attempt {
  row: ClaimedDelivery;
  outcome: Outcome;
  attemptedAt: Date;
  durationMs: number;
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
  const code = fieldOf(error, 'code');
  return String(typeof code === 'string' ? code : (errorName(error) ?? 'error')).slice(0, 64);
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
      onError: (error) => {
        if (!this.services.outage.absorb(error))
          this.services.log.warn({ err: { type: errorName(error) } }, 'webhook delivery poll failed');
      },
    });
  }

  start(): void {
    webhookSettings.set(this.services, { allowInsecure: this.allowInsecure, nudge: () => this.nudge() });
    // An event written by this process is delivered at once, not at the next poll: the fan-out trigger queued its
    // deliveries in the same flush (if its transaction has not committed when the worker looks, the poll finds them).
    this.services.orm.em.getEventManager().registerSubscriber({
      getSubscribedEntities: () => [EventEntity],
      afterCreate: () => this.nudge(),
    });
    this.#poller.start();
  }

  nudge(): void {
    this.#poller.nudge();
  }

  /** Waits for the batch in hand; what is not finished stays claimable by another process after the lease. */
  stop(): Promise<void> {
    return this.#poller.stop();
  }

  /**
   * Claims one batch, sends it concurrently, then records every attempt of the batch in one transaction (three
   * statements whatever the batch's size); answers whether it was full.
   */
  async #runBatch(): Promise<boolean> {
    const claimed = await this.#claim();
    const attempts: Attempt[] = [];
    // In the order the answers come back: an endpoint's failing run is judged on its latest outcome.
    await Promise.all(claimed.map(async (row) => attempts.push(await this.#attempt(row))));
    if (attempts.length) {
      try {
        await this.#record(attempts);
      } catch (error) {
        // The leases run out and the deliveries are attempted again: at-least-once.
        this.services.log.warn({ err: { type: errorName(error) } }, 'recording webhook attempts failed');
        return false;
      }
      await this.#disableFailing(attempts);
    }
    return claimed.length === BATCH;
  }

  /** Claims due deliveries of active endpoints and reads what sending them needs, in one statement. */
  #claim(): Promise<ClaimedDelivery[]> {
    const em = this.services.orm.em.fork();
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
              ev.type, ev.data, ev.created_at as event_created_at, a.environment = 'development' as development
         from claimed c join webhook_endpoints e on e.id = c.endpoint_id join events ev on ev.id = c.event_id
         join applications a on a.id = e.application_id`,
    );
  }

  async #attempt(row: ClaimedDelivery): Promise<Attempt> {
    const started = Date.now();
    let outcome: Outcome;
    try {
      outcome = await this.#send(row);
    } catch (error) {
      outcome = { ok: false, status: null, error: errorCode(error), excerpt: null };
    }
    return { row, outcome, attemptedAt: new Date(started), durationMs: Date.now() - started };
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
      allowInsecure: this.allowInsecure && row.development,
      dnsServers: this.services.dnsServers,
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

  /** Each attempt's row, its delivery's outcome and its endpoint's failing run, in one transaction. */
  async #record(attempts: Attempt[]) {
    const em = this.services.orm.em.fork();
    const deliveries = attempts.map((attempt) => {
      const { row, outcome } = attempt;
      const scheduled = this.retryScheduleS[row.attempts - 1];
      const delayS = outcome.ok || outcome.gone || scheduled === undefined ? undefined : (outcome.retryAfterS ?? scheduled);
      const status = outcome.ok ? 'succeeded' : delayS === undefined ? 'failed' : 'pending';
      return { ...attempt, status, delayMs: delayS === undefined ? null : Math.round(delayS * 1000) };
    });
    // Per endpoint, folded in answer order: a success ends the failing run; a failure starts one unless one runs.
    const runs = new Map<string, { restart: boolean; since: Date | null }>();
    for (const { row, outcome, attemptedAt } of attempts) {
      const run = runs.get(row.endpoint_id);
      if (outcome.ok) runs.set(row.endpoint_id, { restart: true, since: null });
      else if (!run) runs.set(row.endpoint_id, { restart: false, since: attemptedAt });
      else if (!run.since) run.since = attemptedAt;
    }
    // Each statement takes the batch as one JSON array of rows (a parameter, never spliced into the text).
    const rows = JSON.stringify(
      deliveries.map(({ row, outcome, attemptedAt, durationMs, status, delayMs }) => ({
        attempt_id: newId(),
        id: row.id,
        attempted_at: attemptedAt.toISOString(),
        response_status: outcome.status,
        duration_ms: durationMs,
        excerpt: outcome.excerpt,
        error: outcome.error,
        status,
        delay_ms: delayMs,
      })),
    );
    const endpoints = JSON.stringify(
      [...runs].map(([id, run]) => ({ id, restart: run.restart, since: run.since?.toISOString() ?? null })),
    );
    await em.transactional(async (tx) => {
      await tx.execute(
        `insert into webhook_attempts (id, delivery_id, attempted_at, response_status, duration_ms, response_excerpt, error)
         select v.attempt_id, v.id, v.attempted_at, v.response_status, v.duration_ms, v.excerpt, v.error
           from jsonb_to_recordset(?::jsonb) as v (attempt_id uuid, id uuid, attempted_at timestamptz, response_status int,
                                                   duration_ms int, excerpt text, error varchar(64))`,
        [rows],
      );
      await tx.execute(
        `update webhook_deliveries d
            set status = v.status, response_status = v.response_status, last_attempt_at = v.attempted_at, locked_until = null,
                last_error = v.error,
                next_attempt_at = case when v.delay_ms is null then null else now() + interval '1 millisecond' * v.delay_ms end
           from jsonb_to_recordset(?::jsonb)
                  as v (id uuid, status varchar(16), response_status int, attempted_at timestamptz, error varchar(64), delay_ms bigint)
          where d.id = v.id`,
        [rows],
      );
      await tx.execute(
        `update webhook_endpoints e
            set failing_since = case when v.restart then v.since else coalesce(e.failing_since, v.since) end
           from jsonb_to_recordset(?::jsonb) as v (id uuid, restart boolean, since timestamptz)
          where e.id = v.id
            and e.failing_since is distinct from (case when v.restart then v.since else coalesce(e.failing_since, v.since) end)`,
        [endpoints],
      );
    });
  }

  /** A 410 disables its endpoint at once; so does a failure that ends five days of nothing but failures. */
  async #disableFailing(attempts: Attempt[]) {
    const em = this.services.orm.em.fork();
    for (const { row, outcome, attemptedAt } of attempts) {
      if (outcome.ok) continue;
      const failingSince = row.failing_since ? new Date(row.failing_since).getTime() : attemptedAt.getTime();
      try {
        if (outcome.gone) await disableEndpoint(em, row.endpoint_id, 'gone');
        else if (attemptedAt.getTime() - failingSince >= FAILING_DISABLE_MS)
          await disableEndpoint(em, row.endpoint_id, 'failing');
      } catch (error) {
        // The next failed attempt tries again.
        this.services.log.warn({ err: { type: errorName(error) } }, 'disabling a webhook endpoint failed');
      }
    }
  }
}

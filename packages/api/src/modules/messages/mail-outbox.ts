import type { Services } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { errorName, fieldOf } from '../../errors.ts';
import { deleteInBatches, type PurgeStep, retentionDays } from '../../lib/housekeeping.ts';
import { newId } from '../../lib/ids.ts';
import type { OutgoingMail } from '../../lib/mailer.ts';
import { PollingWorker } from '../../lib/polling-worker.ts';
import { MessageEntity } from './message.entity.ts';

/**
 * Mail goes through a durable outbox: the message row is written by the request (in its transaction when it has
 * one), with the rendered mail sealed by the master key, and a worker in every process sends it. A crash between
 * the answer and the send loses nothing: the next process to look sends it. Rows are claimed with
 * `FOR UPDATE SKIP LOCKED` and a lease, so several processes share the work, and a process killed mid-send leaves
 * its rows claimable again when the lease runs out (at-least-once).
 */

/** Seconds between attempts after each failure; after the last, the message is `failed`. */
export const DEFAULT_MAIL_RETRY_SCHEDULE_S = [10, 60, 300, 1800, 7200];
const LEASE_S = 60;
const BATCH = 20;
const POLL_MS = 1000;
/**
 * A just-queued row is looked for this soon: its transaction has committed by then (or the next poll finds it), and the
 * answer that queued it has gone, on a busy machine too — the send (rendering, SMTP) never weighs on that answer, so an
 * answer that queued a mail takes as long as one that did not (magic-link start, known and unknown addresses).
 */
const NUDGE_MS = 100;

const sealContext = (id: string) => `mail:${id}`;

export interface QueuedMail {
  applicationId: string;
  templateKey: string;
  channel: string;
  to: string;
  /** What the message log shows (for production applications, rendered without links). */
  shown: { subject: string | null; text: string };
  /** What is sent; sealed at rest until sent (it can hold a one-time link). */
  mail: OutgoingMail & { consoleText: string };
  /**
   * `queued`: sent by the worker. `suppressed`: written only so that every caller does the same work (a magic link
   * to an address that cannot sign in), never sent, never listed. `not_delivered`: handed to the developer.
   */
  status: 'queued' | 'suppressed' | 'not_delivered';
}

/** Adds the message to `em`'s unit of work (the caller flushes) and wakes this process's worker. */
export function queueMail(em: EntityManager, services: Services, input: QueuedMail) {
  const id = newId();
  const sealed = services.secretBox.encrypt(JSON.stringify(input.mail), sealContext(id));
  const message = em.create(MessageEntity, {
    id,
    application: input.applicationId,
    templateKey: input.templateKey,
    channel: input.channel,
    to: input.to,
    subject: input.shown.subject,
    body: input.shown.text,
    status: input.status,
    payloadSealed: input.status === 'queued' ? sealed : null,
    attempts: 0,
    nextAttemptAt: input.status === 'queued' ? new Date() : null,
    lockedUntil: null,
    lastError: null,
    sentAt: null,
  });
  // Every message wakes the worker, a suppressed one too (it then finds nothing to send): an answer that queued a mail
  // and one that suppressed it leave the same work behind (magic-link start answers known and unknown addresses alike).
  mailWorkers.get(services)?.nudge();
  return message;
}

interface ClaimedRow {
  id: string;
  attempts: number;
  payload_sealed: string;
}

/** The outbox worker of one process. `stop()` waits for the batch in hand. */
export class MailWorker {
  readonly #poller: PollingWorker;

  readonly services: Services;
  readonly retryScheduleS: readonly number[];

  constructor(services: Services, retryScheduleS: readonly number[] = DEFAULT_MAIL_RETRY_SCHEDULE_S) {
    this.services = services;
    this.retryScheduleS = retryScheduleS;
    this.#poller = new PollingWorker({
      pollMs: POLL_MS,
      nudgeMs: NUDGE_MS,
      runBatch: () => this.#runBatch(),
      onError: (error) => {
        if (!this.services.outage.absorb(error))
          this.services.log.warn({ err: { type: errorName(error) } }, 'mail outbox poll failed');
      },
    });
  }

  start(): void {
    mailWorkers.set(this.services, this);
    this.#poller.start();
  }

  nudge(): void {
    this.#poller.nudge();
  }

  stop(): Promise<void> {
    mailWorkers.delete(this.services);
    return this.#poller.stop();
  }

  /** Sends one batch, one message after another; answers whether it was full. */
  async #runBatch(): Promise<boolean> {
    const claimed = await this.#claim();
    for (const row of claimed) await this.#send(row);
    return claimed.length === BATCH;
  }

  #claim(): Promise<ClaimedRow[]> {
    const em = this.services.orm.em.fork();
    return em.execute<ClaimedRow[]>(
      `update messages set locked_until = now() + interval '${LEASE_S} seconds', attempts = attempts + 1
        where id in (select id from messages
                      where status = 'queued' and next_attempt_at <= now() and (locked_until is null or locked_until < now())
                      order by next_attempt_at limit ${BATCH} for update skip locked)
        returning id, attempts, payload_sealed`,
    );
  }

  async #send(row: ClaimedRow) {
    const em = this.services.orm.em.fork();
    // the sealed payload is the JSON this module wrote, and only it can open the seal.
    const mail = JSON.parse(this.services.secretBox.decrypt(row.payload_sealed, sealContext(row.id))) as QueuedMail['mail'];
    try {
      await this.services.mailer.send(mail, { consoleText: mail.consoleText });
      // The sealed copy (it can hold a one-time link) goes as soon as it is no longer needed.
      await em.execute(
        `update messages set status = 'sent', sent_at = now(), payload_sealed = null, locked_until = null, last_error = null
          where id = ?`,
        [row.id],
      );
      this.services.metrics.mail.inc({ outcome: 'sent' });
    } catch (error) {
      const code = String(fieldOf(error, 'code') ?? errorName(error) ?? 'error').slice(0, 64);
      const delay = this.retryScheduleS[row.attempts - 1];
      this.services.log.warn({ err: { type: errorName(error), code }, attempt: row.attempts }, 'smtp send failed');
      if (delay === undefined) {
        await em.execute(
          `update messages set status = 'failed', payload_sealed = null, locked_until = null, last_error = ? where id = ?`,
          [code, row.id],
        );
        this.services.log.error({ err: { code }, attempts: row.attempts }, 'message delivery failed for good');
        this.services.metrics.mail.inc({ outcome: 'failed' });
      } else {
        await em.execute(
          `update messages set next_attempt_at = now() + interval '1 second' * ${Number(delay)}, locked_until = null,
                  last_error = ? where id = ?`,
          [code, row.id],
        );
        this.services.metrics.mail.inc({ outcome: 'retried' });
      }
    }
  }
}

/** The running worker of each process (per `Services`), so a queued row can wake it. */
const mailWorkers = new WeakMap<Services, MailWorker>();

/**
 * Retention of the message log: `settings.retention.messages_days` (default 30) for what was sent, failed or handed
 * over; a day for suppressed rows (they exist only to keep timings equal). Queued mail is never purged.
 */
export const purgeMessages: PurgeStep = (em) =>
  deleteInBatches(
    em,
    'messages',
    `(t.status = 'suppressed' and t.created_at < now() - interval '1 day')
     or (t.status in ('sent', 'failed', 'not_delivered') and t.created_at < now() - make_interval(days => ${retentionDays('messages_days', 30)}))`,
  );

/**
 * The loop under every outbox worker (mail, webhook deliveries): run a batch every `pollMs`, the first one `pollMs`
 * after `start()` (what a process finds queued waits that long: its start and first requests do not share the database
 * with the backlog, which at start cost about 60 ms before the first answer); a `nudge()`
 * runs one within `nudgeMs`; a nudge that arrives while a batch is running runs another as soon as it ends (so a row
 * queued mid-batch is not left for the next poll); batches follow one another while each comes back full. A nudge never
 * postpones a run already due sooner (a steady stream of nudges cannot starve the worker). Timers are
 * unref'd (the worker never keeps a process alive); `stop()` cancels the next run and waits for the one in hand.
 */
export interface PollingWorkerOptions {
  /** Milliseconds between polls when nothing woke the worker. */
  pollMs: number;
  /** Milliseconds from a `nudge()` to the run (lets the nudging transaction commit first). */
  nudgeMs: number;
  /**
   * Claims and handles one batch; answers whether it was full (more may be due, so another runs at once unless the
   * worker is stopping).
   */
  runBatch: () => Promise<boolean>;
  /** Called with what a run threw; the worker polls again all the same. */
  onError: (error: unknown) => void;
}

export class PollingWorker {
  #timer: NodeJS.Timeout | undefined;
  /** When the scheduled run is due (`performance.now()`): a later request never postpones it. */
  #dueAt = Number.POSITIVE_INFINITY;
  #running: Promise<void> | undefined;
  #stopped = false;
  #again = false;
  readonly #options: PollingWorkerOptions;

  constructor(options: PollingWorkerOptions) {
    this.#options = options;
  }

  start(): void {
    this.#schedule(this.#options.pollMs);
  }

  nudge(): void {
    if (!this.#stopped) this.#schedule(this.#options.nudgeMs);
  }

  /** Waits for the batch in hand; no other starts. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  #schedule(delayMs: number) {
    if (this.#running) {
      this.#again = true;
      return;
    }
    const dueAt = performance.now() + delayMs;
    if (this.#timer && dueAt >= this.#dueAt) return;
    clearTimeout(this.#timer);
    this.#dueAt = dueAt;
    this.#timer = setTimeout(() => this.#tick(), delayMs);
    this.#timer.unref();
  }

  #tick() {
    this.#timer = undefined;
    this.#dueAt = Number.POSITIVE_INFINITY;
    this.#running = this.#drain()
      .catch((error: unknown) => this.#options.onError(error))
      .finally(() => {
        this.#running = undefined;
        if (this.#stopped) return;
        const again = this.#again;
        this.#again = false;
        this.#schedule(again ? 0 : this.#options.pollMs);
      });
  }

  async #drain() {
    for (;;) {
      const full = await this.#options.runBatch();
      if (!full || this.#stopped) return;
    }
  }
}

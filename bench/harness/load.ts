/**
 * One scenario under load: a single continuous closed-loop autocannon run (each connection sends its next request when
 * the previous one is answered). Its first part is a warm-up that lasts at least BENCH_WARMUP seconds AND until as
 * many responses as connections have come back (the server's queue is then in its steady state); then a window of
 * BENCH_DURATION seconds counts the responses arriving in it and the CPU used meanwhile by the server process, the
 * PostgreSQL backends, the benchmark process (autocannon) and the machine. After the window the run waits until the
 * server has served what autocannon abandoned (drain), then sends 10 requests one at a time: the one-client latency.
 */
import { Worker } from 'node:worker_threads';
import autocannon from 'autocannon';
import { config, log, sleep } from './env.ts';
import type { PacedJob, PacedMessage, PacedRequest } from './paced-worker.ts';
import type { ScratchDatabase } from './postgres.ts';
import { machineCpuSeconds, type ServerProcess, selfCpuSeconds } from './processes.ts';

export interface Scenario {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  /** The status every response must have (200), or the statuses it may have (a flow of several requests). */
  expect?: number | number[];
  /**
   * Each request's own headers, body and path (and method: a flow alternates its steps). Each connection (and the one
   * client) has its own `state`, kept across its requests, so that it can hold a credential of its own (an access
   * token, a session whose refresh token rotates, the code the previous step of a flow got).
   */
  request?: (state: ConnectionState) => {
    method?: 'GET' | 'POST';
    headers?: Record<string, string>;
    body?: string;
    path?: string;
  };
  /** Each answer, with its headers (names in lower case): a step of a flow reads a redirect's `location`. */
  response?: (state: ConnectionState, status: number, body: string, headers: Record<string, string>) => void;
}
export type ConnectionState = Record<string, unknown>;

/** The connection's own value of `key`, made on its first request. */
export function own<T>(state: ConnectionState, key: string, make: () => T): T {
  if (!(key in state)) state[key] = make();
  return state[key] as T;
}

export interface Measurement {
  scenario: string;
  server: string;
  /** Median of 10 requests sent one at a time after the load (warm server, no queue). */
  oneClientMs: number;
  warmupSeconds: number;
  windowSeconds: number;
  requests: number;
  requestsPerSecond: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Cores used during the window (1 = one core busy all the time); NaN where not measured. */
  serverCores: number;
  databaseCores: number;
  loadGeneratorCores: number;
  machineCores: number;
  /** In the window: responses with the expected status, connection errors (timeouts included). */
  expected: number;
  errors: number;
}

export const scenarioName = (s: Scenario) => `${s.method} ${s.path}`;
const expected = (s: Scenario) => s.expect ?? 200;
const isExpected = (s: Scenario, status: number) => {
  const wanted = expected(s);
  return Array.isArray(wanted) ? wanted.includes(status) : status === wanted;
};

/** Above this share of unexpected answers or errors (warm-up included), the run measured failures: it fails. */
const MAX_BAD_SHARE = 0.001;

const percentile = (sorted: number[], p: number): number =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]! : 0;

/** The CPU seconds so far of the server, the database, this process and the machine (a window's start and end). */
const cpuReadings = (server: ServerProcess, db: ScratchDatabase | undefined) => [
  server.cpuSeconds(),
  db?.cpuSeconds() ?? Number.NaN,
  selfCpuSeconds(),
  machineCpuSeconds(),
];

/** A load window's figures: its throughput, latency percentiles and the cores each party used during it. */
function summarize(w: {
  started: number;
  windowStart: number;
  windowEnd: number;
  atStart: number[];
  atEnd: number[];
  latencies: number[];
  errors: number;
}): Omit<Measurement, 'scenario' | 'server' | 'oneClientMs'> {
  const windowSeconds = (w.windowEnd - w.windowStart) / 1000;
  const cores = w.atEnd.map((value, i) => (value - w.atStart[i]!) / windowSeconds) as [number, number, number, number];
  const latencies = [...w.latencies].sort((a, b) => a - b);
  return {
    warmupSeconds: (w.windowStart - w.started) / 1000,
    windowSeconds,
    requests: latencies.length,
    requestsPerSecond: latencies.length / windowSeconds,
    p50Ms: percentile(latencies, 50),
    p95Ms: percentile(latencies, 95),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies.at(-1) ?? 0,
    serverCores: cores[0],
    databaseCores: cores[1],
    loadGeneratorCores: cores[2],
    machineCores: cores[3],
    expected: latencies.length,
    errors: w.errors,
  };
}

/**
 * autocannon deep-copies `requests` for each connection (so each gets its own `state`), passes `setupRequest` a copy
 * of that connection's request and calls `onResponse` as a method of it.
 */
function autocannonRequest(scenario: Scenario): autocannon.Request {
  type WithState = autocannon.Request & { state: ConnectionState };
  return {
    method: scenario.method,
    path: scenario.path,
    headers: { 'content-type': 'application/json', ...scenario.headers },
    state: {},
    setupRequest: (req: autocannon.Request) => {
      const next = scenario.request?.((req as WithState).state) ?? {};
      return {
        ...req,
        ...(next.method !== undefined ? { method: next.method } : {}),
        headers: { ...req.headers, ...next.headers },
        ...(next.body !== undefined ? { body: next.body } : {}),
        ...(next.path !== undefined ? { path: next.path } : {}),
      };
    },
    onResponse(this: WithState, status: number, responseBody: string, _context: unknown, headers?: Record<string, string>) {
      scenario.response?.(this.state, status, responseBody, lowerCased(headers ?? {}));
    },
  } as WithState;
}

async function window(server: ServerProcess, scenario: Scenario, db: ScratchDatabase | undefined, seconds: number) {
  let finished!: (error: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    finished = (error) => (error ? reject(error) : resolve());
  });
  const instance = autocannon(
    {
      url: server.url,
      connections: config.connections,
      duration: config.maxWarmupSeconds + seconds + 5, // an upper bound: the run is stopped when the window closes
      timeout: config.timeoutSeconds,
      requests: [autocannonRequest(scenario)],
    },
    (error) => finished(error),
  );
  const started = performance.now();
  const latencies: number[] = [];
  let [windowStart, windowEnd, answered, bad, errors, failed] = [0, 0, 0, 0, 0, 0];
  const readings = () => cpuReadings(server, db);
  let atStart: number[] = [];
  let atEnd: number[] = [];
  const open = () => {
    if (windowStart) return;
    windowStart = performance.now();
    atStart = readings();
    setTimeout(() => {
      windowEnd = performance.now();
      atEnd = readings();
      instance.stop();
    }, seconds * 1000);
  };
  const cap = setTimeout(open, config.maxWarmupSeconds * 1000);
  const inWindow = () => windowStart > 0 && windowEnd === 0;
  instance.on('response', (_client, status: number, _bytes: number, responseTime: number) => {
    answered++;
    if (!isExpected(scenario, status)) bad++;
    else if (inWindow()) latencies.push(responseTime);
    if (!windowStart && performance.now() - started >= config.warmupSeconds * 1000 && answered >= config.connections) open();
  });
  instance.on('reqError', () => {
    bad++;
    failed++;
    if (inWindow()) errors++;
  });
  // The server's pool opens its connections during the warm-up: keep learning which backends there are.
  const watching = (async () => {
    while (!windowEnd && db) {
      await db.refreshBackends().catch(() => undefined);
      await sleep(500);
    }
  })();
  await done;
  clearTimeout(cap);
  windowEnd ||= performance.now();
  await watching;
  if (bad > MAX_BAD_SHARE * (answered + failed) || latencies.length === 0) {
    throw new Error(
      `${server.label} / ${scenarioName(scenario)}: ${bad} of ${answered + failed} requests failed or answered other than ${expected(scenario)}`,
    );
  }
  return summarize({ started, windowStart, windowEnd, atStart, atEnd, latencies, errors });
}

/**
 * An open load at a steady `rate` (requests per second): request i is sent at start + i / rate whether or not earlier
 * ones were answered (autocannon's `overallRate` sends each connection's quota in a burst at the start of every second,
 * which measures bursts, not a load). A warm-up of BENCH_WARMUP seconds, then a window of `seconds` (its CPU readings
 * end when its last answer is in); latency is from the scheduled send to the complete answer, so a generator or server
 * that falls behind shows as latency, never as a gentler load. The requests are made here beforehand (the scenario's
 * `request`, one state for all; a `response` hook is not supported) and sent by a worker thread (`paced-worker.ts`)
 * with its own small heap: a garbage collection of this process, which holds the suites' data, pauses neither the
 * schedule nor the clock.
 */
async function paced(server: ServerProcess, scenario: Scenario, db: ScratchDatabase | undefined, seconds: number, rate: number) {
  if (scenario.response) throw new Error(`${scenarioName(scenario)}: a paced load cannot follow responses`);
  const expect = expected(scenario);
  if (Array.isArray(expect)) throw new Error(`${scenarioName(scenario)}: a paced load expects one status`);
  const state: ConnectionState = {};
  const count = Math.ceil(rate * (config.warmupSeconds + seconds));
  const requests: PacedRequest[] = Array.from({ length: count }, () => {
    const next = scenario.request?.(state);
    return {
      method: next?.method ?? scenario.method,
      path: next?.path ?? scenario.path,
      headers: {
        ...(next?.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...scenario.headers,
        ...next?.headers,
      },
      ...(next?.body !== undefined ? { body: next.body } : {}),
    };
  });
  const job: PacedJob = {
    url: server.url,
    requests,
    rate,
    warmupMs: config.warmupSeconds * 1000,
    windowMs: seconds * 1000,
    expect,
    connections: config.connections,
    timeoutMs: config.timeoutSeconds * 1000,
  };
  const readings = () => cpuReadings(server, db);
  const started = performance.now();
  let opened = false;
  // The server's pool opens its connections during the warm-up: keep learning which backends there are, until the
  // window opens (its readings wait for the last look, so the set of backends is the same at both ends).
  const watching = (async () => {
    while (!opened && db) {
      await db.refreshBackends().catch(() => undefined);
      for (let waited = 0; waited < 500 && !opened; waited += 20) await sleep(20);
    }
  })();
  let windowOpened: Promise<{ windowStart: number; atStart: number[] }> | undefined;
  // Below the maximum the server's pool closes connections it no longer needs: read their backends every second, so
  // that one closing mid-window has been read just before (see `cpuSeconds`).
  const reading = setInterval(() => db?.cpuSeconds(), 1000);
  const worker = new Worker(new URL('./paced-worker.ts', import.meta.url), { workerData: job });
  let result: Extract<PacedMessage, { kind: 'done' }>;
  try {
    result = await new Promise((resolve, reject) => {
      worker.on('message', (message: PacedMessage) => {
        if (message.kind === 'opened') {
          opened = true;
          windowOpened = watching.then(() => ({ windowStart: performance.now(), atStart: readings() }));
        } else resolve(message);
      });
      worker.on('error', reject);
      worker.on('exit', (code) => reject(new Error(`the load generator exited (${code}) before it finished`)));
    });
  } finally {
    // A generator that failed before its window stops the watching too.
    opened = true;
    clearInterval(reading);
  }
  if (!windowOpened) throw new Error('the load generator never opened its window');
  const { windowStart, atStart } = await windowOpened;
  const windowEnd = performance.now();
  const atEnd = readings();
  await worker.terminate();
  if (result.bad > MAX_BAD_SHARE * result.answered || result.latencies.length === 0) {
    throw new Error(
      `${server.label} / ${scenarioName(scenario)} at ${rate} req/s: ${result.bad} of ${result.answered} requests failed`,
    );
  }
  const latencies = Array.from(result.latencies);
  return summarize({ started, windowStart, windowEnd, atStart, atEnd, latencies, errors: result.errors });
}

/** One request as the one client (or a tracer) sends it, with the connection's state; checks the status. */
export async function send(url: string, scenario: Scenario, state: ConnectionState = {}): Promise<string> {
  const next = scenario.request?.(state);
  const body = next?.body;
  const response = await fetch(`${url}${next?.path ?? scenario.path}`, {
    method: next?.method ?? scenario.method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...scenario.headers, ...next?.headers },
    body,
    // A redirect is the answer being measured (the SAML ACS), never a place to go.
    redirect: 'manual',
    signal: AbortSignal.timeout(60_000),
  });
  const text = await response.text();
  scenario.response?.(state, response.status, text, Object.fromEntries(response.headers));
  if (!isExpected(scenario, response.status))
    throw new Error(`${scenarioName(scenario)} answered ${response.status}: ${text.slice(0, 300)}`);
  return text;
}

/** autocannon keeps the header names as the server sent them. */
const lowerCased = (headers: Record<string, string>) =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));

/** Waits until the server process is idle and no statement of the scratch database is running (at most 90 s). */
async function drain(server: ServerProcess, db: ScratchDatabase | undefined): Promise<void> {
  const deadline = Date.now() + 90_000;
  for (let quiet = 0; quiet < 2 && Date.now() < deadline; ) {
    const before = server.cpuSeconds();
    await sleep(500);
    const busy = (server.cpuSeconds() - before) / 0.5;
    quiet = busy < 0.05 && (db ? await db.activeStatements() : 0) === 0 ? quiet + 1 : 0;
  }
}

/**
 * Waits until the machine is quiet (under 15 % of one core busy in each of two consecutive half seconds; at most 30 s),
 * so that what an earlier load left running (PostgreSQL's checkpoints and autovacuum, a server's deferred work) does
 * not share the cores with the next window: CPU per request is inflated on a busy machine (two vCPUs may be the two
 * threads of one physical core). Answers the seconds waited.
 */
async function machineQuiet(): Promise<number> {
  const started = performance.now();
  for (let quiet = 0; quiet < 2 && performance.now() - started < 30_000; ) {
    const before = machineCpuSeconds();
    await sleep(500);
    quiet = (machineCpuSeconds() - before) / 0.5 < 0.15 ? quiet + 1 : 0;
  }
  return (performance.now() - started) / 1000;
}

/**
 * A quiet machine, then the load, the drain, then the one-client latency (one uncounted request, then the median of 10). `rate`: a steady
 * open load of that many requests per second (latency at a given load) instead of the closed loop at 64 connections.
 */
export async function load(
  server: ServerProcess,
  scenario: Scenario,
  db?: ScratchDatabase,
  seconds = config.durationSeconds,
  rate?: number,
): Promise<Measurement> {
  const at = rate ? `a steady ${Math.round(rate)} req/s` : `${config.connections} connections`;
  const waited = await machineQuiet();
  log(`${server.label}: ${scenarioName(scenario)} at ${at} (quiet after ${waited.toFixed(1)} s; warm-up, then ${seconds} s)`);
  const m = rate ? await paced(server, scenario, db, seconds, rate) : await window(server, scenario, db, seconds);
  await drain(server, db);
  const state: ConnectionState = {};
  const times: number[] = [];
  for (let i = -1; i < 10; i++) {
    const started = performance.now();
    await send(server.url, scenario, state);
    if (i >= 0) times.push(performance.now() - started);
  }
  const oneClientMs = percentile(
    times.sort((a, b) => a - b),
    50,
  );
  log(
    `${server.label}: ${scenarioName(scenario)}: ${m.requestsPerSecond.toFixed(1)} req/s, p50 ${m.p50Ms.toFixed(0)} ms, ` +
      `p99 ${m.p99Ms.toFixed(0)} ms, ${((m.serverCores * 1000) / m.requestsPerSecond).toFixed(2)} ms server CPU/request, ` +
      `one client ${oneClientMs.toFixed(1)} ms`,
  );
  const scenarioLabel = rate ? `${scenarioName(scenario)} at ${Math.round(rate)} req/s` : scenarioName(scenario);
  return { scenario: scenarioLabel, server: server.label, oneClientMs, ...m };
}

/**
 * One measured scenario: a single continuous autocannon run whose first part is a warm-up, then a measured window.
 *
 * The load is closed-loop (each connection sends its next request when the previous one is answered), so when the
 * server is slow the first requests queue behind one another. Measuring from a cold start, or right after a separate
 * warm-up run whose abandoned requests are still being served, would report that transient, not the steady state.
 * So the warm-up lasts at least `warmupSeconds` AND until as many responses as there are connections have come back
 * (every connection has, on average, gone round once); the window then counts only responses that arrive inside it.
 */
import autocannon from 'autocannon';

export interface Scenario {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  /** A fresh body for every request (called once per request, so it may count). */
  body?: () => string;
  /** The status every response must have. */
  expect: number;
  /** Requests that depend on what the same connection was answered before (see `ConnectionHooks`). */
  connection?: ConnectionHooks;
}

/**
 * Per-connection requests: each connection (and the one client of `unloaded`) gets its own `state` object, empty at
 * first and kept across all its requests, so that a connection can hold one credential (an access token, a session
 * whose refresh token rotates) and never share it with another connection. With one request in flight per
 * connection, a value learnt from a response is used by that connection's next request.
 */
export interface ConnectionHooks {
  /** Headers (added to the scenario's) and body of the connection's next request. */
  request: (state: ConnectionState) => { headers?: Record<string, string>; body?: string };
  /** Every response the connection receives, with its body. */
  response?: (state: ConnectionState, status: number, body: string) => void;
}
export type ConnectionState = Record<string, unknown>;

export interface LoadOptions {
  url: string;
  connections: number;
  warmupSeconds: number;
  /** The warm-up ends here even if the steady state was not reached (a server that never answers, say). */
  maxWarmupSeconds: number;
  durationSeconds: number;
  /** Seconds autocannon waits for one response before it counts a timeout (an error). */
  timeoutSeconds: number;
  /** CPU seconds the server process has used so far (read when the window opens and closes). */
  serverCpuSeconds: () => number;
  /** Busy CPU seconds of the whole machine so far. */
  machineCpuSeconds: () => number;
  /** CPU seconds of the database's own processes so far (PostgreSQL backends), where known. */
  databaseCpuSeconds?: () => number;
}

export interface Measurement {
  name: string;
  /** Median latency of requests sent one at a time after the load (warm server, no queue); see `unloaded`. */
  unloadedMs: number;
  warmupSeconds: number;
  windowSeconds: number;
  /** When the window opened and closed, on this process's `performance.now()` clock (ms). */
  windowStart: number;
  windowEnd: number;
  /** Responses that arrived within the window. */
  requests: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** The server process's CPU use during the window: 1 = one core busy all the time. */
  serverCores: number;
  /** The whole machine's CPU use during the window, in cores (at most `nproc`). */
  machineCores: number;
  /** The benchmark process's own CPU use (autocannon) during the window, in cores. */
  loadGeneratorCores: number;
  /** The database backends' CPU use during the window, in cores (NaN where not measured). */
  databaseCores: number;
  /** Within the window: connection errors, timeouts included. */
  errors: number;
  timeouts: number;
  non2xx: number;
  /** Within the window: responses with the expected status. */
  expected: number;
  statusCodes: Record<string, number>;
  /** Over the whole run, warm-up included: responses, those without the expected status, and connection errors. */
  answeredInRun: number;
  unexpectedInRun: number;
  errorsInRun: number;
}

/** Above this share of unexpected answers or errors, the run measured failures, not work: it fails. */
export const MAX_BAD_SHARE = 0.001;

/** Nearest-rank percentile of sorted values. */
const percentile = (sorted: number[], p: number): number =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]! : 0;

/** Median latency of `samples` requests sent one at a time (after one uncounted request, which may wait behind others). */
export async function unloaded(scenario: Scenario, url: string, samples = 10): Promise<number> {
  const times: number[] = [];
  const state: ConnectionState = {}; // the one client is a connection of its own
  // The first request waits behind whatever the previous scenario left in flight; it is not counted.
  for (let i = -1; i < samples; i++) {
    const next = scenario.connection?.request(state);
    const body = next?.body ?? scenario.body?.();
    const started = performance.now();
    const response = await fetch(`${url}${scenario.path}`, {
      method: scenario.method,
      headers: { ...scenario.headers, ...next?.headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body,
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    if (i >= 0) times.push(performance.now() - started);
    scenario.connection?.response?.(state, response.status, text);
    if (response.status !== scenario.expect) throw new Error(`${scenario.name} answered ${response.status} (one client)`);
  }
  return percentile(
    times.sort((a, b) => a - b),
    50,
  );
}

/**
 * The autocannon request of a scenario. For per-connection hooks: autocannon deep-copies `requests` for each of its
 * connections (so each gets its own `state` object), passes `setupRequest` a shallow copy of that connection's
 * request and calls `onResponse` as a method of it, so `request.state` and `this.state` are the connection's state.
 */
function autocannonRequest(scenario: Scenario): autocannon.Request {
  const { body, connection } = scenario;
  const headers = { ...scenario.headers, ...(body ? { 'content-type': 'application/json' } : {}) };
  const request = { method: scenario.method, path: scenario.path, headers };
  if (connection) {
    type WithState = autocannon.Request & { state: ConnectionState };
    return {
      ...request,
      state: {},
      setupRequest: (req: autocannon.Request) => {
        const next = connection.request((req as WithState).state);
        if (next.body === undefined) return { ...req, headers: { ...req.headers, ...next.headers } };
        return { ...req, headers: { ...req.headers, ...next.headers, 'content-type': 'application/json' }, body: next.body };
      },
      onResponse(this: WithState, status: number, responseBody: string) {
        connection.response?.(this.state, status, responseBody);
      },
    } as WithState;
  }
  return { ...request, ...(body ? { setupRequest: (req: autocannon.Request) => ({ ...req, body: body() }) } : {}) };
}

export async function measure(scenario: Scenario, options: LoadOptions): Promise<Measurement> {
  let finished!: (error: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    finished = (error) => (error ? reject(error) : resolve());
  });
  const instance = autocannon(
    {
      url: options.url,
      connections: options.connections,
      // An upper bound only: the run is stopped when the window closes.
      duration: options.maxWarmupSeconds + options.durationSeconds + 5,
      timeout: options.timeoutSeconds,
      requests: [autocannonRequest(scenario)],
    },
    (error) => finished(error),
  );

  const started = performance.now();
  let windowStart = 0;
  let windowEnd = 0;
  let answered = 0;
  let unexpectedInRun = 0;
  let errorsInRun = 0;
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  let errors = 0;
  let timeouts = 0;

  let cpuAtStart = 0;
  let cpuAtEnd = 0;
  let machineAtStart = 0;
  let machineAtEnd = 0;
  let selfAtStart = 0;
  let selfAtEnd = 0;
  let databaseAtStart = Number.NaN;
  let databaseAtEnd = Number.NaN;
  const selfCpuSeconds = () => {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1e6;
  };
  const openWindow = () => {
    if (windowStart) return;
    windowStart = performance.now();
    cpuAtStart = options.serverCpuSeconds();
    machineAtStart = options.machineCpuSeconds();
    selfAtStart = selfCpuSeconds();
    databaseAtStart = options.databaseCpuSeconds?.() ?? Number.NaN;
    setTimeout(() => {
      windowEnd = performance.now();
      cpuAtEnd = options.serverCpuSeconds();
      machineAtEnd = options.machineCpuSeconds();
      selfAtEnd = selfCpuSeconds();
      databaseAtEnd = options.databaseCpuSeconds?.() ?? Number.NaN;
      instance.stop();
    }, options.durationSeconds * 1000);
  };
  const warmupCap = setTimeout(openWindow, options.maxWarmupSeconds * 1000);
  const inWindow = () => windowStart > 0 && windowEnd === 0;

  instance.on('response', (_client, statusCode: number, _bytes: number, responseTime: number) => {
    answered++;
    if (statusCode !== scenario.expect) unexpectedInRun++;
    if (inWindow()) {
      latencies.push(responseTime);
      statusCodes[statusCode] = (statusCodes[statusCode] ?? 0) + 1;
    } else if (!windowStart && performance.now() - started >= options.warmupSeconds * 1000 && answered >= options.connections) {
      openWindow();
    }
  });
  instance.on('reqError', (error: Error) => {
    errorsInRun++;
    if (!inWindow()) return;
    errors++;
    if (/timed out/.test(error.message)) timeouts++;
  });

  await done;
  clearTimeout(warmupCap);
  const windowSeconds = ((windowEnd || performance.now()) - windowStart) / 1000;
  latencies.sort((a, b) => a - b);
  const non2xx = Object.entries(statusCodes)
    .filter(([code]) => !code.startsWith('2'))
    .reduce((sum, [, count]) => sum + count, 0);
  return {
    name: scenario.name,
    unloadedMs: Number.NaN, // measured after the load, once the server has drained
    warmupSeconds: (windowStart - started) / 1000,
    windowSeconds,
    windowStart,
    windowEnd: windowEnd || performance.now(),
    requests: latencies.length,
    requestsPerSecond: latencies.length / windowSeconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies.at(-1) ?? 0,
    serverCores: (cpuAtEnd - cpuAtStart) / windowSeconds,
    machineCores: (machineAtEnd - machineAtStart) / windowSeconds,
    loadGeneratorCores: (selfAtEnd - selfAtStart) / windowSeconds,
    databaseCores: (databaseAtEnd - databaseAtStart) / windowSeconds,
    errors,
    timeouts,
    non2xx,
    expected: statusCodes[scenario.expect] ?? 0,
    statusCodes,
    answeredInRun: answered,
    unexpectedInRun,
    errorsInRun,
  };
}

/** Throws when the run was not almost all successes, so that no figure of failed requests passes for throughput. */
export function assertSuccessful(label: string, scenario: Scenario, m: Measurement): void {
  const bad = m.unexpectedInRun + m.errorsInRun;
  if (m.expected === 0 || bad > MAX_BAD_SHARE * (m.answeredInRun + m.errorsInRun)) {
    throw new Error(
      `${label} / ${scenario.name}: ${bad} of ${m.answeredInRun + m.errorsInRun} requests (warm-up included) failed: ` +
        `${m.unexpectedInRun} answered other than ${scenario.expect}, ${m.errorsInRun} connection errors or timeouts; ` +
        `in the window: status codes ${JSON.stringify(m.statusCodes)}, ` +
        `${m.errors} connection errors of which ${m.timeouts} timeouts`,
    );
  }
}

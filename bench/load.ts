/** One measured scenario: autocannon against the running server, a warm-up, then the run that counts. */
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
}

export interface LoadOptions {
  url: string;
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
  /** Seconds autocannon waits for one response before it counts a timeout (an error). */
  timeoutSeconds: number;
}

export interface Measurement {
  name: string;
  requests: number;
  durationSeconds: number;
  /** Mean of autocannon's one-second samples. */
  requestsPerSecond: number;
  p50Ms: number;
  p97_5Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Connection errors, timeouts included. */
  errors: number;
  timeouts: number;
  non2xx: number;
  /** Responses with the expected status. */
  expected: number;
  statusCodes: Record<string, number>;
}

/** Above this share of unexpected answers or errors, the run measured failures, not work: it fails. */
export const MAX_BAD_SHARE = 0.001;

async function fire(scenario: Scenario, options: LoadOptions, seconds: number) {
  const { body } = scenario;
  return autocannon({
    url: options.url,
    connections: options.connections,
    duration: seconds,
    timeout: options.timeoutSeconds,
    requests: [
      {
        method: scenario.method,
        path: scenario.path,
        headers: { ...scenario.headers, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { setupRequest: (request) => ({ ...request, body: body() }) } : {}),
      },
    ],
  });
}

export async function measure(scenario: Scenario, options: LoadOptions): Promise<Measurement> {
  if (options.warmupSeconds > 0) await fire(scenario, options, options.warmupSeconds);
  const result = await fire(scenario, options, options.durationSeconds);
  const statusCodes = Object.fromEntries(
    Object.entries(result.statusCodeStats ?? {}).map(([code, stats]) => [code, (stats as { count?: number }).count ?? 0]),
  );
  return {
    name: scenario.name,
    requests: result.requests.total,
    durationSeconds: result.duration,
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p97_5Ms: result.latency.p97_5,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    expected: statusCodes[String(scenario.expect)] ?? 0,
    statusCodes,
  };
}

/** Throws when the run was mostly failures, so that no figure of failed requests is ever reported as throughput. */
export function assertSuccessful(label: string, scenario: Scenario, m: Measurement): void {
  const answered = Object.values(m.statusCodes).reduce((a, b) => a + b, 0);
  const bad = answered - m.expected + m.errors;
  if (m.expected === 0 || bad > MAX_BAD_SHARE * (answered + m.errors)) {
    throw new Error(
      `${label} / ${scenario.name}: ${bad} of ${answered + m.errors} requests failed ` +
        `(expected ${scenario.expect}; status codes ${JSON.stringify(m.statusCodes)}, ` +
        `${m.errors} connection errors of which ${m.timeouts} timeouts)`,
    );
  }
}

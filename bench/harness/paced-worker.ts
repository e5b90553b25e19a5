/**
 * The open-load generator of `load.ts` (`paced`), in a worker thread: its own small heap, so that no garbage
 * collection of the benchmark process (seeded data, earlier runs' leftovers) pauses the schedule or the clock that
 * times the answers. It sends the requests it is given, request i at start + i / rate, whether or not earlier ones
 * were answered, and reports to its parent when the window opens and when the last answer is in.
 */
import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

export interface PacedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}
export interface PacedJob {
  url: string;
  requests: PacedRequest[];
  rate: number;
  /** Milliseconds from the start to the window's opening, and the window's length. */
  warmupMs: number;
  windowMs: number;
  expect: number;
  connections: number;
  timeoutMs: number;
}
export type PacedMessage =
  | { kind: 'opened' }
  | { kind: 'done'; latencies: Float64Array; answered: number; bad: number; errors: number };

const job = workerData as PacedJob;
const port = parentPort!;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const agent = new http.Agent({ keepAlive: true, maxSockets: job.connections });
const latencies = new Float64Array(job.requests.length);
let [measured, answered, bad, errors, pending] = [0, 0, 0, 0, 0];
let allSent = false;
let finish!: () => void;
const finished = new Promise<void>((resolve) => {
  finish = resolve;
});
const started = performance.now();
const opensAt = started + job.warmupMs;
const closesAt = opensAt + job.windowMs;
const inWindow = (due: number) => due >= opensAt && due < closesAt;

const settle = () => {
  if (--pending === 0 && allSent) finish();
};

function fire(request: PacedRequest, due: number) {
  pending++;
  const req = http.request(
    `${job.url}${request.path}`,
    { method: request.method, agent, timeout: job.timeoutMs, headers: request.headers },
    (response) => {
      response.resume();
      response.on('end', () => {
        answered++;
        if (response.statusCode !== job.expect) bad++;
        else if (inWindow(due)) latencies[measured++] = performance.now() - due;
        settle();
      });
    },
  );
  req.on('error', () => {
    bad++;
    if (inWindow(due)) errors++;
    settle();
  });
  req.end(request.body);
}

let opened = false;
for (let i = 0; i < job.requests.length; i++) {
  const due = started + (i * 1000) / job.rate;
  if (due >= closesAt) break;
  const wait = due - performance.now();
  if (wait > 1) await sleep(wait);
  if (!opened && due >= opensAt) {
    opened = true;
    port.postMessage({ kind: 'opened' } satisfies PacedMessage);
  }
  fire(job.requests[i]!, due);
}
allSent = true;
if (pending === 0) finish();
await finished;
agent.destroy();
port.postMessage({ kind: 'done', latencies: latencies.slice(0, measured), answered, bad, errors } satisfies PacedMessage);

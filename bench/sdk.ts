/**
 * The `sdk` suite: what the SDK costs a caller per call, against a bare `fetch` of the same operation over REST, in the
 * same run on the same server (PostgreSQL). One client, calls one after the other (the SDK's overhead is in the
 * caller's process; load would measure the server instead). Retries are off, as the issue asks.
 */
import { createGatehouse } from '@gatehouse/sdk';
import { createApplication, scratchDatabase } from './server.ts';
import type { Harness } from './sign-in.ts';

export interface SdkConfig {
  adminUrl: string;
}

interface Side {
  label: string;
  medianMs: number;
  p99Ms: number;
  /** CPU of the calling process per call, in ms (the SDK's own work plus fetch's). */
  cpuMsPerCall: number;
}

export interface SdkRun {
  calls: number;
  version: string;
  sides: [Side, Side];
  ratio: number;
  cpuRatio: number;
}

const CALLS = 3000;
const WARMUP = 300;

async function measure(label: string, call: () => Promise<unknown>): Promise<Side> {
  for (let i = 0; i < WARMUP; i++) await call();
  const times: number[] = [];
  const cpu = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now();
    await call();
    times.push(performance.now() - started);
  }
  const used = process.cpuUsage(cpu);
  times.sort((a, b) => a - b);
  return {
    label,
    medianMs: times[Math.floor(times.length / 2)]!,
    p99Ms: times[Math.floor(times.length * 0.99)]!,
    cpuMsPerCall: (used.user + used.system) / 1000 / CALLS,
  };
}

export async function benchSdk(config: SdkConfig, h: Harness): Promise<SdkRun> {
  const scratch = await scratchDatabase(config.adminUrl, h.onCleanup);
  const env = { DATABASE_URL: scratch.url.toString(), GATEHOUSE_DATA_DIR: await h.tempDir('sdk'), ...h.secrets() };
  const server = await h.serve('gatehouse', env);
  const app = await createApplication(server.url, env.GATEHOUSE_OPERATOR_TOKEN);
  const gatehouse = createGatehouse({ baseUrl: server.url, applicationId: app.id, secretKey: app.secretKey, maxRetries: 0 });
  const user = await gatehouse.users.create({ primary_email: 'sdk-bench@example.com' });
  const headers = { authorization: `Bearer ${app.secretKey}`, 'x-application-id': app.id };
  const bare = async () => {
    const response = await fetch(`${server.url}/v1/users/${user.id}`, { headers });
    const body = (await response.json()) as { data: { id: string } };
    if (body.data.id !== user.id) throw new Error('bare fetch: unexpected answer');
  };
  const sdk = async () => {
    if ((await gatehouse.users.get({ id: user.id })).id !== user.id) throw new Error('sdk: unexpected answer');
  };
  // One side after the other, each after its own warm-up.
  const fetchSide = await measure('bare fetch of GET /v1/users/{id}', bare);
  const sdkSide = await measure('SDK gatehouse.users.get({ id })', sdk);
  h.log(`sdk: ${sdkSide.medianMs.toFixed(2)} ms per call against ${fetchSide.medianMs.toFixed(2)} ms for a bare fetch`);
  return {
    calls: CALLS,
    version: scratch.version,
    sides: [fetchSide, sdkSide],
    ratio: sdkSide.medianMs / fetchSide.medianMs,
    cpuRatio: sdkSide.cpuMsPerCall / fetchSide.cpuMsPerCall,
  };
}

export function renderSdk(header: string, run: SdkRun): string {
  const row = (s: Side) => `| ${s.label} | ${s.medianMs.toFixed(2)} | ${s.p99Ms.toFixed(2)} | ${s.cpuMsPerCall.toFixed(3)} |`;
  const verdict = run.ratio <= 1.2 ? 'PASS' : 'FAIL';
  return [
    '## SDK: the overhead of a call against a bare fetch',
    '',
    header,
    '',
    '### Method',
    '',
    `- The real server on PostgreSQL ${run.version} (a scratch database), one application, one user.`,
    `- One client in the benchmark process, ${run.calls} calls one after the other per side after ${WARMUP} of warm-up:`,
    '  the SDK (`createGatehouse`, `maxRetries: 0`: tRPC over `/trpc`) and a bare `fetch` of the same operation over',
    '  REST (`GET /v1/users/{id}`, parsing the JSON). Wall time per call, and CPU of the calling process per call.',
    '',
    '### Results',
    '',
    '| caller | median ms | p99 ms | client CPU ms per call |',
    '|---|---:|---:|---:|',
    row(run.sides[0]),
    row(run.sides[1]),
    '',
    `- Per call the SDK takes ${run.ratio.toFixed(2)}× the time of the bare fetch (issue 8 target: ≤ 1.2×: **${verdict}**),`,
    `  and ${run.cpuRatio.toFixed(2)}× its CPU in the calling process. The wall time includes the server's work, which`,
    '  differs by transport (the SDK calls `/trpc`, the bare fetch `/v1` with its envelope).',
    '',
  ].join('\n');
}

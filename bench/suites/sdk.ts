/**
 * sdk: what a call through the SDK (`createGatehouse`, retries off) costs the caller against a bare `fetch` of the same
 * operation over REST, one client, calls one after the other (the SDK's overhead is in the caller's process; a load
 * would measure the server instead), on the same server.
 */
import { createGatehouse } from '@gatehouse/sdk';
import { log } from '../harness/env.ts';
import { startGatehouse } from '../harness/gatehouse.ts';
import { scratchDatabase } from '../harness/postgres.ts';
import { ratioTarget, type SuiteResult } from '../harness/report.ts';

const CALLS = 3000;
const WARMUP = 300;
const ROUNDS = 10;

/**
 * Both callers in alternating rounds of CALLS ÷ ROUNDS calls (so that other work on the machine weighs on both alike),
 * after WARMUP calls each: median and p99 wall time, and the calling process's CPU per call.
 */
interface Side {
  label: string;
  medianMs: number;
  p99Ms: number;
  cpuMs: number;
}

async function calls(sides: Array<{ label: string; call: () => Promise<unknown> }>) {
  for (const side of sides) for (let i = 0; i < WARMUP; i++) await side.call();
  const times = sides.map(() => [] as number[]);
  const cpu = sides.map(() => 0);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [s, side] of sides.entries()) {
      const before = process.cpuUsage();
      for (let i = 0; i < CALLS / ROUNDS; i++) {
        const started = performance.now();
        await side.call();
        times[s]!.push(performance.now() - started);
      }
      const used = process.cpuUsage(before);
      cpu[s]! += (used.user + used.system) / 1000;
    }
  }
  return sides.map(({ label }, s) => {
    const sorted = times[s]!.sort((a, b) => a - b);
    const side = { label, medianMs: sorted[CALLS / 2]!, p99Ms: sorted[Math.floor(CALLS * 0.99)]!, cpuMs: cpu[s]! / CALLS };
    log(`sdk: ${label}: ${side.medianMs.toFixed(2)} ms per call`);
    return side;
  });
}

export async function sdkSuite(): Promise<SuiteResult> {
  const db = await scratchDatabase();
  const { server, app } = await startGatehouse('Gatehouse', db.url);
  const gatehouse = createGatehouse({ baseUrl: server.url, applicationId: app.id, secretKey: app.secretKey, maxRetries: 0 });
  const user = await gatehouse.users.create({ primary_email: 'sdk-bench@example.com' });
  const [bare, sdk] = (await calls([
    {
      label: 'bare fetch of GET /v1/users/{id}',
      call: async () => {
        const response = await fetch(`${server.url}/v1/users/${user.id}`, { headers: app.sk });
        if (((await response.json()) as { data: { id: string } }).data.id !== user.id)
          throw new Error('bare fetch: unexpected answer');
      },
    },
    {
      label: 'SDK gatehouse.users.get({ id })',
      call: async () => {
        if ((await gatehouse.users.get({ id: user.id })).id !== user.id) throw new Error('sdk: unexpected answer');
      },
    },
  ])) as [Side, Side];
  await server.stop();
  const row = (s: Side) => `| ${s.label} | ${s.medianMs.toFixed(2)} | ${s.p99Ms.toFixed(2)} | ${s.cpuMs.toFixed(3)} |`;
  return {
    title: 'SDK: the overhead of a call against a bare fetch',
    software: [db.version],
    targets: [ratioTarget('SDK call vs bare `fetch`, median time per call', sdk.medianMs, bare.medianMs, 'ms', '≤', 1.2)],
    method: [
      `The real server on a scratch database, one application, one user. One client in the benchmark process, ${CALLS} calls ` +
        `per side in ${ROUNDS} alternating rounds, one call after the other, after ${WARMUP} of warm-up: the SDK (\`maxRetries: 0\`: tRPC over \`/trpc\`) and a ` +
        'bare `fetch` of the same operation over REST (`GET /v1/users/{id}`, parsing the JSON). The wall time includes the ' +
        'server\u2019s work, which differs by transport (`/trpc` against `/v1` with its envelope).',
    ],
    measurements: [],
    details: [
      ['| caller | median ms | p99 ms | client CPU ms per call |', '|---|---:|---:|---:|', row(bare), row(sdk)].join('\n'),
    ],
    notes: [`Client CPU per call: the SDK ${(sdk.cpuMs / bare.cpuMs).toFixed(2)}× the bare fetch.`],
  };
}

/**
 * A TCP proxy in front of PostgreSQL that reads the wire protocol (v3, without TLS) going through it and records each
 * round trip: the statements a client sent up to a Sync (extended protocol: Parse/Bind/Execute…/Sync) or in one
 * simple Query, from when the proxy forwarded them to when the server's ReadyForQuery came back. A server started with
 * `DATABASE_URL` pointing here shows what one request costs in round trips and in time spent waiting on PostgreSQL.
 *
 * It runs in the benchmark process and adds its own latency to every round trip, so it is for traces of requests sent
 * one at a time, never for a load.
 */
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { sleep } from './env.ts';
import { type ConnectionState, type Scenario, send } from './load.ts';
import { num } from './report.ts';

export interface RoundTrip {
  /** Which proxied connection (numbered in order of connection). */
  connection: number;
  /**
   * The statements (whitespace collapsed): each unnamed Parse and simple Query, and for a Bind of a named prepared
   * statement the text it was parsed with (a client that prepares once, like rate-limiter-flexible, sends only
   * Bind/Execute/Sync afterwards).
   */
  statements: string[];
  /** `performance.now()` when the proxy forwarded the Sync or Query, and when the server's ReadyForQuery arrived. */
  sent: number;
  answered: number;
}

/**
 * Splits a stream of protocol messages and calls `onMessage` with each one's type letter and body. The client's
 * first message (the startup, untyped) is skipped: the clients here ask for no TLS, so the rest is plain.
 */
function messages(startup: boolean, onMessage: (type: string, body: Buffer) => void) {
  let buffer: Buffer = Buffer.alloc(0);
  return (chunk: Buffer) => {
    buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
    for (;;) {
      if (startup) {
        if (buffer.length < 4 || buffer.length < buffer.readInt32BE(0)) return;
        buffer = buffer.subarray(buffer.readInt32BE(0));
        startup = false;
      }
      if (buffer.length < 5 || buffer.length < 1 + buffer.readInt32BE(1)) return;
      const length = buffer.readInt32BE(1);
      onMessage(String.fromCharCode(buffer[0]!), buffer.subarray(5, 1 + length));
      buffer = buffer.subarray(1 + length);
    }
  };
}

const cString = (body: Buffer, from: number): [string, number] => {
  const end = body.indexOf(0, from);
  return [body.toString('utf8', from, end).replace(/\s+/g, ' ').trim(), end + 1];
};

export interface PgTrace {
  /** `target` with the proxy's host and port. */
  url: string;
  /** The round trips completed since the last reset. */
  trips: () => RoundTrip[];
  reset: () => void;
  close: () => Promise<void>;
}

export async function startPgTrace(target: URL): Promise<PgTrace> {
  let trips: RoundTrip[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((client) => {
    const connection = ++connections;
    const upstream = connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    let statements: string[] = [];
    const prepared = new Map<string, string>(); // this connection's named prepared statements
    const waiting: Array<{ statements: string[]; sent: number }> = [];
    const fromClient = messages(true, (type, body) => {
      if (type === 'P') {
        const [name, next] = cString(body, 0); // the statement's name, then its text
        const text = cString(body, next)[0];
        if (name) prepared.set(name, text);
        else statements.push(text);
      } else if (type === 'B') {
        const [name] = cString(body, cString(body, 0)[1]); // the portal's name, then the statement's
        if (name) statements.push(prepared.get(name) ?? `(prepared statement ${name})`);
      } else if (type === 'Q' || type === 'S') {
        if (type === 'Q') statements.push(cString(body, 0)[0]);
        waiting.push({ statements, sent: performance.now() });
        statements = [];
      }
    });
    const fromServer = messages(false, (type) => {
      const trip = type === 'Z' ? waiting.shift() : undefined;
      if (trip) trips.push({ connection, ...trip, answered: performance.now() });
    });
    client.on('data', (chunk: Buffer) => {
      fromClient(chunk);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      fromServer(chunk);
      client.write(chunk);
    });
    const end = () => {
      for (const socket of [client, upstream]) {
        socket.destroy();
        sockets.delete(socket);
      }
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as { port: number }).port);
  return {
    url: url.toString(),
    trips: () => trips.slice(),
    reset: () => {
      trips = [];
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close').catch(() => undefined);
    },
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] ?? Number.NaN;

/** Time covered by round trips (overlapping ones counted once). */
export function waitedMs(trips: RoundTrip[]): number {
  let [total, until] = [0, Number.NEGATIVE_INFINITY];
  for (const trip of [...trips].sort((a, b) => a.sent - b.sent)) {
    if (trip.answered > Math.max(trip.sent, until)) total += trip.answered - Math.max(trip.sent, until);
    until = Math.max(until, trip.answered);
  }
  return total;
}

export interface TracedScenario {
  latencyMs: number;
  databaseMs: number;
  roundTrips: number;
  /** Round trips matching `classify`'s patterns, per name (medians). */
  classified: Record<string, number>;
  /** Round trips sent after the response (none expected). */
  afterResponse: number;
  /** One request's round trips (the one with the median count), in order. */
  typical: RoundTrip[];
}

/**
 * Sends `scenario` to a server whose DATABASE_URL is `trace.url`, one request at a time: `warmup` uncounted requests
 * (a new server warms its JIT and caches), then `count`; the medians of the round trips each request caused.
 */
export async function traceRequests(
  url: string,
  scenario: Scenario,
  trace: PgTrace,
  { warmup = 100, count = 10, classify = {} as Record<string, RegExp> } = {},
): Promise<TracedScenario> {
  const state: ConnectionState = {};
  const traced: Array<{ latencyMs: number; during: RoundTrip[]; after: RoundTrip[] }> = [];
  for (let i = -warmup; i < count; i++) {
    trace.reset();
    const started = performance.now();
    await send(url, scenario, state);
    const answered = performance.now();
    if (i < 0) continue;
    await sleep(5); // anything the server still does right after answering shows up now
    const trips = trace.trips();
    traced.push({
      latencyMs: answered - started,
      during: trips.filter((t) => t.sent < answered),
      after: trips.filter((t) => t.sent >= answered),
    });
  }
  const roundTrips = median(traced.map((t) => t.during.length));
  return {
    latencyMs: median(traced.map((t) => t.latencyMs)),
    databaseMs: median(traced.map((t) => waitedMs(t.during))),
    roundTrips,
    classified: Object.fromEntries(
      Object.entries(classify).map(([name, pattern]) => [
        name,
        median(traced.map((t) => t.during.filter((trip) => trip.statements.some((s) => pattern.test(s))).length)),
      ]),
    ),
    afterResponse: Math.max(...traced.map((t) => t.after.length)),
    typical: (traced.find((t) => t.during.length === roundTrips) ?? traced[0]!).during,
  };
}

/** One traced request's round trips as a collapsed Markdown list (statements shortened), for a suite's details. */
export function roundTripList(name: string, t: TracedScenario): string {
  const shorten = (s: string) => (s.length > 200 ? `${s.slice(0, 199)}…` : s);
  return [
    `<details><summary>The round trips of one ${name}</summary>`,
    '',
    ...t.typical.map(
      (trip, i) =>
        `${i + 1}. ${trip.statements.map((s) => `\`${shorten(s).replaceAll('`', "'")}\``).join(' ; ') || '(sync)'} — ${num(trip.answered - trip.sent, 2)} ms`,
    ),
    '',
    '</details>',
  ].join('\n');
}

import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, utimes } from 'node:fs/promises';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHEAPER_NAME, EXTERNAL } from '../build.ts';
import { BOOT_MS } from './helpers/limits.ts';
import { freePort } from './helpers/ports.ts';
import { rawRequest } from './helpers/server.ts';

/**
 * `npm start`'s own command (the root package.json's script: node, its flags and apps/server/start.js), run without npm
 * from the repository's root: a child process on the embedded database in a fresh data directory.
 */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const script = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start as string).split(/\s+/);
const startArguments = script.slice(script.indexOf('node') + 1);
const bundle = join(ROOT, 'apps/server/dist/main.js');
/** When a source of the bundle was last written: just before the start, so that the start builds the bundle again. */
let edited: Date;

let dataDir: string;
let child: ChildProcess;
let output = '';
let url: string;
let port: number;

/**
 * Runs `npm start`'s command with `env`, hands each chunk of its output to `onOutput`, and answers the process once
 * `started()` holds (or fails after BOOT_MS, or when it exits, with what it wrote).
 */
async function npmStart(env: NodeJS.ProcessEnv, onOutput: (chunk: string) => void, started: () => boolean) {
  const server = spawn(process.execPath, startArguments, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let written = '';
  const collect = (chunk: Buffer) => {
    written += chunk;
    onOutput(chunk.toString());
  };
  server.stdout?.on('data', collect);
  server.stderr?.on('data', collect);
  const deadline = Date.now() + BOOT_MS;
  while (!started()) {
    if (Date.now() > deadline || server.exitCode !== null) {
      server.kill('SIGKILL');
      throw new Error(`server did not start:\n${written}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return server;
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-main-'));
  port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    GATEHOUSE_DATA_DIR: dataDir,
    GATEHOUSE_LOG_LEVEL: 'info',
    // Which npm modules the server loads from node_modules (not the bundle): helpers/module-log.mjs.
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${pathToFileURL(join(import.meta.dirname, 'helpers/module-log.mjs')).href}`,
    MODULE_LOG: join(dataDir, 'modules.log'),
  };
  // HOST unset: the documented default bind, as a newcomer's `npm start` has it.
  delete env.HOST;
  delete env.DATABASE_URL;
  delete env.GATEHOUSE_OPERATOR_TOKEN;
  delete env.GATEHOUSE_MASTER_KEY;
  edited = new Date();
  await utimes(join(ROOT, 'apps/server/src/main.ts'), edited, edited);
  // The banner (stdout) and the log's `Server listening` line (written by the logger on its own schedule) may arrive
  // in either order: wait for both.
  child = await npmStart(
    env,
    (chunk) => {
      output += chunk;
    },
    () => output.includes('Gatehouse is running') && output.includes('"msg":"Server listening'),
  );
});

afterAll(async () => {
  if (child.exitCode === null) child.kill('SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
});

describe('npm start on a fresh data directory', () => {
  it('loads its npm packages from the bundle: MikroORM once, and no protocol library before a request needs it', async () => {
    const lines = (await readFile(join(dataDir, 'modules.log'), 'utf8')).split('\n');
    const packages = new Set(
      lines
        .filter((line) => line.startsWith(`${child.pid} `))
        .map((line) => line.match(/\/node_modules\/((?:@[^/]+\/)?[^/]+)\//)?.[1])
        .filter((name) => name !== undefined),
    );
    // A second MikroORM from node_modules would hold classes of its own beside the bundle's.
    expect([...packages].filter((name) => name.startsWith('@mikro-orm/') || name === 'kysely')).toEqual([]);
    // Outside the bundle and loaded at start: the embedded database (its WebAssembly is beside its module) and, on it,
    // the rate limiter's memory store. The protocol libraries load on first use.
    expect([...packages].filter((name) => EXTERNAL.has(name)).sort()).toEqual(['@electric-sql/pglite', 'rate-limiter-flexible']);
  });

  it('runs the bundled server (apps/server/dist/main.js), built again since one of its sources is newer', async () => {
    expect(startArguments.at(-1)).toBe('apps/server/start.js');
    expect((await stat(bundle)).mtimeMs).toBeGreaterThanOrEqual(edited.getTime());
    // Every source it lists exists and is older than it, so the next start runs it without building again.
    const inputs: string[] = JSON.parse(await readFile(join(ROOT, 'apps/server/dist/inputs.json'), 'utf8'));
    expect(inputs.length).toBeGreaterThan(100);
    const built = (await stat(bundle)).mtimeMs;
    const newer = [];
    for (const input of inputs) {
      if ((await stat(join(ROOT, 'apps/server/dist', input))).mtimeMs > built) newer.push(input);
    }
    expect(newer).toEqual([]);
  });

  it('names functions with the helper that skips a function named already (build.ts), defined once', async () => {
    // The chunks of the current build: main.js and what it imports, statically or on first use (earlier builds' chunks
    // stay beside them for a day).
    const dist = join(ROOT, 'apps/server/dist');
    const seen = new Set<string>();
    const helpers: string[] = [];
    const visit = async (name: string) => {
      if (seen.has(name)) return;
      seen.add(name);
      const text = await readFile(join(dist, name), 'utf8');
      helpers.push(...(text.match(/var __name=[^;]*;/g) ?? []));
      for (const [, imported] of text.matchAll(/"\.\/([\w-]+\.js)"/g)) await visit(imported!);
    };
    await visit('main.js');
    expect(seen.size).toBeGreaterThan(3);
    expect(helpers).toEqual([CHEAPER_NAME]);
  });

  it('prints its URL, the docs URL and where the operator token is', () => {
    expect(output).toContain('Gatehouse is running at http://localhost:');
    expect(output).toMatch(/API reference: +http:\/\/localhost:\d+\/docs/);
    expect(output).toContain(`Operator token:  ${join(dataDir, 'operator-token')}`);
    // No operator yet: the console's address and the first operator's one-time set-up link, on the terminal only.
    expect(output).toMatch(/Console: +http:\/\/localhost:\d+\/console\//);
    expect(output).toMatch(/First operator: +http:\/\/localhost:\d+\/console\/setup\?token=cs_\d{10}\.[\w-]{43}\n/);
    expect(output.split('\n').filter((line) => line.startsWith('{') && line.includes('cs_'))).toEqual([]);
  });

  it('says what the socket is bound to (HOST, default 0.0.0.0: every IPv4 interface), in the banner and the log', async () => {
    expect(output).toContain(`Listening on:    0.0.0.0:${port} (every IPv4 interface: HOST=127.0.0.1 keeps it to this machine)`);
    const logged = output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line).msg as string)
      .filter((msg) => msg.startsWith('Server listening'));
    expect(logged.length).toBeGreaterThan(0);
    for (const msg of logged)
      expect(msg).toMatch(
        new RegExp(`^Server listening on 0\\.0\\.0\\.0:${port} \\(every IPv4 interface.*\\), reachable at http://`),
      );
    // Bound on every interface indeed: this machine's other IPv4 addresses reach it too.
    const others = Object.values(networkInterfaces())
      .flat()
      .filter((i) => i && i.family === 'IPv4' && !i.internal)
      .map((i) => i!.address);
    for (const address of others) {
      await new Promise<void>((resolve, reject) => {
        const socket = connect(port, address, () => {
          socket.end();
          resolve();
        });
        socket.once('error', reject);
      });
    }
  });

  it('generates the operator token and master key with mode 0600', async () => {
    for (const file of ['operator-token', 'master.key']) {
      const info = await stat(join(dataDir, file));
      expect(info.mode & 0o777, file).toBe(0o600);
    }
    const key = Buffer.from((await readFile(join(dataDir, 'master.key'), 'utf8')).trim(), 'base64');
    expect(key).toHaveLength(32);
  });

  it('serves the API with the generated operator token, and never logs secrets', async () => {
    const token = (await readFile(join(dataDir, 'operator-token'), 'utf8')).trim();
    const created = await rawRequest(url, 'POST', '/v1/applications', {
      body: { name: 'Main' },
      headers: { authorization: `Bearer ${token}` },
    });
    expect(created.status).toBe(201);
    const { application, secret_key } = created.body.data;
    const auth = { authorization: `Bearer ${secret_key.secret}`, 'x-application-id': application.id };
    expect(
      (await rawRequest(url, 'POST', '/v1/users', { body: { primary_email: 'log@example.com' }, headers: auth })).status,
    ).toBe(201);
    await rawRequest(url, 'GET', '/v1/users?token=one-time-secret-value', { headers: auth });
    await rawRequest(url, 'GET', '/v1/users', { headers: { ...auth, authorization: 'Bearer sk_test_wrongwrongwrong' } });
    await new Promise((r) => setTimeout(r, 200));
    expect(output).toContain('request completed');
    for (const secret of [token, secret_key.secret, 'one-time-secret-value', 'sk_test_wrongwrongwrong']) {
      expect(output).not.toContain(secret);
    }
    expect(output).not.toMatch(/authorization/i);
  });

  it('finds the files beside its sources when bundled: the console, the API reference and its assets, the OpenAPI document, the passkey script', async () => {
    // Each is found from a source's own location (`import.meta.url`, rewritten by build.ts relative to the bundle) or
    // loaded on first use from a chunk of the bundle.
    const console = await fetch(`${url}/console/`);
    expect(console.status).toBe(200);
    expect(console.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await console.text()).toMatch(/<script[^>]+src="\/console\/assets\/[^"]+\.js"/);
    expect((await fetch(`${url}/docs`)).status).toBe(200);
    const bundle = await fetch(`${url}/docs/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
    expect((await bundle.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
    const document = await rawRequest(url, 'GET', '/v1/openapi.json');
    expect(document.status).toBe(200);
    expect(document.body.openapi).toMatch(/^3\./);
    const token = (await readFile(join(dataDir, 'operator-token'), 'utf8')).trim();
    const created = await rawRequest(url, 'POST', '/v1/applications', {
      body: { name: 'Pages' },
      headers: { authorization: `Bearer ${token}` },
    });
    const signIn = await fetch(`${url}/a/${created.body.data.application.id}/sign-in`);
    expect(signIn.status).toBe(200);
    expect(signIn.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('stops gracefully on SIGTERM', async () => {
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).toContain('shutting down');
  });

  it('never loaded Node’s fetch (undici, 13 MB), its HTTP/2 module or TLS: no request here used them, and importing node:http and requiring node:http2 and node:https do not', async () => {
    // build.ts takes node:http for the bundled ES modules without the module wrapper that reads its fetch exports, and
    // gives fastify a node:http2 and a node:https, and prom-client a Pushgateway (node:https), that load at first use;
    // outbound requests import node:https at the first https one.
    expect(await readFile(join(dataDir, 'modules.log'), 'utf8')).toContain(
      `${child.pid} exit undici=false http2=false tls=false\n`,
    );
  });

  it('had made its embedded database from the migrated template (made by npm install), not by replaying the migrations', async () => {
    // Read once the server has stopped (an embedded database has one process). The template's migrations ran when
    // `npm install` built it, before this start; replayed, they would have run after it.
    const db = await PGlite.create({ dataDir: join(dataDir, 'db') });
    try {
      const { rows } = await db.query<{ name: string; executed_at: Date }>('select name, executed_at from mikro_orm_migrations');
      expect(rows.length).toBeGreaterThan(30);
      expect(rows.filter((row) => row.executed_at.getTime() >= edited.getTime())).toEqual([]);
    } finally {
      await db.close();
    }
  });
});

describe('npm start with Redis counters (GATEHOUSE_REDIS_URL)', () => {
  it('counts in Redis: the rate limiter and its Redis client, outside the bundle, work together', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-main-redis-'));
    const redisPort = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(redisPort),
      HOST: '127.0.0.1',
      GATEHOUSE_DATA_DIR: dir,
      GATEHOUSE_REDIS_URL: 'redis://127.0.0.1:6379',
      GATEHOUSE_OPERATOR_TOKEN: 'main-test-operator-token-0123456789',
    };
    delete env.DATABASE_URL;
    delete env.GATEHOUSE_MASTER_KEY;
    let log = '';
    const server = await npmStart(
      env,
      (chunk) => {
        log += chunk;
      },
      () => log.includes('Gatehouse is running'),
    ).catch(async (error: unknown) => {
      await rm(dir, { recursive: true, force: true });
      throw error;
    });
    try {
      const base = `http://127.0.0.1:${redisPort}`;
      const created = await rawRequest(base, 'POST', '/v1/applications', {
        body: { name: 'Redis' },
        headers: { authorization: `Bearer ${env.GATEHOUSE_OPERATOR_TOKEN}` },
      });
      expect(created.status).toBe(201);
      const headers = { 'x-application-id': created.body.data.application.id };
      const remaining: number[] = [];
      for (let i = 0; i < 2; i++) {
        const started = await rawRequest(base, 'POST', '/v1/auth/magic-link/start', {
          body: { email: 'counted@example.com' },
          headers,
        });
        expect(started.status).toBe(200);
        remaining.push(Number(started.headers.get('ratelimit-remaining')));
      }
      // The second start was counted after the first: the counters answered (a Redis the limiter refused is a 503).
      expect(remaining[1]).toBe((remaining[0] ?? 0) - 1);
    } finally {
      server.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });
});

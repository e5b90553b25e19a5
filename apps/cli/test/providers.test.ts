import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createOrm, type DatabaseConfig, openPglite } from '@gatehouse/api';
import { createGatehouseServer, type GatehouseServer } from '@gatehouse/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * `gatehouse providers` as the README's "Add Sign in with Google" walkthrough runs it, against a real server whose
 * operator configured shared Google development credentials (GATEHOUSE_SHARED_OAUTH_GOOGLE_*).
 */
const BIN = fileURLToPath(new URL('../bin/gatehouse.js', import.meta.url));

let server: GatehouseServer;
let closeDatabase: () => Promise<void>;
let tmp: string;
const env: Record<string, string> = {};

function gatehouse(args: string[]) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

async function json<T = any>(args: string[]): Promise<T> {
  const result = await gatehouse([...args, '--json']);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as T;
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'gatehouse-providers-'));
  // PGlite, or with DATABASE_URL a scratch PostgreSQL database dropped afterwards.
  let database: DatabaseConfig;
  if (process.env.DATABASE_URL) {
    const name = `gatehouse_cli_providers_${Date.now()}_${process.pid}`;
    const admin = await createOrm({ kind: 'postgres', url: process.env.DATABASE_URL, poolSize: 1 });
    await admin.em.getConnection().execute(`create database ${name}`);
    const scratch = new URL(process.env.DATABASE_URL);
    scratch.pathname = `/${name}`;
    database = { kind: 'postgres', url: scratch.toString(), poolSize: 5 };
    closeDatabase = async () => {
      await admin.em.getConnection().execute(`drop database if exists ${name} with (force)`);
      await admin.close();
    };
  } else {
    const pglite = await openPglite();
    database = { kind: 'pglite', pglite };
    closeDatabase = () => pglite.close();
  }
  const operatorToken = `op_${randomBytes(24).toString('hex')}`;
  server = await createGatehouseServer({
    database,
    operatorToken,
    masterKey: randomBytes(32),
    baseUrl: 'http://gatehouse.test',
    logLevel: false,
    oauth: { sharedCredentials: { google: { clientId: 'shared-google', clientSecret: 'shared-secret' } } },
  });
  await server.app.listen({ port: 0, host: '127.0.0.1' });
  const address = server.app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  Object.assign(env, {
    PATH: process.env.PATH ?? '',
    HOME: tmp,
    CI: '1',
    GATEHOUSE_CONFIG: join(tmp, 'config.json'),
    GATEHOUSE_BASE_URL: url,
    GATEHOUSE_OPERATOR_TOKEN: operatorToken,
  });
  const created = await json(['apps', 'create', 'Providers walkthrough', '--origin', 'https://app.example.com']);
  Object.assign(env, { GATEHOUSE_APPLICATION_ID: created.application.id, GATEHOUSE_SECRET_KEY: created.secret_key.secret });
});

afterAll(async () => {
  await server?.close();
  await closeDatabase?.();
  await rm(tmp, { recursive: true, force: true });
});

describe('gatehouse providers', () => {
  it('list shows every provider, disabled, with no credentials', async () => {
    const list = await json(['providers', 'list']);
    expect(list.map((p: any) => p.provider)).toEqual([
      'google',
      'github',
      'microsoft',
      'apple',
      'gitlab',
      'discord',
      'slack',
      'linkedin',
      'oidc',
    ]);
    expect(list.every((p: any) => !p.enabled && !p.has_secret)).toBe(true);
  });

  it('set --shared true --enabled true uses the shared development credentials; the table says so', async () => {
    const google = await json(['providers', 'set', 'google', '--shared', 'true', '--enabled', 'true']);
    expect(google).toMatchObject({ provider: 'google', enabled: true, use_shared_dev_credentials: true, has_secret: false });
    const table = await gatehouse(['providers', 'list']);
    expect(table.code).toBe(0);
    const row = table.stdout.split('\n').find((line) => line.startsWith('google'));
    expect(row).toContain('shared (development)');
    expect(row).toContain('yes');
  });

  it('set with own credentials never prints the secret; disable, enable and reset', async () => {
    const set = await gatehouse([
      'providers',
      'set',
      'github',
      '--client-id',
      'gh-id',
      '--client-secret',
      'gh-very-secret',
      '--enabled',
      'true',
    ]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).not.toContain('gh-very-secret');
    expect(set.stdout).toContain('own: gh-id');
    expect(await json(['providers', 'disable', 'github'])).toMatchObject({ enabled: false, has_secret: true });
    expect(await json(['providers', 'enable', 'github'])).toMatchObject({ enabled: true, client_id: 'gh-id' });
    expect(await json(['providers', 'reset', 'github'])).toEqual({ id: 'github', deleted: true });
    expect((await json(['providers', 'list'])).find((p: any) => p.provider === 'github')).toMatchObject({
      enabled: false,
      client_id: null,
      has_secret: false,
    });
  });

  it('refusals are clear: enabling without credentials, an unknown provider', async () => {
    const missing = await gatehouse(['providers', 'enable', 'gitlab']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/client_id and client_secret, or use_shared_dev_credentials/);
    const unknown = await gatehouse(['providers', 'enable', 'myspace']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/provider/);
  });
});

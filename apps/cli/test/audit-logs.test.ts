import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openPglite } from '@gatehouse/api';
import { createGatehouse, type GatehouseClient, GatehouseError } from '@gatehouse/sdk';
import { createGatehouseServer, type GatehouseServer } from '@gatehouse/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BIN = join(fileURLToPath(new URL('..', import.meta.url)), 'bin/gatehouse.js');

let server: GatehouseServer;
let closeDatabase: () => Promise<void>;
let url: string;
let tmp: string;
let env: Record<string, string>;
let sdk: GatehouseClient;
let appId: string;
let secret: string;

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI bundle with exactly `env` (nothing inherited but PATH), never throwing. */
function gatehouse(args: string[], extra: Record<string, string> = {}): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...env, ...extra }, timeout: 60_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'gatehouse-audit-cli-'));
  const pglite = await openPglite();
  closeDatabase = () => pglite.close();
  const operatorToken = `op_${randomBytes(24).toString('hex')}`;
  server = await createGatehouseServer({
    database: { kind: 'pglite', pglite },
    operatorToken,
    masterKey: randomBytes(32),
    baseUrl: 'http://gatehouse.test',
    logLevel: false,
  });
  await server.app.listen({ port: 0, host: '127.0.0.1' });
  const address = server.app.server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const operator = createGatehouse({ baseUrl: url, operatorToken });
  const created = await operator.applications.create({ name: 'Audit CLI' });
  appId = created.application.id;
  secret = created.secret_key.secret;
  sdk = createGatehouse({ baseUrl: url, applicationId: appId, secretKey: secret });
  env = {
    PATH: process.env.PATH ?? '',
    HOME: tmp,
    CI: '1',
    GATEHOUSE_CONFIG: join(tmp, 'config.json'),
    GATEHOUSE_BASE_URL: url,
    GATEHOUSE_APPLICATION_ID: appId,
    GATEHOUSE_SECRET_KEY: secret,
  };
});

afterAll(async () => {
  await server?.close();
  await closeDatabase?.();
  await rm(tmp, { recursive: true, force: true });
});

describe('SDK: auditLogs', () => {
  it('list pages the log with its filters; export iterates every entry from the stream', async () => {
    const org = await sdk.organizations.create({ name: 'Acme' });
    await sdk.organizations.update({ id: org.id, name: 'Acme 2' });
    for (let i = 0; i < 30; i++) await sdk.users.create({ primary_email: `sdk-${i}@example.com` });
    const page = await sdk.auditLogs.list({ organization_id: org.id });
    expect(page.audit_logs.map((e) => e.action)).toEqual(['organization.updated', 'organization.created']);
    expect(page.audit_logs[0]).toMatchObject({
      actor: { type: 'api_key' },
      target: { type: 'organization', id: org.id },
      user_agent: expect.stringMatching(/^gatehouse-sdk-js\//),
    });

    const all = await sdk.auditLogs.list({ limit: 100 });
    const exported = [];
    for await (const entry of sdk.auditLogs.export()) exported.push(entry);
    expect(exported).toEqual(all.audit_logs);
    const users = [];
    for await (const entry of sdk.auditLogs.export({ action: 'user.*' })) users.push(entry.action);
    expect(users).toEqual(Array(30).fill('user.created'));
    // Leaving the loop early closes the stream.
    let first: string | undefined;
    for await (const entry of sdk.auditLogs.export()) {
      first = entry.id;
      break;
    }
    expect(first).toBe(all.audit_logs[0]!.id);

    const csv = await new Response(await sdk.auditLogs.download({ format: 'csv', action: 'organization.*' })).text();
    expect(csv.split('\r\n')[0]).toBe(
      'id,action,occurred_at,actor_type,actor_id,target_type,target_id,organization_id,ip,user_agent,data',
    );
    expect(csv.trimEnd().split('\r\n')).toHaveLength(3);
  });

  it('a key without audit_logs:read: 403 insufficient_scope from list, export and download alike', async () => {
    const narrow = await sdk.apiKeys.create({ name: 'narrow', scopes: ['users:read'] });
    const limited = createGatehouse({ baseUrl: url, applicationId: appId, secretKey: narrow.secret });
    for (const attempt of [
      () => limited.auditLogs.list(),
      async () => {
        for await (const _ of limited.auditLogs.export()) break;
      },
      () => limited.auditLogs.download({ format: 'csv' }),
    ]) {
      const error = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(GatehouseError);
      expect(error).toMatchObject({ code: 'insufficient_scope', status: 403 });
    }
    const invalid = await (async () => {
      for await (const _ of sdk.auditLogs.export({ action: 'not an action' })) break;
    })().catch((e: unknown) => e);
    expect(invalid).toMatchObject({ code: 'validation_failed', status: 422 });
  });
});

describe('CLI: gatehouse audit-logs', () => {
  it('list prints a page with the filters; --json the API result', async () => {
    const org = await sdk.organizations.create({ name: 'Listed' });
    const listed = await gatehouse(['audit-logs', 'list', '--organization-id', org.id, '--json']);
    expect(listed.stderr).toBe('');
    expect(JSON.parse(listed.stdout)).toMatchObject({ total: 1, audit_logs: [{ action: 'organization.created' }] });
    const plain = await gatehouse(['audit-logs', 'list', '--action', 'organization.*', '--limit', '1']);
    const [header, row] = plain.stdout.split('\n');
    expect(header).toBe('id\toccurred_at\taction\tactor\ttarget\torganization_id\tip');
    expect(row).toMatch(new RegExp(`\torganization\\.created\tapi_key:[0-9a-f-]+\torganization:${org.id}\t${org.id}\t`));
    const bad = await gatehouse(['audit-logs', 'list', '--action', '*']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error: validation_failed: /);
  });

  it('export --format ndjson|csv writes the stream to stdout, for a file', async () => {
    const ndjson = await gatehouse(['audit-logs', 'export', '--action', 'user.*']);
    expect(ndjson.code).toBe(0);
    const lines = ndjson.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.length).toBeGreaterThanOrEqual(30);
    expect(new Set(lines.map((e) => e.action))).toEqual(new Set(['user.created']));
    const file = join(tmp, 'audit.csv');
    const csv = await new Promise<number | null>((resolve) => {
      const child = spawn('sh', ['-c', `"${process.execPath}" "${BIN}" audit-logs export --format csv > "${file}"`], { env });
      child.on('close', resolve);
    });
    expect(csv).toBe(0);
    const written = await readFile(file, 'utf8');
    expect(written.startsWith('id,action,occurred_at,actor_type,actor_id,')).toBe(true);
    expect(written.trimEnd().split('\r\n').length).toBe((await sdk.auditLogs.list()).total + 1);
    const unknown = await gatehouse(['audit-logs', 'export', '--format', 'xml']);
    expect(unknown.code).toBe(2);
  });

  it('tail prints the latest entries, then each new one as it is written, until Ctrl-C', async () => {
    const child = spawn(
      process.execPath,
      [BIN, 'audit-logs', 'tail', '--action', 'organization.*', '--limit', '1', '--interval', '1', '--json'],
      {
        env,
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const lines = () =>
      stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line));
    const waitFor = async (count: number) => {
      for (let i = 0; i < 400 && lines().length < count; i++) await new Promise((resolve) => setTimeout(resolve, 25));
      expect(lines().length, stderr).toBe(count);
    };
    await waitFor(1);
    expect(lines()[0].action).toMatch(/^organization\./);
    const org = await sdk.organizations.create({ name: 'Tailed' });
    await sdk.users.create({ primary_email: 'not-tailed@example.com' });
    await sdk.organizations.update({ id: org.id, name: 'Tailed 2' });
    await waitFor(3);
    // Oldest first, like tail -f; the filter holds (no user.created).
    expect(
      lines()
        .slice(1)
        .map((e) => [e.action, e.target.id]),
    ).toEqual([
      ['organization.created', org.id],
      ['organization.updated', org.id],
    ]);
    child.kill('SIGINT');
    const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('timeout'), 10_000))]);
    expect(code).toBe(0);
    expect(stderr).toBe('');
  });
});

import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { createOrm, type DatabaseConfig, openPglite } from '@gatehouse/api';
import { createGatehouse, createGatehouseClient, GatehouseError } from '@gatehouse/sdk';
import { createGatehouseServer, type GatehouseServer } from '@gatehouse/server';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalDns, startLocalDns } from '../../server/test/helpers/dns.ts';
import { createTestIdp, postToAcs, type TestIdp } from '../../server/test/helpers/saml-idp.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(root, 'bin/gatehouse.js');
const SOURCE = join(root, 'src/index.tsx');
const TSX = join(dirname(createRequire(import.meta.url).resolve('tsx/package.json')), 'dist/cli.mjs');

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

let server: GatehouseServer;
/** The DNS server the server under test resolves through (its `dnsServers`): `domains verify` looks up here. */
let dns: LocalDns;
let closeDatabase: () => Promise<void>;
let url: string;
let operatorToken: string;
let tmp: string;
let configFile: string;
let baseEnv: Record<string, string>;
let firstMigration: Promise<Result>;

/** Runs the CLI as a child process with exactly this environment (nothing inherited but PATH), never throwing. */
function gatehouse(
  args: string[],
  env: Record<string, string | undefined> = {},
  entry: 'bundle' | 'source' = 'bundle',
  timeout = 60_000,
) {
  const argv = entry === 'bundle' ? [BIN, ...args] : [TSX, SOURCE, ...args];
  const merged = Object.fromEntries(Object.entries({ ...baseEnv, ...env }).filter(([, v]) => v !== undefined));
  return new Promise<Result>((resolve) => {
    execFile(process.execPath, argv, { env: merged, timeout }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

/** Runs a command with `--json` and parses its output, failing with the CLI's stderr when it did not succeed. */
async function json<T = any>(args: string[], env?: Record<string, string | undefined>): Promise<T> {
  const result = await gatehouse([...args, '--json'], env);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as T;
}

/**
 * The server's database: a new embedded PGlite, or with DATABASE_URL a scratch PostgreSQL database created for this
 * run and dropped after it (the tests count rows, so they need an empty one). The server migrates it on start.
 */
async function openDatabase(): Promise<{ config: DatabaseConfig; close: () => Promise<void> }> {
  const url = process.env.DATABASE_URL;
  if (!url) {
    const pglite = await openPglite();
    return { config: { kind: 'pglite', pglite }, close: () => pglite.close() };
  }
  const name = `gatehouse_cli_test_${Date.now()}_${process.pid}`;
  const admin = await createOrm({ kind: 'postgres', url, poolSize: 1 });
  await admin.em.getConnection().execute(`create database ${name}`);
  const scratch = new URL(url);
  scratch.pathname = `/${name}`;
  return {
    config: { kind: 'postgres', url: scratch.toString(), poolSize: 5 },
    close: async () => {
      await admin.em.getConnection().execute(`drop database if exists ${name} with (force)`);
      await admin.close();
    },
  };
}

beforeAll(async () => {
  expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(24);
  tmp = await mkdtemp(join(tmpdir(), 'gatehouse-cli-'));
  configFile = join(tmp, 'config', 'gatehouse', 'config.json');
  baseEnv = { PATH: process.env.PATH ?? '', HOME: tmp, CI: '1', GATEHOUSE_CONFIG: configFile };
  // The first `migrate` builds a new embedded database (seconds of CPU): run it beside the server's start-up.
  // A new embedded database is seconds of CPU (initdb): on a busy two-core machine that took over a minute.
  firstMigration = gatehouse(['migrate', '--json'], { GATEHOUSE_DATA_DIR: join(tmp, 'migrate', 'data') }, 'bundle', 240_000);

  const database = await openDatabase();
  closeDatabase = database.close;
  operatorToken = `op_${randomBytes(24).toString('hex')}`;
  dns = await startLocalDns();
  server = await createGatehouseServer({
    database: database.config,
    operatorToken,
    masterKey: randomBytes(32),
    baseUrl: 'http://gatehouse.test',
    logLevel: false,
    dnsServers: [dns.address],
  });
  await server.app.listen({ port: 0, host: '127.0.0.1' });
  const address = server.app.server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  Object.assign(baseEnv, { GATEHOUSE_BASE_URL: url, GATEHOUSE_OPERATOR_TOKEN: operatorToken });
});

afterAll(async () => {
  await firstMigration;
  await server?.close();
  await dns?.close();
  await closeDatabase?.();
  await rm(tmp, { recursive: true, force: true });
});

describe('gatehouse CLI against a real server', () => {
  let app: { id: string; secret: string };
  let userId: string;
  let orgId: string;

  it('apps create --json prints the application and its first secret key', async () => {
    const created = await json(['apps', 'create', 'CLI test', '--origin', 'https://app.example.com']);
    expect(created.application).toMatchObject({
      name: 'CLI test',
      environment: 'development',
      allowed_origins: ['https://app.example.com'],
    });
    expect(created.secret_key.secret).toMatch(/^sk_test_[0-9A-Za-z]{43}$/);
    app = { id: created.application.id, secret: created.secret_key.secret };
  });

  it('login rejects a wrong key and saves nothing', async () => {
    const result = await gatehouse(['login', '--application-id', app.id, '--secret-key', `sk_test_${'x'.repeat(43)}`]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: invalid_api_key: .+\n$/);
    await expect(stat(configFile)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('login checks the key and stores it in a 0600 file inside a 0700 directory', async () => {
    const result = await gatehouse(['login'], { GATEHOUSE_APPLICATION_ID: app.id, GATEHOUSE_SECRET_KEY: app.secret });
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toContain(`Logged in to ${url} as application ${app.id}`);
    expect((await stat(configFile)).mode & 0o777).toBe(0o600);
    expect((await stat(dirname(configFile))).mode & 0o777).toBe(0o700);
    expect(JSON.parse(await readFile(configFile, 'utf8'))).toEqual({
      base_url: url,
      application_id: app.id,
      secret_key: app.secret,
    });
  });

  it('api-keys create, list and revoke with the saved credentials', async () => {
    // No GATEHOUSE_BASE_URL either: everything comes from the config file.
    const env = { GATEHOUSE_BASE_URL: undefined };
    const key = await json(['api-keys', 'create', 'ci', '--scope', 'users:read'], env);
    expect(key).toMatchObject({ name: 'ci', scopes: ['users:read'], revoked_at: null });
    expect(key.secret).toMatch(/^sk_test_/);
    const keys = await json<any[]>(['api-keys', 'list'], env);
    expect(keys.map((k) => k.id)).toContain(key.id);
    expect(await json(['api-keys', 'revoke', key.id], env)).toEqual({ id: key.id, deleted: true });
    const revoked = await gatehouse(['users', 'list'], { GATEHOUSE_SECRET_KEY: key.secret });
    expect(revoked.code).toBe(1);
    expect(revoked.stderr).toMatch(/^error: invalid_api_key: /);
  });

  it('users create, list and get', async () => {
    const user = await json(['users', 'create', '--email', 'a@example.com', '--verified', '--profile', '{"name":"Ada"}']);
    expect(user).toMatchObject({
      primary_email: 'a@example.com',
      email_verified: true,
      profile: { name: 'Ada' },
      status: 'active',
    });
    userId = user.id;
    const page = await json(['users', 'list']);
    expect(page).toMatchObject({ total: 1, limit: 25, offset: 0 });
    expect(page.users[0]).toMatchObject({ id: userId, primary_email: 'a@example.com' });
    expect(await json(['users', 'get', userId])).toEqual(user);
    const searched = await json(['users', 'list', '--search', 'nobody', '--limit', '5']);
    expect(searched).toMatchObject({ users: [], total: 0, limit: 5 });
  });

  it('a failing call prints one error line with the API code and exits 1', async () => {
    const result = await gatehouse(['users', 'create', '--email', 'a@example.com']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('error: email_taken: A user with this email already exists\n');
    const invalid = await gatehouse(['users', 'get', 'not-a-uuid']);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/^error: validation_failed: .*id/);
    // Under --json the failure is JSON on stderr, with what the API said.
    const asJson = await gatehouse(['users', 'create', '--email', 'a@example.com', '--json']);
    expect(asJson.code).toBe(1);
    expect(asJson.stdout).toBe('');
    expect(JSON.parse(asJson.stderr)).toEqual({
      error: {
        code: 'email_taken',
        status: 409,
        message: 'A user with this email already exists',
        request_id: expect.any(String),
      },
    });
  });

  it('orgs create, list and members add/list', async () => {
    const org = await json(['orgs', 'create', 'Acme']);
    expect(org).toMatchObject({ name: 'Acme', slug: 'acme', member_count: 0 });
    orgId = org.id;
    const page = await json(['orgs', 'list']);
    expect(page.total).toBe(1);
    expect(page.organizations[0]).toMatchObject({ id: orgId, name: 'Acme', slug: 'acme' });
    const member = await json(['orgs', 'members', 'add', orgId, userId, '--role', 'admin']);
    expect(member).toMatchObject({ user_id: userId, email: 'a@example.com', role: 'admin' });
    const members = await json(['orgs', 'members', 'list', orgId]);
    expect(members).toMatchObject({ total: 1, members: [{ user_id: userId, role: 'admin' }] });
    const again = await gatehouse(['orgs', 'members', 'add', orgId, userId]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^error: already_member: /);
  });

  it('orgs invite, invitations (with --status), resend and revoke', async () => {
    const invited = await json([
      'orgs',
      'invite',
      orgId,
      'Invitee@Example.com',
      '--role',
      'admin',
      '--expires-in',
      '2d',
      '--redirect-url',
      'https://app.example.com/welcome',
    ]);
    expect(invited).toMatchObject({ organization_id: orgId, email: 'invitee@example.com', role: 'admin', status: 'pending' });
    expect(Math.abs(Date.parse(invited.expires_at) - Date.now() - 2 * 86400_000)).toBeLessThan(120_000);
    expect(await json(['orgs', 'invitations', orgId, '--status', 'pending'])).toMatchObject({
      total: 1,
      invitations: [{ id: invited.id, email: 'invitee@example.com' }],
    });
    expect(await json(['orgs', 'invitations', 'resend', orgId, invited.id])).toMatchObject({ id: invited.id, status: 'pending' });
    expect(await json(['orgs', 'invitations', 'revoke', orgId, invited.id])).toMatchObject({ id: invited.id, status: 'revoked' });
    expect((await json(['orgs', 'invitations', orgId, '--status', 'revoked'])).total).toBe(1);
    expect((await json(['orgs', 'invitations', orgId, '--status', 'pending'])).total).toBe(0);

    const table = await gatehouse(['orgs', 'invitations', orgId]);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]?.split('\t')).toEqual(['id', 'email', 'role', 'status', 'expires_at', 'created_at']);
    // a@example.com is a member already; a foreign redirect is refused by the server.
    const member = await gatehouse(['orgs', 'invite', orgId, 'a@example.com']);
    expect(member.code).toBe(1);
    expect(member.stderr).toMatch(/^error: already_member: /);
    const foreign = await gatehouse(['orgs', 'invite', orgId, 'b@example.com', '--redirect-url', 'https://evil.example.com/']);
    expect(foreign.stderr).toMatch(/^error: invalid_url: /);
    // Usage errors, caught before anything is sent.
    for (const args of [
      ['orgs', 'invite', orgId, 'c@example.com', '--expires-in', 'soon'],
      ['orgs', 'invitations', orgId, '--status', 'open'],
      ['orgs', 'invitations'],
    ]) {
      expect((await gatehouse(args)).code, args.join(' ')).toBe(2);
    }
  });

  it('prints tab-separated plain text when stdout is not a terminal', async () => {
    const users = await gatehouse(['users', 'list']);
    expect(users).toMatchObject({ code: 0, stderr: '' });
    const lines = users.stdout
      .trimEnd()
      .split('\n')
      .map((line) => line.split('\t'));
    expect(lines[0]).toEqual(['id', 'primary_email', 'email_verified', 'status', 'created_at']);
    expect(lines[1]).toEqual([userId, 'a@example.com', 'true', 'active', expect.stringMatching(/^\d{4}-\d\d-\d\dT/)]);
    expect(users.stdout).toBe(stripVTControlCharacters(users.stdout));

    const org = await gatehouse(['orgs', 'list'], { CI: undefined, TERM: 'dumb' });
    expect(org.stdout.split('\n')[1]).toMatch(new RegExp(`^${orgId}\tAcme\tacme\t1\t`));

    const record = await gatehouse(['users', 'get', userId]);
    expect(record.stdout).toContain(`id\t${userId}\nprimary_email\ta@example.com\n`);
    expect(record.stdout).toContain('merged_into\t\n');
  });

  it('users merge answers the target', async () => {
    const source = await json(['users', 'create', '--email', 'b@example.com']);
    const target = await json(['users', 'merge', source.id, userId]);
    expect(target).toMatchObject({ id: userId, status: 'active' });
    expect(await json(['users', 'get', source.id])).toMatchObject({ status: 'merged', merged_into: userId });
  });

  it('flags take precedence over the environment and the config file', async () => {
    const wrongKey = await gatehouse(['users', 'list', '--secret-key', `sk_test_${'y'.repeat(43)}`]);
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toMatch(/^error: invalid_api_key: /);
    const unreachable = await gatehouse(['--base-url', 'http://127.0.0.1:9', 'users', 'list']);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^error: network_error: could not reach http:\/\/127\.0\.0\.1:9 .*\n$/);
  });

  it('usage errors exit 2 with one line on stderr', async () => {
    const cases = await Promise.all([
      gatehouse(['users', 'list', '--limit', 'ten']),
      gatehouse(['users', 'create', '--profile', '[1, 2]']),
      gatehouse(['api-keys', 'create', 'no-scope']),
      gatehouse(['users', 'frobnicate']),
      gatehouse(['apps', 'create', 'x', '--environment', 'staging']),
      gatehouse(['users', 'list'], { GATEHOUSE_CONFIG: join(tmp, 'missing.json') }),
      gatehouse(['users', 'list', '--base-url', 'ftp://example.com']),
      // Checked here, before anything is sent.
      gatehouse(['users', 'list', '--limit', '500']),
      gatehouse(['orgs', 'list', '--limit', '0']),
      gatehouse(['events', 'list', '--offset', '-1']),
      // A user without an email must be asked for: a script says --no-email.
      gatehouse(['users', 'create']),
      gatehouse(['orgs', 'update', '00000000-0000-7000-8000-000000000000']),
      gatehouse(['users', 'delete', '00000000-0000-7000-8000-000000000000']),
    ]);
    for (const result of cases) {
      expect(result.code, result.stderr).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^error: [^\n]+\n$/);
    }
    expect(cases[5]!.stderr).toMatch(/not logged in/);
    expect(cases[7]!.stderr).toMatch(/--limit.*expected 1 to 100/);
    expect(cases[10]!.stderr).toMatch(/--no-email/);
    expect(cases[12]!.stderr).toMatch(/--yes/);
    const usageJson = await gatehouse(['users', 'create', '--json']);
    expect(usageJson.code).toBe(2);
    expect(JSON.parse(usageJson.stderr).error.code).toBe('usage_error');
    // Commander's own refusals (an unknown option, a missing argument, an unknown command) are JSON under --json too.
    const commanderCases = await Promise.all([
      gatehouse(['users', 'create', '--emial', 'x', '--json']),
      gatehouse(['users', 'get', '--json']),
      gatehouse(['users', 'frobnicate', '--json']),
    ]);
    for (const result of commanderCases) {
      expect(result.code, result.stderr).toBe(2);
      expect(result.stdout).toBe('');
      expect(JSON.parse(result.stderr)).toEqual({ error: { code: 'usage_error', message: expect.any(String) } });
    }
    expect(JSON.parse(commanderCases[0]!.stderr).error.message).toMatch(/^unknown option '--emial'/);
  });

  it('--help lists the exit codes, and the commands that answer yes or no say which code means no', async () => {
    const help = await gatehouse(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Exit codes:\n {2}0 .*\n {2}1 .*error.*\n {2}2 .*usage.*\n {2}3 .*no/);
    for (const command of [
      ['authz', 'check'],
      ['access', 'check'],
      ['domains', 'verify'],
    ]) {
      const text = (await gatehouse([...command, '--help'])).stdout;
      // Commander wraps descriptions to the width: any white space between the words.
      expect(text, command.join(' ')).toMatch(/exit\s+3/);
    }
  });

  it('apps list and delete find the operator token in the data directory', async () => {
    const dataDir = join(tmp, 'server-data');
    await mkdir(dataDir, { recursive: true });
    await writeFile(join(dataDir, 'operator-token'), `${operatorToken}\n`, { mode: 0o600 });
    const env = { GATEHOUSE_OPERATOR_TOKEN: undefined, GATEHOUSE_DATA_DIR: dataDir };
    const page = await json(['apps', 'list'], env);
    expect(page.applications.map((a: { id: string }) => a.id)).toContain(app.id);

    const doomed = await json(['apps', 'create', 'Doomed', '--environment', 'production']);
    expect(doomed.secret_key.secret).toMatch(/^sk_live_/);
    // Without a terminal to ask on, deleting needs --yes: the application stays.
    const unconfirmed = await gatehouse(['apps', 'delete', doomed.application.id], env);
    expect(unconfirmed).toMatchObject({ code: 2, stdout: '' });
    expect(unconfirmed.stderr).toBe(
      'error: deleting an application deletes all its data: pass --yes to confirm ' +
        '(standard input is not a terminal, so the CLI cannot ask)\n',
    );
    expect((await json(['apps', 'list'], env)).applications.map((a: { id: string }) => a.id)).toContain(doomed.application.id);
    expect(await json(['apps', 'delete', doomed.application.id, '--yes'], env)).toEqual({
      id: doomed.application.id,
      deleted: true,
    });

    const noToken = await gatehouse(['apps', 'list'], { ...env, GATEHOUSE_DATA_DIR: join(tmp, 'nowhere') });
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toMatch(/^error: no operator token/);
  });

  it('migrate applies the migrations to a new embedded database, then finds nothing to do', async () => {
    const first = await firstMigration;
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const report = JSON.parse(first.stdout);
    expect(report.database).toBe(`embedded PGlite in ${join(tmp, 'migrate', 'data', 'db')}`);
    expect(report.applied.length).toBeGreaterThan(0);
    const second = await gatehouse(['migrate'], { GATEHOUSE_DATA_DIR: join(tmp, 'migrate', 'data') });
    expect(second).toMatchObject({ code: 0, stderr: '' });
    expect(second.stdout).toMatch(/^Database is up to date/);
  });

  /** What a browser does to ask for a sign-in link; the development application logs the mail with its link. */
  async function startMagicLink(email: string) {
    const response = await fetch(`${url}/v1/auth/magic-link/start`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-application-id': app.id },
      body: JSON.stringify({ email }),
    });
    expect(response.status).toBe(200);
  }

  /**
   * Waits until the message log holds a message to `to` that is not in `known` (mail is logged after the answer),
   * of the template `template` when given.
   */
  /** The message to `to` in the log, once it is there (and, with `status`, once it has that status: the send is the worker's). */
  async function loggedMessage(to: string, known: Set<string> = new Set(), template?: string, status?: string) {
    const sdk = createGatehouse({ baseUrl: url, applicationId: app.id, secretKey: app.secret });
    for (let attempt = 0; attempt < 100; attempt++) {
      const { messages } = await sdk.messages.list({ limit: 100 });
      const found = messages.find(
        (m) =>
          m.to === to &&
          !known.has(m.id) &&
          (template === undefined || m.template_key === template) &&
          (status === undefined || m.status === status),
      );
      if (found) return found;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`no message to ${to} was logged`);
  }

  it('templates list, show, set and reset', async () => {
    const catalog = await json<any[]>(['templates', 'list']);
    expect(catalog.find((t) => t.key === 'magic_link')).toMatchObject({ channel: 'email', has_subject: true, delivered: true });
    const plainList = await gatehouse(['templates', 'list']);
    expect(plainList.stdout.split('\n')[0]).toBe('key\tchannel\tdelivered\thas_subject\tlabel');
    expect(plainList.stdout).toContain('magic_link\temail\ttrue\ttrue\tMagic link\n');

    expect(await json(['templates', 'show', 'magic_link'])).toMatchObject({
      key: 'magic_link',
      subject: 'Your sign-in link for {{app_name}}',
      delivered: true,
      customized: false,
      updated_at: null,
    });

    const bodyFile = join(tmp, 'magic-link.html');
    await writeFile(bodyFile, '<p>{{email}}: <a href="{{link}}">sign in</a></p>');
    const set = await json([
      'templates',
      'set',
      'magic_link',
      '--subject',
      'Sign in to {{app_name}} now',
      '--body-file',
      bodyFile,
      '--delivered',
      'false',
    ]);
    expect(set).toMatchObject({
      subject: 'Sign in to {{app_name}} now',
      body: '<p>{{email}}: <a href="{{link}}">sign in</a></p>',
      delivered: false,
      customized: true,
      updated_at: expect.stringMatching(/^\d{4}-/),
    });
    // What is not given is kept.
    expect(await json(['templates', 'set', 'magic_link', '--delivered', 'true'])).toMatchObject({
      subject: 'Sign in to {{app_name}} now',
      delivered: true,
    });
    const record = await gatehouse(['templates', 'show', 'magic_link']);
    expect(record.stdout).toContain('key\tmagic_link\n');
    expect(record.stdout).toContain('customized\ttrue\n');

    const failures = await Promise.all([
      gatehouse(['templates', 'set', 'magic_link', '--subject', '{{#open}} never closed']),
      gatehouse(['templates', 'show', 'no_such_template']),
      gatehouse(['templates', 'set', 'magic_link']),
      gatehouse(['templates', 'set', 'magic_link', '--body-file', join(tmp, 'missing.html')]),
      gatehouse(['templates', 'set', 'magic_link', '--delivered', 'maybe']),
    ]);
    expect(failures.map((r) => r.code)).toEqual([1, 1, 2, 2, 2]);
    expect(failures[0]!.stderr).toMatch(/^error: validation_failed: .*subject/);
    expect(failures[1]!.stderr).toMatch(/^error: not_found: /);
    expect(failures[2]!.stderr).toBe('error: nothing to set: give --subject, --body-file or --delivered\n');
    expect(failures[3]!.stderr).toMatch(/^error: cannot read the body file .*missing\.html: ENOENT\n$/);

    expect(await json(['templates', 'reset', 'magic_link'])).toEqual({ id: 'magic_link', deleted: true });
    expect(await json(['templates', 'show', 'magic_link'])).toMatchObject({ customized: false, delivered: true });
    expect((await gatehouse(['templates', 'reset', 'magic_link'])).stdout).toBe('Template magic_link is back to the default\n');
  });

  it('messages tail shows the log newest first; sessions revoke signs a user out everywhere', async () => {
    await startMagicLink('a@example.com');
    const logged = await loggedMessage('a@example.com', new Set(), 'magic_link', 'sent');
    const page = await json(['messages', 'tail', '--limit', '1']);
    expect(page).toMatchObject({
      limit: 1,
      offset: 0,
      messages: [{ id: logged.id, template_key: 'magic_link', to: 'a@example.com' }],
    });
    const plain = await gatehouse(['messages', 'tail']);
    expect(plain.stdout.split('\n')[0]).toBe('id\tcreated_at\ttemplate_key\tchannel\tto\tstatus\tsubject');
    expect(plain.stdout.split('\n')[1]).toMatch(new RegExp(`^${logged.id}\t.*\tmagic_link\temail\ta@example.com\tsent\t`));

    // The development application's log keeps the link: sign in with it, as the person would.
    // The logged text keeps Mustache's HTML escapes (`token&#x3D;ml_…`, a service bug reported separately): decode.
    const body = (page.messages[0].body as string).replace(/&#x([0-9a-f]+);/gi, (_m, hex: string) =>
      String.fromCodePoint(Number.parseInt(hex, 16)),
    );
    const token = /token=(ml_[0-9A-Za-z]+)/.exec(body)![1]!;
    const browser = createGatehouseClient({ baseUrl: url, applicationId: app.id });
    const result = await browser.magicLink.verify({ token });
    expect(result.status).toBe('complete');
    expect((await browser.me()).id).toBe(userId);

    expect(await json(['sessions', 'revoke', userId])).toEqual({ user_id: userId, revoked: 1 });
    const refused = await browser.me().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(GatehouseError);
    expect(refused).toMatchObject({ code: 'invalid_token' });
    expect((await gatehouse(['sessions', 'revoke', userId])).stdout).toBe(`Revoked 0 sessions of user ${userId}\n`);
    const unknown = await gatehouse(['sessions', 'revoke', '00000000-0000-7000-8000-000000000000']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error: not_found: /);
  });

  it('messages tail --follow prints the latest messages, then each new one', async () => {
    await startMagicLink('b@example.com');
    const before = await loggedMessage('b@example.com');
    const child = spawn(process.execPath, [BIN, 'messages', 'tail', '--follow', '--max-polls', '2', '--limit', '2', '--json'], {
      env: baseEnv,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    // Once the first two lines are out, log a new message: one of the next polls (2 s apart) must print it.
    for (let i = 0; i < 200 && stdout.split('\n').length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    await startMagicLink('c@example.com');
    const after = await loggedMessage('c@example.com');
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
    const lines = stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(3);
    // Oldest first, like tail -f: the two latest (the newest of them is b's), then the new one.
    expect(lines[1]).toMatchObject({ id: before.id, to: 'b@example.com' });
    expect(lines[0].created_at <= lines[1].created_at).toBe(true);
    // A message is printed when it first appears: queued then, maybe sent by now.
    const { status: _status, ...stable } = after;
    expect(lines[2]).toMatchObject(stable);
    expect(['queued', 'sent']).toContain(lines[2].status);

    const plain = await gatehouse(['messages', 'tail', '--follow', '--max-polls', '0', '--limit', '2']);
    const rows = plain.stdout.trimEnd().split('\n');
    expect(rows).toHaveLength(3);
    expect(rows[0]).toBe('id\tcreated_at\ttemplate_key\tchannel\tto\tstatus\tsubject');
    expect(rows[2]).toMatch(new RegExp(`^${after.id}\t`));
  });

  it('signing-keys rotate makes a new signing key and keeps the old one published', async () => {
    const jwks = async () => (await (await fetch(`${url}/v1/applications/${app.id}/jwks.json`)).json()) as { keys: any[] };
    const before = (await jwks()).keys.map((k) => k.kid);
    expect(before).toHaveLength(1);
    const rotated = await json(['signing-keys', 'rotate']);
    expect(rotated.kid).not.toBe(before[0]);
    expect(rotated.keys.map((k: { kid: string }) => k.kid).sort()).toEqual([rotated.kid, before[0]].sort());
    expect((await jwks()).keys.map((k) => k.kid).sort()).toEqual([rotated.kid, before[0]].sort());

    const plain = await gatehouse(['signing-keys', 'rotate']);
    expect(plain.code).toBe(0);
    const kid = /^kid\t(\S+)\n/.exec(plain.stdout)![1]!;
    expect(plain.stdout).toContain(`published\t${kid},${rotated.kid},${before[0]}\n`);
    expect(plain.stderr).toMatch(/new key/);
    expect(plain.stderr).not.toMatch(/deprecated/);
  });

  it('keys, the old name of signing-keys, still works for a release: hidden from --help, with a notice on stderr', async () => {
    const help = await gatehouse(['--help']);
    expect(help.stdout).toMatch(/^ {2}signing-keys /m);
    expect(help.stdout).not.toMatch(/^ {2}keys /m);
    const legacy = await gatehouse(['keys', 'rotate', '--json']);
    expect(legacy.code, legacy.stderr).toBe(0);
    expect(JSON.parse(legacy.stdout).kid).toEqual(expect.any(String));
    expect(legacy.stderr).toBe('warning: `gatehouse keys` is deprecated and will be removed: use `gatehouse signing-keys`\n');
  });

  /**
   * Signs `email` in with a new sign-in link from the message log, as the person would, and generates backup codes
   * with the session (`POST /v1/auth/mfa/backup-codes`): the user then has one second factor and one live session.
   */
  async function signInWithBackupCodes(email: string) {
    const sdk = createGatehouse({ baseUrl: url, applicationId: app.id, secretKey: app.secret });
    const known = new Set((await sdk.messages.list({ limit: 100 })).messages.map((m) => m.id));
    await startMagicLink(email);
    const mail = await loggedMessage(email, known, 'magic_link');
    // The logged text keeps Mustache's HTML escapes (see the sessions test above): decode.
    const body = mail.body!.replace(/&#x([0-9a-f]+);/gi, (_m, hex: string) => String.fromCodePoint(Number.parseInt(hex, 16)));
    const browser = createGatehouseClient({ baseUrl: url, applicationId: app.id });
    const result = await browser.magicLink.verify({ token: /token=(ml_[0-9A-Za-z]+)/.exec(body)![1]! });
    if (result.status !== 'complete') throw new Error(`sign-in ended with ${result.status}`);
    const response = await fetch(`${url}/v1/auth/mfa/backup-codes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${result.tokens.access_token}`, 'x-application-id': app.id },
    });
    expect(response.status).toBe(201);
    return browser;
  }

  it("users factors lists a user's factors; factors remove --yes removes one and signs the user out", async () => {
    const user = await json(['users', 'create', '--email', 'factors@example.com', '--verified']);
    expect(await json(['users', 'factors', user.id])).toEqual([]);
    const header = 'id\tkind\tname\tcreated_at\tlast_used_at\n';
    expect(await gatehouse(['users', 'factors', user.id])).toMatchObject({ code: 0, stdout: header, stderr: '' });

    const browser = await signInWithBackupCodes('factors@example.com');
    const [factor, ...more] = await json<any[]>(['users', 'factors', user.id]);
    expect(more).toEqual([]);
    expect(factor).toEqual({
      id: expect.any(String),
      kind: 'backup_code',
      name: 'Backup codes',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      last_used_at: null,
    });
    const table = await gatehouse(['users', 'factors', user.id]);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(table.stdout).toBe(`${header}${factor.id}\tbackup_code\tBackup codes\t${factor.created_at}\t\n`);

    // Without a terminal to ask on, removing needs --yes: nothing is removed, nobody is signed out.
    const unconfirmed = await gatehouse(['users', 'factors', 'remove', user.id, factor.id]);
    expect(unconfirmed).toMatchObject({ code: 2, stdout: '' });
    expect(unconfirmed.stderr).toBe(
      'error: removing a factor signs the user out everywhere: pass --yes to confirm ' +
        '(standard input is not a terminal, so the CLI cannot ask)\n',
    );
    expect((await browser.me()).id).toBe(user.id);

    const removed = await gatehouse(['users', 'factors', 'remove', user.id, factor.id, '--yes']);
    expect(removed).toMatchObject({ code: 0, stderr: '' });
    expect(removed.stdout).toBe(
      `Removed backup code set "Backup codes" (${factor.id}) of user ${user.id}; revoked 1 session (signed out everywhere)\n`,
    );
    expect(await json(['users', 'factors', user.id])).toEqual([]);
    await expect(browser.me()).rejects.toMatchObject({ code: 'invalid_token' });

    // --json prints the API's answer.
    const again = await signInWithBackupCodes('factors@example.com');
    const [second] = await json<any[]>(['users', 'factors', user.id]);
    expect(await json(['users', 'factors', 'remove', user.id, second.id, '-y'])).toEqual({
      id: second.id,
      deleted: true,
      revoked_sessions: 1,
    });
    await expect(again.me()).rejects.toMatchObject({ code: 'invalid_token' });

    const unknown = await gatehouse(['users', 'factors', 'remove', user.id, second.id, '--yes']);
    expect(unknown).toMatchObject({ code: 1, stdout: '', stderr: 'error: not_found: Factor not found\n' });
    const unknownJson = await gatehouse(['users', 'factors', 'remove', user.id, second.id, '--yes', '--json']);
    expect(unknownJson).toMatchObject({ code: 1, stdout: '' });
    expect(JSON.parse(unknownJson.stderr).error).toMatchObject({ code: 'not_found', status: 404, message: 'Factor not found' });
  });

  it('users factors does not reach the users of another application', async () => {
    const user = await json(['users', 'create', '--email', 'tenant@example.com']);
    await signInWithBackupCodes('tenant@example.com');
    const [factor] = await json<any[]>(['users', 'factors', user.id]);
    const other = await json(['apps', 'create', 'Other tenant']);
    const asOther = { GATEHOUSE_APPLICATION_ID: other.application.id, GATEHOUSE_SECRET_KEY: other.secret_key.secret };
    const stranger = await json(['users', 'create', '--email', 'tenant@example.com'], asOther);

    const cases = await Promise.all([
      gatehouse(['users', 'factors', user.id], asOther),
      gatehouse(['users', 'factors', 'remove', user.id, factor.id, '--yes'], asOther),
      gatehouse(['users', 'factors', 'remove', user.id, factor.id, '--yes', '--json'], asOther),
      gatehouse(['users', 'factors', stranger.id]),
      gatehouse(['users', 'factors', 'remove', stranger.id, factor.id, '--yes']),
    ]);
    for (const [i, result] of cases.entries()) {
      expect(result).toMatchObject({ code: 1, stdout: '' });
      if (i === 2) expect(JSON.parse(result.stderr).error).toMatchObject({ code: 'not_found', message: 'User not found' });
      else expect(result.stderr).toBe('error: not_found: User not found\n');
    }
    expect(await json(['users', 'factors', user.id])).toEqual([factor]);
    await json(['apps', 'delete', other.application.id, '--yes']);
  });

  it('covers every management operation: apps get/update, users update/ban/unban/delete, orgs get/update/delete, members role/remove, events, stats, templates preview', async () => {
    const app = await json(['apps', 'get']);
    expect(app.id).toBeTruthy();
    const updated = await json([
      'apps',
      'update',
      '--name',
      'Renamed',
      '--origin',
      'https://app.example.com',
      '--settings',
      '{"sign_up":"closed"}',
    ]);
    expect(updated).toMatchObject({ name: 'Renamed', allowed_origins: ['https://app.example.com'] });
    expect(updated.settings.sign_up).toBe('closed');
    expect((await json(['apps', 'update', '--no-origins'])).allowed_origins).toEqual([]);

    const user = await json(['users', 'create', '--email', 'cover@example.com']);
    expect((await json(['users', 'update', user.id, '--verified', '--profile', '{"plan":"pro"}'])).email_verified).toBe(true);
    expect((await json(['users', 'ban', user.id, '--yes'])).status).toBe('banned');
    expect((await json(['users', 'unban', user.id])).status).toBe('active');
    const nobody = await json(['users', 'create', '--no-email']);
    expect(nobody.primary_email).toBeNull();

    const org = await json(['orgs', 'create', 'Covered']);
    expect((await json(['orgs', 'get', org.id])).name).toBe('Covered');
    expect((await json(['orgs', 'update', org.id, '--name', 'Covered Inc', '--slug', 'covered-inc'])).slug).toBe('covered-inc');
    await json(['orgs', 'members', 'add', org.id, user.id]);
    expect((await json(['orgs', 'members', 'role', org.id, user.id, 'admin'])).role).toBe('admin');
    await json(['orgs', 'members', 'remove', org.id, user.id, '--yes']);
    expect((await json(['orgs', 'members', 'list', org.id])).total).toBe(0);
    expect(await json(['orgs', 'delete', org.id, '--yes'])).toEqual({ id: org.id, deleted: true });
    expect(await json(['users', 'delete', nobody.id, '--yes'])).toEqual({ id: nobody.id, deleted: true });

    const events = await json(['events', 'list', '--type', 'organization.deleted', '--limit', '5']);
    expect(events.events[0]).toMatchObject({ type: 'organization.deleted', data: { id: org.id } });
    const stats = await json(['stats']);
    expect(stats).toHaveProperty('active_sessions');
    const preview = await json(['templates', 'preview', 'magic_link', '--var', 'link=https://example.com/x']);
    expect(preview.text).toContain('https://example.com/x');
    const sent = await json(['templates', 'test', 'magic_link', '--to', 'cli-test@example.com']);
    expect(sent).toMatchObject({ to: 'cli-test@example.com', status: 'queued' });
  });

  it('billing plans and subscriptions: create, list (the default), show, update, seats refused below members, cancel', async () => {
    const plan = await json([
      'billing',
      'plans',
      'create',
      'cli-team',
      '--name',
      'Team',
      '--price',
      '2900',
      '--per-seat',
      '900',
      '--trial-days',
      '14',
    ]);
    expect(plan).toMatchObject({ key: 'cli-team', interval: 'month', currency: 'USD', price_cents: 2900, trial_days: 14 });
    expect((await json(['billing', 'plans'])).map((p: any) => p.id)).toContain(plan.id);
    expect((await json(['billing', 'plans', 'show', plan.id])).name).toBe('Team');
    const org = await json(['orgs', 'create', 'Billed']);
    const member = await json(['users', 'create', '--email', 'billed@example.com']);
    await json(['orgs', 'members', 'add', org.id, member.id]);
    const sub = await json(['billing', 'subscriptions', 'create', '--org', org.id, '--plan', plan.id, '--seats', '2']);
    expect(sub).toMatchObject({ organization_name: 'Billed', plan_key: 'cli-team', status: 'trialing', seats: 2 });
    expect((await json(['billing', 'subscriptions'])).map((s: any) => s.id)).toContain(sub.id);
    const plain = await gatehouse(['billing', 'subscriptions'], { NO_COLOR: '1' });
    expect(plain.stdout.split('\n')[0]).toBe('id\torganization_name\tplan_key\tstatus\tseats\tcurrent_period_end\tcanceled_at');
    const refused = await gatehouse(['billing', 'subscriptions', 'update', sub.id, '--seats', '0']);
    expect(refused.code).toBe(1);
    expect((await json(['billing', 'subscriptions', 'update', sub.id, '--seats', '5', '--status', 'active'])).status).toBe(
      'active',
    );
    expect((await json(['billing', 'subscriptions', 'cancel', sub.id, '--at-period-end'])).canceled_at).toBeTruthy();
    expect((await json(['billing', 'subscriptions', 'cancel', sub.id])).status).toBe('canceled');
    expect((await json(['billing', 'plans', 'update', plan.id, '--archive'])).archived_at).toBeTruthy();
    expect((await gatehouse(['billing', 'subscriptions', 'update', sub.id, '--status', 'trialing'])).code).toBe(2);
  });

  it('access hosts, groups, rules (the default lists) and check: deny wins, a deleted rule stops applying', async () => {
    const user = await json(['users', 'create', '--email', 'ops@example.com']);
    const group = await json(['access', 'groups', 'create', 'prod']);
    const host = await json(['access', 'hosts', 'create', 'db-1', '--group', group.id]);
    expect(host).toMatchObject({ name: 'db-1', host_group_id: group.id });
    expect((await json(['access', 'hosts'])).map((h: any) => h.id)).toContain(host.id);
    const denied = await gatehouse(['access', 'check', user.id, host.id, '--json']);
    expect([denied.code, JSON.parse(denied.stdout)]).toEqual([3, { allowed: false, rule_id: null }]);
    const allow = await json(['access', 'rules', 'create', 'allow', '--user', user.id, '--group', group.id]);
    expect(await json(['access', 'check', user.id, host.id])).toEqual({ allowed: true, rule_id: allow.id });
    const deny = await json(['access', 'rules', 'create', 'deny', '--user', user.id, '--host', host.id]);
    const deniedByRule = await gatehouse(['access', 'check', user.id, host.id]);
    expect(deniedByRule.code).toBe(3);
    expect(deniedByRule.stdout).toContain('allowed\tfalse\n');
    expect((await json(['access', 'rules'])).map((r: any) => r.id).slice(0, 2)).toEqual([deny.id, allow.id]);
    expect(await json(['access', 'rules', 'delete', deny.id])).toEqual({ id: deny.id, deleted: true });
    expect(await json(['access', 'check', user.id, host.id])).toEqual({ allowed: true, rule_id: allow.id });
    const both = await gatehouse([
      'access',
      'rules',
      'create',
      'allow',
      '--user',
      user.id,
      '--host',
      host.id,
      '--group',
      group.id,
    ]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('exactly one target');
    expect((await gatehouse(['access', 'rules', 'create', 'maybe', '--user', user.id, '--host', host.id])).code).toBe(2);
  });

  it('webhooks list, create, show, update, test, deliveries, retry, recover, rotate-secret, delete', async () => {
    const created = await json(['webhooks', 'create', 'https://hooks.example.com/cli', '--event', 'user.created,user.deleted']);
    expect(created).toMatchObject({ url: 'https://hooks.example.com/cli', event_types: ['user.created', 'user.deleted'] });
    expect(created.secret).toMatch(/^whsec_/);
    expect((await json(['webhooks', 'list'])).map((w: any) => w.id)).toContain(created.id);
    expect(await json(['webhooks', 'show', created.id])).not.toHaveProperty('secret');
    const updated = await json(['webhooks', 'update', created.id, '--description', 'from the CLI', '--all-events']);
    expect(updated).toMatchObject({ description: 'from the CLI', event_types: [] });
    const refused = await gatehouse(['webhooks', 'create', 'http://127.0.0.1/x']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('invalid_url');
    const delivery = await json(['webhooks', 'test', created.id]);
    expect(delivery).toMatchObject({ event_type: 'webhook.test', status: 'pending' });
    const page = await json(['webhooks', 'deliveries', created.id, '--limit', '5']);
    expect(page.deliveries.map((d: any) => d.id)).toContain(delivery.id);
    const one = await json(['webhooks', 'deliveries', created.id, delivery.id]);
    expect(one).toMatchObject({ id: delivery.id, attempt_log: expect.any(Array) });
    expect((await json(['webhooks', 'retry', created.id, delivery.id])).status).toBe('pending');
    expect(await json(['webhooks', 'recover', created.id, '--since', '2026-01-01T00:00:00Z'])).toEqual({
      recovered: expect.any(Number),
    });
    const rotated = await json(['webhooks', 'rotate-secret', created.id]);
    expect(rotated.secret).not.toBe(created.secret);
    expect(await json(['webhooks', 'delete', created.id, '--yes'])).toEqual({ id: created.id, deleted: true });
    expect((await gatehouse(['webhooks', 'update', created.id, '--status', 'paused'])).code).toBe(2);
  });

  it('orgs directories create, list, show, update, rotate-token, remove', async () => {
    const org = await json(['orgs', 'create', 'Directory Inc']);
    const created = await json([
      'orgs',
      'directories',
      'create',
      org.id,
      '--name',
      'Okta',
      '--provider',
      'okta',
      '--map',
      'Admins=admin',
    ]);
    expect(created).toMatchObject({
      name: 'Okta',
      provider: 'okta',
      status: 'active',
      group_role_mappings: [{ group: 'Admins', role: 'admin' }],
    });
    expect(created.token).toMatch(/^scim_/);
    expect(created.scim_base_url).toMatch(new RegExp(`/scim/v2/${created.id}$`));
    const listed = await json(['orgs', 'directories', 'list', org.id]);
    expect(listed.map((d: any) => d.id)).toEqual([created.id]);
    expect(listed[0]).not.toHaveProperty('token');
    expect(await json(['orgs', 'directories', 'show', org.id, created.id])).toMatchObject({ id: created.id, user_count: 0 });
    const updated = await json(['orgs', 'directories', 'update', org.id, created.id, '--status', 'disabled', '--no-mappings']);
    expect(updated).toMatchObject({ status: 'disabled', group_role_mappings: [] });
    expect((await gatehouse(['orgs', 'directories', 'update', org.id, created.id])).code).toBe(2);
    expect((await gatehouse(['orgs', 'directories', 'update', org.id, created.id, '--status', 'paused'])).code).toBe(2);
    expect((await gatehouse(['orgs', 'directories', 'create', org.id, '--name', 'x', '--provider', 'ldap'])).code).toBe(2);
    expect((await gatehouse(['orgs', 'directories', 'create', org.id, '--name', 'x', '--map', 'nothing'])).code).toBe(2);
    const rotated = await json(['orgs', 'directories', 'rotate-token', org.id, created.id]);
    expect(rotated.token).toMatch(/^scim_/);
    expect(rotated.token).not.toBe(created.token);
    expect(await json(['orgs', 'directories', 'remove', org.id, created.id, '--yes'])).toEqual({ id: created.id, deleted: true });
    const gone = await gatehouse(['orgs', 'directories', 'show', org.id, created.id]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('not_found');
  });

  it('authz write, tuples, check, expand, lookup (object#relation@subject), and a refused batch applies nothing', async () => {
    const user = await json(['users', 'create', '--email', 'authz@example.com']);
    const written = await json(['authz', 'write', 'doc:cli#viewer@team:cli#member', `team:cli#member@user:${user.id}`]);
    expect(written).toMatchObject({ consistency_token: expect.stringMatching(/^\d+$/), written: 2, deleted: 0 });
    expect(
      await json(['authz', 'check', `doc:cli#viewer@user:${user.id}`, '--at-least-as-fresh', written.consistency_token]),
    ).toEqual({
      allowed: true,
    });
    // A denied check is an answer, not an error, but a script branches on it: exit 3 (0 when allowed).
    const plain = await gatehouse(['authz', 'check', `doc:cli#editor@user:${user.id}`]);
    expect(plain).toEqual({ code: 3, stdout: 'denied\n', stderr: '' });
    const deniedJson = await gatehouse(['authz', 'check', `doc:cli#editor@user:${user.id}`, '--json']);
    expect(deniedJson.code).toBe(3);
    expect(JSON.parse(deniedJson.stdout)).toEqual({ allowed: false });
    expect(await gatehouse(['authz', 'check', `doc:cli#viewer@user:${user.id}`])).toEqual({
      code: 0,
      stdout: 'allowed\n',
      stderr: '',
    });
    const page = await json(['authz', 'tuples', '--namespace', 'doc', '--limit', '5']);
    expect(page).toMatchObject({
      total: 1,
      limit: 5,
      tuples: [{ object: 'doc:cli', relation: 'viewer', subject: 'team:cli#member' }],
    });
    expect((await json(['authz', 'expand', 'doc:cli', 'viewer'])).usersets.map((u: any) => u.userset)).toEqual([
      'doc:cli#viewer',
      'team:cli#member',
    ]);
    expect((await json(['authz', 'lookup', `user:${user.id}`, 'viewer', 'doc'])).objects).toEqual(['doc:cli']);
    const refused = await gatehouse([
      'authz',
      'write',
      'doc:cli#owner@user:nobody',
      '--delete',
      'doc:cli#viewer@team:cli#member',
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/validation_failed/);
    expect((await json(['authz', 'tuples', '--object', 'doc:cli'])).total).toBe(1);
    expect((await gatehouse(['authz', 'write', 'not-a-tuple'])).code).toBe(2);
    const removed = await json(['authz', 'write', '--delete', 'doc:cli#viewer@team:cli#member']);
    expect(removed).toMatchObject({ written: 0, deleted: 1 });
  });

  it('webhooks listen --once forwards new events, signed per Standard Webhooks, to a local URL', async () => {
    const received: Array<{ headers: Record<string, string>; body: string }> = [];
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        received.push({ headers: req.headers as Record<string, string>, body });
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const user = await json(['users', 'create', '--email', 'listen@example.com']);
      const secret = `whsec_${randomBytes(32).toString('base64')}`;
      const port = (receiver.address() as AddressInfo).port;
      const result = await gatehouse([
        'webhooks',
        'listen',
        '--once',
        '--forward-to',
        `http://127.0.0.1:${port}/hooks`,
        '--secret',
        secret,
      ]);
      expect(result.code, result.stderr).toBe(0);
      const forwarded = received.find((r) => JSON.parse(r.body).data.id === user.id)!;
      expect(forwarded).toBeDefined();
      const event = new Webhook(secret).verify(forwarded.body, forwarded.headers) as any;
      expect(event).toMatchObject({ type: 'user.created', data: { id: user.id } });
      expect(result.stdout).toContain('user.created');
    } finally {
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });

  it('domains add, list, verify (through a real local DNS server), remove; clear errors', async () => {
    {
      const name = `cli-${randomBytes(4).toString('hex')}.gatehouse-test.dev`;
      const added = await json(['domains', 'add', `  ${name.toUpperCase()}. `]);
      expect(added).toMatchObject({ domain: name, status: 'pending_verification', tls_status: 'pending' });
      const plainAdd = await gatehouse(['domains', 'add', `www.${name}`]);
      expect(plainAdd.code, plainAdd.stderr).toBe(0);
      expect(plainAdd.stdout).toContain(`domain\twww.${name}`);
      expect(plainAdd.stderr).toContain(`_gatehouse-challenge.www.${name}  TXT`);

      const listed = await gatehouse(['domains', 'list']);
      expect(listed.code).toBe(0);
      expect(listed.stdout.split('\n')[0]).toBe('id\tdomain\tstatus\ttls_status\tverified_at\tcreated_at');
      expect(listed.stdout).toContain(`${added.id}\t${name}\tpending_verification`);

      // Not verified yet: the same output, and exit 3 for a script to wait and retry on.
      const missing = await gatehouse(['domains', 'verify', name]);
      expect(missing.code, missing.stderr).toBe(3);
      expect(missing.stdout).toContain('verification_error\ttxt_not_found');
      expect(missing.stderr).toContain('no TXT record was found');

      dns.zone[added.dns_records.txt.name] = { txt: [added.dns_records.txt.value] };
      expect(await json(['domains', 'verify', added.id])).toMatchObject({ status: 'verified', tls_status: 'active' });

      const taken = await gatehouse(['domains', 'add', name]);
      expect([taken.code, taken.stdout]).toEqual([1, '']);
      expect(taken.stderr).toContain('domain_already_configured');
      const invalid = await gatehouse(['domains', 'add', 'https://localhost:8080/x', '--json']);
      expect(invalid.code).toBe(1);
      expect(JSON.parse(invalid.stderr).error).toMatchObject({ code: 'invalid_domain', status: 422 });
      const unknown = await gatehouse(['domains', 'verify', 'nowhere.example.com']);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('no custom domain nowhere.example.com');

      expect((await gatehouse(['domains', 'remove', name])).code).toBe(2);
      expect(await json(['domains', 'remove', name, '--yes'])).toEqual({ id: added.id, deleted: true });
      expect(await json(['domains', 'remove', `www.${name}`, '--yes'])).toMatchObject({ deleted: true });
      expect(await json(['domains', 'list'])).toEqual([]);
    }
  });

  it('orgs domains add, list, verify (through a real local DNS server), update, remove; clear errors', async () => {
    const org = await json(['orgs', 'create', 'Domains Inc']);
    const name = `org-${randomBytes(4).toString('hex')}.gatehouse-test.dev`;
    const added = await json(['orgs', 'domains', 'add', org.id, `  ${name.toUpperCase()}. `]);
    expect(added).toMatchObject({ organization_id: org.id, domain: name, status: 'pending_verification' });
    const listed = await gatehouse(['orgs', 'domains', 'list', org.id]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout.split('\n')[0]).toBe('id\tdomain\tstatus\tjoin_policy\tsso_policy\tverified_at\tcreated_at');
    expect(listed.stdout).toContain(`${added.id}\t${name}\tpending_verification\tinvite_only\toptional`);

    // Not verified yet: exit 3, with the record to publish; the policies wait for verification.
    const missing = await gatehouse(['orgs', 'domains', 'verify', org.id, name]);
    expect(missing.code, missing.stderr).toBe(3);
    expect(missing.stderr).toContain(`_gatehouse-challenge.${name}  TXT`);
    const early = await gatehouse(['orgs', 'domains', 'update', org.id, name, '--sso', 'required']);
    expect(early.code).toBe(1);
    expect(early.stderr).toContain('domain_not_verified');

    dns.zone[added.verification.name] = { txt: [added.verification.value] };
    expect(await json(['orgs', 'domains', 'verify', org.id, added.id])).toMatchObject({ status: 'verified' });
    const updated = await json(['orgs', 'domains', 'update', org.id, name, '--join', 'automatic', '--sso', 'required']);
    expect(updated).toMatchObject({ join_policy: 'automatic', sso_policy: 'required' });
    const bad = await gatehouse(['orgs', 'domains', 'update', org.id, name, '--sso', 'always']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--sso must be one of optional, required');

    const other = await json(['orgs', 'create', 'Other Inc']);
    const taken = await gatehouse(['orgs', 'domains', 'add', other.id, name]);
    expect([taken.code, taken.stdout]).toEqual([1, '']);
    expect(taken.stderr).toContain('domain_already_claimed');
    const invalid = await gatehouse(['orgs', 'domains', 'add', org.id, 'co.uk', '--json']);
    expect(JSON.parse(invalid.stderr).error).toMatchObject({ code: 'invalid_domain', status: 422 });
    const unknown = await gatehouse(['orgs', 'domains', 'verify', org.id, 'nowhere.example.com']);
    expect(unknown.stderr).toContain('no domain nowhere.example.com');

    expect((await gatehouse(['orgs', 'domains', 'remove', org.id, name])).code).toBe(2);
    expect(await json(['orgs', 'domains', 'remove', org.id, name, '--yes'])).toEqual({ id: added.id, deleted: true });
    expect(await json(['orgs', 'domains', 'list', org.id])).toEqual([]);
  });

  it('apps branding show, set (only the given fields), logo upload and remove; apps sign-in-url', async () => {
    const DEFAULT = { display_name: null, logo_url: null, primary_color: null, theme: 'auto', support_email: null };
    expect(await json(['apps', 'branding', 'show'])).toEqual(DEFAULT);
    const set = await json([
      'apps',
      'branding',
      'set',
      '--display-name',
      'Shop',
      '--primary-color',
      '#4F46E5',
      '--theme',
      'dark',
    ]);
    expect(set).toEqual({ ...DEFAULT, display_name: 'Shop', primary_color: '#4f46e5', theme: 'dark' });
    // Only the given flags change; an empty value clears a field.
    const more = await json(['apps', 'branding', 'set', '--support-email', 'help@example.com']);
    expect(more).toEqual({ ...set, support_email: 'help@example.com' });
    const cleared = await json(['apps', 'branding', 'set', '--display-name', '']);
    expect(cleared).toEqual({ ...more, display_name: null });
    const plain = await gatehouse(['apps', 'branding', 'show']);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toContain('primary_color\t#4f46e5\n');
    expect(plain.stdout).toContain('theme\tdark\n');

    const none = await gatehouse(['apps', 'branding', 'set']);
    expect([none.code, none.stderr]).toEqual([2, expect.stringContaining('nothing to change')]);
    expect((await gatehouse(['apps', 'branding', 'set', '--theme', 'blue'])).code).toBe(2);
    const refused = await gatehouse(['apps', 'branding', 'set', '--primary-color', 'red']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error: validation_failed: .*settings\.branding\.primary_color/);
    expect(await json(['apps', 'branding', 'show'])).toEqual(cleared);

    // The logo: its type read from the file's bytes, whatever its name says.
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
      'base64',
    );
    const gif = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
    await writeFile(join(tmp, 'logo.png'), png);
    await writeFile(join(tmp, 'really-a-gif.png'), gif);
    await writeFile(join(tmp, 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    await writeFile(join(tmp, 'huge.png'), Buffer.concat([png.subarray(0, 8), Buffer.alloc(256 * 1024)]));
    const logo = await json(['apps', 'branding', 'logo', join(tmp, 'logo.png')]);
    expect(logo).toMatchObject({ application_id: app.id, content_type: 'image/png', size: png.length });
    expect(logo.logo_url).toMatch(new RegExp(`^http://gatehouse\\.test/a/${app.id}/logo\\?v=[0-9a-f]{12}$`));
    expect((await json(['apps', 'branding', 'show'])).logo_url).toBe(logo.logo_url);
    const served = await fetch(`${url}/a/${app.id}/logo`);
    expect([served.status, served.headers.get('content-type')]).toEqual([200, 'image/png']);
    expect(Buffer.from(await served.arrayBuffer()).equals(png)).toBe(true);
    const sniffed = await json(['apps', 'branding', 'logo', join(tmp, 'really-a-gif.png')]);
    expect(sniffed.content_type).toBe('image/gif');
    for (const [args, message] of [
      [[join(tmp, 'logo.svg')], 'is not a PNG, JPEG, WebP or GIF image'],
      [[join(tmp, 'huge.png')], 'at most 262144'],
      [[join(tmp, 'missing.png')], 'cannot read'],
      [[], 'pass the image file'],
      [[join(tmp, 'logo.png'), '--remove'], 'not both'],
    ] as const) {
      const result = await gatehouse(['apps', 'branding', 'logo', ...args]);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(message);
    }
    expect((await json(['apps', 'branding', 'show'])).logo_url).toBe(sniffed.logo_url);
    expect(await json(['apps', 'branding', 'logo', '--remove'])).toEqual({ id: app.id, deleted: true });
    expect((await json(['apps', 'branding', 'show'])).logo_url).toBeNull();
    const again = await gatehouse(['apps', 'branding', 'logo', '--remove']);
    expect([again.code, again.stderr]).toEqual([1, expect.stringMatching(/^error: not_found: /)]);

    // The hosted sign-in page: under the server's public base URL (not the address the CLI reaches it at) and at the
    // root of each verified custom domain.
    const signIn = `http://gatehouse.test/a/${app.id}/sign-in`;
    expect(await json(['apps', 'sign-in-url'])).toEqual({ url: signIn, custom_domain_urls: [] });
    const name = `signin-${randomBytes(4).toString('hex')}.gatehouse-test.dev`;
    const pending = await json(['domains', 'add', name]);
    await json(['domains', 'add', `other.${name}`]);
    dns.zone[pending.dns_records.txt.name] = { txt: [pending.dns_records.txt.value] };
    await json(['domains', 'verify', name]);
    try {
      const plainUrls = await gatehouse(['apps', 'sign-in-url']);
      expect(plainUrls).toEqual({ code: 0, stdout: `${signIn}\nhttps://${name}/sign-in\n`, stderr: '' });
      expect(await json(['apps', 'sign-in-url'])).toEqual({ url: signIn, custom_domain_urls: [`https://${name}/sign-in`] });
    } finally {
      await json(['domains', 'remove', name, '--yes']);
      await json(['domains', 'remove', `other.${name}`, '--yes']);
    }
  });

  it('runs from the TypeScript sources with tsx (development)', async () => {
    const result = await gatehouse(['users', 'get', userId, '--json'], {}, 'source');
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toMatchObject({ id: userId });
  });
});

/**
 * The README walkthrough "Add SAML SSO for a customer", as a developer runs it: `gatehouse saml create --metadata`
 * with a real IdP's metadata (samlify), our SP metadata handed back to that IdP, then a sign-in that ends in tokens.
 */
const ORIGIN = 'https://app.example.com';

describe('gatehouse saml against a real server and a real IdP', () => {
  let applicationId: string;
  let connection: { id: string; acs_url: string; name: string };
  let idp: TestIdp;
  const env: Record<string, string> = {};

  beforeAll(async () => {
    idp = await createTestIdp();
  });

  it('api-keys create makes a key limited to SAML, with which the rest runs', async () => {
    const created = await json(['apps', 'create', 'SAML walkthrough', '--origin', ORIGIN], env);
    applicationId = created.application.id;
    Object.assign(env, { GATEHOUSE_APPLICATION_ID: applicationId, GATEHOUSE_SECRET_KEY: created.secret_key.secret });
    const key = await json(['api-keys', 'create', '--name', 'saml admin', '--scopes', 'saml:write'], env);
    expect(key).toMatchObject({ name: 'saml admin', scopes: ['saml:write'] });
    const missing = await gatehouse(['api-keys', 'create', '--name', 'no scopes'], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('at least one scope');
    env.GATEHOUSE_SECRET_KEY = key.secret;
  });

  it('saml create --metadata reads the IdP metadata; saml metadata prints ours for the IdP', async () => {
    const file = join(tmp, 'idp.xml');
    await writeFile(file, idp.metadataXml);
    connection = await json(['saml', 'create', '--metadata', file, '--domain', 'acme.test', '--name', 'Acme'], env);
    expect(connection).toMatchObject({
      name: 'Acme',
      idp_entity_id: idp.entityId,
      idp_sso_url: idp.ssoUrl,
      email_domain: 'acme.test',
    });
    const plain = await gatehouse(['saml', 'create', '--metadata', file, '--domain', 'acme.test'], env);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/^error: conflict: /);

    const listed = await gatehouse(['saml', 'list'], env);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(connection.id);
    expect(listed.stdout).toContain('acme.test');
    const metadata = await gatehouse(['saml', 'metadata', connection.id], env);
    expect(metadata.code).toBe(0);
    expect(metadata.stdout).toContain(`Location="${connection.acs_url}"`);
    (connection as { spMetadata?: string }).spMetadata = metadata.stdout;
  });

  it('a sign-in through the connection ends in tokens (browser SDK: sso.start → IdP → ACS → sso.complete)', async () => {
    const client = createGatehouseClient({ baseUrl: url, applicationId });
    const email = `jane@acme.test`;
    const { redirect_url } = await client.sso.start({ email, redirect_uri: `${ORIGIN}/sso` });
    const form = await idp.respond((connection as { spMetadata?: string }).spMetadata!, redirect_url, { email });
    const acs = await postToAcs(url, connection.id, form);
    expect(acs.location?.startsWith(`${ORIGIN}/sso?code=`), JSON.stringify(acs)).toBe(true);
    const result = await client.sso.complete({ code: acs.code! });
    expect(result.status).toBe('complete');
    if (result.status !== 'complete') return;
    expect(result.user.primary_email).toBe(email);
    expect(result.tokens.access_token.split('.')).toHaveLength(3);
    expect((await client.me()).id).toBe(result.user.id);
  });

  it('saml disable refuses sign-ins, enable restores them, delete removes the connection', async () => {
    const disabled = await json(['saml', 'disable', connection.id], env);
    expect(disabled.enabled).toBe(false);
    const client = createGatehouseClient({ baseUrl: url, applicationId });
    await expect(client.sso.start({ connection_id: connection.id, redirect_uri: `${ORIGIN}/sso` })).rejects.toMatchObject({
      code: 'not_found',
    });
    expect((await json(['saml', 'enable', connection.id], env)).enabled).toBe(true);
    const shown = await json(['saml', 'show', connection.id], env);
    expect(shown.id).toBe(connection.id);
    const cert = join(tmp, 'idp.pem');
    await writeFile(cert, idp.keys.certificatePem);
    const updated = await json(
      ['saml', 'update', connection.id, '--cert', cert, '--name', 'Acme Corp', '--idp-initiated', 'true'],
      env,
    );
    expect(updated).toMatchObject({ name: 'Acme Corp', allow_idp_initiated: true, idp_entity_id: idp.entityId });
    const notCert = join(tmp, 'key.pem');
    await writeFile(notCert, idp.keys.privateKeyPem);
    const refused = await gatehouse(['saml', 'update', connection.id, '--cert', notCert], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('no CERTIFICATE block');
    expect(await json(['saml', 'delete', connection.id, '--yes'], env)).toEqual({ id: connection.id, deleted: true });
    expect(await json(['saml', 'list'], env)).toEqual([]);
  });
});

/** `gatehouse oauth2 clients …`, `gatehouse users grants` and `users identities`, as a developer registers a third-party app. */
describe('gatehouse oauth2 clients and users grants', () => {
  const env: Record<string, string> = {};

  it('create shows the secret once; list, show, update, rotate-secret, delete; users grants lists none yet', async () => {
    const created = await json(['apps', 'create', 'OAuth walkthrough', '--origin', ORIGIN], env);
    Object.assign(env, { GATEHOUSE_APPLICATION_ID: created.application.id, GATEHOUSE_SECRET_KEY: created.secret_key.secret });
    const client = await json(
      [
        'oauth2',
        'clients',
        'create',
        '--name',
        'Partner',
        '--redirect-uri',
        'https://partner.example/cb',
        '--scope',
        'openid,email',
      ],
      env,
    );
    expect(client).toMatchObject({ name: 'Partner', type: 'confidential', scopes: ['openid', 'email'], dynamic: false });
    expect(client.client_secret).toMatch(/^gcs_/);
    const plain = await gatehouse(['oauth2', 'clients', 'list'], env);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain(client.id);
    expect(plain.stdout).not.toContain(client.client_secret);
    expect((await json(['oauth2', 'clients', 'show', client.id], env)).client_secret).toBeUndefined();
    expect(await json(['oauth2', 'clients', 'update', client.id, '--name', 'Renamed'], env)).toMatchObject({ name: 'Renamed' });
    const signedOut = 'https://partner.example/signed-out';
    expect(await json(['oauth2', 'clients', 'update', client.id, '--post-logout-redirect-uri', signedOut], env)).toMatchObject({
      post_logout_redirect_uris: [signedOut],
      redirect_uris: ['https://partner.example/cb'],
    });
    const rotated = await json(['oauth2', 'clients', 'rotate-secret', client.id], env);
    expect(rotated.client_secret).not.toBe(client.client_secret);
    const bad = await gatehouse(
      ['oauth2', 'clients', 'create', '--name', 'x', '--redirect-uri', 'http://partner.example/cb'],
      env,
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('invalid_url');
    const user = await json(['users', 'create', '--email', 'grants@example.com'], env);
    expect(await json(['users', 'grants', user.id], env)).toEqual([]);
    // Revoking asks first (scripts pass --yes); a grant the user does not have is not_found.
    expect((await gatehouse(['users', 'grants', 'revoke', user.id, '01890000-0000-7000-8000-000000000000'], env)).code).toBe(2);
    const unknown = await gatehouse(['users', 'grants', 'revoke', user.id, '01890000-0000-7000-8000-000000000000', '--yes'], env);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('not_found');
    // Linked accounts: none yet; unlinking asks first, and an account the user does not have is not_found.
    expect(await json(['users', 'identities', user.id], env)).toEqual([]);
    expect((await gatehouse(['users', 'identities', 'remove', user.id, '01890000-0000-7000-8000-000000000000'], env)).code).toBe(
      2,
    );
    const unlinked = await gatehouse(
      ['users', 'identities', 'remove', user.id, '01890000-0000-7000-8000-000000000000', '--yes'],
      env,
    );
    expect(unlinked.code).not.toBe(0);
    expect(unlinked.stderr).toContain('not_found');
    const refused = await gatehouse(['oauth2', 'clients', 'delete', client.id], env);
    expect(refused.code).toBe(2);
    expect(await json(['oauth2', 'clients', 'delete', client.id, '--yes'], env)).toEqual({ id: client.id, deleted: true });
  });
});

describe('gatehouse operators', () => {
  it('add prints a one-time sign-in link to the console; list, set-role and remove', async () => {
    const added = await json(['operators', 'add', 'cli-operator@example.com', '--role', 'viewer']);
    expect(added).toMatchObject({
      operator: { email: 'cli-operator@example.com', roles: [{ application_id: null, role: 'viewer' }] },
      sign_in_link: { url: expect.stringContaining('/console/sign-in?token=ml_') },
    });
    const id: string = added.operator.id;
    expect((await json(['operators', 'list'])).operators.map((o: { id: string }) => o.id)).toContain(id);
    expect((await json(['operators', 'set-role', id, '--role', 'admin'])).roles).toEqual([
      { application_id: null, role: 'admin' },
    ]);
    // Without --role, add gives owner; plain output shows the link.
    const plain = await gatehouse(['operators', 'add', 'cli-operator@example.com']);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain('/console/sign-in?token=ml_');
    expect(plain.stderr).toBe('Send the sign-in link to the operator: it opens the console once, before it expires.\n');
    expect((await json(['operators', 'list'])).operators.find((o: { id: string }) => o.id === id).roles).toEqual([
      { application_id: null, role: 'owner' },
    ]);
    expect((await gatehouse(['operators', 'set-role', id])).code).toBe(2);
    expect((await gatehouse(['operators', 'remove', id])).code).toBe(2);
    expect(await json(['operators', 'remove', id, '--yes'])).toEqual({ id, deleted: true });
  });
});

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { embeddedRun } from './helpers/runs.ts';
import type { TestApp } from './helpers/server.ts';
import { signIn } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * The SDK and the CLI as a developer gets them: built and packed with `npm pack`, installed from the tarballs into a
 * project outside the monorepo, used on Node 20 (the machine's) and Node 24, type-checked with tsc.
 */
const run = promisify(execFile);
const root = fileURLToPath(new URL('../../..', import.meta.url));
const NODE_20 = '/usr/bin/node';
const NODE_24 = process.execPath;

let scratch: string;
let app: TestApp;
/** What `npm install` of the two tarballs alone put into node_modules (a backend's install), by package. */
let installedWithoutAsking: Record<string, boolean>;
/**
 * Only what a user's machine has — no `npm_config_*` of the npm that runs this suite (they name the monorepo) — but
 * the machine's way to the registry (a proxy and its CA, where there is one).
 */
const PASSED = [
  'PATH',
  'HOME',
  'TMPDIR',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
];
const env = Object.fromEntries(
  PASSED.flatMap((name) => [name, name.toLowerCase()]).flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : [])),
) as NodeJS.ProcessEnv;

describe.runIf(embeddedRun)('the published packages, outside the monorepo', () => {
  const suite = serverSuite();

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'gatehouse-consumer-'));
    await run(NODE_24, [join(root, 'packages/sdk/scripts/build.ts')]);
    await run(NODE_24, [join(root, 'apps/cli/scripts/publish.ts')]);
    for (const dir of ['packages/sdk/publish', 'apps/cli/publish']) {
      await run('npm', ['pack', join(root, dir), '--pack-destination', scratch, '--silent'], { cwd: scratch, env });
    }
    const tarballs = (await readdir(scratch)).filter((f) => f.endsWith('.tgz'));
    expect(tarballs.sort()).toEqual(['gatehouse-cli-0.1.0.tgz', 'gatehouse-sdk-0.1.0.tgz']);
    await writeFile(join(scratch, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    await run('npm', ['install', '--no-audit', '--no-fund', '--silent', ...tarballs.map((t) => `./${t}`)], {
      cwd: scratch,
      env,
      timeout: 240_000,
    });
    installedWithoutAsking = Object.fromEntries(
      ['@simplewebauthn/browser', 'express', 'fastify', '@gatehouse/api', '@gatehouse/server'].map((name) => [
        name,
        existsSync(join(scratch, 'node_modules', name)),
      ]),
    );
    // What a browser app that uses passkeys adds (an optional peer of the SDK).
    await run('npm', ['install', '--no-audit', '--no-fund', '--silent', '@simplewebauthn/browser@14.0.0'], {
      cwd: scratch,
      env,
      timeout: 240_000,
    });
    app = await suite.server.createApp();
    // Two installs from the registry (the tarballs, then what a browser app adds) and two builds: minutes on a busy machine.
  }, 480_000);

  afterAll(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('install without any server code, the browser-only passkey library or the frameworks the guards serve', () => {
    expect(installedWithoutAsking).toEqual({
      '@simplewebauthn/browser': false,
      express: false,
      fastify: false,
      '@gatehouse/api': false,
      '@gatehouse/server': false,
    });
  });

  it('speak no internal language in the types and documents they ship', async () => {
    const files = async (dir: string): Promise<string[]> =>
      (await readdir(dir, { withFileTypes: true, recursive: true }))
        .filter((entry) => entry.isFile())
        .map((entry) => join(entry.parentPath, entry.name));
    const shipped = [
      ...(await files(join(scratch, 'node_modules/@gatehouse/sdk'))),
      ...(await files(join(scratch, 'node_modules/@gatehouse/cli'))),
    ].filter((file) => /\.(d\.ts|md)$/.test(file) && !file.endsWith('CHANGELOG.md'));
    expect(shipped.length).toBeGreaterThan(5);
    for (const file of shipped) {
      const text = await readFile(file, 'utf8');
      // References to the specification's sections and seed numbering (an RFC's section is fine).
      const internal = text.match(/.{0,40}(CONTRACT|(?<!RFC \d+ )§|\bS\d{1,2}\b(?![-.\w])|the seed|SECURITY(\.md| \d)).{0,40}/);
      expect(internal?.[0], file).toBeUndefined();
    }
  });

  it.each([
    ['Node 20', NODE_20],
    ['Node 24', NODE_24],
  ])('an ESM script on %s creates a user, lists organizations and verifies a token offline', async (_label, node) => {
    const email = uniqueEmail('consumer');
    const { tokens } = await signIn(suite.server, suite.smtp, app, uniqueEmail('token'));
    await writeFile(
      join(scratch, 'script.mjs'),
      `import { createGatehouse, GatehouseError } from '@gatehouse/sdk';
import { verifyToken } from '@gatehouse/sdk/verify';
import { createGatehouseClient } from '@gatehouse/sdk/browser';
import { verifyWebhook } from '@gatehouse/sdk/webhooks';
import { requireAuth } from '@gatehouse/sdk/express';
import { gatehouseAuth } from '@gatehouse/sdk/fastify';
import { createNextAuth } from '@gatehouse/sdk/next';
const [baseUrl, applicationId, secretKey, email, token] = process.argv.slice(2);
const gatehouse = createGatehouse({ baseUrl, applicationId, secretKey });
const user = await gatehouse.users.create({ primary_email: email });
const { total } = await gatehouse.organizations.list();
const claims = await verifyToken(token, { baseUrl, applicationId, issuer: 'http://gatehouse.test' });
const failure = await gatehouse.users.get({ id: '00000000-0000-7000-8000-000000000000' }).catch((e) => e);
const guard = createNextAuth({ baseUrl, applicationId, issuer: 'http://gatehouse.test' });
const route = guard.withAuth(async (request, { auth }) => Response.json({ user: auth.userId }));
const guarded = await route(new Request('https://app.example.com/me', { headers: { authorization: 'Bearer ' + token } }), {});
const refused = await route(new Request('https://app.example.com/me'), {});
console.log(JSON.stringify({
  user: user.primary_email, total, sub: claims.sub, error: failure instanceof GatehouseError && failure.code,
  browser: typeof createGatehouseClient,
  webhook: (() => { try { verifyWebhook('{}', { 'webhook-id': 'x', 'webhook-timestamp': '1', 'webhook-signature': 'v1,x' }, 'whsec_AAAA'); } catch (e) { return e.name; } })(),
  guards: [typeof requireAuth, typeof gatehouseAuth, guarded.status, (await guarded.json()).user === claims.sub, refused.status, refused.headers.get('www-authenticate')],
}));
`,
    );
    const { stdout } = await run(node, ['script.mjs', suite.server.url, app.id, app.secretKey, email, tokens.access_token], {
      cwd: scratch,
      env,
    });
    expect(JSON.parse(stdout)).toEqual({
      user: email,
      total: 0,
      sub: expect.any(String),
      error: 'not_found',
      browser: 'function',
      webhook: 'WebhookVerificationError',
      // The guards load without express or fastify installed (they only type against them), and work.
      guards: ['function', 'function', 200, true, 401, 'Bearer'],
    });
  });

  // skipLibCheck off proves the published types complete; esnext.disposable is what @trpc/server's own types need.
  it("type-checks a TypeScript file against the SDK's published types (with skipLibCheck off)", async () => {
    await writeFile(
      join(scratch, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          lib: ['es2022', 'dom', 'esnext.disposable'],
          types: [],
        },
        files: ['check.ts'],
      }),
    );
    await writeFile(
      join(scratch, 'check.ts'),
      `import { createGatehouse, GatehouseError, type User } from '@gatehouse/sdk';
import { createGatehouseClient, type SignInResult } from '@gatehouse/sdk/browser';
import { verifyToken } from '@gatehouse/sdk/verify';
import { verifyWebhook, type WebhookEvent } from '@gatehouse/sdk/webhooks';
import { getAuth, requireAuth } from '@gatehouse/sdk/express';
import { createNextAuth, type GatehouseAuth } from '@gatehouse/sdk/next';
const guardOptions = { baseUrl: 'https://auth.example.com', applicationId: 'app' };
export const middleware = requireAuth({ ...guardOptions, roles: ['owner', 'admin'], minimumAal: 2 });
// @ts-expect-error: aal is 1 or 2
requireAuth({ ...guardOptions, minimumAal: 3 });
export const whoami = (req: Express.Request): string => getAuth(req).userId + (req.auth?.organizationId ?? '');
const next = createNextAuth(guardOptions);
export const GET = next.withAuth<{ params: Promise<{ id: string }> }>(async (_request, { auth, params }) => {
  const caller: GatehouseAuth = auth;
  return Response.json({ user: caller.userId, role: caller.organizationRole, id: (await params).id });
});
const gatehouse = createGatehouse({ baseUrl: 'https://auth.example.com', applicationId: 'app', secretKey: 'sk_test_x' });
export async function main(): Promise<string | null> {
  const user: User = await gatehouse.users.create({ primary_email: 'ada@example.com' });
  const page = await gatehouse.organizations.list({ search: 'acme', limit: 10 });
  const names: string[] = page.organizations.map((o) => o.name);
  // @ts-expect-error: the server's schema has no such field
  await gatehouse.users.create({ nickname: 'nope' });
  const client = createGatehouseClient({ baseUrl: 'https://auth.example.com', applicationId: 'app' });
  const result: SignInResult | { status: 'link_sent'; verification_id: string } = await client.magicLink.start({ email: 'a@b.c' });
  const claims = await verifyToken('t', { baseUrl: 'https://auth.example.com', applicationId: 'app' });
  const error = new GatehouseError('not_found', 404, 'gone');
  // @ts-expect-error: the API has no such error code
  if (error.code === 'no_such_code') return null;
  const event: WebhookEvent = verifyWebhook('{}', { 'webhook-id': 'i' }, 'whsec_AAAA');
  // @ts-expect-error: the service emits no such event
  if (event.type === 'user.renamed') return null;
  const created: WebhookEvent<'user.created'> | null = event.type === 'user.created' ? event : null;
  const email: string | null | undefined = created?.data.primary_email;
  // @ts-expect-error: a user.created event's data is the user, which has no such field
  if (created?.data.nickname) return null;
  await gatehouse.webhooks.create({ url: 'https://example.com/hooks', event_types: ['user.created'] });
  return [event.type, created?.timestamp, email, user.primary_email, names.length, result.status, claims.sub, error.requestId].join() || null;
}
`,
    );
    const tsc = await run(join(root, 'node_modules/.bin/tsc'), ['-p', scratch], { cwd: scratch }).catch((e) => e);
    expect(tsc.stdout ?? '', tsc.stderr).toBe('');
  });

  it('runs `npx gatehouse --help` and a real command from the tarball on Node 20', async () => {
    const help = await run('npx', ['--no-install', 'gatehouse', '--help'], { cwd: scratch, env });
    expect(help.stdout).toContain('Manage a Gatehouse identity service');
    const cli = join(scratch, 'node_modules/@gatehouse/cli/bin/gatehouse.js');
    const listed = await run(NODE_20, [cli, 'users', 'list', '--json'], {
      cwd: scratch,
      env: {
        ...env,
        GATEHOUSE_BASE_URL: suite.server.url,
        GATEHOUSE_APPLICATION_ID: app.id,
        GATEHOUSE_SECRET_KEY: app.secretKey,
      },
    });
    expect(JSON.parse(listed.stdout)).toMatchObject({ limit: 25, offset: 0 });
  });

  it("says how to migrate, and where the operator token comes from, instead of failing on the server's missing code", async () => {
    const cli = join(scratch, 'node_modules/@gatehouse/cli/bin/gatehouse.js');
    const failure = (args: string[]) =>
      run(NODE_20, [cli, ...args], { cwd: scratch, env: { ...env, GATEHOUSE_BASE_URL: suite.server.url } }).then(
        () => {
          throw new Error(`${args.join(' ')} succeeded`);
        },
        (error: { code: number; stdout: string; stderr: string }) => error,
      );
    const migrate = await failure(['migrate']);
    expect([migrate.code, migrate.stdout]).toEqual([2, '']);
    expect(migrate.stderr).toMatch(
      /^error: this gatehouse CLI was installed without the Gatehouse server's code: .*npm run migrate/,
    );
    expect(migrate.stderr).not.toMatch(/ERR_MODULE_NOT_FOUND|Cannot find/);
    const asJson = await failure(['migrate', '--json']);
    expect(JSON.parse(asJson.stderr).error).toMatchObject({
      code: 'usage_error',
      message: expect.stringContaining('npm run migrate'),
    });
    const apps = await failure(['apps', 'list']);
    expect(apps.code).toBe(2);
    expect(apps.stderr).toMatch(/set GATEHOUSE_OPERATOR_TOKEN/);
  });
});

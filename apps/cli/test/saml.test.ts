import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createOrm, type DatabaseConfig, openPglite } from '@gatehouse/api';
import { createGatehouseClient } from '@gatehouse/sdk';
import { createGatehouseServer, type GatehouseServer } from '@gatehouse/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestIdp, postToAcs, type TestIdp } from '../../server/test/helpers/saml-idp.ts';

/**
 * The README walkthrough "Add SAML SSO for a customer", as a developer runs it: `gatehouse saml create --metadata`
 * with a real IdP's metadata, our SP metadata handed back to that IdP, then a sign-in that ends in tokens.
 */
const BIN = join(fileURLToPath(new URL('..', import.meta.url)), 'bin/gatehouse.js');
const ORIGIN = 'https://app.example.com';

let server: GatehouseServer;
let closeDatabase: () => Promise<void>;
let url: string;
let tmp: string;
let env: Record<string, string>;
let idp: TestIdp;

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

async function openDatabase(): Promise<{ config: DatabaseConfig; close: () => Promise<void> }> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    const pglite = await openPglite();
    return { config: { kind: 'pglite', pglite }, close: () => pglite.close() };
  }
  const name = `gatehouse_cli_saml_${Date.now()}_${process.pid}`;
  const admin = await createOrm({ kind: 'postgres', url: databaseUrl, poolSize: 1 });
  await admin.em.getConnection().execute(`create database ${name}`);
  const scratch = new URL(databaseUrl);
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
  tmp = await mkdtemp(join(tmpdir(), 'gatehouse-cli-saml-'));
  const database = await openDatabase();
  closeDatabase = database.close;
  const operatorToken = `op_${randomBytes(24).toString('hex')}`;
  server = await createGatehouseServer({
    database: database.config,
    operatorToken,
    masterKey: randomBytes(32),
    baseUrl: 'http://gatehouse.test',
    logLevel: false,
  });
  await server.app.listen({ port: 0, host: '127.0.0.1' });
  const address = server.app.server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  env = {
    PATH: process.env.PATH ?? '',
    HOME: tmp,
    CI: '1',
    GATEHOUSE_CONFIG: join(tmp, 'config.json'),
    GATEHOUSE_BASE_URL: url,
    GATEHOUSE_OPERATOR_TOKEN: operatorToken,
  };
  idp = await createTestIdp();
});

afterAll(async () => {
  await server?.close();
  await closeDatabase?.();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('gatehouse saml against a real server and a real IdP', () => {
  let applicationId: string;
  let connection: { id: string; acs_url: string; name: string };

  it('api-keys create makes a key limited to SAML, with which the rest runs', async () => {
    const created = await json(['apps', 'create', 'SAML walkthrough', '--origin', ORIGIN]);
    applicationId = created.application.id;
    Object.assign(env, { GATEHOUSE_APPLICATION_ID: applicationId, GATEHOUSE_SECRET_KEY: created.secret_key.secret });
    const key = await json(['api-keys', 'create', '--name', 'saml admin', '--scopes', 'saml:write']);
    expect(key).toMatchObject({ name: 'saml admin', scopes: ['saml:write'] });
    const missing = await gatehouse(['api-keys', 'create', '--name', 'no scopes']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('at least one scope');
    env.GATEHOUSE_SECRET_KEY = key.secret;
  });

  it('saml create --metadata reads the IdP metadata; saml metadata prints ours for the IdP', async () => {
    const file = join(tmp, 'idp.xml');
    await writeFile(file, idp.metadataXml);
    connection = await json(['saml', 'create', '--metadata', file, '--domain', 'acme.test', '--name', 'Acme']);
    expect(connection).toMatchObject({
      name: 'Acme',
      idp_entity_id: idp.entityId,
      idp_sso_url: idp.ssoUrl,
      email_domain: 'acme.test',
    });
    const plain = await gatehouse(['saml', 'create', '--metadata', file, '--domain', 'acme.test']);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/^error: conflict: /);

    const listed = await gatehouse(['saml', 'list']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(connection.id);
    expect(listed.stdout).toContain('acme.test');
    const metadata = await gatehouse(['saml', 'metadata', connection.id]);
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
    const disabled = await json(['saml', 'disable', connection.id]);
    expect(disabled.enabled).toBe(false);
    const client = createGatehouseClient({ baseUrl: url, applicationId });
    await expect(client.sso.start({ connection_id: connection.id, redirect_uri: `${ORIGIN}/sso` })).rejects.toMatchObject({
      code: 'not_found',
    });
    expect((await json(['saml', 'enable', connection.id])).enabled).toBe(true);
    const shown = await json(['saml', 'show', connection.id]);
    expect(shown.id).toBe(connection.id);
    const cert = join(tmp, 'idp.pem');
    await writeFile(cert, idp.keys.certificatePem);
    const updated = await json([
      'saml',
      'update',
      connection.id,
      '--cert',
      cert,
      '--name',
      'Acme Corp',
      '--idp-initiated',
      'true',
    ]);
    expect(updated).toMatchObject({ name: 'Acme Corp', allow_idp_initiated: true, idp_entity_id: idp.entityId });
    const notCert = join(tmp, 'key.pem');
    await writeFile(notCert, idp.keys.privateKeyPem);
    const refused = await gatehouse(['saml', 'update', connection.id, '--cert', notCert]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('no CERTIFICATE block');
    expect(await json(['saml', 'delete', connection.id, '--yes'])).toEqual({ id: connection.id, deleted: true });
    expect(await json(['saml', 'list'])).toEqual([]);
  });
});

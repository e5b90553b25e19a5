import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openPglite } from '@gatehouse/api';
import { createGatehouse } from '@gatehouse/sdk';
import { createGatehouseServer, type GatehouseServer } from '@gatehouse/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostedBrowser } from '../../server/test/helpers/hosted.ts';

/**
 * `gatehouse saml test-idp` as a newcomer runs it: the IdP starts, the application's connection points at it, and a
 * whole SP-initiated round trip through its pick-a-person page signs someone in — as does the admin portal's
 * connection test.
 */
const BIN = fileURLToPath(new URL('../bin/gatehouse.js', import.meta.url));
const BASE_URL = 'http://gatehouse.test';
const ORIGIN = 'https://app.example.com';

let server: GatehouseServer;
let closeDb: () => Promise<void>;
let url: string;
let tmp: string;
let child: ChildProcess | undefined;
const operatorToken = `op_${randomBytes(24).toString('hex')}`;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'gatehouse-test-idp-'));
  const pglite = await openPglite();
  closeDb = () => pglite.close();
  server = await createGatehouseServer({
    database: { kind: 'pglite', pglite },
    operatorToken,
    masterKey: randomBytes(32),
    baseUrl: BASE_URL,
    logLevel: 'warn',
    allowInsecureSaml: true,
  });
  await server.app.listen({ port: 0, host: '127.0.0.1' });
  const address = server.app.server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});

afterAll(async () => {
  child?.kill('SIGTERM');
  await server?.close();
  await closeDb?.();
  await rm(tmp, { recursive: true, force: true });
});

/** The service's own URLs (its base URL is configured) reached at the test server's address. */
const local = (address: string) => {
  const u = new URL(address);
  return u.origin === BASE_URL ? `${url}${u.pathname}${u.search}` : address;
};

const decode = (v: string) =>
  v
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
const fields = (html: string) =>
  Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], decode(m[2] ?? '')]),
  );

/** The browser at the IdP: its pick-a-person page, a person picked, the signed response posted to the ACS. */
async function throughIdp(idpUrl: string, person: number): Promise<string> {
  const picker = await fetch(idpUrl);
  expect(picker.status).toBe(200);
  const html = await picker.text();
  expect(html).toContain('Pick a person');
  expect(html).toContain('ada@example.test');
  const answer = await fetch(new URL('/sso', idpUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...fields(html), person: String(person) }).toString(),
  });
  const form = await answer.text();
  expect(answer.status, form).toBe(200);
  const action = decode(/<form id="post" method="post" action="([^"]+)"/.exec(form)?.[1] ?? '');
  const acs = await fetch(local(action), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields(form)).toString(),
    redirect: 'manual',
  });
  expect(acs.status, await acs.clone().text()).toBe(303);
  return acs.headers.get('location') ?? '';
}

describe('gatehouse saml test-idp', () => {
  it('runs an IdP, connects the application to it; a full SP-initiated sign-in through it completes; the portal test passes', async () => {
    const operator = createGatehouse({ baseUrl: url, operatorToken });
    const created = await operator.applications.create({ name: 'Test IdP app', allowed_origins: [ORIGIN] });
    const appId: string = created.application.id;
    const sdk = createGatehouse({ baseUrl: url, applicationId: appId, secretKey: created.secret_key.secret });
    const org = await sdk.organizations.create({ name: 'Acme' });

    child = spawn(process.execPath, [BIN, 'saml', 'test-idp', '--port', '0', '--organization', org.id, '--json'], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: tmp,
        CI: '1',
        GATEHOUSE_BASE_URL: url,
        GATEHOUSE_APPLICATION_ID: appId,
        GATEHOUSE_SECRET_KEY: created.secret_key.secret,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk) => {
      stderr += String(chunk);
    });
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      child?.stdout?.on('data', (chunk) => {
        out += String(chunk);
        if (out.includes('\n')) resolve(out.split('\n')[0] ?? '');
      });
      child?.once('exit', (code) => reject(new Error(`test-idp exited ${code}: ${stderr}`)));
    });
    const started = JSON.parse(line);
    expect(started.idp.url).toMatch(/^http:\/\/localhost:\d+$/);
    expect(started.idp.people.map((p: { email: string }) => p.email)).toEqual([
      'ada@example.test',
      'grace@example.test',
      'alan@example.test',
    ]);
    const connection = started.connection;
    expect(connection).toMatchObject({
      enabled: true,
      email_domain: 'example.test',
      organization_id: org.id,
      idp_sso_url: `${started.idp.url}/sso`,
    });

    // The SP-initiated round trip, as an app does it.
    const endUser = async (path: string, body: unknown) => {
      const res = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-application-id': appId },
        body: JSON.stringify(body),
      });
      const envelope = await res.json();
      expect(res.status, JSON.stringify(envelope)).toBe(200);
      return envelope.data;
    };
    const { redirect_url } = await endUser('/v1/auth/sso/start', {
      email: 'grace@example.test',
      redirect_uri: `${ORIGIN}/callback`,
    });
    expect(redirect_url.startsWith(`${started.idp.url}/sso?SAMLRequest=`)).toBe(true);
    const back = new URL(await throughIdp(redirect_url, 1));
    expect(`${back.origin}${back.pathname}`).toBe(`${ORIGIN}/callback`);
    expect(back.searchParams.get('error'), back.toString()).toBeNull();
    const result = await endUser('/v1/auth/sso/complete', { code: back.searchParams.get('code') ?? '' });
    expect(result.status).toBe('complete');
    if (result.status !== 'complete') throw new Error('unreachable');
    expect(result.user).toMatchObject({
      primary_email: 'grace@example.test',
      email_verified: true,
      profile: { name: 'Grace Hopper' },
    });

    // The hosted sign-in page, as the guide says: the email's domain finds the connection, the IdP's page, and back.
    const person = new HostedBrowser({ url } as never);
    const signInPage = await person.get(`/a/${appId}/sign-in`);
    const toIdp = await person.submit(signInPage, `/a/${appId}/sign-in`, { email: 'alan@example.test' });
    expect(toIdp.status, toIdp.html).toBe(303);
    expect(toIdp.location?.startsWith(`${started.idp.url}/sso?SAMLRequest=`)).toBe(true);
    const hostedBack = new URL(await throughIdp(toIdp.location ?? '', 2));
    const signedIn = await person.get(hostedBack.pathname + hostedBack.search);
    expect(signedIn.status, signedIn.html).toBe(303);
    expect(signedIn.location).toBe(`/a/${appId}/account`);
    expect((await person.get(`/a/${appId}/account`)).html).toContain('alan@example.test');

    // The admin portal's connection test, against the same IdP.
    const link = await sdk.organizations.portalLinks.create({ id: org.id, intent: 'sso' });
    const portal = new HostedBrowser({ url } as never);
    const opened = await portal.get(new URL(link.url).pathname + new URL(link.url).search);
    expect(opened.status).toBe(303);
    const page = await portal.get(`/portal/sso/connections/${connection.id}`);
    expect(page.status).toBe(200);
    const test = await portal.submit(page, `/portal/sso/connections/${connection.id}/test`);
    expect(test.status).toBe(303);
    const testBack = new URL(await throughIdp(test.location ?? '', 0));
    const shown = await portal.get(testBack.pathname + testBack.search);
    expect(shown.status, shown.html).toBe(200);
    expect(shown.html).toContain('The connection works');
    expect(shown.html).toContain('ada@example.test');
    expect(shown.html).toContain('Lovelace');
    expect(shown.html).toContain('Engineering,Admins');

    child.kill('SIGTERM');
    await new Promise((resolve) => child?.once('exit', resolve));
    child = undefined;
  });
});

describe('gatehouse portal link', () => {
  it('prints the link (JSON and text); refuses an unknown intent (usage) and a return URL off the allowed origins', async () => {
    const operator = createGatehouse({ baseUrl: url, operatorToken });
    const created = await operator.applications.create({ name: 'Portal CLI app', allowed_origins: [ORIGIN] });
    const sdk = createGatehouse({ baseUrl: url, applicationId: created.application.id, secretKey: created.secret_key.secret });
    const org = await sdk.organizations.create({ name: 'Globex' });
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: tmp,
      CI: '1',
      GATEHOUSE_BASE_URL: url,
      GATEHOUSE_APPLICATION_ID: created.application.id,
      GATEHOUSE_SECRET_KEY: created.secret_key.secret,
    };
    const run = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, [BIN, ...args], { env }, (error, stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
        );
      });
    const json = await run(['portal', 'link', org.id, '--intent', 'sso', '--return-url', `${ORIGIN}/settings`, '--json']);
    expect(json.stderr).toBe('');
    const link = JSON.parse(json.stdout);
    expect(link.url).toMatch(/^http:\/\/gatehouse\.test\/portal\/open\?token=portal_/);
    expect(Date.parse(link.expires_at)).toBeGreaterThan(Date.now());
    const text = await run(['portal', 'link', org.id, '--intent', 'audit_log']);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('/portal/open?token=portal_');
    const unknown = await run(['portal', 'link', org.id, '--intent', 'billing']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('sso, directory, domains, audit_log');
    const offsite = await run(['portal', 'link', org.id, '--intent', 'sso', '--return-url', 'https://evil.example.com/']);
    expect(offsite.code).toBe(1);
    expect(offsite.stderr).toContain('invalid_url');
  });
});

describe('gatehouse saml test-idp, refused', () => {
  it('never for a production application (a live key): a usage error, no IdP started', async () => {
    const result = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [BIN, 'saml', 'test-idp', '--port', '0'],
        {
          env: {
            PATH: process.env.PATH ?? '',
            HOME: tmp,
            CI: '1',
            GATEHOUSE_BASE_URL: url,
            GATEHOUSE_APPLICATION_ID: '01a2b3c4-0000-7000-8000-000000000000',
            GATEHOUSE_SECRET_KEY: `sk_live_${'a'.repeat(43)}`,
          },
          timeout: 60_000,
        },
        (error, _stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stderr }),
      );
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('development applications only');
  });
});

import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import type { GatehouseBrowserClient, SignInResult } from '@gatehouse/sdk/client';
import type { BrowserContext, CDPSession, JSHandle, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addVirtualAuthenticator, type Browser, hasChromium, launchChromium, sdkBundle } from './helpers/browser.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { browserRun } from './helpers/runs.ts';
import { type TestApp, UUID } from './helpers/server.ts';
import { endUser, signIn } from './helpers/sign-in.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * Passkeys in a real browser: Debian's Chromium, driven by playwright-core over CDP, with a CDP virtual authenticator.
 * A page served on http://localhost (a secure context, rp id `localhost`) loads @simplewebauthn/browser and calls the
 * Gatehouse server on another port with fetch, so every call is cross-origin and goes through CORS for real. A second
 * page does the same through the SDK's browser client, bundled for the browser as an app would ship it.
 */
if (!hasChromium) {
  console.warn(
    "browser-passkeys: /usr/bin/chromium not found, the real-browser passkey test is skipped (CI installs Debian's chromium with apt-get in .ci/run).",
  );
}

/** The browser bundle of @simplewebauthn/browser (UMD: the global `SimpleWebAuthnBrowser`), as the app serves it. */
const bundlePath = () => {
  const entry = createRequire(import.meta.url).resolve('@simplewebauthn/browser'); // …/script/index.js
  return join(dirname(dirname(entry)), 'dist', 'bundle', 'index.umd.min.js');
};

/** The application's page: the server and application id come in the query string (`?api=…&app=…`). */
const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>Passkeys</title>
<script src="/simplewebauthn-browser.js"></script>
<script>
  const params = new URLSearchParams(location.search);
  async function call(method, path, body, token) {
    const headers = { 'x-application-id': params.get('app') };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (token) headers.authorization = 'Bearer ' + token;
    const res = await fetch(params.get('api') + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: await res.json() };
  }
  async function registerPasskey(token, name, algorithms) {
    const start = await call('POST', '/v1/auth/passkeys/register/start', undefined, token);
    if (start.status !== 200) return { start };
    const { options, state } = start.body.data;
    if (algorithms) options.pubKeyCredParams = options.pubKeyCredParams.filter((p) => algorithms.includes(p.alg));
    const credential = await SimpleWebAuthnBrowser.startRegistration({ optionsJSON: options });
    const finish = await call('POST', '/v1/auth/passkeys/register/finish', { credential, state, name }, token);
    return { start, credential, finish };
  }
  async function signInWithPasskey() {
    const start = await call('POST', '/v1/auth/passkeys/sign-in/start');
    if (start.status !== 200) return { start };
    const { options, state } = start.body.data;
    const credential = await SimpleWebAuthnBrowser.startAuthentication({ optionsJSON: options });
    const finish = await call('POST', '/v1/auth/passkeys/sign-in/finish', { credential, state });
    return { start, credential, finish };
  }
  window.gatehouse = { call, registerPasskey, signInWithPasskey, supported: SimpleWebAuthnBrowser.browserSupportsWebAuthn() };
</script>
`;

/** A page of an app built on the SDK: `window.client()` makes a browser client (a fresh page load: no session). */
const SDK_PAGE = `<!doctype html>
<meta charset="utf-8">
<title>Passkeys through the SDK</title>
<input name="username" autocomplete="username webauthn" placeholder="Email">
<script src="/gatehouse-sdk.js"></script>
<script>
  const params = new URLSearchParams(location.search);
  window.client = () => Gatehouse.createGatehouseClient({ baseUrl: params.get('api'), applicationId: params.get('app') });
</script>
`;

interface Answer {
  status: number;
  body: { success: boolean; data: any; error: { code: string; message: string } | null };
}
interface Ceremony {
  start: Answer;
  credential?: { id: string; response: { transports?: string[]; publicKeyAlgorithm?: number; signature?: string } };
  finish?: Answer;
}
interface PageApi {
  call(method: string, path: string, body?: unknown, token?: string): Promise<Answer>;
  /** `algorithms`: keep only these COSE algorithms of the server's `pubKeyCredParams` (all when absent). */
  registerPasskey(token: string, name: string, algorithms?: number[]): Promise<Ceremony>;
  signInWithPasskey(): Promise<Ceremony>;
  supported: boolean;
}

/** The SDK page's globals: `client()` is a fresh page load's client; the test keeps the current one in `auth`. */
interface SdkPage {
  client(): GatehouseBrowserClient;
  auth: GatehouseBrowserClient;
}

interface VirtualCredential {
  credentialId: string;
  isResidentCredential: boolean;
  rpId: string;
  userHandle: string;
  signCount: number;
}

describe.runIf(browserRun)('passkeys in Chromium (virtual authenticator)', () => {
  const suite = serverSuite();
  let pages: Server;
  let origin: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let gatehouse: JSHandle<PageApi>;
  let cdp: CDPSession;
  let app: TestApp;

  beforeAll(async () => {
    const [bundle, sdk] = await Promise.all([readFile(bundlePath()), sdkBundle()]);
    const files: Record<string, [string, string | Uint8Array]> = {
      '/': ['text/html; charset=utf-8', PAGE],
      '/simplewebauthn-browser.js': ['text/javascript', bundle],
      '/sdk': ['text/html; charset=utf-8', SDK_PAGE],
      '/gatehouse-sdk.js': ['text/javascript', sdk],
    };
    pages = createServer((req, res) => {
      const file = files[new URL(req.url ?? '/', 'http://localhost').pathname];
      if (file) res.writeHead(200, { 'content-type': file[0] }).end(file[1]);
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
    origin = `http://localhost:${(pages.address() as AddressInfo).port}`;

    app = await suite.server.createApp({ name: 'Browser app', allowed_origins: [origin] });

    // The mailed hosted link names the configured base URL (http://gatehouse.test): it leads to this test server.
    browser = await launchChromium(`MAP gatehouse.test:80 ${new URL(suite.server.url).host}`);
    ({ context, page } = browser);
    cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    await page.goto(`${origin}/?${new URLSearchParams({ api: suite.server.url, app: app.id })}`);
    gatehouse = await page.evaluateHandle(() => (globalThis as unknown as { gatehouse: PageApi }).gatehouse);
  });

  afterAll(async () => {
    await browser?.close();
    if (pages) {
      pages.closeAllConnections();
      await new Promise<void>((resolve) => pages.close(() => resolve()));
    }
  });

  /** A fresh CDP virtual authenticator (a platform one: internal, resident keys, user verification) on a page. */
  async function addAuthenticator(session = cdp) {
    const authenticatorId = await addVirtualAuthenticator(session);
    const credentials = async () =>
      (await session.send('WebAuthn.getCredentials', { authenticatorId })).credentials as VirtualCredential[];
    return { credentials, remove: () => session.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId }) };
  }

  /**
   * A user signed in by magic link registers a passkey from the page, then signs in with it alone (discoverable: no
   * email typed). Asserts each step on the way; answers the sign-in's finish.
   */
  async function registerThenSignIn(algorithms?: number[]) {
    const authenticator = await addAuthenticator();
    try {
      expect(await gatehouse.evaluate((g) => g.supported)).toBe(true);
      const address = uniqueEmail('browser');
      const { tokens, user } = await signIn(suite.server, suite.smtp, app, address);

      // Registration: the page's start → navigator.credentials.create() → finish.
      const registration = await gatehouse.evaluate((g, [token, algs]) => g.registerPasskey(token, 'Chromium', algs), [
        tokens.access_token,
        algorithms,
      ] as const);
      expect(registration.start.status, JSON.stringify(registration.start.body)).toBe(200);
      expect(registration.start.body.data.options.rp).toEqual({ id: 'localhost', name: 'Browser app' });
      expect(registration.finish?.status, JSON.stringify(registration.finish?.body)).toBe(201);
      const passkey = registration.finish!.body.data;
      expect(passkey).toEqual({
        id: expect.stringMatching(UUID),
        name: 'Chromium',
        aaguid: expect.stringMatching(UUID),
        transports: registration.credential!.response.transports ?? [],
        backed_up: expect.any(Boolean),
        created_at: expect.any(String),
        last_used_at: null,
      });
      await suite.smtp.next(address); // the "passkey added" notice

      // The authenticator now holds one discoverable credential for localhost, whose user handle is the user id.
      const [stored, ...others] = await authenticator.credentials();
      expect(others).toEqual([]);
      expect(stored).toMatchObject({ isResidentCredential: true, rpId: 'localhost' });
      expect(Buffer.from(stored!.credentialId, 'base64').toString('base64url')).toBe(registration.credential!.id);
      expect(Buffer.from(stored!.userHandle, 'base64').toString('hex')).toBe(user.id.replaceAll('-', ''));

      const signedIn = await gatehouse.evaluate((g) => g.signInWithPasskey());
      expect(signedIn.start.status, JSON.stringify(signedIn.start.body)).toBe(200);
      expect(signedIn.credential!.id).toBe(registration.credential!.id);
      const [used] = await authenticator.credentials();
      expect(used!.signCount).toBeGreaterThan(stored!.signCount);
      return { address, user, passkey, registration, signedIn };
    } finally {
      await authenticator.remove();
    }
  }

  it('registers a passkey, signs in with it at aal 2, and the token works', async () => {
    // The server's own offer: Chromium takes the first algorithm it supports (ML-DSA-44, -48, on Chromium 156).
    const { address, user, passkey, registration, signedIn } = await registerThenSignIn();
    expect([-48, -8, -7, -257]).toContain(registration.credential!.response.publicKeyAlgorithm);
    expect(signedIn.finish?.status, JSON.stringify(signedIn.finish?.body)).toBe(200);
    const result = signedIn.finish!.body.data;
    expect(result.status).toBe('complete');
    expect(result.tokens.aal).toBe(2);
    expect(result.user.id).toBe(user.id);

    // The browser's token lists the passkey (from the page, through CORS) and works on /v1/auth/me.
    const token: string = result.tokens.access_token;
    const listed = await gatehouse.evaluate((g, t) => g.call('GET', '/v1/auth/passkeys', undefined, t), token);
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.data).toEqual([{ ...passkey, last_used_at: expect.any(String) }]);
    const me = await endUser(app, 'GET', '/v1/auth/me', undefined, token);
    expect(me.status, JSON.stringify(me.body)).toBe(200);
    expect(me.body.data).toMatchObject({ id: user.id, primary_email: address });
  });

  it('a passkey on ES256 (the most common algorithm) signs in too', async () => {
    const { registration, signedIn } = await registerThenSignIn([-7]);
    expect(registration.credential!.response.publicKeyAlgorithm).toBe(-7);
    expect(signedIn.finish?.status, JSON.stringify(signedIn.finish?.body)).toBe(200);
    expect(signedIn.finish!.body.data).toMatchObject({ status: 'complete', tokens: { aal: 2 } });
  });
  it('the SDK browser client, bundled as an app ships it: passkeys.register, signIn (dialog and autofill), mfa.passkey, remove', async () => {
    const tab = await context.newPage();
    const tabCdp = await context.newCDPSession(tab);
    await tabCdp.send('WebAuthn.enable');
    const authenticator = await addAuthenticator(tabCdp);
    try {
      await tab.goto(`${origin}/sdk?${new URLSearchParams({ api: suite.server.url, app: app.id })}`);
      const sdk = await tab.evaluateHandle(() => globalThis as unknown as SdkPage);
      const address = uniqueEmail('browser-sdk');
      /** magicLink.start on the page, the link from the mail (as the person clicks it), magicLink.verify on the page. */
      const magicLink = async (): Promise<SignInResult> => {
        await sdk.evaluate((g, email) => {
          g.auth = g.client();
          return g.auth.magicLink.start({ email, redirect_url: `${location.origin}/sdk` });
        }, address);
        const mail = await suite.smtp.next(address);
        expect(mail.subject).toMatch(/^Your sign-in link/);
        const token = linkIn(mail).searchParams.get('token')!;
        return sdk.evaluate((g, t) => g.auth.magicLink.verify({ token: t }), token);
      };

      const first = await magicLink();
      if (first.status !== 'complete') throw new Error(`expected complete, got ${first.status}`);
      expect(first.tokens.aal).toBe(1);
      const passkey = await sdk.evaluate((g) => g.auth.passkeys.register({ name: 'Chromium (SDK)' }));
      expect(passkey).toMatchObject({ id: expect.stringMatching(UUID), name: 'Chromium (SDK)', last_used_at: null });
      expect((await suite.smtp.next(address)).subject).toMatch(/^A passkey was added/);
      expect(await authenticator.credentials()).toHaveLength(1);

      // Another page load (no session): the passkey alone signs in at aal 2, and the client keeps the session.
      const signedIn = await sdk.evaluate(async (g) => {
        g.auth = g.client();
        const result = await g.auth.passkeys.signIn();
        return { result, me: await g.auth.me(), session: g.auth.getSession() };
      });
      if (signedIn.result.status !== 'complete') throw new Error(`expected complete, got ${signedIn.result.status}`);
      expect(signedIn.result).toMatchObject({ tokens: { aal: 2 }, user: { id: first.user.id } });
      expect(signedIn.me).toMatchObject({ id: first.user.id, primary_email: address, mfa_enrollment_required: false });
      const { session_id } = signedIn.result.tokens;
      expect(signedIn.session).toMatchObject({ aal: 2, user_id: first.user.id, session_id });

      // Passkey autofill (conditional mediation) on the page's `autocomplete="username webauthn"` field: the virtual
      // authenticator answers the conditional request as a person picking the passkey from the autofill would.
      const autofilled = await sdk.evaluate(async (g) => {
        g.auth = g.client();
        return g.auth.passkeys.signIn({ autofill: true });
      });
      expect(autofilled).toMatchObject({ status: 'complete', tokens: { aal: 2 }, user: { id: first.user.id } });

      // The passkey is now the user's second factor: a magic link stops at mfa_required, mfa.passkey completes it.
      const pending = await magicLink();
      if (pending.status !== 'mfa_required') throw new Error(`expected mfa_required, got ${pending.status}`);
      expect(pending.mfa.methods).toEqual(['passkey']);
      const stepped = await sdk.evaluate((g, t) => g.auth.mfa.passkey(t), pending.pending_token);
      expect(stepped).toMatchObject({ status: 'complete', tokens: { aal: 2 }, user: { id: first.user.id } });

      // At aal 2 the passkey is removed; the authenticator still holds the credential, and the server refuses it.
      expect(await sdk.evaluate((g, id) => g.auth.passkeys.remove(id), passkey.id)).toEqual({ id: passkey.id, deleted: true });
      expect((await suite.smtp.next(address)).subject).toMatch(/^A passkey was removed/);
      const refused = await sdk.evaluate((g) =>
        g
          .client()
          .passkeys.signIn()
          .then(
            () => null,
            (error: { name: string; code: string; status: number }) => ({
              name: error.name,
              code: error.code,
              status: error.status,
            }),
          ),
      );
      expect(refused).toEqual({ name: 'GatehouseError', code: 'assertion_failed', status: 401 });
    } finally {
      await authenticator.remove();
      await tab.close();
    }
  });
  it('the default magic link signs in the device that asked: the SDK waits on one page, the hosted page confirms on another', async () => {
    const laptop = await context.newPage();
    const phone = await context.newPage();
    try {
      await laptop.goto(`${origin}/sdk?${new URLSearchParams({ api: suite.server.url, app: app.id })}`);
      const address = uniqueEmail('cross-device');
      // No redirect URL: start() waits until the link is confirmed somewhere, then holds this page's session.
      const waiting = laptop.evaluate(async (email) => {
        const g = globalThis as unknown as SdkPage;
        g.auth = g.client();
        const result = await g.auth.magicLink.start({ email }, { pollIntervalMs: 250 });
        return { status: result.status, me: result.status === 'complete' ? (await g.auth.me()).primary_email : null };
      }, address);
      const link = linkIn(await suite.smtp.next(address));
      expect(link.origin + link.pathname).toMatch(/^http:\/\/gatehouse\.test\/a\/[0-9a-f-]{36}\/magic-link$/);
      await phone.goto(link.toString());
      await phone.getByRole('button', { name: 'Yes, sign me in' }).click();
      await phone.getByText('Go back to the device where you asked for the link').waitFor();
      expect(await waiting).toEqual({ status: 'complete', me: address });
      // The phone's page holds no tokens and its address bar no longer shows the token.
      expect(phone.url()).not.toContain('token=');
    } finally {
      await Promise.all([laptop.close(), phone.close()]);
    }
  });
});

import {
  type ClientSession,
  createGatehouseClient,
  type GatehouseClientOptions,
  GatehouseError,
  type SignInResult,
  type WebAuthnCeremonies,
} from '@gatehouse/sdk';
import { describe, expect, it } from 'vitest';
import { type GetTamper, SoftwareAuthenticator } from './helpers/authenticator.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { totpCode } from './helpers/mfa.ts';
import { rejection, type TestApp, UUID } from './helpers/server.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

const ORIGIN = 'https://app.example.com';

const passkeyApp = (input: Record<string, unknown> = {}) => suite.server.createApp({ allowed_origins: [ORIGIN], ...input });

/** The browser's WebAuthn played by a software authenticator at ORIGIN (`tamper` breaks every assertion it makes). */
const webauthnOf = (authenticator: SoftwareAuthenticator, tamper?: GetTamper): WebAuthnCeremonies => ({
  startRegistration: ({ optionsJSON }) => authenticator.create(optionsJSON, ORIGIN),
  startAuthentication: ({ optionsJSON }) => authenticator.get(optionsJSON, ORIGIN, tamper),
});

/** A browser client of `app` on the device `authenticator`, recording its session changes. */
function browser(app: TestApp, authenticator: SoftwareAuthenticator, options: Partial<GatehouseClientOptions> = {}) {
  const changes: Array<ClientSession | null> = [];
  const client = createGatehouseClient({
    baseUrl: suite.server.url,
    applicationId: app.id,
    webauthn: webauthnOf(authenticator),
    onSessionChange: (session) => changes.push(session),
    ...options,
  });
  return { client, changes };
}

type Client = ReturnType<typeof createGatehouseClient>;

/** magicLink.start → the mail → magicLink.verify, through the SDK: the result, whatever its status. */
async function magicLink(client: Client, address: string) {
  await client.magicLink.start({ email: address, redirect_url: `${ORIGIN}/auth/callback` });
  // Security notices (a passkey or factor added) share the inbox: the sign-in link is the mail that has one.
  let mail = await suite.smtp.next(address);
  while (!mail.subject.startsWith('Your sign-in link')) mail = await suite.smtp.next(address);
  return client.magicLink.verify({ token: linkIn(mail).searchParams.get('token')! });
}

function completed(result: SignInResult, aal: number) {
  if (result.status !== 'complete') throw new Error(`expected complete, got ${result.status}`);
  expect(result.tokens.aal).toBe(aal);
  return result;
}

function mfaRequired(result: SignInResult, methods: string[]) {
  if (result.status !== 'mfa_required') throw new Error(`expected mfa_required, got ${result.status}`);
  expect(result.mfa.methods).toEqual(methods);
  return result.pending_token;
}

/** A user signed in by magic link (aal 1) on a device with a passkey registered through the SDK. */
async function withPasskey(app: TestApp, address: string) {
  const authenticator = new SoftwareAuthenticator();
  const { client, changes } = browser(app, authenticator);
  const signedIn = completed(await magicLink(client, address), 1);
  const passkey = await client.passkeys.register({ name: 'Laptop' });
  return { client, changes, authenticator, passkey, user: signedIn.user };
}

describe('createGatehouseClient: passkeys', () => {
  it('registers a passkey after a magic-link sign-in; passkeys.signIn() then completes at aal 2 and keeps the tokens', async () => {
    const app = await passkeyApp();
    const { client, authenticator, passkey, user } = await withPasskey(app, uniqueEmail('register'));
    expect(passkey).toEqual({
      id: expect.stringMatching(UUID),
      name: 'Laptop',
      aaguid: expect.any(String),
      transports: ['internal', 'hybrid'],
      backed_up: true,
      created_at: expect.any(String),
      last_used_at: null,
    });
    expect(await client.passkeys.list()).toEqual([passkey]);
    expect((await client.session()).aal).toBe(1);

    // Another page load on the same device: signed out, then in with the passkey alone.
    const { client: fresh, changes } = browser(app, authenticator);
    const result = completed(await fresh.passkeys.signIn(), 2);
    expect(result.user.id).toBe(user.id);
    expect(fresh.getSession()).toMatchObject({ user_id: user.id, session_id: result.tokens.session_id, aal: 2 });
    expect(changes).toEqual([fresh.getSession()]);
    expect(await fresh.getAccessToken()).toBe(result.tokens.access_token);
    expect(await fresh.session()).toMatchObject({ id: result.tokens.session_id, aal: 2, current: true });
    expect((await fresh.passkeys.list())[0]).toMatchObject({ id: passkey.id, last_used_at: expect.any(String) });
  });

  it('magic link for a user with a passkey → mfa_required → mfa.passkey(pending) → signed in at aal 2', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('second-factor');
    const { authenticator, user } = await withPasskey(app, address);

    const { client, changes } = browser(app, authenticator);
    const pending = mfaRequired(await magicLink(client, address), ['passkey']);
    expect(client.getSession()).toBeNull();
    expect(changes).toEqual([]);

    const result = completed(await client.mfa.passkey(pending), 2);
    expect(result.user.id).toBe(user.id);
    expect(client.getSession()).toMatchObject({ user_id: user.id, aal: 2 });
    expect((await client.me()).id).toBe(user.id);
    // The pending token is spent.
    expect(await rejection(client.mfa.passkey(pending))).toMatchObject({ code: 'invalid_pending_token', status: 401 });
  });

  it('passkeys.remove() needs aal 2: step_up_required at aal 1, removed at aal 2', async () => {
    const app = await passkeyApp();
    const { client, authenticator, passkey } = await withPasskey(app, uniqueEmail('remove'));

    const refused = await rejection(client.passkeys.remove(passkey.id));
    expect(refused).toMatchObject({ code: 'step_up_required', status: 403 });
    expect(client.getSession()?.aal).toBe(1);

    const { client: stepped } = browser(app, authenticator);
    completed(await stepped.passkeys.signIn(), 2);
    expect(await stepped.passkeys.remove(passkey.id)).toEqual({ id: passkey.id, deleted: true });
    expect(await stepped.passkeys.list()).toEqual([]);
    expect(await rejection(stepped.passkeys.remove(passkey.id))).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('a refused assertion rejects with assertion_failed and the client keeps no tokens', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('refused');
    const { authenticator } = await withPasskey(app, address);
    const broken = webauthnOf(authenticator, { badSignature: true });

    const { client, changes } = browser(app, authenticator, { webauthn: broken });
    expect(await rejection(client.passkeys.signIn())).toMatchObject({ code: 'assertion_failed', status: 401 });
    expect(client.getSession()).toBeNull();
    expect(await client.getAccessToken()).toBeNull();
    expect(changes).toEqual([]);

    // As a second factor too; the pending token survives a failure and takes a genuine assertion.
    const pending = mfaRequired(await magicLink(client, address), ['passkey']);
    expect(await rejection(client.mfa.passkey(pending))).toMatchObject({ code: 'assertion_failed', status: 401 });
    expect(client.getSession()).toBeNull();
    expect(changes).toEqual([]);
    const { client: genuine } = browser(app, authenticator);
    completed(await genuine.mfa.passkey(pending), 2);
  });

  it('signIn({ autofill: true }) waits on a conditional request, renewed with a fresh state before the old one expires', async () => {
    const app = await passkeyApp();
    const { authenticator, user } = await withPasskey(app, uniqueEmail('autofill'));
    // The server's states live 5 minutes; this fetch tells the client 31 s, so it renews after 1 s instead of 4½ min.
    const states: string[] = [];
    const shortLived: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (!String(input).includes('/trpc/auth.passkeys.signIn.start')) return response;
      const body = await response.json();
      states.push(body.result.data.state);
      body.result.data.options.timeout = 31_000;
      return new Response(JSON.stringify(body), { status: response.status, headers: response.headers });
    };
    // The first request waits (no passkey picked yet) until it is cancelled; the renewed one gets the person's pick.
    const requests: Array<{ autofill?: boolean; challenge: string }> = [];
    let cancel: (() => void) | undefined;
    const webauthn: WebAuthnCeremonies = {
      ...webauthnOf(authenticator),
      startAuthentication: ({ optionsJSON, useBrowserAutofill }) => {
        requests.push({ autofill: useBrowserAutofill, challenge: optionsJSON.challenge });
        if (requests.length > 1) return authenticator.get(optionsJSON, ORIGIN);
        return new Promise((_resolve, reject) => {
          cancel = () =>
            reject(Object.assign(new Error('Manually cancelling existing WebAuthn API call'), { name: 'AbortError' }));
        });
      },
      cancelCeremony: () => cancel?.(),
    };
    const { client, changes } = browser(app, authenticator, { webauthn, fetch: shortLived });
    const result = completed(await client.passkeys.signIn({ autofill: true }), 2);
    expect(result.user.id).toBe(user.id);
    expect(requests.map((r) => r.autofill)).toEqual([true, true]);
    expect(new Set(requests.map((r) => r.challenge)).size).toBe(2);
    expect(new Set(states).size).toBe(2);
    expect(changes.map((c) => c?.aal)).toEqual([2]);

    // Cancelled by something else (the page started another ceremony): the promise rejects, nothing is renewed.
    const replaced = Object.assign(new Error('Authentication ceremony was sent an abort signal'), {
      name: 'WebAuthnError',
      code: 'ERROR_CEREMONY_ABORTED',
    });
    let attempts = 0;
    const { client: other } = browser(app, authenticator, {
      fetch: shortLived,
      webauthn: {
        ...webauthnOf(authenticator),
        startAuthentication: async () => {
          attempts++;
          throw replaced;
        },
        cancelCeremony: () => {},
      },
    });
    expect(await other.passkeys.signIn({ autofill: true }).catch((error: unknown) => error)).toBe(replaced);
    expect(attempts).toBe(1);
    expect(other.getSession()).toBeNull();
  });

  it('by default uses @simplewebauthn/browser, which imports in Node and refuses there for want of WebAuthn', async () => {
    const app = await passkeyApp();
    const client = createGatehouseClient({ baseUrl: suite.server.url, applicationId: app.id });
    // The server's ceremony starts; the library's own check then finds no `PublicKeyCredential` in Node.
    const error = await client.passkeys.signIn().then(
      () => {
        throw new Error('expected a rejection');
      },
      (reason: unknown) => reason,
    );
    expect(error).not.toBeInstanceOf(GatehouseError);
    expect(error).toMatchObject({ message: 'WebAuthn is not supported in this browser' });
    expect(client.getSession()).toBeNull();
  });
});

describe('createGatehouseClient: second factors', () => {
  it("settings.mfa 'required': enrollTotp/confirmTotp end mfa_enrollment_required; mfa.totp signs in at aal 2", async () => {
    const app = await passkeyApp({ settings: { mfa: 'required' } });
    const address = uniqueEmail('totp');
    const { client } = browser(app, new SoftwareAuthenticator());
    completed(await magicLink(client, address), 1);
    expect(await client.session()).toMatchObject({ aal: 1, mfa_enrollment_required: true });

    const enrolled = await client.mfa.enrollTotp({ name: 'Phone' });
    expect(enrolled).toEqual({
      factor_id: expect.stringMatching(UUID),
      secret: expect.stringMatching(/^[A-Z2-7]+$/),
      otpauth_uri: expect.stringMatching(/^otpauth:\/\/totp\//),
    });
    const factor = await client.mfa.confirmTotp({ factor_id: enrolled.factor_id, code: totpCode(enrolled.secret) });
    expect(factor).toEqual({
      id: enrolled.factor_id,
      kind: 'totp',
      name: 'Phone',
      created_at: expect.any(String),
      last_used_at: null,
    });
    expect((await client.session()).mfa_enrollment_required).toBe(false);

    const { client: next, changes } = browser(app, new SoftwareAuthenticator());
    const pending = mfaRequired(await magicLink(next, address), ['totp']);
    expect(await rejection(next.mfa.totp(pending, '000000'))).toMatchObject({ code: 'assertion_failed', status: 401 });
    expect(changes).toEqual([]);
    // The confirmation spent the current step: the app's next code.
    completed(await next.mfa.totp(pending, totpCode(enrolled.secret, 30_000)), 2);
    expect(next.getSession()?.aal).toBe(2);
    expect(await next.session()).toMatchObject({ aal: 2, mfa_enrollment_required: false });
  });

  it('createBackupCodes and mfa.backupCode: each code works once', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('backup');
    const { client } = browser(app, new SoftwareAuthenticator());
    completed(await magicLink(client, address), 1);
    const { codes } = await client.mfa.createBackupCodes();
    expect(codes).toHaveLength(10);

    const first = browser(app, new SoftwareAuthenticator()).client;
    completed(await first.mfa.backupCode(mfaRequired(await magicLink(first, address), ['backup_code']), codes[0]!), 2);
    expect(first.getSession()?.aal).toBe(2);

    const second = browser(app, new SoftwareAuthenticator()).client;
    const pending = mfaRequired(await magicLink(second, address), ['backup_code']);
    expect(await rejection(second.mfa.backupCode(pending, codes[0]!))).toMatchObject({ code: 'assertion_failed' });
    expect(second.getSession()).toBeNull();
    completed(await second.mfa.backupCode(pending, codes[1]!), 2);
  });

  it('mfa.factors.list() and remove(): removal needs aal 2', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('factors');
    const { client } = browser(app, new SoftwareAuthenticator());
    completed(await magicLink(client, address), 1);
    const enrolled = await client.mfa.enrollTotp();
    await client.mfa.confirmTotp({ factor_id: enrolled.factor_id, code: totpCode(enrolled.secret) });

    // With a factor in place, more of them (backup codes) need aal 2 too.
    const stepped = browser(app, new SoftwareAuthenticator()).client;
    const pending = mfaRequired(await magicLink(stepped, address), ['totp']);
    completed(await stepped.mfa.totp(pending, totpCode(enrolled.secret, 30_000)), 2);
    await stepped.mfa.createBackupCodes();

    const factors = await client.mfa.factors.list();
    expect(factors.map((f) => f.kind).sort()).toEqual(['backup_code', 'totp']);
    const totp = factors.find((f) => f.kind === 'totp')!;
    expect(await rejection(client.mfa.factors.remove(totp.id))).toMatchObject({ code: 'step_up_required', status: 403 });

    expect(await stepped.mfa.factors.remove(totp.id)).toEqual({ id: totp.id, deleted: true });
    expect((await stepped.mfa.factors.list()).map((f) => f.kind)).toEqual(['backup_code']);
  });
});

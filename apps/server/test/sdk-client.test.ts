import {
  type ClientSession,
  createGatehouseClient,
  type GatehouseClientOptions,
  type TokenStorage,
  verifyToken,
} from '@gatehouse/sdk';
import { decodeProtectedHeader } from 'jose';
import { describe, expect, it, vi } from 'vitest';
import { rawRequest, rejection, type TestApp } from './helpers/server.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

const ORIGIN = 'https://app.example.com';
const ISSUER = 'http://gatehouse.test';

/** A browser client of `app` that records its session changes and counts the refreshes it sends. */
function browser(app: TestApp, options: Partial<GatehouseClientOptions> = {}) {
  const changes: Array<ClientSession | null> = [];
  const counts = { refresh: 0 };
  const client = createGatehouseClient({
    baseUrl: suite.server.url,
    applicationId: app.id,
    onSessionChange: (session) => changes.push(session),
    fetch: (input, init) => {
      if (String(input).includes('/trpc/auth.token.refresh')) counts.refresh++;
      return fetch(input, init);
    },
    ...options,
  });
  return { client, changes, counts };
}

type Client = ReturnType<typeof createGatehouseClient>;

/** A storage adapter over one variable, like one over `localStorage`. */
function memoryStorage() {
  let value: string | null = null;
  const storage: TokenStorage = {
    get: () => value,
    set: (next) => {
      value = next;
    },
  };
  return { storage, stored: () => value };
}

/**
 * magicLink.start → the real mail → the hosted page's confirmation (a REST call, as the page makes it) → start()
 * resolves with the result for this client: the default, cross-device mode, all through the SDK.
 */
async function signIn(client: Client, email: string) {
  const result = client.magicLink.start({ email }, { pollIntervalMs: 50 });
  const link = linkIn(await suite.smtp.next(email));
  const confirmed = await rawRequest(suite.server.url, 'POST', '/v1/auth/magic-link/confirm', {
    body: { token: link.searchParams.get('token') },
    // The hosted page `/a/{application_id}/magic-link` names the application in its path.
    headers: { 'x-application-id': link.pathname.split('/')[2]! },
  });
  expect(confirmed.status).toBe(200);
  const outcome = await result;
  if (outcome.status === 'link_sent') throw new Error('expected the cross-device mode');
  return outcome;
}

/** Signs in an application without consent documents, where verify completes at once. */
async function signedIn(client: Client, email: string) {
  const result = await signIn(client, email);
  if (result.status !== 'complete') throw new Error(`expected complete, got ${result.status}`);
  return result;
}

const meWith = (app: TestApp, token: string) => app.rest('GET', '/v1/auth/me', undefined, { authorization: `Bearer ${token}` });

describe('createGatehouseClient: the end-user flow through the SDK', () => {
  it('magic link → mail → verify → consent → me(), keeping the tokens only when complete', async () => {
    const app = await suite.server.createApp({
      allowed_origins: [ORIGIN],
      settings: { consent_documents: [{ doc_type: 'terms', url: `${ORIGIN}/terms`, version: '1' }] },
    });
    const { client, changes } = browser(app);

    expect(await rejection(client.me())).toMatchObject({ code: 'missing_credentials', status: 401 });
    expect(await client.getAccessToken()).toBeNull();

    const first = await signIn(client, 'ada@example.com');
    expect(first).toEqual({
      status: 'consent_required',
      pending_token: expect.stringMatching(/^pt_/),
      consent_documents: [{ doc_type: 'terms', url: `${ORIGIN}/terms`, version: '1' }],
    });
    expect(client.getSession()).toBeNull();
    expect(changes).toEqual([]);

    const incomplete = await rejection(
      client.consent.accept({ pending_token: first.status === 'consent_required' ? first.pending_token : '', doc_types: [] }),
    );
    expect(incomplete).toMatchObject({ code: 'consent_incomplete', status: 422 });

    const done = await client.consent.accept({
      pending_token: first.status === 'consent_required' ? first.pending_token : '',
      doc_types: ['terms'],
    });
    if (done.status !== 'complete') throw new Error('expected complete');
    expect(done.user).toMatchObject({ primary_email: 'ada@example.com', email_verified: true });

    const session = client.getSession()!;
    expect(session).toMatchObject({
      user_id: done.user.id,
      session_id: done.tokens.session_id,
      aal: 1,
      org: null,
      org_role: null,
    });
    expect(changes).toEqual([session]);
    expect(await client.getAccessToken()).toBe(done.tokens.access_token);

    expect(await client.me()).toEqual({ ...done.user, mfa_enrollment_required: false });
    const updated = await client.updateMe({ profile: { name: 'Ada' } });
    expect(updated).toMatchObject({ id: done.user.id, profile: { name: 'Ada' } });
    expect(await client.me()).toEqual(updated);

    // A bad link is the API's error, code and status.
    expect(await rejection(client.magicLink.verify({ token: 'ml_nope' }))).toMatchObject({
      code: 'invalid_verification',
      status: 401,
    });
  });

  it('refreshes once for ten concurrent calls when the token is about to expire (no reuse, session survives)', async () => {
    const app = await suite.server.createApp({ settings: { session: { access_token_ttl_s: 60 } } });
    let clock = Date.now();
    const { client, changes, counts } = browser(app, { now: () => clock });
    const { tokens } = await signedIn(client, 'grace@example.com');
    expect(tokens.expires_in).toBe(60);

    // A fresh 60-second token is not refreshed on every call.
    await client.me();
    expect(counts.refresh).toBe(0);

    // 40 s later the token has 20 s left: less than half its lifetime, so the next signed-in call refreshes first.
    clock += 40_000;
    const users = await Promise.all(Array.from({ length: 10 }, () => client.me()));
    expect(counts.refresh).toBe(1);
    expect(new Set(users.map((u) => u.id))).toEqual(new Set([users[0]!.id]));
    expect(changes).toHaveLength(2);
    expect(changes[1]).toMatchObject({ session_id: tokens.session_id, access_token_expires_at: clock + 60_000 });

    // getAccessToken refreshes by the same rule; concurrent callers share it too.
    clock += 45_000;
    const [a, b] = await Promise.all([client.getAccessToken(), client.getAccessToken()]);
    expect(counts.refresh).toBe(2);
    expect(a).toBe(b);
    expect((await meWith(app, a!)).status).toBe(200);

    // Had any refresh token been presented twice, the server would have revoked the session.
    const sessions = await client.sessions.list();
    expect(sessions).toEqual([expect.objectContaining({ id: tokens.session_id, current: true })]);
    expect(counts.refresh).toBe(2);
  });

  it('a refused refresh (revoked session) signs the client out and calls onSessionChange(null)', async () => {
    const app = await suite.server.createApp();
    const { client, changes, counts } = browser(app);
    const { user } = await signedIn(client, 'linus@example.com');
    expect(await app.sdk.users.revokeSessions({ id: user.id })).toEqual({ user_id: user.id, revoked: 1 });

    // The access token is still unexpired locally: the server refuses it, the client tries one refresh, which is
    // refused too, and the session is gone.
    expect(await rejection(client.me())).toMatchObject({ code: 'invalid_token', status: 401 });
    expect(counts.refresh).toBe(1);
    expect(changes.at(-1)).toBeNull();
    expect(client.getSession()).toBeNull();
    expect(await client.getAccessToken()).toBeNull();
    expect(await rejection(client.me())).toMatchObject({ code: 'missing_credentials' });
  });

  it('signOut ends the session on the server and forgets the tokens', async () => {
    const app = await suite.server.createApp();
    const { client, changes } = browser(app);
    const { tokens } = await signedIn(client, 'barbara@example.com');
    expect((await meWith(app, tokens.access_token)).status).toBe(200);

    await client.signOut();
    expect(changes).toEqual([expect.objectContaining({ session_id: tokens.session_id }), null]);
    expect(await client.getAccessToken()).toBeNull();
    const refused = await meWith(app, tokens.access_token);
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('invalid_token');
    await client.signOut(); // signed out already: nothing to do
    expect(changes).toHaveLength(2);
  });

  it('keeps the refresh token in the storage adapter and restores the session from it', async () => {
    const app = await suite.server.createApp();
    const { storage, stored } = memoryStorage();
    const first = browser(app, { storage });
    const { tokens } = await signedIn(first.client, 'edsger@example.com');
    expect(stored()).toBe(tokens.refresh_token);

    // A page reload: a new client with the same storage and no access token refreshes on its first call.
    const reloaded = browser(app, { storage });
    expect(reloaded.client.getSession()).toBeNull();
    expect((await reloaded.client.me()).primary_email).toBe('edsger@example.com');
    expect(reloaded.counts.refresh).toBe(1);
    expect(stored()).toMatch(/^rt_/);
    expect(stored()).not.toBe(tokens.refresh_token);
    expect(reloaded.client.getSession()).toMatchObject({ session_id: tokens.session_id });

    await reloaded.client.signOut();
    expect(stored()).toBeNull();
  });

  it('with a shared lock, two clients over one storage (two tabs) refresh one after the other without reuse', async () => {
    const app = await suite.server.createApp();
    const { storage } = memoryStorage();
    let tail: Promise<unknown> = Promise.resolve();
    // What `navigator.locks.request(name, run)` does across tabs, within this process.
    const lock = <T>(run: () => Promise<T>): Promise<T> => {
      const result = tail.then(run);
      tail = result.catch(() => undefined);
      return result;
    };
    let clock = Date.now();
    const tab1 = browser(app, { storage, lock, now: () => clock });
    await signedIn(tab1.client, 'tabs@example.com');
    const tab2 = browser(app, { storage, lock, now: () => clock });

    clock += 9 * 60_000; // tab 1's token has a minute left
    const [one, two] = await Promise.all([tab1.client.me(), tab2.client.me()]);
    expect(one.id).toBe(two.id);
    expect(tab1.counts.refresh + tab2.counts.refresh).toBe(2);
    // Each refreshed with the token the other had just stored: the session is alive for both.
    expect(await tab1.client.sessions.list()).toHaveLength(1);
    expect(await tab2.client.sessions.list()).toHaveLength(1);
  });

  it('sessions.list and sessions.revoke: another session ends, revoking the current one signs out', async () => {
    const app = await suite.server.createApp();
    const laptop = browser(app);
    const phone = browser(app);
    const a = await signedIn(laptop.client, 'margaret@example.com');
    const b = await signedIn(phone.client, 'margaret@example.com');
    expect(b.user.id).toBe(a.user.id);

    const sessions = await laptop.client.sessions.list();
    expect(sessions.map((s) => [s.id, s.current]).sort()).toEqual(
      [
        [a.tokens.session_id, true],
        [b.tokens.session_id, false],
      ].sort(),
    );

    expect(await laptop.client.sessions.revoke(b.tokens.session_id)).toEqual({ id: b.tokens.session_id, deleted: true });
    expect(await rejection(phone.client.me())).toMatchObject({ code: 'invalid_token' });
    expect(phone.client.getSession()).toBeNull();
    expect(phone.changes.at(-1)).toBeNull();

    // Someone else's session id is 404, like an unknown one.
    const other = browser(app);
    await signedIn(other.client, 'someone@example.com');
    expect(await rejection(other.client.sessions.revoke(a.tokens.session_id))).toMatchObject({ code: 'not_found', status: 404 });

    await laptop.client.sessions.revoke(a.tokens.session_id);
    expect(laptop.client.getSession()).toBeNull();
    expect(laptop.changes.at(-1)).toBeNull();
    expect(await rejection(laptop.client.me())).toMatchObject({ code: 'missing_credentials' });
  });

  it('switchOrganization puts org/org_role into the token, and the rotated refresh token keeps working', async () => {
    const app = await suite.server.createApp();
    let clock = Date.now();
    const { client, counts } = browser(app, { now: () => clock });
    const { user } = await signedIn(client, 'frances@example.com');
    const org = await app.sdk.organizations.create({ name: 'Acme' });
    const foreign = await app.sdk.organizations.create({ name: 'Elsewhere' });
    await app.sdk.organizations.members.add({ id: org.id, user_id: user.id, role: 'admin' });

    const switched = await client.switchOrganization(org.id);
    expect(switched).toMatchObject({ user_id: user.id, org: org.id, org_role: 'admin' });
    const options = { baseUrl: suite.server.url, applicationId: app.id, issuer: ISSUER };
    expect(await verifyToken((await client.getAccessToken())!, options)).toMatchObject({ org: org.id, org_role: 'admin' });

    // The switch rotated the refresh token: the client refreshes with the new one, and the org stays.
    clock += 9.5 * 60_000;
    const refreshed = await client.getAccessToken();
    expect(counts.refresh).toBe(1);
    expect(await verifyToken(refreshed!, options)).toMatchObject({ org: org.id, org_role: 'admin' });
    expect((await client.sessions.list())[0]).toMatchObject({ organization_id: org.id });

    expect(await rejection(client.switchOrganization(foreign.id))).toMatchObject({ code: 'not_found', status: 404 });
    const left = await client.switchOrganization(null);
    expect(left).toMatchObject({ org: null, org_role: null });
    expect(await verifyToken((await client.getAccessToken())!, options)).toMatchObject({ org: null, org_role: null });
  });
});

describe('verifyToken: the stateless check for backends', () => {
  it('accepts a real token, refuses tampered, foreign and mis-issued ones, and picks up a rotated key', async () => {
    const app = await suite.server.createApp();
    const other = await suite.server.createApp();
    const { client } = browser(app);
    const { tokens, user } = await signedIn(client, 'alan@example.com');
    const options = { baseUrl: suite.server.url, applicationId: app.id, issuer: ISSUER };

    const claims = await verifyToken(tokens.access_token, options);
    expect(claims).toEqual({
      iss: ISSUER,
      aud: app.id,
      sub: user.id,
      sid: tokens.session_id,
      aal: 1,
      org: null,
      org_role: null,
      host: null,
      scope: null,
      client_id: null,
      iat: expect.any(Number),
      exp: expect.any(Number),
    });
    expect(claims.exp - claims.iat).toBe(600);
    // Seen before: answered from memory, the same claims.
    expect(await verifyToken(tokens.access_token, options)).toBe(claims);

    const [header, payload, signature] = tokens.access_token.split('.') as [string, string, string];
    const forged = Buffer.from(JSON.stringify({ ...claims, sub: crypto.randomUUID() })).toString('base64url');
    const flipped = `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BA' : 'AA'}`;
    const noneHeader = Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url');
    for (const bad of [
      `${header}.${forged}.${signature}`,
      `${header}.${payload}.${flipped}`,
      `${noneHeader}.${payload}.`,
      'not-a-jwt',
      '',
    ]) {
      expect(await rejection(verifyToken(bad, options))).toMatchObject({ code: 'invalid_token', status: 401 });
    }
    // The same token is not accepted for another application, nor under another issuer (the cache included).
    expect(await rejection(verifyToken(tokens.access_token, { ...options, applicationId: other.id }))).toMatchObject({
      code: 'invalid_token',
    });
    expect(await rejection(verifyToken(tokens.access_token, { ...options, issuer: 'https://evil.example' }))).toMatchObject({
      code: 'invalid_token',
    });
    // Another application's real token, presented to this one.
    const foreign = await signedIn(browser(other).client, 'alan@example.com');
    expect(await rejection(verifyToken(foreign.tokens.access_token, options))).toMatchObject({ code: 'invalid_token' });
    // The foreign kid was unknown to this set, so it may have reloaded the set just now: the cooldown starts here.
    const jwksFetchedAt = Date.now();
    expect((await verifyToken(foreign.tokens.access_token, { ...options, applicationId: other.id })).aud).toBe(other.id);

    // Rotation: a new sign-in is signed with the new key, which the verifier fetches on seeing its kid.
    const rotated = await app.sdk.signingKeys.rotate({ id: app.id });
    const oldKid = decodeProtectedHeader(tokens.access_token).kid;
    expect(rotated.kid).not.toBe(oldKid);
    const again = browser(app);
    const next = await signedIn(again.client, 'alan@example.com');
    expect(decodeProtectedHeader(next.tokens.access_token).kid).toBe(rotated.kid);
    // An unknown kid refetches the key set at most once a second (jose's cooldown): wait out the rest of it.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, jwksFetchedAt + 1_100 - Date.now())));
    expect(await verifyToken(next.tokens.access_token, options)).toMatchObject({ sid: next.tokens.session_id });
    // Tokens of the retired key keep verifying: it stays published until they have expired.
    expect((await verifyToken(tokens.access_token, options)).sid).toBe(tokens.session_id);

    // Stateless: a signed-out session's token still verifies locally (the server refuses it).
    await again.client.signOut();
    expect((await meWith(app, next.tokens.access_token)).status).toBe(401);
    expect((await verifyToken(next.tokens.access_token, options)).sid).toBe(next.tokens.session_id);
  });

  it('forgets a remembered token at its exp, and reports an unreachable key set as 503, not 401', async () => {
    const app = await suite.server.createApp();
    const { tokens } = await signedIn(browser(app).client, 'kathleen@example.com');
    const options = { baseUrl: suite.server.url, applicationId: app.id, issuer: ISSUER };
    const claims = await verifyToken(tokens.access_token, options);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime((claims.exp + 1) * 1000);
      expect(await rejection(verifyToken(tokens.access_token, options))).toMatchObject({ code: 'invalid_token' });
    } finally {
      vi.useRealTimers();
    }
    // A key set nobody can fetch: the token cannot be judged.
    const unreachable = await rejection(verifyToken(tokens.access_token, { ...options, baseUrl: 'http://127.0.0.1:9' }));
    expect(unreachable).toMatchObject({ code: 'jwks_unavailable', status: 503 });
  });
});

import { purgeExpired } from '@gatehouse/api';
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { createHost, rule } from './helpers/access-rules.ts';
import { type CreateTamper, type GetTamper, SoftwareAuthenticator } from './helpers/authenticator.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { expectAal2, mfaRequired, totpCode } from './helpers/mfa.ts';
import { acrossServers, expectError, ok, sql, type TestApp, UUID } from './helpers/server.ts';
import { endUser, type SignInResult, signIn, type Tokens } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

const ORIGIN = 'https://app.example.com';
const RP_ID = 'app.example.com';
const OTHER_ID = '01890000-0000-7000-8000-000000000000';

const passkeyApp = (input: Record<string, unknown> = {}) => suite.server.createApp({ allowed_origins: [ORIGIN], ...input });

interface Ceremony<O> {
  options: O;
  state: string;
}

const registerStart = (app: TestApp, token: string) =>
  endUser<Ceremony<PublicKeyCredentialCreationOptionsJSON>>(app, 'POST', '/v1/auth/passkeys/register/start', undefined, token);
const registerFinish = (app: TestApp, token: string, body: unknown) =>
  endUser(app, 'POST', '/v1/auth/passkeys/register/finish', body, token);
const signInStart = (app: TestApp, body?: unknown) =>
  endUser<Ceremony<PublicKeyCredentialRequestOptionsJSON>>(app, 'POST', '/v1/auth/passkeys/sign-in/start', body);
const signInFinish = (app: TestApp, body: unknown) =>
  endUser<SignInResult>(app, 'POST', '/v1/auth/passkeys/sign-in/finish', body);
const mfaStart = (app: TestApp, pendingToken: string) =>
  endUser<Ceremony<PublicKeyCredentialRequestOptionsJSON>>(app, 'POST', '/v1/auth/passkeys/mfa/start', {
    pending_token: pendingToken,
  });
const mfaFinish = (app: TestApp, body: unknown) => endUser<SignInResult>(app, 'POST', '/v1/auth/passkeys/mfa/finish', body);
const listPasskeys = (app: TestApp, token: string) => endUser(app, 'GET', '/v1/auth/passkeys', undefined, token);
const removePasskey = (app: TestApp, token: string, id: string) =>
  endUser(app, 'DELETE', `/v1/auth/passkeys/${id}`, undefined, token);

/** The whole registration ceremony: start, the authenticator's create(), finish. */
async function register(
  app: TestApp,
  token: string,
  authenticator: SoftwareAuthenticator,
  options: { name?: string; origin?: string; tamper?: CreateTamper } = {},
) {
  const { options: creation, state } = await ok(registerStart(app, token));
  const credential = await authenticator.create(creation, options.origin ?? ORIGIN, options.tamper);
  return registerFinish(app, token, { credential, state, ...(options.name ? { name: options.name } : {}) });
}

/** The first-factor ceremony: start, get(), finish. */
async function passkeySignIn(app: TestApp, authenticator: SoftwareAuthenticator, tamper?: GetTamper, origin = ORIGIN) {
  const { options, state } = await ok(signInStart(app));
  return signInFinish(app, { credential: await authenticator.get(options, origin, tamper), state });
}

/** The second-factor ceremony on a pending sign-in: start, get(), finish. */
async function passkeyMfa(app: TestApp, pendingToken: string, authenticator: SoftwareAuthenticator, tamper?: GetTamper) {
  const { options, state } = await ok(mfaStart(app, pendingToken));
  return mfaFinish(app, { credential: await authenticator.get(options, ORIGIN, tamper), state });
}

/** A user signed in by magic link (aal 1) who then registers a passkey on `authenticator`. */
async function withPasskey(app: TestApp, address: string, authenticator = new SoftwareAuthenticator(), name?: string) {
  const signedIn = await signIn(suite.server, suite.smtp, app, address);
  const passkey = await ok(register(app, signedIn.tokens.access_token, authenticator, { name }), 201);
  await expectNotice(address, 'added', passkey.name);
  return { ...signedIn, authenticator, passkey };
}

async function expectNotice(address: string, change: 'added' | 'removed', name: string) {
  const mail = await suite.smtp.next(address);
  expect(mail.subject).toBe(`A passkey was ${change} ${change === 'added' ? 'to' : 'from'} your Test app account`);
  expect(mail.text).toContain(`passkey named “${name}” was ${change}`);
}

describe('registration', () => {
  it('start → create() → finish: 201 passkey record; listed; stored with its public key only', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('reg');
    const { tokens, user } = await signIn(suite.server, suite.smtp, app, address);

    const started = await ok(registerStart(app, tokens.access_token));
    expect(Object.keys(started).sort()).toEqual(['options', 'state']);
    expect(started.state).toMatch(/^wst_/);
    const { options } = started;
    expect(options.rp).toEqual({ id: RP_ID, name: 'Test app' });
    // The user handle is the user id's 16 bytes: stable, and no personal data on the authenticator beyond the name.
    expect(options.user).toEqual({
      id: Buffer.from(user.id.replaceAll('-', ''), 'hex').toString('base64url'),
      name: address,
      displayName: address,
    });
    expect(options.challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(options.attestation).toBe('none');
    expect(options.timeout).toBe(300_000);
    expect(options.authenticatorSelection).toMatchObject({ residentKey: 'preferred', userVerification: 'required' });
    expect(options.excludeCredentials).toEqual([]);
    expect(options.pubKeyCredParams.map((p) => p.alg)).toContain(-7);

    const authenticator = new SoftwareAuthenticator({ aaguid: 'adce0002-35bc-c60a-648b-0b25f1f05503' });
    const credential = await authenticator.create(options, ORIGIN);
    const created = await ok(
      registerFinish(app, tokens.access_token, { credential, state: started.state, name: 'MacBook Touch ID' }),
      201,
    );
    expect(created).toEqual({
      id: expect.stringMatching(UUID),
      name: 'MacBook Touch ID',
      aaguid: 'adce0002-35bc-c60a-648b-0b25f1f05503',
      transports: ['internal', 'hybrid'],
      backed_up: true,
      created_at: expect.any(String),
      last_used_at: null,
    });
    await expectNotice(address, 'added', 'MacBook Touch ID');
    expect(await ok(listPasskeys(app, tokens.access_token))).toEqual([created]);

    // An identity of the user: the credential id, its COSE public key, the counter and flags; nothing secret.
    const [row] = await sql(suite.server, 'select * from identities where id = ?', [created.id]);
    expect(row).toMatchObject({
      kind: 'passkey',
      user_id: user.id,
      subject: credential.id,
      user_handle: options.user.id,
      backup_eligible: true,
      backed_up: true,
    });
    expect(Number(row!.sign_count)).toBe(0);
    expect(row!.public_key).toMatch(/^[A-Za-z0-9_-]+$/);

    // The same authenticator is not registered twice: its credential is excluded, and the browser refuses. (A second
    // passkey needs aal 2 now that the user has one: the passkey itself gives it.)
    const aal2 = expectAal2(await passkeySignIn(app, authenticator));
    const again = await ok(registerStart(app, aal2.tokens.access_token));
    expect(again.options.excludeCredentials).toEqual([
      { id: credential.id, type: 'public-key', transports: ['internal', 'hybrid'] },
    ]);
    await expect(authenticator.create(again.options, ORIGIN)).rejects.toMatchObject({ name: 'InvalidStateError' });
    // The state of a finished registration is spent.
    expectError(
      await registerFinish(app, tokens.access_token, { credential, state: started.state }),
      401,
      'invalid_pending_token',
    );
  });

  it('a credential id that is already stored is 409 conflict (one credential is one identity)', async () => {
    const app = await passkeyApp();
    const { tokens } = await signIn(suite.server, suite.smtp, app, uniqueEmail('reg-dup'));
    const other = await ok(app.rest('POST', '/v1/users', { primary_email: uniqueEmail('reg-dup-other') }), 201);
    const { options, state } = await ok(registerStart(app, tokens.access_token));
    const credential = await new SoftwareAuthenticator().create(options, ORIGIN);
    // The same credential id got stored for someone else in the meantime.
    await sql(
      suite.server,
      `insert into identities (id, application_id, user_id, kind, subject, name, created_at)
        values (?, ?, ?, 'passkey', ?, 'Theirs', now())`,
      ['01890000-0000-7000-8000-00000000d0b1', app.id, other.id, credential.id],
    );
    expectError(await registerFinish(app, tokens.access_token, { credential, state }), 409, 'conflict');
    expect(await ok(listPasskeys(app, tokens.access_token))).toEqual([]);
  });

  it('uses settings.passkeys (rp_id, rp_name); without allowed_origins it is 422', async () => {
    const app = await passkeyApp();
    await ok(
      app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { passkeys: { rp_id: 'example.com', rp_name: 'Example' } } }),
    );
    const { tokens } = await signIn(suite.server, suite.smtp, app, uniqueEmail('rp'));
    const { options, state } = await ok(registerStart(app, tokens.access_token));
    expect(options.rp).toEqual({ id: 'example.com', name: 'Example' });
    // A subdomain origin may use its parent domain as rp id.
    const authenticator = new SoftwareAuthenticator();
    await ok(registerFinish(app, tokens.access_token, { credential: await authenticator.create(options, ORIGIN), state }), 201);
    expectAal2(await passkeySignIn(app, authenticator));

    const bare = await suite.server.createApp();
    const signedIn = await signIn(suite.server, suite.smtp, bare, uniqueEmail('bare'));
    expectError(await registerStart(bare, signedIn.tokens.access_token), 422, 'validation_failed');
    expectError(await signInStart(bare), 422, 'validation_failed');
  });

  it('refuses a wrong origin (scheme, host, port), a wrong rpIdHash, no user verification, a wrong type or challenge', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('reg-attack');
    const { tokens } = await signIn(suite.server, suite.smtp, app, address);
    const authenticator = new SoftwareAuthenticator();
    const attacks: Array<[string, { origin?: string; tamper?: CreateTamper }]> = [
      ['scheme', { origin: 'http://app.example.com' }],
      ['port', { origin: 'https://app.example.com:8443' }],
      ['host', { origin: 'https://evil.app.example.com' }],
      ['reported origin', { tamper: { origin: 'https://evil.example.net' } }],
      ['rpIdHash', { tamper: { rpId: 'evil.example.net' } }],
      ['user verification', { tamper: { uv: false } }],
      ['user presence', { tamper: { up: false } }],
      ['type', { tamper: { type: 'webauthn.get' } }],
      ['challenge', { tamper: { challenge: Buffer.alloc(32, 7).toString('base64url') } }],
    ];
    for (const [label, attack] of attacks) {
      expectError(await register(app, tokens.access_token, authenticator, attack), 401, 'assertion_failed', label);
    }
    expect(await ok(listPasskeys(app, tokens.access_token))).toEqual([]);
    // A malformed credential is a schema error, not an exception.
    const { state } = await ok(registerStart(app, tokens.access_token));
    expectError(await registerFinish(app, tokens.access_token, { credential: { id: 'x' }, state }), 422, 'validation_failed');
    expectError(
      await registerFinish(app, tokens.access_token, {
        credential: { id: 'x', rawId: 'x', type: 'public-key', response: { clientDataJSON: 'x', attestationObject: 'x' } },
        state,
      }),
      401,
      'assertion_failed',
    );
  });

  it('a registration state belongs to the session that started it, and to no other ceremony', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('reg-state');
    const first = await signIn(suite.server, suite.smtp, app, address);
    const second = await signIn(suite.server, suite.smtp, app, address);
    const other = await signIn(suite.server, suite.smtp, app, uniqueEmail('reg-other'));
    const authenticator = new SoftwareAuthenticator();
    const { options, state } = await ok(registerStart(app, first.tokens.access_token));
    const credential = await authenticator.create(options, ORIGIN);
    expectError(await registerFinish(app, other.tokens.access_token, { credential, state }), 401, 'invalid_pending_token');
    expectError(await registerFinish(app, second.tokens.access_token, { credential, state }), 401, 'invalid_pending_token');
    // Spent by those attempts: even its own session cannot use it now.
    expectError(await registerFinish(app, first.tokens.access_token, { credential, state }), 401, 'invalid_pending_token');

    // A registration state is not a sign-in state.
    const fresh = await ok(registerStart(app, first.tokens.access_token));
    expectError(
      await signInFinish(app, {
        credential: {
          id: 'x',
          rawId: 'x',
          type: 'public-key',
          response: { clientDataJSON: 'x', authenticatorData: 'x', signature: 'x' },
        },
        state: fresh.state,
      }),
      401,
      'invalid_pending_token',
    );
  });

  it('a user who has a second factor needs aal 2 to add a passkey (403 step_up_required)', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('reg-stepup');
    const { tokens, authenticator } = await withPasskey(app, address);
    // Signed in again by magic link only: aal 1 is not enough to add a second passkey.
    const pending = await mfaRequired(suite, app, address, ['passkey']);
    expectError(await registerStart(app, tokens.access_token), 403, 'step_up_required');
    const stepped = expectAal2(await passkeyMfa(app, pending, authenticator));
    await ok(register(app, stepped.tokens.access_token, new SoftwareAuthenticator(), { name: 'YubiKey' }), 201);
    await expectNotice(address, 'added', 'YubiKey');
    expect(await ok(listPasskeys(app, stepped.tokens.access_token))).toHaveLength(2);
  });
});

describe('passkey sign-in (first factor)', () => {
  it('a discoverable passkey signs in at aal 2; its counter and last_used_at are saved', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('pk-sign-in');
    const { user, authenticator, passkey } = await withPasskey(app, address);

    const { options, state } = await ok(signInStart(app));
    expect(options).toMatchObject({ rpId: RP_ID, userVerification: 'required', timeout: 300_000 });
    // Discoverable: the browser offers whichever passkeys it holds for this site.
    expect(options.allowCredentials ?? []).toEqual([]);
    const done = expectAal2(await signInFinish(app, { credential: await authenticator.get(options, ORIGIN), state }));
    expect(done.user).toMatchObject({ id: user.id, primary_email: address });
    expect(decodeJwt(done.tokens.access_token).sub).toBe(user.id);
    const [session] = await ok(endUser(app, 'GET', '/v1/auth/sessions', undefined, done.tokens.access_token));
    expect(session.aal).toBe(2);
    // Its methods (RFC 8176): proof of possession of a key, the person verified by the authenticator.
    const [opened] = await sql(suite.server, 'select amr from sessions where id = ?', [done.tokens.session_id]);
    expect(opened.amr).toEqual(['pop', 'user', 'mfa']);

    const [listed] = await ok(listPasskeys(app, done.tokens.access_token));
    expect(listed.id).toBe(passkey.id);
    expect(listed.last_used_at).toEqual(expect.any(String));
    const [row] = await sql(suite.server, 'select sign_count from identities where id = ?', [passkey.id]);
    expect(Number(row!.sign_count)).toBe(1);
    // Again: the counter moves on.
    expectAal2(await passkeySignIn(app, authenticator));
    const [after] = await sql(suite.server, 'select sign_count from identities where id = ?', [passkey.id]);
    expect(Number(after!.sign_count)).toBe(2);
  });

  it('the start may name a host: host access rules decide at finish (403, no session), and the token carries `host`', async () => {
    const app = await passkeyApp();
    const { user, authenticator } = await withPasskey(app, uniqueEmail('pk-host'));
    const host = await createHost(app);
    const signInTo = async (body: unknown) => {
      const { options, state } = await ok(signInStart(app, body));
      return signInFinish(app, { credential: await authenticator.get(options, ORIGIN), state });
    };
    const [before] = await sql<{ n: number }>(suite.server, 'select count(*)::int as n from sessions where user_id = ?', [
      user.id,
    ]);
    expectError(await signInTo({ host_id: host.id }), 403, 'access_denied');
    const [after] = await sql<{ n: number }>(suite.server, 'select count(*)::int as n from sessions where user_id = ?', [
      user.id,
    ]);
    expect(after!.n).toBe(before!.n);
    expectError(await signInStart(app, { host_id: 'not-a-uuid' }), 422, 'validation_failed');

    await rule(app, 'allow', ['user', user.id], ['host', host.id]);
    const done = expectAal2(await signInTo({ host_id: host.id }));
    expect(decodeJwt(done.tokens.access_token)).toMatchObject({ sub: user.id, host: host.id });
    // No body at all still starts a sign-in without a host.
    expect(decodeJwt(expectAal2(await signInTo(undefined)).tokens.access_token)).not.toHaveProperty('host');
  });

  it('a passkey sign-in still asks for consent first', async () => {
    const app = await passkeyApp();
    const { authenticator } = await withPasskey(app, uniqueEmail('pk-consent'));
    await ok(
      app.rest('PATCH', `/v1/applications/${app.id}`, {
        settings: { consent_documents: [{ doc_type: 'terms', url: 'https://app.example.com/terms', version: '2' }] },
      }),
    );
    const res = await passkeySignIn(app, authenticator);
    expect(res.body.data).toMatchObject({ status: 'consent_required', consent_documents: [{ doc_type: 'terms' }] });
    const accepted = await endUser<SignInResult>(app, 'POST', '/v1/auth/consent/accept', {
      pending_token: (res.body.data as { pending_token: string }).pending_token,
      doc_types: ['terms'],
    });
    // The passkey already gave aal 2: no second factor is asked after consent.
    expectAal2(accepted);
  });

  it('a malformed finish is 422 with the failing path, and spends neither the state nor the counter', async () => {
    const app = await passkeyApp();
    const { authenticator } = await withPasskey(app, uniqueEmail('pk-schema'));
    const { options, state } = await ok(signInStart(app));
    const credential = await authenticator.get(options, ORIGIN);
    const cases: Array<[unknown, string]> = [
      [{ credential }, 'state'],
      [{ credential: { ...credential, type: 'password' }, state }, 'credential.type'],
      // Larger than any signature (ML-DSA-87's is 6170 base64url characters): refused before any work.
      [
        { credential: { ...credential, response: { ...credential.response, signature: 'A'.repeat(8193) } }, state },
        'credential.response.signature',
      ],
    ];
    for (const [body, path] of cases) {
      const res = await signInFinish(app, body);
      expectError(res, 422, 'validation_failed', path);
      expect(
        res.body.error.details!.map((d) => d.path),
        JSON.stringify(res.body.error),
      ).toContain(path);
    }
    // A field the route does not take (here: naming the user) is refused too, not ignored.
    const extra = await signInFinish(app, { credential, state, user_id: '01890000-0000-7000-8000-000000000000' });
    expectError(extra, 422, 'validation_failed', 'extra field');
    expect(
      extra.body.error.details!.some((d) => d.message.includes('user_id')),
      JSON.stringify(extra.body.error),
    ).toBe(true);
    // The state and the assertion are still good: nothing was consumed by the refusals.
    expectAal2(await signInFinish(app, { credential, state }));
  });

  it('authenticators that always report counter 0 keep working', async () => {
    const app = await passkeyApp();
    const { authenticator } = await withPasskey(app, uniqueEmail('pk-zero'), new SoftwareAuthenticator({ counterStep: 0 }));
    expectAal2(await passkeySignIn(app, authenticator));
    expectAal2(await passkeySignIn(app, authenticator));
  });

  it('refuses every tampered assertion, and a spent or foreign state', async () => {
    const app = await passkeyApp();
    const { authenticator, user } = await withPasskey(app, uniqueEmail('pk-attack'));
    const otherUser = await ok(app.rest('POST', '/v1/users', { primary_email: uniqueEmail('pk-victim') }), 201);
    const attacks: Array<[string, GetTamper, string?]> = [
      ['scheme', {}, 'http://app.example.com'],
      ['port', {}, 'https://app.example.com:8443'],
      ['host', {}, 'https://evil.app.example.com'],
      ['reported origin', { origin: 'https://evil.example.net' }],
      ['rpIdHash', { rpId: 'evil.example.net' }],
      ['user verification', { uv: false }],
      ['user presence', { up: false }],
      ['webauthn.create data in an assertion', { type: 'webauthn.create' }],
      ['challenge', { challenge: Buffer.alloc(32, 9).toString('base64url') }],
      ['signature', { badSignature: true }],
      ['another user handle', { userHandle: Buffer.from(otherUser.id.replaceAll('-', ''), 'hex').toString('base64url') }],
      ['no user handle', { userHandle: null }],
    ];
    for (const [label, tamper, origin] of attacks) {
      expectError(await passkeySignIn(app, authenticator, tamper, origin), 401, 'assertion_failed', label);
    }
    // None of them signed anyone in, and the genuine passkey still works.
    const [{ n }] = (await sql(suite.server, 'select count(*)::int as n from sessions where user_id = ? and aal = 2', [
      user.id,
    ])) as [{ n: number }];
    expect(Number(n)).toBe(0);

    const { options, state } = await ok(signInStart(app));
    const credential = await authenticator.get(options, ORIGIN);
    expectAal2(await signInFinish(app, { credential, state }));
    // Replayed: the state is spent.
    expectError(await signInFinish(app, { credential, state }), 401, 'invalid_pending_token');
    expectError(await signInFinish(app, { credential, state: 'wst_unknown' }), 401, 'invalid_pending_token');
    // A state of another application does not exist here.
    const otherApp = await passkeyApp();
    const foreign = await ok(signInStart(otherApp));
    expectError(
      await signInFinish(app, { credential: await authenticator.get(foreign.options, ORIGIN), state: foreign.state }),
      401,
      'invalid_pending_token',
    );
  });

  it('an expired challenge is refused (5 minutes, by the database clock)', async () => {
    const app = await passkeyApp();
    const { authenticator } = await withPasskey(app, uniqueEmail('pk-expired'));
    const { options, state } = await ok(signInStart(app));
    const [row] = await sql(
      suite.server,
      `select extract(epoch from (expires_at - created_at))::float8 as ttl from webauthn_challenges
        where application_id = ? order by created_at desc limit 1`,
      [app.id],
    );
    expect(Math.round(row!.ttl)).toBe(300);
    await sql(suite.server, `update webauthn_challenges set expires_at = now() - interval '1 second' where application_id = ?`, [
      app.id,
    ]);
    expectError(
      await signInFinish(app, { credential: await authenticator.get(options, ORIGIN), state }),
      401,
      'invalid_pending_token',
    );
  });

  it('housekeeping deletes one-time secrets a day after they expired: not sooner, and nothing live', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('pk-housekeeping');
    await withPasskey(app, address);
    // Each sign-in stopping at mfa_required leaves a magic link and a pending token (with its ceremony); each
    // first-factor start a ceremony of its own.
    for (let i = 0; i < 3; i++) await ok(mfaStart(app, await mfaRequired(suite, app, address, ['passkey'])));
    for (let i = 0; i < 3; i++) await ok(signInStart(app));
    const idsOf = async (table: string, where = 'true'): Promise<string[]> =>
      (
        await sql<{ id: string }>(
          suite.server,
          `select id from ${table} where application_id = ? and ${where} order by created_at, id`,
          [app.id],
        )
      ).map((r: { id: string }) => r.id);
    const age = (table: string, id: string, hours: number) =>
      sql(suite.server, `update ${table} set expires_at = now() - interval '${hours} hours' where id = ?`, [id]);

    const [oldLink, graceLink] = await idsOf('magic_links');
    const [oldPending, gracePending] = await idsOf('pending_tokens');
    const [oldCeremony, graceCeremony] = await idsOf('webauthn_challenges', 'pending_token_id is null');
    await age('magic_links', oldLink!, 25);
    await age('magic_links', graceLink!, 23);
    await age('pending_tokens', oldPending!, 25);
    await age('pending_tokens', gracePending!, 23);
    await age('webauthn_challenges', oldCeremony!, 25);
    await age('webauthn_challenges', graceCeremony!, 23);
    const [boundToOld] = await idsOf('webauthn_challenges', `pending_token_id = '${oldPending}'`);
    const links = await idsOf('magic_links');
    const pendings = await idsOf('pending_tokens');
    const ceremonies = await idsOf('webauthn_challenges');

    // At least these three (the database may be shared with other test files).
    expect(await purgeExpired(suite.server.server.orm)).toBeGreaterThanOrEqual(3);
    // Only what expired over a day ago is gone (and the ceremony of a purged pending sign-in with it); what is
    // within the day of grace, and everything live, stays.
    expect(await idsOf('magic_links')).toEqual(links.filter((id) => id !== oldLink));
    expect(await idsOf('pending_tokens')).toEqual(pendings.filter((id) => id !== oldPending));
    expect(await idsOf('webauthn_challenges')).toEqual(ceremonies.filter((id) => id !== oldCeremony && id !== boundToOld));
  });

  it('a counter that does not grow is refused and recorded (passkey.counter_regression)', async () => {
    const app = await passkeyApp();
    const { authenticator, passkey, user } = await withPasskey(app, uniqueEmail('pk-counter'));
    expectAal2(await passkeySignIn(app, authenticator));
    expectAal2(await passkeySignIn(app, authenticator)); // stored counter: 2
    expectError(await passkeySignIn(app, authenticator, { counter: 2 }), 401, 'assertion_failed', 'same counter');
    expectError(await passkeySignIn(app, authenticator, { counter: 1 }), 401, 'assertion_failed', 'lower counter');
    expectError(await passkeySignIn(app, authenticator, { counter: 0 }), 401, 'assertion_failed', 'counter 0');
    const events = await ok(app.rest('GET', '/v1/events?type=passkey.counter_regression'));
    expect(events.total).toBe(3);
    expect(events.events[0].data).toEqual({
      passkey_id: passkey.id,
      user_id: user.id,
      stored_counter: 2,
      reported_counter: 0,
    });
    const [row] = await sql(suite.server, 'select sign_count from identities where id = ?', [passkey.id]);
    expect(Number(row!.sign_count)).toBe(2);
    // The genuine authenticator (counter 5 by now: it counted the refused attempts too) still signs in.
    expectAal2(await passkeySignIn(app, authenticator));
  });

  it('ceremony starts are limited per client address: past 100 in 5 minutes, 429 with retry-after', async () => {
    const app = await passkeyApp();
    for (let batch = 0; batch < 5; batch++) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => signInStart(app)));
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    }
    const refused = await signInStart(app);
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // The second-factor start counts against the same limit; another application has its own.
    expectError(await mfaStart(app, 'pt_unknown'), 429, 'rate_limited');
    await ok(signInStart(await passkeyApp()));
  });

  it('20 concurrent finishes of one state (over two servers on PostgreSQL): exactly one signs in', async () => {
    const app = await passkeyApp();
    const { authenticator } = await withPasskey(app, uniqueEmail('pk-race'));
    const { options, state } = await ok(signInStart(app));
    const credential = await authenticator.get(options, ORIGIN);
    const answers = await acrossServers(suite.server, 20, (server) => signInFinish(app.via(server), { credential, state }));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    for (const a of answers.filter((x) => x.status !== 200)) expectError(a, 401, 'invalid_pending_token');
  });
});

describe('passkey as second factor (S5)', () => {
  it('magic link → mfa_required [passkey] → mfa/start (this user only) → S5 finish: tokens at aal 2 and user', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('pk-mfa');
    const { user, authenticator } = await withPasskey(app, address);
    const pending = await mfaRequired(suite, app, address, ['passkey']);

    const started = await ok(mfaStart(app, pending));
    expect(started.options).toMatchObject({ rpId: RP_ID, userVerification: 'required' });
    expect(started.options.allowCredentials).toEqual([
      { id: authenticator.credentials[0]!.id, type: 'public-key', transports: ['internal', 'hybrid'] },
    ]);
    const done = expectAal2(
      await mfaFinish(app, { credential: await authenticator.get(started.options, ORIGIN), state: started.state }),
    );
    expect(done.user.id).toBe(user.id);
    const [opened] = await sql(suite.server, 'select amr from sessions where id = ?', [done.tokens.session_id]);
    expect(opened.amr).toEqual(['email', 'pop', 'user', 'mfa']);
    // The pending token is spent.
    expectError(await mfaStart(app, pending), 401, 'invalid_pending_token');
    expectError(await mfaStart(app, 'pt_unknown'), 401, 'invalid_pending_token');
  });

  it('lists every method the user has, in a fixed order', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('pk-methods');
    const { tokens, authenticator } = await withPasskey(app, address);
    const pending = await mfaRequired(suite, app, address, ['passkey']);
    const stepped = expectAal2(await passkeyMfa(app, pending, authenticator));
    const enrolled = await ok(endUser(app, 'POST', '/v1/auth/mfa/totp/enroll', undefined, stepped.tokens.access_token), 201);
    const code = totpCode(enrolled.secret);
    await ok(
      endUser(app, 'POST', '/v1/auth/mfa/totp/confirm', { factor_id: enrolled.factor_id, code }, stepped.tokens.access_token),
    );
    await ok(endUser(app, 'POST', '/v1/auth/mfa/backup-codes', undefined, stepped.tokens.access_token), 201);
    await suite.smtp.next(address); // mfa_factor_added (authenticator app)
    await suite.smtp.next(address); // mfa_factor_added (backup codes)
    await mfaRequired(suite, app, address, ['passkey', 'totp', 'backup_code']);
    expect(tokens.aal).toBe(1);
  });

  it("refuses another user's credential, a state of another sign-in, and tampered assertions; each failure spends the state, not the pending token", async () => {
    const app = await passkeyApp();
    const victim = uniqueEmail('pk-mfa-victim');
    const { authenticator } = await withPasskey(app, victim);
    const attacker = await withPasskey(app, uniqueEmail('pk-mfa-attacker'));
    const pending = await mfaRequired(suite, app, victim, ['passkey']);

    // The attacker's own (valid) passkey, offered for the victim's pending sign-in.
    const { options, state } = await ok(mfaStart(app, pending));
    const foreign = await attacker.authenticator.get(options, ORIGIN, {
      credentialId: attacker.authenticator.credentials[0]!.id,
    });
    expectError(await mfaFinish(app, { credential: foreign, state }), 401, 'assertion_failed', "another user's credential");
    // The state is spent by the failure.
    const genuine = await authenticator.get(options, ORIGIN);
    expectError(await mfaFinish(app, { credential: genuine, state }), 401, 'invalid_pending_token', 'replayed state');

    // A state of another sign-in of the same user: its challenge is not the one signed.
    const otherPending = await mfaRequired(suite, app, victim, ['passkey']);
    const first = await ok(mfaStart(app, pending));
    const second = await ok(mfaStart(app, otherPending));
    const signedForFirst = await authenticator.get(first.options, ORIGIN);
    expectError(
      await mfaFinish(app, { credential: signedForFirst, state: second.state }),
      401,
      'assertion_failed',
      'other sign-in',
    );
    // A first-factor state is not a second-factor state.
    const firstFactor = await ok(signInStart(app));
    expectError(
      await mfaFinish(app, { credential: await authenticator.get(firstFactor.options, ORIGIN), state: firstFactor.state }),
      401,
      'invalid_pending_token',
    );
    // The wrong user handle for this credential.
    expectError(
      await passkeyMfa(app, pending, authenticator, { userHandle: Buffer.alloc(16, 1).toString('base64url') }),
      401,
      'assertion_failed',
      'user handle',
    );

    // Two failures on this pending token so far (the foreign credential, the user handle): it still works.
    expectAal2(await passkeyMfa(app, pending, authenticator), 'after failures');
  });

  it('5 failed attempts revoke the pending token', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('pk-mfa-five');
    const { authenticator } = await withPasskey(app, address);
    const pending = await mfaRequired(suite, app, address, ['passkey']);
    for (let i = 0; i < 5; i++) {
      expectError(await passkeyMfa(app, pending, authenticator, { badSignature: true }), 401, 'assertion_failed', `attempt ${i}`);
    }
    expectError(await mfaStart(app, pending), 401, 'invalid_pending_token');
  });

  it('20 concurrent finishes of one state (over two servers on PostgreSQL): exactly one signs in', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('pk-mfa-race');
    const { authenticator } = await withPasskey(app, address);
    const pending = await mfaRequired(suite, app, address, ['passkey']);
    const { options, state } = await ok(mfaStart(app, pending));
    const credential = await authenticator.get(options, ORIGIN);
    const answers = await acrossServers(suite.server, 20, (server) => mfaFinish(app.via(server), { credential, state }));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    for (const a of answers.filter((x) => x.status !== 200)) expectError(a, 401, 'invalid_pending_token');
  });

  it('a user without a passkey has no passkey ceremony (404)', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('pk-mfa-none');
    const { tokens } = await signIn(suite.server, suite.smtp, app, address);
    await ok(endUser(app, 'POST', '/v1/auth/mfa/backup-codes', undefined, tokens.access_token), 201);
    await suite.smtp.next(address); // mfa_factor_added
    const pending = await mfaRequired(suite, app, address, ['backup_code']);
    expectError(await mfaStart(app, pending), 404, 'not_found');
  });
});

describe('passkey management', () => {
  it('removal needs aal 2; another user’s or application’s passkey is 404; a removed passkey no longer signs in', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('pk-remove');
    const { tokens, authenticator, passkey } = await withPasskey(app, address);
    const other = await withPasskey(app, uniqueEmail('pk-remove-other'));
    const otherApp = await passkeyApp();
    const stranger = await withPasskey(otherApp, uniqueEmail('pk-remove-stranger'));

    expectError(await removePasskey(app, tokens.access_token, passkey.id), 403, 'step_up_required', 'aal 1');
    const aal2 = expectAal2(await passkeySignIn(app, authenticator));
    const token = aal2.tokens.access_token;
    expectError(await removePasskey(app, token, other.passkey.id), 404, 'not_found', "another user's");
    expectError(await removePasskey(app, token, stranger.passkey.id), 404, 'not_found', "another application's");
    expectError(await removePasskey(app, token, OTHER_ID), 404, 'not_found', 'unknown');
    expectError(await removePasskey(otherApp, token, stranger.passkey.id), 401, 'invalid_token', 'token of another app');

    expect(await ok(removePasskey(app, token, passkey.id))).toEqual({ id: passkey.id, deleted: true });
    await expectNotice(address, 'removed', passkey.name);
    expect(await ok(listPasskeys(app, token))).toEqual([]);
    expectError(await removePasskey(app, token, passkey.id), 404, 'not_found', 'twice');
    expectError(await passkeySignIn(app, authenticator), 401, 'assertion_failed', 'removed passkey');
    // Their other passkeys are untouched.
    expect(await ok(listPasskeys(app, other.tokens.access_token))).toHaveLength(1);
    // Without a second factor, sign-in by magic link completes again.
    const again = await signIn(suite.server, suite.smtp, app, address);
    expect(again.tokens.aal).toBe(1);
  });

  it("settings.mfa 'required': registering a passkey ends mfa_enrollment_required", async () => {
    const app = await passkeyApp({ settings: { mfa: 'required' } });
    const { tokens } = await signIn(suite.server, suite.smtp, app, uniqueEmail('pk-required'));
    expect((await ok(endUser(app, 'GET', '/v1/auth/session', undefined, tokens.access_token))).mfa_enrollment_required).toBe(
      true,
    );
    await ok(register(app, tokens.access_token, new SoftwareAuthenticator()), 201);
    expect((await ok(endUser(app, 'GET', '/v1/auth/session', undefined, tokens.access_token))).mfa_enrollment_required).toBe(
      false,
    );
  });

  it("merge: the source's passkeys move to the target, and sign in the target", async () => {
    const app = await passkeyApp();
    const source = await withPasskey(app, uniqueEmail('pk-merge-source'));
    const target = await signIn(suite.server, suite.smtp, app, uniqueEmail('pk-merge-target'));
    await ok(app.rest('POST', '/v1/users/merge', { source_user_id: source.user.id, target_user_id: target.user.id }));
    const done = expectAal2(await passkeySignIn(app, source.authenticator));
    expect(done.user.id).toBe(target.user.id);
    expect(await ok(listPasskeys(app, done.tokens.access_token))).toEqual([expect.objectContaining({ id: source.passkey.id })]);
  });
});

describe('support: GET/DELETE /v1/users/{id}/factors (secret key)', () => {
  it("lists a user's passkeys and factors; removing one revokes the user's sessions and tells them", async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('pk-support');
    const { user, authenticator, passkey } = await withPasskey(app, address);
    const session = expectAal2(await passkeySignIn(app, authenticator));
    await ok(endUser(app, 'POST', '/v1/auth/mfa/backup-codes', undefined, session.tokens.access_token), 201);
    await suite.smtp.next(address); // mfa_factor_added

    const listed = await ok(app.rest('GET', `/v1/users/${user.id}/factors`));
    expect(listed).toEqual([
      {
        id: expect.stringMatching(UUID),
        kind: 'backup_code',
        name: 'Backup codes',
        created_at: expect.any(String),
        last_used_at: null,
      },
      { id: passkey.id, kind: 'passkey', name: passkey.name, created_at: passkey.created_at, last_used_at: expect.any(String) },
    ]);

    const removed = await ok(app.rest('DELETE', `/v1/users/${user.id}/factors/${passkey.id}`));
    expect(removed).toEqual({ id: passkey.id, deleted: true, revoked_sessions: expect.any(Number) });
    expect(removed.revoked_sessions).toBeGreaterThanOrEqual(2);
    await expectNotice(address, 'removed', passkey.name);
    expectError(await endUser(app, 'GET', '/v1/auth/me', undefined, session.tokens.access_token), 401, 'invalid_token');
    expectError(await passkeySignIn(app, authenticator), 401, 'assertion_failed');

    const backup = listed[0];
    expect(await ok(app.rest('DELETE', `/v1/users/${user.id}/factors/${backup.id}`))).toMatchObject({
      id: backup.id,
      deleted: true,
    });
    expect(await ok(app.rest('GET', `/v1/users/${user.id}/factors`))).toEqual([]);
    expectError(await app.rest('DELETE', `/v1/users/${user.id}/factors/${backup.id}`), 404, 'not_found');
  });

  it('is tenant-scoped and needs users:read / users:write', async () => {
    const app = await passkeyApp();
    const { user, passkey } = await withPasskey(app, uniqueEmail('pk-support-scope'));
    const otherApp = await passkeyApp();
    expectError(await otherApp.rest('GET', `/v1/users/${user.id}/factors`), 404, 'not_found');
    expectError(await otherApp.rest('DELETE', `/v1/users/${user.id}/factors/${passkey.id}`), 404, 'not_found');
    const other = await ok(otherApp.rest('POST', '/v1/users', { primary_email: uniqueEmail('pk-support-other') }), 201);
    expectError(await otherApp.rest('DELETE', `/v1/users/${other.id}/factors/${passkey.id}`), 404, 'not_found');

    const readOnly = await ok(app.rest('POST', '/v1/api-keys', { name: 'read', scopes: ['users:read'] }), 201);
    const asReader = (method: string, path: string) =>
      app.rest(method, path, undefined, { authorization: `Bearer ${readOnly.secret}` });
    await ok(asReader('GET', `/v1/users/${user.id}/factors`));
    expectError(await asReader('DELETE', `/v1/users/${user.id}/factors/${passkey.id}`), 403, 'insufficient_scope');
    expect(await ok(app.rest('GET', `/v1/users/${user.id}/factors`))).toHaveLength(1);
  });
});

describe('the server SDK (tRPC) drives the same ceremonies', () => {
  it('register, sign in, second factor', async () => {
    const app = await passkeyApp();
    const address = uniqueEmail('pk-sdk');
    const { tokens, user } = await signIn(suite.server, suite.smtp, app, address);
    const authenticator = new SoftwareAuthenticator();
    const trpc = (path: string, input: unknown, token?: string) =>
      fetch(`${suite.server.url}/trpc/${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-application-id': app.id,
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify(input ?? {}),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

    const started = await trpc('auth.passkeys.register.start', undefined, tokens.access_token);
    expect(started.status).toBe(200);
    const { options, state } = started.body.result.data;
    const credential = await authenticator.create(options, ORIGIN);
    const finished = await trpc('auth.passkeys.register.finish', { credential, state, name: 'tRPC' }, tokens.access_token);
    expect(finished.body.result.data).toMatchObject({ name: 'tRPC' });
    await expectNotice(address, 'added', 'tRPC');

    const signInOptions = (await trpc('auth.passkeys.signIn.start', undefined)).body.result.data;
    const result = await trpc('auth.passkeys.signIn.finish', {
      credential: await authenticator.get(signInOptions.options, ORIGIN),
      state: signInOptions.state,
    });
    expect(result.body.result.data).toMatchObject({ status: 'complete', tokens: { aal: 2 }, user: { id: user.id } });

    const pending = await mfaRequired(suite, app, address, ['passkey']);
    const mfa = (await trpc('auth.passkeys.mfa.start', { pending_token: pending })).body.result.data;
    const done = await trpc('auth.passkeys.mfa.finish', {
      credential: await authenticator.get(mfa.options, ORIGIN),
      state: mfa.state,
    });
    expect(done.body.result.data).toMatchObject({ status: 'complete', tokens: { aal: 2 } });
    const bad = await trpc('auth.passkeys.mfa.finish', {
      credential: await authenticator.get(mfa.options, ORIGIN),
      state: mfa.state,
    });
    expect(bad.status).toBe(401);
    expect(bad.body.error.data.code).toBe('invalid_pending_token');
    const signedIn: Tokens = (done.body.result.data as { tokens: Tokens }).tokens;
    expect(signedIn.session_id).toMatch(UUID);
  });
});

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startOfTotpStep, TOTP_STEP_MS } from './helpers/clock.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { expectAal2, mfaRequired, totpCode } from './helpers/mfa.ts';
import { acrossServers, expectError, ok, sql, type TestApp, UUID } from './helpers/server.ts';
import { beginSignIn, endUser, type SignInResult, signIn } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

const UNKNOWN_ID = '01890000-0000-7000-8000-000000000000';
// Tests that compare steps must not straddle a step boundary (a code computed in one step and checked in the next
// would be one step off): they start at the beginning of a step of the servers' TOTP clock (`startOfTotpStep`).
const STEP_MS = TOTP_STEP_MS;

/** As if the authenticators' last use were long ago (no step spent yet): SQL, as other tests move time. */
const forgetUsedSteps = (userId: string) =>
  sql(suite.server, 'update mfa_factors set last_used_step = null where user_id = ?', [userId]);

const enroll = (app: TestApp, token: string, body?: unknown) => endUser(app, 'POST', '/v1/auth/mfa/totp/enroll', body, token);
const confirm = (app: TestApp, token: string, factorId: string, code: string) =>
  endUser(app, 'POST', '/v1/auth/mfa/totp/confirm', { factor_id: factorId, code }, token);
const verifyTotp = (app: TestApp, pendingToken: string, code: string) =>
  endUser<SignInResult>(app, 'POST', '/v1/auth/mfa/totp/verify', { pending_token: pendingToken, code });
const verifyBackupCode = (app: TestApp, pendingToken: string, code: string) =>
  endUser<SignInResult>(app, 'POST', '/v1/auth/mfa/backup-code/verify', { pending_token: pendingToken, code });
const backupCodes = (app: TestApp, token: string) => endUser(app, 'POST', '/v1/auth/mfa/backup-codes', undefined, token);
const factors = (app: TestApp, token: string) => endUser(app, 'GET', '/v1/auth/mfa/factors', undefined, token);
const removeFactor = (app: TestApp, token: string, id: string) =>
  endUser(app, 'DELETE', `/v1/auth/mfa/factors/${id}`, undefined, token);
const currentSession = (app: TestApp, token: string) => endUser(app, 'GET', '/v1/auth/session', undefined, token);

/**
 * The security notices mailed to `address` (mfa_factor_added / mfa_factor_removed), one per `[change, name]`.
 * Notices sent by one request are delivered concurrently, so their order is not part of the check.
 */
async function expectNotices(address: string, ...notices: ['added' | 'removed', string][]) {
  const received: string[] = [];
  for (const _ of notices) {
    const mail = await suite.smtp.next(address);
    expect(mail.subject).toBe('Two-step verification changed on your Test app account');
    received.push(mail.text.match(/A second factor \(.*\) was (added|removed)/)?.[0] ?? mail.text);
  }
  const expected = notices.map(([change, name]) => `A second factor (${name}) was ${change}`);
  expect(received.sort()).toEqual(expected.sort());
}
const expectNotice = (address: string, change: 'added' | 'removed', name: string) => expectNotices(address, [change, name]);

/** Signs in (aal 1), enrolls and confirms an authenticator: answers its seed and the aal 1 session's tokens. */
async function withTotp(app: TestApp, address: string) {
  const signedIn = await signIn(suite.server, suite.smtp, app, address);
  const enrolled = await ok(enroll(app, signedIn.tokens.access_token), 201);
  await ok(confirm(app, signedIn.tokens.access_token, enrolled.factor_id, totpCode(enrolled.secret)));
  await expectNotice(address, 'added', 'Authenticator app');
  return { ...signedIn, secret: enrolled.secret as string, factorId: enrolled.factor_id as string };
}

/** A full sign-in through TOTP (the user's steps forgotten first, so the current code is fresh): the aal 2 result. */
async function signInWithTotp(app: TestApp, address: string, userId: string, secret: string, methods = ['totp']) {
  await forgetUsedSteps(userId);
  const pending = await mfaRequired(suite, app, address, methods);
  return expectAal2(await verifyTotp(app, pending, totpCode(secret)), 'totp sign-in');
}

describe('TOTP', () => {
  it('enroll → confirm → sign-in stops at mfa_required → verify completes at aal 2', async () => {
    const app = await suite.server.createApp();
    const address = uniqueEmail('ada');
    const { tokens, user } = await signIn(suite.server, suite.smtp, app, address);

    const enrolled = await ok(enroll(app, tokens.access_token), 201);
    expect(Object.keys(enrolled).sort()).toEqual(['factor_id', 'otpauth_uri', 'secret']);
    expect(enrolled.factor_id).toMatch(UUID);
    expect(enrolled.secret).toMatch(/^[A-Z2-7]{32}$/);
    const uri = new URL(enrolled.otpauth_uri);
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.host).toBe('totp');
    expect(decodeURIComponent(uri.pathname)).toBe(`/Test app:${address}`);
    expect(Object.fromEntries(uri.searchParams)).toEqual({
      issuer: 'Test app',
      secret: enrolled.secret,
      algorithm: 'SHA1',
      digits: '6',
      period: '30',
    });
    // Not a factor until confirmed: the list is empty, and sign-in is not asked for it.
    expect(await ok(factors(app, tokens.access_token))).toEqual([]);

    // The seed is stored sealed, never in clear.
    const [row] = await sql(suite.server, 'select * from mfa_factors where id = ?', [enrolled.factor_id]);
    expect(JSON.stringify(row)).not.toContain(enrolled.secret);
    expect(row!.secret_sealed).toMatch(/^v1\./);
    expect(row!.confirmed_at).toBeNull();

    // A wrong first code: 401, still unconfirmed.
    const wrong = totpCode(enrolled.secret) === '000000' ? '111111' : '000000';
    expectError(await confirm(app, tokens.access_token, enrolled.factor_id, wrong), 401, 'assertion_failed', 'wrong code');
    expectError(await confirm(app, tokens.access_token, UNKNOWN_ID, totpCode(enrolled.secret)), 404, 'not_found');
    expectError(await confirm(app, tokens.access_token, enrolled.factor_id, '12345'), 422, 'validation_failed');

    const factor = await ok(confirm(app, tokens.access_token, enrolled.factor_id, totpCode(enrolled.secret)));
    expect(factor).toEqual({
      id: enrolled.factor_id,
      kind: 'totp',
      name: 'Authenticator app',
      created_at: expect.any(String),
      last_used_at: null,
    });
    await expectNotice(address, 'added', 'Authenticator app');
    expect(await ok(factors(app, tokens.access_token))).toEqual([factor]);
    // Confirming twice: the enrollment is no longer open.
    expectError(await confirm(app, tokens.access_token, enrolled.factor_id, totpCode(enrolled.secret)), 404, 'not_found');

    await ok(endUser(app, 'POST', '/v1/auth/sign-out', undefined, tokens.access_token));
    const pending = await mfaRequired(suite, app, address, ['totp']);
    // No session yet: only the second factor creates one.
    const [{ n }] = (await sql(suite.server, 'select count(*)::int as n from sessions where user_id = ? and revoked_at is null', [
      user.id,
    ])) as [{ n: number }];
    expect(Number(n)).toBe(0);

    startOfTotpStep();
    const done = expectAal2(await verifyTotp(app, pending, totpCode(enrolled.secret, STEP_MS)));
    expect(done.user.id).toBe(user.id);
    const [session] = await ok(endUser(app, 'GET', '/v1/auth/sessions', undefined, done.tokens.access_token));
    expect(session.aal).toBe(2);
    // The pending token is spent.
    expectError(await verifyTotp(app, pending, totpCode(enrolled.secret, STEP_MS)), 401, 'invalid_pending_token');
    const [listed] = await ok(factors(app, done.tokens.access_token));
    expect(listed.last_used_at).toEqual(expect.any(String));
  });

  it('a code is accepted once: the same code again, even within its step, is 401 assertion_failed', async () => {
    const app = await suite.server.createApp();
    const address = uniqueEmail('replay');
    startOfTotpStep();
    const { secret, user } = await withTotp(app, address);
    // The confirmation spent the current step: its code cannot sign in.
    const first = await mfaRequired(suite, app, address, ['totp']);
    expectError(await verifyTotp(app, first, totpCode(secret)), 401, 'assertion_failed', 'the confirmation code');
    // The next step's code works (within +1), once.
    const code = totpCode(secret, STEP_MS);
    expectAal2(await verifyTotp(app, first, code));
    const second = await mfaRequired(suite, app, address, ['totp']);
    expectError(await verifyTotp(app, second, code), 401, 'assertion_failed', 'replayed');
    // The failure consumed nothing: the pending token still works (here with a step not yet used, as if time passed).
    await forgetUsedSteps(user.id);
    expectAal2(await verifyTotp(app, second, code), 'same pending token after a failure');
  });

  it('±1 step is accepted, ±2 refused; a step older than the last accepted one is refused', async () => {
    const app = await suite.server.createApp();
    const address = uniqueEmail('drift');
    startOfTotpStep();
    const { secret, user } = await withTotp(app, address);
    // As if the confirmation were long ago: no step spent yet.
    await forgetUsedSteps(user.id);

    const pending = await mfaRequired(suite, app, address, ['totp']);
    expectError(await verifyTotp(app, pending, totpCode(secret, -2 * STEP_MS)), 401, 'assertion_failed', '-2 steps');
    expectError(await verifyTotp(app, pending, totpCode(secret, 2 * STEP_MS)), 401, 'assertion_failed', '+2 steps');
    expectAal2(await verifyTotp(app, pending, totpCode(secret, -STEP_MS)), '-1 step');

    const next = await mfaRequired(suite, app, address, ['totp']);
    expectAal2(await verifyTotp(app, next, totpCode(secret, STEP_MS)), '+1 step');
    // Once step N+1 was accepted, step N (the current one) is in the past.
    const last = await mfaRequired(suite, app, address, ['totp']);
    expectError(await verifyTotp(app, last, totpCode(secret)), 401, 'assertion_failed', 'an earlier step');
  });

  it('20 concurrent uses of one code (on 20 pending sign-ins, over two servers on PostgreSQL): exactly one succeeds', async () => {
    const app = await suite.server.createApp({
      settings: { rate_limits: { magic_link_per_email: 100, magic_link_per_address: 1000, window_s: 900 } },
    });
    const address = uniqueEmail('race');
    startOfTotpStep();
    const { secret } = await withTotp(app, address);
    const pendings: string[] = [];
    for (let i = 0; i < 20; i++) pendings.push(await mfaRequired(suite, app, address, ['totp']));
    const code = totpCode(secret, STEP_MS);
    const results = await acrossServers(suite.server, 20, (server, i) => verifyTotp(app.via(server), pendings[i]!, code));
    const winners = results.filter((r) => r.status === 200);
    expect(winners.length, results.map((r) => r.status).join(',')).toBe(1);
    expectAal2(winners[0]!);
    for (const loser of results.filter((r) => r.status !== 200)) expectError(loser, 401, 'assertion_failed', 'loser');
    const [{ n }] = (await sql(suite.server, `select count(*)::int as n from sessions where application_id = ? and aal = 2`, [
      app.id,
    ])) as [{ n: number }];
    expect(Number(n)).toBe(1);
  });
});

describe('attempt limits', () => {
  it('5 wrong codes revoke the pending token: the 6th call and a right code afterwards are 401 invalid_pending_token', async () => {
    const app = await suite.server.createApp();
    const address = uniqueEmail('guess');
    startOfTotpStep();
    const { secret, user } = await withTotp(app, address);
    await forgetUsedSteps(user.id);
    const pending = await mfaRequired(suite, app, address, ['totp']);
    const right = totpCode(secret);
    const wrong = (i: number) => {
      const guess = String(100000 + i * 111111).slice(0, 6);
      return [totpCode(secret, -STEP_MS), right, totpCode(secret, STEP_MS)].includes(guess) ? '999999' : guess;
    };
    for (let i = 0; i < 5; i++) expectError(await verifyTotp(app, pending, wrong(i)), 401, 'assertion_failed', `guess ${i + 1}`);
    expectError(await verifyTotp(app, pending, wrong(5)), 401, 'invalid_pending_token', 'sixth');
    expectError(await verifyTotp(app, pending, right), 401, 'invalid_pending_token', 'right code, too late');
    expectError(await verifyBackupCode(app, pending, 'aaaaa-bbbbb'), 401, 'invalid_pending_token', 'backup code, too late');
    // The code itself was not spent by any of that: a new sign-in takes it.
    const fresh = await mfaRequired(suite, app, address, ['totp']);
    expectAal2(await verifyTotp(app, fresh, right));
  });

  it('failures count per user across sign-ins: past 20, 429 rate_limited, even with the right code', async () => {
    const app = await suite.server.createApp();
    const address = uniqueEmail('limited');
    const { secret } = await withTotp(app, address);
    const bystander = uniqueEmail('bystander');
    const other = await withTotp(app, bystander);
    for (let round = 0; round < 4; round++) {
      const pending = await mfaRequired(suite, app, address, ['totp']);
      for (let i = 0; i < 5; i++) {
        expectError(await verifyBackupCode(app, pending, `wrong-${round}${i}`), 401, 'assertion_failed', `${round}.${i}`);
      }
    }
    const pending = await mfaRequired(suite, app, address, ['totp']);
    const limited = await verifyTotp(app, pending, totpCode(secret, STEP_MS));
    expectError(limited, 429, 'rate_limited', '21st');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // A refused attempt counts nowhere: six more at the same pending token leave all five of its attempts.
    for (let i = 0; i < 6; i++) expectError(await verifyTotp(app, pending, '000000'), 429, 'rate_limited', `refused ${i}`);
    const [row] = await sql<{ failed_attempts: number; consumed_at: string | null }>(
      suite.server,
      'select failed_attempts, consumed_at from pending_tokens where token_hash = ?',
      [createHash('sha256').update(pending).digest('hex')],
    );
    expect(row).toEqual({ failed_attempts: 0, consumed_at: null });
    // Another user of the same application is not affected.
    await signInWithTotp(app, bystander, other.user.id, other.secret);
  });

  it('a pending token of another application or stage is 401 invalid_pending_token', async () => {
    const a = await suite.server.createApp();
    const b = await suite.server.createApp();
    const address = uniqueEmail('tenant');
    const { secret } = await withTotp(a, address);
    const pending = await mfaRequired(suite, a, address, ['totp']);
    expectError(await verifyTotp(b, pending, totpCode(secret, STEP_MS)), 401, 'invalid_pending_token', 'other application');
    expectError(await verifyTotp(a, 'pt_nonsense', totpCode(secret, STEP_MS)), 401, 'invalid_pending_token', 'unknown');

    const withConsent = await suite.server.createApp({
      settings: { consent_documents: [{ doc_type: 'terms', url: 'https://app.example.com/terms', version: '1' }] },
    });
    const { result } = await beginSignIn(suite.server, suite.smtp, withConsent, uniqueEmail('consent'), { acceptConsent: false });
    expect(result.status).toBe('consent_required');
    expectError(
      await verifyTotp(withConsent, (result as { pending_token: string }).pending_token, '123456'),
      401,
      'invalid_pending_token',
      'consent-stage token',
    );
    // And the right one still works where it belongs.
    expectAal2(await verifyTotp(a, pending, totpCode(secret, STEP_MS)));
  });
});

describe('backup codes', () => {
  it('10 distinct codes, stored hashed; each works once; a new set voids the old one', async () => {
    const app = await suite.server.createApp();
    const address = uniqueEmail('codes');
    const { tokens, user } = await signIn(suite.server, suite.smtp, app, address);
    const { codes } = await ok<{ codes: string[] }>(backupCodes(app, tokens.access_token), 201);
    await expectNotice(address, 'added', 'Backup codes');
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const code of codes) expect(code).toMatch(/^[0-9a-z]{5}-[0-9a-z]{5}$/);
    const stored = await sql(suite.server, 'select * from mfa_backup_codes where user_id = ?', [user.id]);
    expect(stored).toHaveLength(10);
    const dump = JSON.stringify(stored);
    for (const code of codes) {
      expect(dump).not.toContain(code);
      expect(dump).not.toContain(code.replace('-', ''));
    }
    const [listed] = await ok(factors(app, tokens.access_token));
    expect(listed).toEqual({
      id: expect.stringMatching(UUID),
      kind: 'backup_code',
      name: 'Backup codes',
      created_at: expect.any(String),
      last_used_at: null,
    });

    const pending = await mfaRequired(suite, app, address, ['backup_code']);
    const signedIn = expectAal2(await verifyBackupCode(app, pending, codes[0]!));
    expect(signedIn.user.id).toBe(user.id);
    // The session records its methods (RFC 8176): a magic link, then a one-time code.
    const [opened] = await sql(suite.server, 'select amr from sessions where id = ?', [signedIn.tokens.session_id]);
    expect(opened.amr).toEqual(['email', 'otp', 'mfa']);
    // Used once: the same code again fails, and consumes nothing (the pending token then takes another code, typed
    // loosely: upper case, a space for the hyphen).
    const again = await mfaRequired(suite, app, address, ['backup_code']);
    expectError(await verifyBackupCode(app, again, codes[0]!), 401, 'assertion_failed', 'used code');
    expectError(await verifyBackupCode(app, again, 'not a code'), 401, 'assertion_failed', 'garbage');
    expectAal2(await verifyBackupCode(app, again, codes[1]!.toUpperCase().replace('-', ' ')));

    // A new set (the session is at aal 2, as adding to an existing factor needs): the old codes stop working.
    const { codes: fresh } = await ok<{ codes: string[] }>(backupCodes(app, signedIn.tokens.access_token), 201);
    await expectNotice(address, 'added', 'Backup codes');
    expect(fresh.filter((c) => codes.includes(c))).toEqual([]);
    expect(await sql(suite.server, 'select id from mfa_backup_codes where user_id = ?', [user.id])).toHaveLength(10);
    const third = await mfaRequired(suite, app, address, ['backup_code']);
    expectError(await verifyBackupCode(app, third, codes[2]!), 401, 'assertion_failed', 'code of the old set');
    expectAal2(await verifyBackupCode(app, third, fresh[0]!));

    // A set whose codes are all used is no longer offered, and the sign-in completes without it.
    await sql(suite.server, 'update mfa_backup_codes set used_at = now() where user_id = ?', [user.id]);
    const { result } = await beginSignIn(suite.server, suite.smtp, app, address);
    expect(result.status).toBe('complete');
  });

  it('20 concurrent uses of one code (over two servers on PostgreSQL): exactly one succeeds', async () => {
    const app = await suite.server.createApp({
      settings: { rate_limits: { magic_link_per_email: 100, magic_link_per_address: 1000, window_s: 900 } },
    });
    const address = uniqueEmail('code-race');
    const { tokens } = await signIn(suite.server, suite.smtp, app, address);
    const { codes } = await ok<{ codes: string[] }>(backupCodes(app, tokens.access_token), 201);
    await expectNotice(address, 'added', 'Backup codes');
    const pendings: string[] = [];
    for (let i = 0; i < 20; i++) pendings.push(await mfaRequired(suite, app, address, ['backup_code']));
    const results = await acrossServers(suite.server, 20, (server, i) =>
      verifyBackupCode(app.via(server), pendings[i]!, codes[0]!),
    );
    const winners = results.filter((r) => r.status === 200);
    expect(winners.length, results.map((r) => r.status).join(',')).toBe(1);
    expectAal2(winners[0]!);
    for (const loser of results.filter((r) => r.status !== 200)) expectError(loser, 401, 'assertion_failed', 'loser');
  });

  it('20 concurrent uses of one code on one pending token: one success, the rest refused', async () => {
    const app = await suite.server.createApp();
    const address = uniqueEmail('token-race');
    const { tokens } = await signIn(suite.server, suite.smtp, app, address);
    const { codes } = await ok<{ codes: string[] }>(backupCodes(app, tokens.access_token), 201);
    await expectNotice(address, 'added', 'Backup codes');
    const one = await mfaRequired(suite, app, address, ['backup_code']);
    const same = await acrossServers(suite.server, 20, (server) => verifyBackupCode(app.via(server), one, codes[0]!));
    expect(same.filter((r) => r.status === 200)).toHaveLength(1);
    for (const loser of same.filter((r) => r.status !== 200)) {
      expect(['assertion_failed', 'invalid_pending_token']).toContain(loser.body.error.code);
    }
  });
});

describe('factor management and step-up', () => {
  it('an aal 1 session cannot add to or remove existing factors (403 step_up_required); an aal 2 session can', async () => {
    const app = await suite.server.createApp();
    const address = uniqueEmail('stepup');
    const { tokens: aal1, secret, factorId, user } = await withTotp(app, address);

    expectError(await backupCodes(app, aal1.access_token), 403, 'step_up_required', 'backup codes at aal 1');
    expectError(await enroll(app, aal1.access_token), 403, 'step_up_required', 'second TOTP at aal 1');
    expectError(await removeFactor(app, aal1.access_token, factorId), 403, 'step_up_required', 'remove at aal 1');
    expect((await ok(factors(app, aal1.access_token))).map((f: { id: string }) => f.id)).toEqual([factorId]);

    const aal2 = (await signInWithTotp(app, address, user.id, secret)).tokens;
    const { codes } = await ok<{ codes: string[] }>(backupCodes(app, aal2.access_token), 201);
    await expectNotice(address, 'added', 'Backup codes');
    const listed = await ok(factors(app, aal2.access_token));
    expect(listed.map((f: { kind: string }) => f.kind).sort()).toEqual(['backup_code', 'totp']);
    // Both are offered at the next sign-in.
    const pending = await mfaRequired(suite, app, address, ['totp', 'backup_code']);
    expectAal2(await verifyBackupCode(app, pending, codes[0]!));

    // Another user's factor, and an unknown id: 404, whatever the session's level.
    const other = await withTotp(app, uniqueEmail('other'));
    expectError(await removeFactor(app, aal2.access_token, other.factorId), 404, 'not_found', "another user's factor");
    expectError(await removeFactor(app, aal1.access_token, other.factorId), 404, 'not_found', "another user's factor, aal 1");
    expectError(await removeFactor(app, aal2.access_token, UNKNOWN_ID), 404, 'not_found', 'unknown');
    expectError(await removeFactor(app, aal2.access_token, 'nope'), 422, 'validation_failed', 'not a uuid');
    expect(await ok(factors(app, other.tokens.access_token))).toHaveLength(1);

    // Removing the TOTP factor at aal 2: 200, a notice, and sign-in offers only the backup codes.
    expect(await ok(removeFactor(app, aal2.access_token, factorId))).toEqual({ id: factorId, deleted: true });
    await expectNotice(address, 'removed', 'Authenticator app');
    expectError(await removeFactor(app, aal2.access_token, factorId), 404, 'not_found', 'already removed');
    expect((await ok(factors(app, aal2.access_token))).map((f: { kind: string }) => f.kind)).toEqual(['backup_code']);
    await mfaRequired(suite, app, address, ['backup_code']);

    // Removing the set of codes too: its codes are gone with it, and sign-in completes at aal 1.
    const set = (await ok(factors(app, aal2.access_token)))[0];
    await ok(removeFactor(app, aal2.access_token, set.id));
    await expectNotice(address, 'removed', 'Backup codes');
    expect(await sql(suite.server, 'select id from mfa_backup_codes where factor_id = ?', [set.id])).toEqual([]);
    const { result } = await beginSignIn(suite.server, suite.smtp, app, address);
    expect(result.status).toBe('complete');

    // Signed-in routes need an access token.
    expectError(await endUser(app, 'GET', '/v1/auth/mfa/factors'), 401, 'missing_credentials');
    expectError(await endUser(app, 'POST', '/v1/auth/mfa/totp/enroll'), 401, 'missing_credentials');
  });

  it('an aal 2 session replaces its authenticator: the new one works, the old one no longer does', async () => {
    const app = await suite.server.createApp();
    const address = uniqueEmail('new-phone');
    const { secret: oldSecret, factorId: oldId, user } = await withTotp(app, address);
    const aal2 = (await signInWithTotp(app, address, user.id, oldSecret)).tokens;
    const enrolled = await ok(enroll(app, aal2.access_token, { name: 'New phone' }), 201);
    const factor = await ok(confirm(app, aal2.access_token, enrolled.factor_id, totpCode(enrolled.secret)));
    expect(factor.name).toBe('New phone');
    await expectNotices(address, ['removed', 'Authenticator app'], ['added', 'New phone']);
    expect((await ok(factors(app, aal2.access_token))).map((f: { id: string }) => f.id)).toEqual([enrolled.factor_id]);
    expect(await sql(suite.server, 'select id from mfa_factors where id = ?', [oldId])).toEqual([]);
    await forgetUsedSteps(user.id);
    const pending = await mfaRequired(suite, app, address, ['totp']);
    expectError(await verifyTotp(app, pending, totpCode(oldSecret, STEP_MS)), 401, 'assertion_failed', 'old authenticator');
    expectAal2(await verifyTotp(app, pending, totpCode(enrolled.secret)));
  });
});

describe("settings.mfa: 'required'", () => {
  it('a user without a second factor completes at aal 1, and GET /v1/auth/session says mfa_enrollment_required', async () => {
    const app = await suite.server.createApp({ settings: { mfa: 'required' } });
    const address = uniqueEmail('required');
    const { tokens, user } = await signIn(suite.server, suite.smtp, app, address);
    expect(tokens.aal).toBe(1);
    const session = await ok(currentSession(app, tokens.access_token));
    expect(session).toEqual({
      id: tokens.session_id,
      aal: 1,
      organization_id: null,
      user_agent: expect.any(String),
      ip: expect.any(String),
      created_at: expect.any(String),
      last_active_at: expect.any(String),
      expires_at: expect.any(String),
      current: true,
      mfa_enrollment_required: true,
    });
    const [listed] = await ok(endUser(app, 'GET', '/v1/auth/sessions', undefined, tokens.access_token));
    expect(listed.mfa_enrollment_required).toBe(true);
    // S21 is the User, and says so too.
    const me = await ok(endUser(app, 'GET', '/v1/auth/me', undefined, tokens.access_token));
    expect(me).toEqual({ ...user, mfa_enrollment_required: true });

    // Enrolling clears it; the next sign-in asks for the factor.
    const enrolled = await ok(enroll(app, tokens.access_token), 201);
    await ok(confirm(app, tokens.access_token, enrolled.factor_id, totpCode(enrolled.secret)));
    await expectNotice(address, 'added', 'Authenticator app');
    expect((await ok(currentSession(app, tokens.access_token))).mfa_enrollment_required).toBe(false);
    expect((await ok(endUser(app, 'GET', '/v1/auth/me', undefined, tokens.access_token))).mfa_enrollment_required).toBe(false);
    const done = await signInWithTotp(app, address, user.id, enrolled.secret);
    expect((await ok(currentSession(app, done.tokens.access_token))).mfa_enrollment_required).toBe(false);

    // Under settings.mfa 'optional' it is never set.
    const optional = await suite.server.createApp();
    const plain = await signIn(suite.server, suite.smtp, optional, uniqueEmail('optional'));
    expect((await ok(currentSession(optional, plain.tokens.access_token))).mfa_enrollment_required).toBe(false);
    expectError(await endUser(app, 'GET', '/v1/auth/session'), 401, 'missing_credentials');
  });
});

describe('merge', () => {
  it("the source's factors move to the target; a kind the target already has keeps the target's", async () => {
    const app = await suite.server.createApp();
    // Source with TOTP and backup codes into a target without factors.
    const sourceAddress = uniqueEmail('source');
    const source = await withTotp(app, sourceAddress);
    const sourceAal2 = (await signInWithTotp(app, sourceAddress, source.user.id, source.secret)).tokens;
    const { codes } = await ok<{ codes: string[] }>(backupCodes(app, sourceAal2.access_token), 201);
    await expectNotice(sourceAddress, 'added', 'Backup codes');
    const targetAddress = uniqueEmail('target');
    const target = await signIn(suite.server, suite.smtp, app, targetAddress);
    await ok(app.rest('POST', '/v1/users/merge', { source_user_id: source.user.id, target_user_id: target.user.id }));

    await forgetUsedSteps(target.user.id);
    const pending = await mfaRequired(suite, app, targetAddress, ['totp', 'backup_code']);
    const signedIn = expectAal2(await verifyTotp(app, pending, totpCode(source.secret)));
    expect(signedIn.user.id).toBe(target.user.id);
    expectAal2(await verifyBackupCode(app, await mfaRequired(suite, app, targetAddress, ['totp', 'backup_code']), codes[0]!));
    // The source's address now signs in the target, with the same factors.
    await mfaRequired(suite, app, sourceAddress, ['totp', 'backup_code']);

    // Source and target both with TOTP: the target's stays, the source's is dropped.
    const otherAddress = uniqueEmail('source2');
    const other = await withTotp(app, otherAddress);
    const keeperAddress = uniqueEmail('target2');
    const keeper = await withTotp(app, keeperAddress);
    await ok(app.rest('POST', '/v1/users/merge', { source_user_id: other.user.id, target_user_id: keeper.user.id }));
    const rows = await sql<{ id: string }>(suite.server, 'select id from mfa_factors where user_id in (?, ?)', [
      other.user.id,
      keeper.user.id,
    ]);
    expect(rows.map((r: { id: string }) => r.id)).toEqual([keeper.factorId]);
    await forgetUsedSteps(keeper.user.id);
    const keeperPending = await mfaRequired(suite, app, keeperAddress, ['totp']);
    expectError(await verifyTotp(app, keeperPending, totpCode(other.secret)), 401, 'assertion_failed', "dropped source's TOTP");
    expectAal2(await verifyTotp(app, keeperPending, totpCode(keeper.secret)));
  });
});

describe('tRPC carries the same rules', () => {
  it('the SDK transport reaches auth.mfa.* with the same error codes', async () => {
    const app = await suite.server.createApp();
    const { tokens } = await signIn(suite.server, suite.smtp, app, uniqueEmail('trpc'));
    const call = (path: string, input?: unknown, method: 'GET' | 'POST' = 'POST') =>
      fetch(`${suite.server.url}/trpc/${path}`, {
        method,
        headers: {
          'content-type': 'application/json',
          'x-application-id': app.id,
          authorization: `Bearer ${tokens.access_token}`,
        },
        body: method === 'POST' && input !== undefined ? JSON.stringify(input) : undefined,
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    const enrolled = await call('auth.mfa.totp.enroll', {});
    expect(enrolled.status).toBe(200);
    const { factor_id, secret } = enrolled.body.result.data;
    const wrong = [totpCode(secret, -STEP_MS), totpCode(secret), totpCode(secret, STEP_MS)].includes('000000')
      ? '999999'
      : '000000';
    const refused = await call('auth.mfa.totp.confirm', { factor_id, code: wrong });
    expect(refused.status).toBe(401);
    expect(refused.body.error.data).toMatchObject({ code: 'assertion_failed', httpStatus: 401 });
    const missing = await call('auth.mfa.factors.delete', { id: UNKNOWN_ID });
    expect(missing.body.error.data.code).toBe('not_found');
    const session = await call('auth.session.get', undefined, 'GET');
    expect(session.body.result.data).toMatchObject({ id: tokens.session_id, mfa_enrollment_required: false });
  });
});

import { createGatehouseClient, type SignInResult as SdkSignInResult } from '@gatehouse/sdk';
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { SoftwareAuthenticator } from './helpers/authenticator.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { enrolTotp, totpCode } from './helpers/mfa.ts';
import { acrossServers, expectError, isoDate, ok, rejection, sql, type TestApp } from './helpers/server.ts';
import { endUser, type SignInResult, signIn } from './helpers/sign-in.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();
const ORIGIN = 'https://app.example.com';

/** As if the authenticator's last use were long ago (the confirming code spent the current step). */
const forgetUsedSteps = (userId: string) =>
  sql(suite.server, 'update mfa_factors set last_used_step = null where user_id = ?', [userId]);

const stepUp = (app: TestApp, token?: string) => endUser(app, 'POST', '/v1/auth/step-up', undefined, token);
const verifyTotp = (app: TestApp, pendingToken: string, code: string) =>
  endUser<SignInResult>(app, 'POST', '/v1/auth/mfa/totp/verify', { pending_token: pendingToken, code });
const verifyBackupCode = (app: TestApp, pendingToken: string, code: string) =>
  endUser<SignInResult>(app, 'POST', '/v1/auth/mfa/backup-code/verify', { pending_token: pendingToken, code });
const sessionOf = (app: TestApp, token: string) => endUser(app, 'GET', '/v1/auth/session', undefined, token);
const refresh = (app: TestApp, refreshToken: string) =>
  endUser(app, 'POST', '/v1/auth/token/refresh', { refresh_token: refreshToken });

/** Signed in by magic link (aal 1) with a confirmed authenticator app; its current step is free again. */
async function withTotp(app: TestApp) {
  const address = uniqueEmail('step');
  const signedIn = await signIn(suite.server, suite.smtp, app, address);
  const { secret, factor_id } = await enrolTotp(app, signedIn.tokens.access_token);
  await forgetUsedSteps(signedIn.user.id);
  return { ...signedIn, address, secret, factorId: factor_id };
}

const steppedUpEvents = (sessionId: string) =>
  sql(suite.server, "select data from events where type = 'session.stepped_up' and data->>'id' = ?", [sessionId]);

function completed(result: SignInResult) {
  if (result.status !== 'complete') throw new Error(`expected complete, got ${result.status}`);
  return result;
}

describe('POST /v1/auth/step-up', () => {
  it('opens an mfa pending token bound to this session; TOTP then raises this session to aal 2 and rotates it', async () => {
    const app = await suite.server.createApp();
    const { tokens, user, secret, factorId } = await withTotp(app);
    expect(tokens.aal).toBe(1);
    // Removing the factor needs aal 2.
    expectError(
      await endUser(app, 'DELETE', `/v1/auth/mfa/factors/${factorId}`, undefined, tokens.access_token),
      403,
      'step_up_required',
    );

    const challenge = await ok(stepUp(app, tokens.access_token));
    expect(challenge).toEqual({
      status: 'mfa_required',
      pending_token: expect.stringMatching(/^pt_/),
      mfa: { methods: ['totp'], pending_token: challenge.pending_token },
      session_id: tokens.session_id,
      expires_at: isoDate,
    });
    const ttl = Date.parse(challenge.expires_at) - Date.now();
    expect(ttl).toBeGreaterThan(4 * 60_000);
    expect(ttl).toBeLessThanOrEqual(5 * 60_000);
    // Stored hashed, bound to the session.
    const [row] = await sql(suite.server, 'select * from pending_tokens where session_id = ?', [tokens.session_id]);
    expect(JSON.stringify(row)).not.toContain(challenge.pending_token);
    expect(row.stage).toBe('mfa');

    const sessionsBefore = await sql(suite.server, 'select id from sessions where user_id = ?', [user.id]);
    const raised = completed(await ok(verifyTotp(app, challenge.pending_token, totpCode(secret))));
    // The same session, at aal 2, with a new refresh token; no session was opened.
    expect(raised.tokens.session_id).toBe(tokens.session_id);
    expect(raised.tokens.aal).toBe(2);
    expect(raised.tokens.refresh_token).not.toBe(tokens.refresh_token);
    expect(decodeJwt(raised.tokens.access_token)).toMatchObject({ aal: 2, sid: tokens.session_id, sub: user.id });
    expect(raised.user.id).toBe(user.id);
    expect(await sql(suite.server, 'select id from sessions where user_id = ?', [user.id])).toEqual(sessionsBefore);
    const [session] = await sql(suite.server, 'select aal, amr from sessions where id = ?', [tokens.session_id]);
    expect(session.aal).toBe(2);
    expect([...session.amr].sort()).toEqual(['email', 'mfa', 'otp']);
    expect(await steppedUpEvents(tokens.session_id)).toEqual([
      { data: { id: tokens.session_id, user_id: user.id, aal: 2, method: 'totp', amr: expect.any(Array) } },
    ]);

    // The session says aal 2 to the new token; a token issued before the step-up keeps its aal 1.
    expect((await ok(sessionOf(app, raised.tokens.access_token))).aal).toBe(2);
    expectError(
      await endUser(app, 'DELETE', `/v1/auth/mfa/factors/${factorId}`, undefined, tokens.access_token),
      403,
      'step_up_required',
      'old token',
    );
    // The pending token is single use.
    expectError(await verifyTotp(app, challenge.pending_token, totpCode(secret, 30_000)), 401, 'invalid_pending_token');
    // At aal 2, nothing to step up.
    expectError(await stepUp(app, raised.tokens.access_token), 409, 'conflict');
    // The new refresh token works and keeps aal 2.
    const refreshed = await ok(refresh(app, raised.tokens.refresh_token));
    expect(refreshed.aal).toBe(2);
    expect(refreshed.session_id).toBe(tokens.session_id);
    await ok(endUser(app, 'DELETE', `/v1/auth/mfa/factors/${factorId}`, undefined, refreshed.access_token));
    // The refresh token of before the step-up is spent: presenting it is reuse, which ends the session.
    expectError(await refresh(app, tokens.refresh_token), 401, 'invalid_token');
    expectError(await sessionOf(app, refreshed.access_token), 401, 'invalid_token');
  });

  it('a backup code raises the session too', async () => {
    const app = await suite.server.createApp();
    const { tokens } = await signIn(suite.server, suite.smtp, app, uniqueEmail('codes'));
    const { codes } = await ok(endUser(app, 'POST', '/v1/auth/mfa/backup-codes', undefined, tokens.access_token), 201);
    const challenge = await ok(stepUp(app, tokens.access_token));
    expect(challenge.mfa.methods).toEqual(['backup_code']);
    expectError(await verifyBackupCode(app, challenge.pending_token, 'aaaaa-aaaaa'), 401, 'assertion_failed');
    const raised = completed(await ok(verifyBackupCode(app, challenge.pending_token, codes[0])));
    expect(raised.tokens).toMatchObject({ aal: 2, session_id: tokens.session_id });
    expect((await steppedUpEvents(tokens.session_id))[0].data.method).toBe('backup_code');
  });

  it('a passkey raises the session: passkeys/mfa/start and finish take the step-up token', async () => {
    const app = await suite.server.createApp({ allowed_origins: [ORIGIN] });
    const { tokens, user } = await signIn(suite.server, suite.smtp, app, uniqueEmail('passkey'));
    const authenticator = new SoftwareAuthenticator();
    const { options: creation, state: regState } = await ok(
      endUser(app, 'POST', '/v1/auth/passkeys/register/start', undefined, tokens.access_token),
    );
    const credential = await authenticator.create(creation, ORIGIN);
    const passkey = await ok(
      endUser(app, 'POST', '/v1/auth/passkeys/register/finish', { credential, state: regState }, tokens.access_token),
      201,
    );
    expectError(
      await endUser(app, 'DELETE', `/v1/auth/passkeys/${passkey.id}`, undefined, tokens.access_token),
      403,
      'step_up_required',
    );

    const challenge = await ok(stepUp(app, tokens.access_token));
    expect(challenge.mfa.methods).toEqual(['passkey']);
    const started = await ok(endUser(app, 'POST', '/v1/auth/passkeys/mfa/start', { pending_token: challenge.pending_token }));
    const assertion = await authenticator.get(started.options, ORIGIN);
    const raised = completed(
      await ok(
        endUser<SignInResult>(app, 'POST', '/v1/auth/passkeys/mfa/finish', { credential: assertion, state: started.state }),
      ),
    );
    expect(raised.tokens).toMatchObject({ aal: 2, session_id: tokens.session_id });
    const [event] = await steppedUpEvents(tokens.session_id);
    expect(event.data).toMatchObject({ user_id: user.id, method: 'passkey', amr: ['email', 'pop', 'user', 'mfa'] });
    await ok(endUser(app, 'DELETE', `/v1/auth/passkeys/${passkey.id}`, undefined, raised.tokens.access_token));
  });

  it("a step-up token is of its application only, and never a sign-in's: another application's is unknown", async () => {
    const app = await suite.server.createApp();
    const other = await suite.server.createApp();
    const { tokens, secret } = await withTotp(app);
    const challenge = await ok(stepUp(app, tokens.access_token));
    expectError(await verifyTotp(other, challenge.pending_token, totpCode(secret)), 401, 'invalid_pending_token');
    // The access token of one application opens no step-up in another.
    expectError(await stepUp(other, tokens.access_token), 401, 'invalid_token');
    completed(await ok(verifyTotp(app, challenge.pending_token, totpCode(secret))));
  });

  it('409 no_second_factor without a second factor; 401 without an access token', async () => {
    const app = await suite.server.createApp();
    const { tokens } = await signIn(suite.server, suite.smtp, app, uniqueEmail('none'));
    expectError(await stepUp(app, tokens.access_token), 409, 'no_second_factor');
    expectError(await stepUp(app), 401, 'missing_credentials');
    expect(await sql(suite.server, 'select id from pending_tokens where session_id = ?', [tokens.session_id])).toEqual([]);
  });

  it('a token bound to session A raises A only (B stays at aal 1 until its own); a newer step-up spends the older one', async () => {
    const app = await suite.server.createApp();
    const address = uniqueEmail('two');
    const a = await signIn(suite.server, suite.smtp, app, address);
    const b = await signIn(suite.server, suite.smtp, app, address);
    const { secret } = await enrolTotp(app, a.tokens.access_token);
    await forgetUsedSteps(a.user.id);
    const first = await ok(stepUp(app, a.tokens.access_token));
    const second = await ok(stepUp(app, a.tokens.access_token));
    const forB = await ok(stepUp(app, b.tokens.access_token));
    expect(forB.session_id).toBe(b.tokens.session_id);
    // The first is spent by the second (one live step-up per session).
    expectError(await verifyTotp(app, first.pending_token, totpCode(secret)), 401, 'invalid_pending_token');
    const raised = completed(await ok(verifyTotp(app, second.pending_token, totpCode(secret))));
    expect(raised.tokens.session_id).toBe(a.tokens.session_id);
    expect((await ok(sessionOf(app, b.tokens.access_token))).aal).toBe(1);
    // B's own token is still live and raises B only.
    const raisedB = completed(await ok(verifyTotp(app, forB.pending_token, totpCode(secret, 30_000))));
    expect(raisedB.tokens.session_id).toBe(b.tokens.session_id);
    const rows = await sql(suite.server, 'select id, aal from sessions where user_id = ? order by id', [a.user.id]);
    expect(rows.map((r: { aal: number }) => r.aal)).toEqual([2, 2]);
  });

  it('a revoked session cannot be raised (and nothing is spent)', async () => {
    const app = await suite.server.createApp();
    const { tokens, secret } = await withTotp(app);
    const challenge = await ok(stepUp(app, tokens.access_token));
    await ok(endUser(app, 'POST', '/v1/auth/sign-out', undefined, tokens.access_token));
    expectError(await verifyTotp(app, challenge.pending_token, totpCode(secret)), 401, 'invalid_pending_token');
    const [session] = await sql(suite.server, 'select aal from sessions where id = ?', [tokens.session_id]);
    expect(session.aal).toBe(1);
    expect(await steppedUpEvents(tokens.session_id)).toEqual([]);
  });

  it('an expired step-up, or one whose session expired, raises nothing', async () => {
    const app = await suite.server.createApp();
    const { tokens, secret } = await withTotp(app);
    const challenge = await ok(stepUp(app, tokens.access_token));
    await sql(suite.server, "update pending_tokens set expires_at = now() - interval '1 second' where session_id = ?", [
      tokens.session_id,
    ]);
    expectError(await verifyTotp(app, challenge.pending_token, totpCode(secret)), 401, 'invalid_pending_token');

    const again = await ok(stepUp(app, tokens.access_token));
    await sql(suite.server, "update sessions set expires_at = now() - interval '1 second' where id = ?", [tokens.session_id]);
    expectError(await verifyTotp(app, again.pending_token, totpCode(secret)), 401, 'invalid_pending_token');
    const [session] = await sql(suite.server, 'select aal from sessions where id = ?', [tokens.session_id]);
    expect(session.aal).toBe(1);
  });

  it('a banned user cannot be raised', async () => {
    const app = await suite.server.createApp();
    const { tokens, user, secret } = await withTotp(app);
    const challenge = await ok(stepUp(app, tokens.access_token));
    await ok(app.rest('PATCH', `/v1/users/${user.id}`, { status: 'banned' }));
    const res = await verifyTotp(app, challenge.pending_token, totpCode(secret));
    expectError(res, 403, 'access_denied');
    const [session] = await sql(suite.server, 'select aal, revoked_at from sessions where id = ?', [tokens.session_id]);
    expect(session.aal).toBe(1);
    expect(session.revoked_at).not.toBeNull();
  });

  it('20 concurrent verifications of one step-up (over two servers on PostgreSQL): exactly one raises', async () => {
    const app = await suite.server.createApp();
    const { tokens, secret, user } = await withTotp(app);
    const challenge = await ok(stepUp(app, tokens.access_token));
    const code = totpCode(secret);
    const results = await acrossServers(suite.server, 20, (server) => verifyTotp(app.via(server), challenge.pending_token, code));
    const wins = results.filter((r) => r.status === 200);
    expect(wins).toHaveLength(1);
    for (const r of results.filter((r) => r.status !== 200)) {
      expect([401, 429]).toContain(r.status);
    }
    expect(await steppedUpEvents(tokens.session_id)).toHaveLength(1);
    const issued = await sql(suite.server, 'select count(*)::int as n from refresh_tokens where session_id = ?', [
      tokens.session_id,
    ]);
    // The sign-in's first refresh token, and the step-up's one.
    expect(issued[0].n).toBe(2);
    expect(await sql(suite.server, 'select count(*)::int as n from sessions where user_id = ?', [user.id])).toEqual([{ n: 1 }]);
  });

  it('20 concurrent verifications with the ten backup codes: one raises, and only its code is spent', async () => {
    const app = await suite.server.createApp();
    const { tokens } = await signIn(suite.server, suite.smtp, app, uniqueEmail('codes20'));
    const { codes } = await ok(endUser(app, 'POST', '/v1/auth/mfa/backup-codes', undefined, tokens.access_token), 201);
    const challenge = await ok(stepUp(app, tokens.access_token));
    const twenty = Array.from({ length: 20 }, (_, i) => codes[i % codes.length] as string);
    const results = await acrossServers(suite.server, 20, (server, i) =>
      verifyBackupCode(app.via(server), challenge.pending_token, twenty[i]!),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(await steppedUpEvents(tokens.session_id)).toHaveLength(1);
    const [{ n }] = await sql(
      suite.server,
      'select count(*)::int as n from mfa_backup_codes where used_at is not null and user_id = ?',
      [(await sql(suite.server, 'select user_id from sessions where id = ?', [tokens.session_id]))[0].user_id],
    );
    expect(n).toBe(1);
  });
});

describe('SDK: mfa.stepUp', () => {
  it('raises the held session: the client keeps the new tokens at aal 2, same session', async () => {
    const app = await suite.server.createApp({ allowed_origins: [ORIGIN] });
    const address = uniqueEmail('sdk');
    const client = createGatehouseClient({ baseUrl: suite.server.url, applicationId: app.id });
    await client.magicLink.start({ email: address, redirect_url: `${ORIGIN}/auth/callback` });
    const mail = await suite.smtp.next(address);
    const signed = (await client.magicLink.verify({ token: linkIn(mail).searchParams.get('token') ?? '' })) as SdkSignInResult;
    expect(signed.status).toBe('complete');
    const before = client.getSession();
    expect(before?.aal).toBe(1);
    expect((await rejection(client.mfa.stepUp())).code).toBe('no_second_factor');

    const enrolled = await client.mfa.enrollTotp();
    await client.mfa.confirmTotp({ factor_id: enrolled.factor_id, code: totpCode(enrolled.secret) });
    await forgetUsedSteps(before?.user_id ?? '');
    const challenge = await client.mfa.stepUp();
    expect(challenge.session_id).toBe(before?.session_id);
    const result = await client.mfa.totp(challenge.pending_token, totpCode(enrolled.secret));
    expect(result.status).toBe('complete');
    expect(client.getSession()).toMatchObject({ aal: 2, session_id: before?.session_id });
    expect((await client.session()).aal).toBe(2);
    const [factor] = await client.mfa.factors.list();
    await client.mfa.factors.remove(factor?.id ?? '');
    expect((await rejection(client.mfa.stepUp())).code).toBe('conflict');
  });
});

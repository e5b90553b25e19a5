import { createGatehouseClient } from '@gatehouse/sdk';
import { describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { totpCode } from './helpers/mfa.ts';
import { acrossServers, sql, type TestApp } from './helpers/server.ts';
import { endUser } from './helpers/sign-in.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

/** The device that asks: starts the link without a redirect URL and keeps its poll secret. */
async function ask(app: TestApp, email: string) {
  const started = await endUser(app, 'POST', '/v1/auth/magic-link/start', { email });
  expect(started.status).toBe(200);
  const { verification_id, poll_secret } = started.body.data;
  expect(poll_secret).toMatch(/^mlp_/);
  // Security notices (a factor added) share the inbox: the sign-in link is the mail that has one.
  let mail = await suite.smtp.next(email);
  while (!mail.subject.startsWith('Your sign-in link')) mail = await suite.smtp.next(email);
  const token = linkIn(mail).searchParams.get('token')!;
  const poll = (secret = poll_secret) =>
    endUser(app, 'POST', '/v1/auth/magic-link/poll', { verification_id, poll_secret: secret });
  return { verification_id, poll_secret, token, poll };
}

/** The other device (a phone): the hosted page's confirmation. */
const confirm = (app: TestApp, token: string) => endUser(app, 'POST', '/v1/auth/magic-link/confirm', { token });

describe('the magic link that lands: the device that asked is signed in', () => {
  it('pending until confirmed elsewhere; then the poll collects the tokens, once', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('laptop');
    const laptop = await ask(app, email);
    expect((await laptop.poll()).body.data).toEqual({ status: 'pending' });
    const confirmed = await confirm(app, laptop.token);
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.data).toEqual({ status: 'confirmed' });
    // The confirming page got no tokens: the session is the laptop's.
    expect(JSON.stringify(confirmed.body)).not.toContain('access_token');
    const collected = await laptop.poll();
    expect(collected.status).toBe(200);
    expect(collected.body.data.status).toBe('complete');
    expect(collected.body.data.user.primary_email).toBe(email);
    const me = await endUser(app, 'GET', '/v1/auth/me', undefined, collected.body.data.tokens.access_token);
    expect(me.status).toBe(200);
    expect(me.body.data.email_verified).toBe(true);
    const again = await laptop.poll();
    expect(again.status).toBe(401);
    expect(again.body.error.code).toBe('invalid_verification');
    // Confirmed once: a second confirmation (the link opened twice) is refused, and verify cannot use it either.
    expect((await confirm(app, laptop.token)).status).toBe(401);
    expect((await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token: laptop.token })).status).toBe(401);
  });

  it('a wrong secret, another application, an unknown id and an expired link are one answer', async () => {
    const app = await suite.server.createApp();
    const other = await suite.server.createApp();
    const laptop = await ask(app, uniqueEmail('wrong'));
    await confirm(app, laptop.token);
    const refused = [
      await laptop.poll('mlp_not-the-secret'),
      await endUser(other, 'POST', '/v1/auth/magic-link/poll', {
        verification_id: laptop.verification_id,
        poll_secret: laptop.poll_secret,
      }),
      await endUser(app, 'POST', '/v1/auth/magic-link/poll', {
        verification_id: '00000000-0000-7000-8000-000000000000',
        poll_secret: laptop.poll_secret,
      }),
    ];
    for (const res of refused) {
      expect(res.status).toBe(401);
      expect(res.body.error).toEqual({
        code: 'invalid_verification',
        message: 'The sign-in request is invalid, expired or already used',
      });
    }
    // The right secret still works: the refusals spent nothing.
    expect((await laptop.poll()).body.data.status).toBe('complete');

    const late = await ask(app, uniqueEmail('late'));
    await sql(suite.server, `update magic_links set expires_at = now() - interval '1 second' where id = ?`, [
      late.verification_id,
    ]);
    expect((await confirm(app, late.token)).status).toBe(401);
    expect((await late.poll()).status).toBe(401);
  });

  it('a link with a redirect URL has no poll secret (your page verifies it)', async () => {
    const app = await suite.server.createApp({ allowed_origins: ['https://app.example.com'] });
    const email = uniqueEmail('redirect');
    const started = await endUser(
      app,
      'POST',
      '/v1/auth/magic-link/start',
      { email, redirect_url: 'https://app.example.com/cb' },
      undefined,
      {
        origin: 'https://app.example.com',
      },
    );
    expect(started.body.data.poll_secret).toBeNull();
    const token = linkIn(await suite.smtp.next(email)).searchParams.get('token')!;
    // A redirect link is not confirmable on the hosted page.
    expect((await confirm(app, token)).status).toBe(401);
  });

  it('mfa_required continues on the polling device', async () => {
    const app = await suite.server.createApp();
    const email = uniqueEmail('mfa');
    // Enroll an authenticator app first (one sign-in through the poll, then TOTP).
    const first = await ask(app, email);
    await confirm(app, first.token);
    const access = (await first.poll()).body.data.tokens.access_token;
    const enrolled = await endUser(app, 'POST', '/v1/auth/mfa/totp/enroll', {}, access);
    await endUser(
      app,
      'POST',
      '/v1/auth/mfa/totp/confirm',
      { factor_id: enrolled.body.data.factor_id, code: totpCode(enrolled.body.data.secret) },
      access,
    );

    const laptop = await ask(app, email);
    await confirm(app, laptop.token);
    const result = (await laptop.poll()).body.data;
    expect(result.status).toBe('mfa_required');
    expect(result.mfa.methods).toContain('totp');
    // The next TOTP step: the one used for confirming the enrollment cannot be used twice.
    const code = totpCode(enrolled.body.data.secret, 30_000);
    const verified = await endUser(app, 'POST', '/v1/auth/mfa/totp/verify', { pending_token: result.pending_token, code });
    expect(verified.status, JSON.stringify(verified.body)).toBe(200);
    expect(verified.body.data.status).toBe('complete');
    expect(verified.body.data.tokens.aal).toBe(2);
  });

  it('20 polls at once after the confirmation: exactly one collects the sign-in (across two servers on PostgreSQL)', async () => {
    const app = await suite.server.createApp();
    const laptop = await ask(app, uniqueEmail('race'));
    await confirm(app, laptop.token);
    const results = await acrossServers(suite.server, 20, (server) =>
      endUser(app.via(server), 'POST', '/v1/auth/magic-link/poll', {
        verification_id: laptop.verification_id,
        poll_secret: laptop.poll_secret,
      }),
    );
    expect(results.filter((r) => r.status === 200 && r.body.data.status === 'complete')).toHaveLength(1);
    expect(results.filter((r) => r.status === 401)).toHaveLength(19);
    const [{ n }] = await sql<{ n: string }>(suite.server, 'select count(*) as n from sessions where application_id = ?', [
      app.id,
    ]);
    expect(Number(n)).toBe(1);
  });

  it("the SDK's magicLink.start() waits for the confirmation and signs the client in", async () => {
    const app = await suite.server.createApp({ allowed_origins: ['https://app.example.com'] });
    const email = uniqueEmail('sdk');
    const client = createGatehouseClient({
      baseUrl: suite.server.url,
      applicationId: app.id,
      fetch: (input, init) =>
        fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), origin: 'https://app.example.com' } }),
    });
    const waiting = client.magicLink.start({ email }, { pollIntervalMs: 100 });
    const token = linkIn(await suite.smtp.next(email)).searchParams.get('token')!;
    await confirm(app, token);
    const result = await waiting;
    expect(result.status).toBe('complete');
    expect((await client.me()).primary_email).toBe(email);

    const abort = new AbortController();
    const cancelled = client.magicLink.start({ email: uniqueEmail('cancelled') }, { signal: abort.signal, pollIntervalMs: 100 });
    abort.abort();
    await expect(cancelled).rejects.toThrow();
  });
});

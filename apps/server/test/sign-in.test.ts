import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import type { TestApp } from './helpers/server.ts';
import { endUser } from './helpers/sign-in.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

const ORIGIN = 'https://app.example.com';

async function magicLinkToken(app: TestApp, email: string, body: Record<string, unknown> = {}) {
  const started = await endUser(app, 'POST', '/v1/auth/magic-link/start', { email, ...body });
  expect(started.status).toBe(200);
  const mail = await suite.smtp.next(email);
  return { started, mail, link: linkIn(mail) };
}

describe('magic link → consent → tokens → /me, through real mail', () => {
  it('signs up a new user on verify and completes after consent', async () => {
    const app = await suite.server.createApp({
      allowed_origins: [ORIGIN],
      settings: { consent_documents: [{ doc_type: 'terms', url: `${ORIGIN}/terms`, version: '2026-01' }] },
    });
    const { started, mail, link } = await magicLinkToken(app, 'Grace@Example.com');
    expect(started.body.data).toEqual({
      verification_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      poll_secret: expect.stringMatching(/^mlp_/),
    });
    expect(mail.subject).toBe('Your sign-in link for Test app');
    expect(link.origin + link.pathname).toBe(`http://gatehouse.test/a/${app.id}/magic-link`);
    const token = link.searchParams.get('token')!;
    expect(token).toMatch(/^ml_/);

    // No user exists until the link is verified.
    expect((await app.rest('GET', '/v1/users?search=grace')).body.data.total).toBe(0);

    const verified = await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token });
    expect(verified.status).toBe(200);
    expect(verified.body.data).toEqual({
      status: 'consent_required',
      pending_token: expect.stringMatching(/^pt_/),
      consent_documents: [{ doc_type: 'terms', url: `${ORIGIN}/terms`, version: '2026-01' }],
    });

    const accepted = await endUser(app, 'POST', '/v1/auth/consent/accept', {
      pending_token: verified.body.data.pending_token,
      doc_types: ['terms'],
    });
    expect(accepted.status).toBe(200);
    expect(Object.keys(accepted.body.data).sort()).toEqual(['status', 'tokens', 'user']);
    const { tokens, user } = accepted.body.data;
    expect(user).toMatchObject({ primary_email: 'Grace@Example.com', email_verified: true, status: 'active' });
    expect(tokens).toEqual({
      access_token: expect.any(String),
      refresh_token: expect.stringMatching(/^rt_/),
      token_type: 'Bearer',
      expires_in: 600,
      aal: 1,
      session_id: expect.any(String),
    });

    // The token verifies against the live JWKS, with exactly the claims of CONTRACT §2.
    const jwks = createRemoteJWKSet(new URL(`${suite.server.url}/v1/applications/${app.id}/jwks.json`));
    const { payload, protectedHeader } = await jwtVerify(tokens.access_token, jwks, {
      issuer: 'http://gatehouse.test',
      audience: app.id,
      algorithms: ['EdDSA'],
    });
    expect(protectedHeader).toMatchObject({ alg: 'EdDSA', typ: 'at+jwt', kid: expect.any(String) });
    expect(Object.keys(payload).sort()).toEqual(['aal', 'aud', 'exp', 'iat', 'iss', 'org', 'org_role', 'sid', 'sub']);
    expect(payload).toMatchObject({ sub: user.id, sid: tokens.session_id, aal: 1, org: null, org_role: null });
    expect(payload.exp! - payload.iat!).toBe(600);

    const me = await endUser(app, 'GET', '/v1/auth/me', undefined, tokens.access_token);
    expect(me.status).toBe(200);
    expect(me.body.data).toEqual({ ...user, mfa_enrollment_required: false });

    const events = (await app.rest('GET', '/v1/events')).body.data.events.map((e: { type: string }) => e.type);
    expect(events).toEqual(expect.arrayContaining(['user.created', 'session.created']));
    expect(decodeProtectedHeader(tokens.access_token).kid).toBe((await jwks.jwks())?.keys[0]?.kid);
  });

  it('refreshes, signs out, and refuses the old tokens at once', async () => {
    const app = await suite.server.createApp();
    const { link } = await magicLinkToken(app, 'linus@example.com');
    const { tokens } = (await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token: link.searchParams.get('token') })).body
      .data;
    const refreshed = await endUser(app, 'POST', '/v1/auth/token/refresh', { refresh_token: tokens.refresh_token });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.data.refresh_token).not.toBe(tokens.refresh_token);
    expect(refreshed.body.data.session_id).toBe(tokens.session_id);
    const next = refreshed.body.data;
    expect((await endUser(app, 'GET', '/v1/auth/me', undefined, next.access_token)).status).toBe(200);
    const out = await endUser(app, 'POST', '/v1/auth/sign-out', undefined, next.access_token);
    expect(out.status).toBe(200);
    for (const access of [tokens.access_token, next.access_token]) {
      const me = await endUser(app, 'GET', '/v1/auth/me', undefined, access);
      expect(me.status).toBe(401);
      expect(me.body.error.code).toBe('invalid_token');
    }
    const again = await endUser(app, 'POST', '/v1/auth/token/refresh', { refresh_token: next.refresh_token });
    expect(again.status).toBe(401);
    expect(again.body.error.code).toBe('invalid_token');
  });
});

import { decodeJwt } from 'jose';
import { Secret, TOTP } from 'otpauth';
import { expect } from 'vitest';
import { totpNow } from './clock.ts';
import { ok, type RestResponse, type TestApp } from './server.ts';
import { beginSignIn, endUser, type SignInResult } from './sign-in.ts';
import type { MailServerSuite } from './suite.ts';

/** The code an authenticator app shows for `secret`, `offsetMs` away from now (±30 000 is one step), by the servers' TOTP clock. */
export const totpCode = (secret: string, offsetMs = 0) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({
    timestamp: totpNow() + offsetMs,
  });

/** Enrols and confirms a TOTP factor for the signed-in user of `accessToken`; answers the enrolment (its secret). */
export async function enrolTotp(app: TestApp, accessToken: string): Promise<{ factor_id: string; secret: string }> {
  const enrolled = await ok(endUser(app, 'POST', '/v1/auth/mfa/totp/enroll', undefined, accessToken), 201);
  await ok(
    endUser(
      app,
      'POST',
      '/v1/auth/mfa/totp/confirm',
      { factor_id: enrolled.factor_id, code: totpCode(enrolled.secret) },
      accessToken,
    ),
  );
  return enrolled;
}

/** A magic-link sign-in that stops at `mfa_required` with exactly `methods`: checks the variant's shape, answers its pending token. */
export async function mfaRequired(suite: MailServerSuite, app: TestApp, address: string, methods: string[]) {
  const { result } = await beginSignIn(suite.server, suite.smtp, app, address);
  expect(Object.keys(result).sort()).toEqual(['mfa', 'pending_token', 'status']);
  expect(result).toEqual({
    status: 'mfa_required',
    pending_token: expect.stringMatching(/^pt_/),
    mfa: { methods, pending_token: (result as { pending_token: string }).pending_token },
  });
  return (result as { pending_token: string }).pending_token;
}

/** A `complete` answer at aal 2: the tokens say so, and so does the signed access token. */
export function expectAal2(res: RestResponse<SignInResult>, label = '') {
  expect(res.status, `${label} ${JSON.stringify(res.body)}`).toBe(200);
  const result = res.body.data;
  if (result.status !== 'complete') throw new Error(`${label}: ${result.status}, not complete`);
  expect(Object.keys(result).sort()).toEqual(['status', 'tokens', 'user']);
  expect(result.tokens.aal).toBe(2);
  expect(decodeJwt(result.tokens.access_token)).toMatchObject({ aal: 2, sid: result.tokens.session_id });
  return result;
}

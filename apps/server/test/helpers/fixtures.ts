import { expect } from 'vitest';
import { expectError, ok, type RestResponse, type TestApp } from './server.ts';

let seq = 0;
/** A name no other test uses (the application, and the SMTP sink, are often shared by every test of a file). */
export const unique = (label: string) => `${label}-${Date.now().toString(36)}-${++seq}`;

/** A unique address per call. */
export const uniqueEmail = (label = 'user') => `${unique(label)}@example.com`;

/** A user of `on` (201 asserted): by default one with a unique primary email. */
export const createUser = (on: TestApp, body: Record<string, unknown> = { primary_email: uniqueEmail() }) =>
  ok(on.rest('POST', '/v1/users', body), 201);

/** An organization of `on` (201 asserted): by default one with a unique name. */
export const createOrg = (on: TestApp, body: Record<string, unknown> = { name: unique('org') }) =>
  ok(on.rest('POST', '/v1/organizations', body), 201);

/** A secret key of `on` limited to `scopes` (201 asserted): its secret. */
export const scopedKey = async (on: TestApp, scopes: string[]) =>
  (await ok(on.rest('POST', '/v1/api-keys', { name: `scoped ${scopes.join(',')}`, scopes }), 201)).secret as string;

/** The headers of a call with `secret` in place of the application's own key. */
export const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

/**
 * A race's outcome: exactly one of `responses` answered `won` (200 or 201), and every other one is the 409 error
 * `code`. Answers the winner.
 */
export function expectExactlyOneWinner(responses: RestResponse[], won: number, code: string): RestResponse {
  const winners = responses.filter((r) => r.status === won);
  expect(winners, JSON.stringify(responses.map((r) => r.status))).toHaveLength(1);
  for (const r of responses.filter((r) => r.status !== won)) expectError(r, 409, code);
  return winners[0]!;
}

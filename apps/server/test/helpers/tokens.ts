import { createPrivateKey, sign as edSign, type KeyObject } from 'node:crypto';
import { SecretBox } from '@gatehouse/api';
import { expect } from 'vitest';
import { sql, type TestServer } from './server.ts';

// ---- crafting tokens by hand (no library between the test and the bytes it sends) ----

/** base64url of a string as it is, or of anything else as JSON. */
export const b64url = (value: unknown) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** A JWS of `header` and `payload`, signed by `sign` (no signature at all without it). */
export function craft(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  sign?: (input: Buffer) => Buffer,
): string {
  const input = `${b64url(header)}.${b64url(payload)}`;
  return `${input}.${sign ? sign(Buffer.from(input)).toString('base64url') : ''}`;
}

/** An Ed25519 signer for `craft`. */
export const ed25519 = (key: KeyObject) => (input: Buffer) => edSign(null, input, key);

/** The application's real, active signing key: read sealed from the database and opened with the master key. */
export async function realSigningKey(server: TestServer, appId: string): Promise<{ kid: string; key: KeyObject }> {
  const rows = await sql<{ id: string; private_key_sealed: string }>(
    server,
    `select id, private_key_sealed from signing_keys where application_id = ? and status = 'active'`,
    [appId],
  );
  expect(rows).toHaveLength(1);
  const row = rows[0]!;
  const pem = new SecretBox(server.masterKey).decrypt(row.private_key_sealed, `signing_key:${row.id}`);
  return { kid: row.id, key: createPrivateKey(pem) };
}

/** Seconds since the epoch, as JWT claims count time. */
export const now = () => Math.floor(Date.now() / 1000);

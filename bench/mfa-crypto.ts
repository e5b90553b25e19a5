/**
 * The cryptography of a second factor alone, in one process, on this machine: what a passkey MFA finish and a TOTP
 * verify cost before any HTTP, JSON or database work. Part of the mfa suite (`npm run bench -- mfa` runs it as
 * `node bench/mfa-crypto.ts --json` once the server has stopped); on its own: `npx node bench/mfa-crypto.ts`.
 *
 * - ECDSA P-256 / SHA-256, raw: node:crypto `verify` of a real assertion's signature over
 *   authenticatorData || SHA-256(clientDataJSON), as WebAuthn defines it (the hash of clientDataJSON and the
 *   concatenation included), with the public key as a KeyObject made once.
 * - The same assertion through `verifyAuthenticationResponse` of @simplewebauthn/server, called with the options the
 *   server passes (passkeys.service.ts, `verifyAssertion`): base64url and JSON decoding, challenge, origin, rpIdHash and
 *   flag checks, COSE key decoding and import, then the signature check (WebCrypto).
 * - TOTP, raw: otpauth `TOTP.validate` with a window of 1 on a TOTP object made once, for the current step's code
 *   (one HMAC-SHA1: the current step is tried first; a wrong code costs three).
 * - TOTP as the server does it per request (mfa.service.ts, `matchingStep`): open the sealed seed (AES-256-GCM with
 *   the master key), decode it, build the TOTP, validate, compute the step.
 *
 * The assertion comes from the tests' software authenticator (real P-256 keys and signatures), its options from
 * @simplewebauthn/server as the server makes them. Nothing leaves the process.
 */
import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import { Secret, TOTP } from 'otpauth';
import { SoftwareAuthenticator } from '../apps/server/test/helpers/authenticator.ts';
// The project's own sealing (a file with no imports but node:crypto), as the server opens TOTP seeds.
import { SecretBox } from '../packages/api/src/lib/crypto.ts';
import { measure, measureSync } from './ops.ts';
import { ROOT } from './server.ts';

/** What `--json` prints (one line). */
export interface MfaCryptoResult {
  ecdsaRawOpsPerSecond: number;
  ecdsaLibraryOpsPerSecond: number;
  totpRawOpsPerSecond: number;
  totpServiceOpsPerSecond: number;
  /** Versions of the libraries measured. */
  libraries: string;
}

const ORIGIN = 'https://app.bench.test';
const RP_ID = 'app.bench.test';
const TOTP_OPTIONS = { algorithm: 'SHA1', digits: 6, period: 30 } as const;

// A passkey registered as the server registers one: options, the authenticator's create(), verification.
const authenticator = new SoftwareAuthenticator({ counterStep: 1 });
const registration = await generateRegistrationOptions({
  rpName: 'Benchmark',
  rpID: RP_ID,
  userID: new Uint8Array(randomBytes(16)),
  userName: 'mfa-crypto@bench.example.com',
  attestationType: 'none',
  authenticatorSelection: { residentKey: 'preferred', userVerification: 'required' },
});
const created = await authenticator.create(registration, ORIGIN);
const registered = await verifyRegistrationResponse({
  response: created,
  expectedChallenge: registration.challenge,
  expectedOrigin: [ORIGIN],
  expectedRPID: RP_ID,
  requireUserVerification: true,
});
if (!registered.verified) throw new Error('the registration did not verify');
const stored = registered.registrationInfo.credential;

// One assertion for a second-factor ceremony (allowCredentials: this passkey).
const request = await generateAuthenticationOptions({
  rpID: RP_ID,
  userVerification: 'required',
  allowCredentials: [{ id: stored.id }],
});
const assertion = await authenticator.get(request, ORIGIN);
const authenticatorData = Buffer.from(assertion.response.authenticatorData, 'base64url');
const clientDataJSON = Buffer.from(assertion.response.clientDataJSON, 'base64url');
const signature = Buffer.from(assertion.response.signature, 'base64url');
const publicKey = createPublicKey({ key: Buffer.from(created.response.publicKey!, 'base64url'), format: 'der', type: 'spki' });

const rawCheck = () => {
  const clientDataHash = createHash('sha256').update(clientDataJSON).digest();
  return verify('sha256', Buffer.concat([authenticatorData, clientDataHash]), publicKey, signature);
};
const libraryCheck = async () => {
  const result = await verifyAuthenticationResponse({
    response: assertion,
    expectedChallenge: request.challenge,
    expectedOrigin: [ORIGIN],
    expectedRPID: RP_ID,
    expectedType: 'webauthn.get',
    requireUserVerification: true,
    credential: { id: stored.id, publicKey: stored.publicKey, counter: 0, transports: stored.transports },
  });
  return result.verified;
};
if (!rawCheck() || !(await libraryCheck())) throw new Error('the assertion did not verify');

// TOTP: one seed; the code of the current step, at a fixed instant so that every call does the same work.
const secret = new Secret({ size: 20 });
const now = Date.now();
const totp = new TOTP({ ...TOTP_OPTIONS, secret });
const code = totp.generate({ timestamp: now });
const factorId = '01900000-0000-7000-8000-000000000001';
const box = new SecretBox(randomBytes(32));
const sealed = box.encrypt(secret.base32, `totp:${factorId}`);
const rawTotp = () => totp.validate({ token: code, timestamp: now, window: 1 });
const serviceTotp = () => {
  const seed = box.decrypt(sealed, `totp:${factorId}`);
  const fresh = new TOTP({ ...TOTP_OPTIONS, secret: Secret.fromBase32(seed) });
  const delta = fresh.validate({ token: code, timestamp: now, window: 1 });
  return delta === null ? null : fresh.counter({ timestamp: now }) + delta;
};
if (rawTotp() !== 0 || serviceTotp() === null) throw new Error('the TOTP code did not validate');

const ecdsaRawOpsPerSecond = measureSync(() => {
  if (!rawCheck()) throw new Error('raw verify failed');
});
const ecdsaLibraryOpsPerSecond = await measure(libraryCheck, 700, 100);
const totpRawOpsPerSecond = measureSync(rawTotp);
const totpServiceOpsPerSecond = measureSync(serviceTotp);

/** A dependency's version, from its package.json in the root node_modules (where npm hoists them). */
const version = (name: string) => {
  try {
    return `${name} ${(JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version}`;
  } catch {
    return name;
  }
};
const result: MfaCryptoResult = {
  ecdsaRawOpsPerSecond,
  ecdsaLibraryOpsPerSecond,
  totpRawOpsPerSecond,
  totpServiceOpsPerSecond,
  libraries: [
    `Node ${process.version} (OpenSSL ${process.versions.openssl})`,
    version('@simplewebauthn/server'),
    version('otpauth'),
  ].join(', '),
};
if (process.argv.includes('--json')) {
  console.log(JSON.stringify(result));
} else {
  const us = (ops: number) => `${(1e6 / ops).toFixed(1)} µs/op (${Math.round(ops).toLocaleString('en-US')} ops/s)`;
  console.log(`ECDSA P-256 raw node:crypto verify:        ${us(ecdsaRawOpsPerSecond)}`);
  console.log(`@simplewebauthn verifyAuthenticationResponse: ${us(ecdsaLibraryOpsPerSecond)}`);
  console.log(`TOTP raw otpauth validate (window 1):      ${us(totpRawOpsPerSecond)}`);
  console.log(`TOTP as the server checks it (unseal+…):   ${us(totpServiceOpsPerSecond)}`);
  console.log(result.libraries);
}

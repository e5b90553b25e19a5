import { createPublicKey } from 'node:crypto';
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type WebAuthnCredential,
} from '@simplewebauthn/server';
import { cose, decodeCredentialPublicKey } from '@simplewebauthn/server/helpers';
import { describe, expect, it } from 'vitest';
import { type CreateTamper, type GetTamper, SoftwareAuthenticator } from './helpers/authenticator.ts';

// Proves the test authenticator against the WebAuthn verifier the server uses, with no server involved.

const RP_ID = 'gatehouse.test';
const ORIGIN = 'https://login.gatehouse.test';
const AAGUID = '0badcafe-1234-4567-89ab-0123456789ab';

const registrationOptions = () =>
  generateRegistrationOptions({ rpName: 'Gatehouse', rpID: RP_ID, userName: 'ada@example.com', attestationType: 'none' });

async function register(authenticator = new SoftwareAuthenticator({ aaguid: AAGUID })) {
  const options = await registrationOptions();
  const response = await authenticator.create(options, ORIGIN);
  const verification = await verifyRegistrationResponse({
    response,
    expectedChallenge: options.challenge,
    expectedOrigin: ORIGIN,
    expectedRPID: RP_ID,
    requireUserVerification: true,
  });
  if (!verification.verified) throw new Error('registration did not verify');
  const { registrationInfo } = verification;
  return { authenticator, options, response, registrationInfo, credential: registrationInfo.credential };
}

async function authenticate(authenticator: SoftwareAuthenticator, credential: WebAuthnCredential, tamper?: GetTamper) {
  const options = await generateAuthenticationOptions({ rpID: RP_ID, allowCredentials: [{ id: credential.id }] });
  const response = await authenticator.get(options, ORIGIN, tamper);
  const verification = await verifyAuthenticationResponse({
    response,
    expectedChallenge: options.challenge,
    expectedOrigin: ORIGIN,
    expectedRPID: RP_ID,
    credential,
    requireUserVerification: true,
  });
  return { response, verification };
}

describe('SoftwareAuthenticator.create', () => {
  it('produces a registration that verifies with user verification required', async () => {
    // register() verifies with requireUserVerification: true and throws unless verified.
    const { authenticator, options, response, registrationInfo } = await register();

    expect(registrationInfo).toMatchObject({
      fmt: 'none',
      aaguid: AAGUID,
      userVerified: true,
      credentialDeviceType: 'multiDevice',
      credentialBackedUp: true,
      origin: ORIGIN,
      rpID: RP_ID,
      credential: { id: response.id, counter: 0, transports: ['internal', 'hybrid'] },
    });
    expect(response).toMatchObject({ rawId: response.id, type: 'public-key', authenticatorAttachment: 'platform' });
    expect(response.response.publicKeyAlgorithm).toBe(-7);

    // The COSE key in attestedCredentialData and the SPKI of `response.publicKey` are the same P-256 point.
    const coseKey = decodeCredentialPublicKey(registrationInfo.credential.publicKey);
    if (!cose.isCOSEPublicKeyEC2(coseKey)) throw new Error('not an EC2 COSE key');
    const spki = createPublicKey({ key: Buffer.from(response.response.publicKey!, 'base64url'), format: 'der', type: 'spki' });
    const jwk = spki.export({ format: 'jwk' });
    expect(coseKey.get(cose.COSEKEYS.crv)).toBe(cose.COSECRV.P256);
    expect(Buffer.from(coseKey.get(cose.COSEKEYS.x)!).toString('base64url')).toBe(jwk.x);
    expect(Buffer.from(coseKey.get(cose.COSEKEYS.y)!).toString('base64url')).toBe(jwk.y);

    expect(authenticator.credentials).toEqual([{ id: response.id, userHandle: options.user.id, rpId: RP_ID, counter: 0 }]);
  });

  it('reports a single-device credential when not backup eligible', async () => {
    const { registrationInfo } = await register(new SoftwareAuthenticator({ backupEligible: false }));
    expect(registrationInfo).toMatchObject({ credentialDeviceType: 'singleDevice', credentialBackedUp: false });
  });

  it.each<[string, CreateTamper, RegExp]>([
    ['origin', { origin: 'https://evil.test' }, /origin "https:\/\/evil\.test"/],
    ['rp id hash', { rpId: 'evil.test' }, /RP ID/],
    ['user verification', { uv: false }, /User verification was required/],
    ['user presence', { up: false }, /User presence was required/],
    ['type', { type: 'webauthn.get' }, /response type/],
    ['challenge', { challenge: 'c29tZXRoaW5nLWVsc2U' }, /challenge "c29tZXRoaW5nLWVsc2U"/],
  ])('a tampered %s fails verification', async (_, tamper, message) => {
    const options = await registrationOptions();
    const response = await new SoftwareAuthenticator().create(options, ORIGIN, tamper);
    await expect(
      verifyRegistrationResponse({
        response,
        expectedChallenge: options.challenge,
        expectedOrigin: ORIGIN,
        expectedRPID: RP_ID,
        requireUserVerification: true,
      }),
    ).rejects.toThrow(message);
  });

  it('refuses like a browser: excluded credential, no ES256, rp id foreign to the origin', async () => {
    const { authenticator, credential } = await register();
    const options = await registrationOptions();
    const excluding = { ...options, excludeCredentials: [{ id: credential.id, type: 'public-key' as const }] };
    await expect(authenticator.create(excluding, ORIGIN)).rejects.toMatchObject({ name: 'InvalidStateError' });
    await expect(
      authenticator.create({ ...options, pubKeyCredParams: [{ type: 'public-key', alg: -257 }] }, ORIGIN),
    ).rejects.toMatchObject({ name: 'NotSupportedError' });
    await expect(authenticator.create(options, 'https://evil.test')).rejects.toMatchObject({ name: 'SecurityError' });
    expect(authenticator.credentials).toHaveLength(1);
  });
});

describe('SoftwareAuthenticator.get', () => {
  it('produces assertions that verify, with an increasing counter', async () => {
    const { authenticator, options, credential } = await register();

    const first = await authenticate(authenticator, credential);
    expect(first.verification).toMatchObject({
      verified: true,
      authenticationInfo: { credentialID: credential.id, newCounter: 1, userVerified: true, credentialBackedUp: true },
    });
    expect(first.response.response.userHandle).toBe(options.user.id);

    const second = await authenticate(authenticator, { ...credential, counter: 1 });
    expect(second.verification).toMatchObject({ verified: true, authenticationInfo: { newCounter: 2 } });
    expect(authenticator.credentials[0]!.counter).toBe(2);
  });

  it('finds a discoverable credential with no allowCredentials, and refuses when none matches', async () => {
    const { authenticator, credential } = await register();
    const options = await generateAuthenticationOptions({ rpID: RP_ID });
    expect((await authenticator.get(options, ORIGIN)).id).toBe(credential.id);

    await expect(
      authenticator.get({ ...options, allowCredentials: [{ id: 'bm90LXN0b3JlZA', type: 'public-key' }] }, ORIGIN),
    ).rejects.toMatchObject({ name: 'NotAllowedError' });
    await expect(new SoftwareAuthenticator().get(options, ORIGIN)).rejects.toMatchObject({ name: 'NotAllowedError' });
  });

  it('with counterStep 0 always reports 0, which verifies', async () => {
    const { authenticator, credential } = await register(new SoftwareAuthenticator({ counterStep: 0 }));
    for (let i = 0; i < 2; i++) {
      const { verification } = await authenticate(authenticator, credential);
      expect(verification).toMatchObject({ verified: true, authenticationInfo: { newCounter: 0 } });
    }
  });

  it.each<[string, GetTamper, RegExp]>([
    ['origin', { origin: 'https://evil.test' }, /origin "https:\/\/evil\.test"/],
    ['rp id hash', { rpId: 'evil.test' }, /RP ID/],
    ['user verification', { uv: false }, /User verification required/],
    ['user presence', { up: false }, /User not present/],
    ['type', { type: 'webauthn.create' }, /response type/],
    ['challenge', { challenge: 'c29tZXRoaW5nLWVsc2U' }, /challenge "c29tZXRoaW5nLWVsc2U"/],
    ['counter (a replay)', { counter: 0 }, /counter value 0 was lower than expected 1/],
  ])('a tampered %s fails verification', async (_, tamper, message) => {
    const { authenticator, credential } = await register();
    await authenticate(authenticator, credential);
    await expect(authenticate(authenticator, { ...credential, counter: 1 }, tamper)).rejects.toThrow(message);
  });

  it('a flipped signature byte does not verify', async () => {
    const { authenticator, credential } = await register();
    const { verification } = await authenticate(authenticator, credential, { badSignature: true });
    expect(verification.verified).toBe(false);
  });

  it('a tampered counter is reported but not stored', async () => {
    const { authenticator, credential } = await register();
    const { verification } = await authenticate(authenticator, credential, { counter: 41 });
    expect(verification.authenticationInfo.newCounter).toBe(41);
    expect(authenticator.credentials[0]!.counter).toBe(0);
  });

  it('answers with a forced credential and a substituted userHandle', async () => {
    const { authenticator, credential } = await register();
    const other = await register(authenticator);
    const options = await generateAuthenticationOptions({ rpID: RP_ID, allowCredentials: [{ id: credential.id }] });

    const forced = await authenticator.get(options, ORIGIN, { credentialId: other.credential.id, userHandle: 'b3RoZXI' });
    expect(forced.id).toBe(other.credential.id);
    expect(forced.response.userHandle).toBe('b3RoZXI');
    const anonymous = await authenticator.get(options, ORIGIN, { userHandle: null });
    expect(anonymous.response).not.toHaveProperty('userHandle');
  });
});

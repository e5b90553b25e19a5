import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';

/** Changes to what `create()` reports; the stored credential is always the genuine one. */
export interface CreateTamper {
  origin?: string;
  type?: string;
  /** Hash this rp id into authenticatorData instead of the real one. */
  rpId?: string;
  uv?: boolean;
  up?: boolean;
  challenge?: string;
}

/** Changes to what `get()` reports: those of `create()`, and more. */
export interface GetTamper extends CreateTamper {
  /** Report this counter instead of the next one, and leave the stored counter as it is. */
  counter?: number;
  /** Flip a bit of the signature. */
  badSignature?: boolean;
  /** Report this userHandle (base64url), or none with `null`, instead of the stored one. */
  userHandle?: string | null;
  /** Answer with this stored credential (any rp id) even if allowCredentials does not list it. */
  credentialId?: string;
}

export interface SoftwareAuthenticatorOptions {
  /** The AAGUID (a UUID) put in attested credential data. */
  aaguid?: string;
  /** BE flag; true by default, like a synced passkey. */
  backupEligible?: boolean;
  /** BS flag; defaults to `backupEligible` (BS without BE is invalid, but settable to test that it is refused). */
  backedUp?: boolean;
  /** Added to a credential's counter on every assertion; 0 models authenticators that always report 0. */
  counterStep?: number;
  transports?: string[];
}

interface StoredCredential {
  id: string;
  userHandle: string;
  rpId: string;
  counter: number;
  privateKey: KeyObject;
}

const DEFAULT_AAGUID = '7e57ab1e-0000-4000-8000-000000000001';
const ES256 = -7;
const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
const FLAG_BE = 0x08;
const FLAG_BS = 0x10;
const FLAG_AT = 0x40;

/**
 * A software passkey provider for tests: plays both the browser (clientDataJSON, rp id defaulting and checks,
 * excludeCredentials, the JSON of `@simplewebauthn/browser`) and a synced platform authenticator (P-256 keys,
 * `none` attestation, real ECDSA signatures). The tamper arguments break one thing at a time, so a test can show
 * that the server notices.
 */
export class SoftwareAuthenticator {
  readonly #aaguid: Buffer;
  readonly #backupEligible: boolean;
  readonly #backedUp: boolean;
  readonly #counterStep: number;
  readonly #transports: string[];
  readonly #credentials: StoredCredential[] = [];

  constructor(options: SoftwareAuthenticatorOptions = {}) {
    const hex = (options.aaguid ?? DEFAULT_AAGUID).replaceAll('-', '');
    if (!/^[0-9a-f]{32}$/i.test(hex)) throw new Error(`Not a UUID: ${options.aaguid}`);
    this.#aaguid = Buffer.from(hex, 'hex');
    this.#backupEligible = options.backupEligible ?? true;
    this.#backedUp = options.backedUp ?? this.#backupEligible;
    this.#counterStep = options.counterStep ?? 1;
    this.#transports = options.transports ?? ['internal', 'hybrid'];
  }

  /** The stored credentials (ids and userHandles base64url), as copies. */
  get credentials(): ReadonlyArray<{ id: string; userHandle: string; rpId: string; counter: number }> {
    return this.#credentials.map(({ id, userHandle, rpId, counter }) => ({ id, userHandle, rpId, counter }));
  }

  /** What `navigator.credentials.create()` answers, as `@simplewebauthn/browser` serializes it. */
  async create(
    options: PublicKeyCredentialCreationOptionsJSON,
    origin: string,
    tamper: CreateTamper = {},
  ): Promise<RegistrationResponseJSON> {
    const rpId = checkedRpId(options.rp.id, origin);
    if (!options.pubKeyCredParams.some((param) => param.type === 'public-key' && param.alg === ES256)) {
      throw new DOMException('This authenticator only supports ES256 (COSE -7)', 'NotSupportedError');
    }
    const excluded = new Set(options.excludeCredentials?.map((descriptor) => descriptor.id));
    if (this.#credentials.some((credential) => credential.rpId === rpId && excluded.has(credential.id))) {
      throw new DOMException('The authenticator already holds one of the excluded credentials', 'InvalidStateError');
    }

    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const credentialId = randomBytes(32);
    const id = credentialId.toString('base64url');
    this.#credentials.push({ id, userHandle: options.user.id, rpId, counter: 0, privateKey });

    const jwk = publicKey.export({ format: 'jwk' });
    // COSE_Key (RFC 9053) in CTAP2 canonical key order: kty EC2, alg ES256, crv P-256, x, y.
    const coseKey = cbor(
      new Map<number, CborValue>([
        [1, 2],
        [3, ES256],
        [-1, 1],
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    );
    const credentialIdLength = Buffer.alloc(2);
    credentialIdLength.writeUInt16BE(credentialId.length);
    const authenticatorData = Buffer.concat([
      this.#authenticatorDataHead(tamper.rpId ?? rpId, tamper, FLAG_AT, 0),
      this.#aaguid,
      credentialIdLength,
      credentialId,
      coseKey,
    ]);
    const attestationObject = cbor(
      new Map<string, CborValue>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authenticatorData],
      ]),
    );

    return {
      id,
      rawId: id,
      type: 'public-key',
      response: {
        clientDataJSON: clientDataJSON('webauthn.create', options.challenge, origin, tamper).toString('base64url'),
        attestationObject: attestationObject.toString('base64url'),
        transports: [...this.#transports],
        publicKeyAlgorithm: ES256,
        publicKey: publicKey.export({ format: 'der', type: 'spki' }).toString('base64url'),
        authenticatorData: authenticatorData.toString('base64url'),
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  /** What `navigator.credentials.get()` answers, as `@simplewebauthn/browser` serializes it. */
  async get(
    options: PublicKeyCredentialRequestOptionsJSON,
    origin: string,
    tamper: GetTamper = {},
  ): Promise<AuthenticationResponseJSON> {
    const rpId = checkedRpId(options.rpId, origin);
    const credential = this.#select(rpId, options, tamper.credentialId);
    if (!credential) {
      throw new DOMException('No stored credential matches this request', 'NotAllowedError');
    }

    let counter = tamper.counter;
    if (counter === undefined) {
      credential.counter += this.#counterStep;
      counter = credential.counter;
    }
    const authenticatorData = this.#authenticatorDataHead(tamper.rpId ?? rpId, tamper, 0, counter);
    const clientData = clientDataJSON('webauthn.get', options.challenge, origin, tamper);
    // WebAuthn signs authenticatorData || SHA-256(clientDataJSON); node's ECDSA output is already the DER form it wants.
    const signature = sign('sha256', Buffer.concat([authenticatorData, sha256(clientData)]), credential.privateKey);
    // The last byte belongs to s, so the DER stays well-formed and only the signature check can fail.
    if (tamper.badSignature) signature[signature.length - 1]! ^= 0x01;

    const userHandle = tamper.userHandle === undefined ? credential.userHandle : tamper.userHandle;
    return {
      id: credential.id,
      rawId: credential.id,
      type: 'public-key',
      response: {
        clientDataJSON: clientData.toString('base64url'),
        authenticatorData: authenticatorData.toString('base64url'),
        signature: signature.toString('base64url'),
        ...(userHandle === null ? {} : { userHandle }),
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  #select(rpId: string, options: PublicKeyCredentialRequestOptionsJSON, forcedId: string | undefined) {
    if (forcedId !== undefined) return this.#credentials.find((credential) => credential.id === forcedId);
    const allowed = new Set(options.allowCredentials?.map((descriptor) => descriptor.id));
    // All credentials made here are discoverable, so an empty allow list means "any of this rp id's".
    return this.#credentials.find((credential) => credential.rpId === rpId && (allowed.size === 0 || allowed.has(credential.id)));
  }

  /** rpIdHash | flags | signCount: the fixed 37 bytes that start every authenticatorData. */
  #authenticatorDataHead(rpId: string, tamper: { up?: boolean; uv?: boolean }, extraFlags: number, counter: number) {
    let flags = extraFlags;
    if (tamper.up !== false) flags |= FLAG_UP;
    // A platform authenticator always verifies the user (biometrics or device PIN).
    if (tamper.uv !== false) flags |= FLAG_UV;
    if (this.#backupEligible) flags |= FLAG_BE;
    if (this.#backedUp) flags |= FLAG_BS;
    const head = Buffer.alloc(37);
    sha256(Buffer.from(rpId)).copy(head, 0);
    head.writeUInt8(flags, 32);
    head.writeUInt32BE(counter, 33);
    return head;
  }
}

/**
 * The browser's part: default the rp id to the origin's host, and refuse one the origin may not use (the registrable
 * domain suffix rule, without the public suffix list), so a misconfigured server fails here as it would in a browser.
 */
function checkedRpId(requested: string | undefined, origin: string): string {
  const host = new URL(origin).hostname;
  const rpId = requested ?? host;
  if (host !== rpId && !host.endsWith(`.${rpId}`)) {
    throw new DOMException(`The rp id "${rpId}" is not valid for the origin ${origin}`, 'SecurityError');
  }
  return rpId;
}

function clientDataJSON(
  type: string,
  challenge: string,
  origin: string,
  tamper: { type?: string; challenge?: string; origin?: string },
): Buffer {
  return Buffer.from(
    JSON.stringify({
      type: tamper.type ?? type,
      challenge: tamper.challenge ?? challenge,
      origin: tamper.origin ?? origin,
      crossOrigin: false,
    }),
  );
}

function sha256(data: Buffer): Buffer {
  return createHash('sha256').update(data).digest();
}

/** The CBOR subset WebAuthn needs. Maps keep insertion order, which callers set to CTAP2's canonical order. */
type CborValue = number | string | Uint8Array | Map<number | string, CborValue>;

function cbor(value: CborValue): Buffer {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new Error(`CBOR: not an integer: ${value}`);
    return value >= 0 ? cborHead(0, value) : cborHead(1, -1 - value);
  }
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([cborHead(3, bytes.length), bytes]);
  }
  if (value instanceof Uint8Array) return Buffer.concat([cborHead(2, value.length), value]);
  return Buffer.concat([cborHead(5, value.size), ...[...value].flatMap(([key, item]) => [cbor(key), cbor(item)])]);
}

/** A major type with its argument in the shortest form, as deterministic encoding requires. */
function cborHead(major: number, argument: number): Buffer {
  const type = major << 5;
  if (argument < 24) return Buffer.from([type | argument]);
  if (argument < 0x100) return Buffer.from([type | 24, argument]);
  if (argument < 0x10000) return Buffer.from([type | 25, argument >> 8, argument & 0xff]);
  const head = Buffer.alloc(5);
  head.writeUInt8(type | 26, 0);
  head.writeUInt32BE(argument, 1);
  return head;
}

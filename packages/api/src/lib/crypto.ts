import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hash,
  type KeyObject,
  randomBytes,
  randomInt,
  timingSafeEqual,
} from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` characters of base62 from the CSPRNG, without modulo bias. */
export function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

/** A secret of 32 random bytes' strength (43 base62 characters ≥ 256 bits) behind a readable prefix. */
export const randomSecret = (prefix: string): string => `${prefix}${randomBase62(43)}`;

/**
 * The 43 base62 characters of a 256-bit value (62^43 > 2^256), most significant first, as `randomSecret` writes
 * them: long division of its eight 32-bit words by 62, in numbers (a word and a remainder stay below 2^53), which
 * takes a third of the time a BigInt's division did.
 */
export function base62Of(bytes: Buffer): string {
  if (bytes.length !== 32) throw new Error('base62Of takes 32 bytes');
  const words = new Uint32Array(8);
  for (let i = 0; i < 8; i++) words[i] = bytes.readUInt32BE(i * 4);
  const out = new Array<string>(43);
  let first = 0; // words before it are zero: the value shrinks as it is divided
  for (let digit = 42; digit >= 0; digit--) {
    let remainder = 0;
    for (let i = first; i < 8; i++) {
      const current = remainder * 0x1_0000_0000 + (words[i] ?? 0);
      const quotient = Math.floor(current / 62);
      words[i] = quotient;
      remainder = current - quotient * 62;
    }
    while (first < 8 && words[first] === 0) first++;
    out[digit] = BASE62[remainder] ?? '';
  }
  return out.join('');
}

/**
 * One-time and bearer secrets are stored as SHA-256: they are high-entropy, so a slow hash adds nothing. Node's
 * one-shot `hash` (no Hash object per call: less than half the time of `createHash`).
 */
export const sha256 = (value: string): string => hash('sha256', value, 'hex');

export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * Encrypts secrets at rest (signing keys, TOTP seeds, OAuth client secrets, webhook secrets) with the master key.
 * Format: `v1.<iv>.<tag>.<ciphertext>` in base64url; AES-256-GCM with a random 96-bit IV per value.
 * `context` is bound as additional data, so a ciphertext copied into another row or tenant does not decrypt.
 */
export class SecretBox {
  /** A KeyObject: node:crypto takes it as it is, where a raw Buffer is probed (KeyObject? CryptoKey?) on every call. */
  readonly #key: KeyObject;

  constructor(masterKey: Buffer) {
    if (masterKey.length !== 32) throw new Error('The master key must be 32 bytes');
    this.#key = createSecretKey(masterKey);
  }

  readonly #derived = new Map<string, KeyObject>();

  /**
   * A key for one purpose (`label`), derived from the master key: signing keys of cookies, for instance. Derived once
   * per label and process (hot paths derive theirs on every request: a refresh, a hosted page's CSRF token).
   */
  deriveKey(label: string): KeyObject {
    let key = this.#derived.get(label);
    if (!key) {
      key = createSecretKey(createHmac('sha256', this.#key).update(`gatehouse:${label}`).digest());
      this.#derived.set(label, key);
    }
    return key;
  }

  encrypt(plaintext: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(context));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), data].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
  }

  decrypt(sealed: string, context: string): string {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('Malformed sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }
}

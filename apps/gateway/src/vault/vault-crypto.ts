import { createCipheriv, createDecipheriv, randomBytes, scrypt } from 'node:crypto';

/**
 * Envelope encryption of the vault. The master key (from the operator, never stored by the vault) gives the key
 * encryption key through scrypt with a random salt; the KEK wraps one random 32-byte data key with AES-256-GCM;
 * the data key encrypts every credential value with AES-256-GCM, its metadata as additional authenticated data.
 */
export interface KdfParams {
  readonly name: 'scrypt';
  /** CPU/memory cost (a power of two). */
  readonly N: number;
  readonly r: number;
  readonly p: number;
}

/** About 32 MiB and a tenth of a second per derivation: paid once per unlock, not per use. */
export const DEFAULT_KDF: KdfParams = { name: 'scrypt', N: 2 ** 15, r: 8, p: 1 };

export const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** AES-256-GCM output: the nonce, and the ciphertext with the 16-byte tag after it. */
export interface Sealed {
  readonly nonce: Buffer;
  readonly ciphertext: Buffer;
}

export function deriveKek(masterKey: string, salt: Buffer, kdf: KdfParams): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(masterKey, salt, KEY_BYTES, { N: kdf.N, r: kdf.r, p: kdf.p, maxmem: 256 * kdf.N * kdf.r }, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

export function newSalt(): Buffer {
  return randomBytes(16);
}

export function newDataKey(): Buffer {
  return randomBytes(KEY_BYTES);
}

export function seal(key: Buffer, plaintext: Buffer, aad: Buffer): Sealed {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  return { nonce, ciphertext };
}

/** The plaintext, or `undefined` when the key, the AAD or a byte of the ciphertext is not the one sealed. */
export function open(key: Buffer, sealed: Sealed, aad: Buffer): Buffer | undefined {
  if (sealed.nonce.length !== NONCE_BYTES || sealed.ciphertext.length < TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.nonce);
    decipher.setAAD(aad);
    decipher.setAuthTag(sealed.ciphertext.subarray(sealed.ciphertext.length - TAG_BYTES));
    return Buffer.concat([decipher.update(sealed.ciphertext.subarray(0, sealed.ciphertext.length - TAG_BYTES)), decipher.final()]);
  } catch {
    return undefined;
  }
}

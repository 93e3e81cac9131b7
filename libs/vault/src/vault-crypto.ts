import { createCipheriv, createDecipheriv, randomBytes, scrypt } from 'node:crypto';
import { canonicalJsonUnchecked } from '@oncegate/fingerprint';

/**
 * Envelope encryption of the vault. The master key (from the operator, never stored by the vault) gives the key
 * encryption key through scrypt with a random salt; the KEK wraps one random 32-byte data key with AES-256-GCM;
 * the data key encrypts every credential value with AES-256-GCM, its metadata as additional authenticated data.
 * The gateway's sealing key (keys/sealing.key) is wrapped under the master key the same way (`wrapKey`).
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

/**
 * Under the development master key (`keys/master.dev.key`): 1 MiB and a few milliseconds. That key is 256 random
 * bits, which no guessing reaches however cheap a guess is, and it sits in the data folder beside what it opens, so
 * stretching it protects nothing; it cost every start and command on a development folder a tenth of a second per
 * key it opened (four at a gateway's start). A master key an operator gives is stretched with DEFAULT_KDF.
 */
export const DEVELOPMENT_KDF: KdfParams = { name: 'scrypt', N: 2 ** 10, r: 8, p: 1 };

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

/** A key wrapped under the master key: how its KEK is derived, and the key sealed under that KEK. */
export interface WrappedKey {
  readonly kdf: KdfParams;
  readonly salt: Buffer;
  readonly wrapped: Sealed;
}

/**
 * The additional authenticated data of a wrap: what the key is for and how its KEK is derived, so a wrapped key
 * cannot be passed off as another one, and changing the parameters makes it not open.
 */
export function wrapAad(purpose: string, kdf: KdfParams, salt: Buffer): Buffer {
  return Buffer.from(canonicalJsonUnchecked({ purpose, format: 1, kdf, salt: salt.toString('hex') }) ?? '', 'utf8');
}

/** Wraps `key` under a KEK derived from the master key with a fresh salt. */
export async function wrapKey(masterKey: string, key: Buffer, purpose: string, kdf: KdfParams = DEFAULT_KDF): Promise<WrappedKey> {
  const salt = newSalt();
  const kek = await deriveKek(masterKey, salt, kdf);
  try {
    return { kdf, salt, wrapped: seal(kek, key, wrapAad(purpose, kdf, salt)) };
  } finally {
    kek.fill(0);
  }
}

/** The key `record` wraps, or `undefined` when this master key (or the purpose, or a byte of the record) is not the one it was wrapped with. */
export async function unwrapKey(masterKey: string, record: WrappedKey, purpose: string): Promise<Buffer | undefined> {
  const kek = await deriveKek(masterKey, record.salt, record.kdf);
  try {
    return open(kek, record.wrapped, wrapAad(purpose, record.kdf, record.salt));
  } finally {
    kek.fill(0);
  }
}

/** `value` as key derivation parameters, or `undefined` when it is not scrypt with positive whole numbers. */
export function kdfParams(value: unknown): KdfParams | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { name, N, r, p } = value as Record<string, unknown>;
  if (name !== 'scrypt' || ![N, r, p].every((n) => typeof n === 'number' && Number.isSafeInteger(n) && n > 0)) return undefined;
  return { name, N: N as number, r: r as number, p: p as number };
}

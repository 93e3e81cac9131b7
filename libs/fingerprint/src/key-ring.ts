import { createHmac } from 'node:crypto';
import { InvalidKeyIdError, InvalidKeyRingError, InvalidKeySecretError } from './errors';

/** Key ids appear inside fingerprints and stream names, so they are kept short and plain. */
export const KEY_ID_PATTERN = /^[a-z0-9-]{1,32}$/;

/** HMAC-SHA256 keys shorter than its 32-byte output would weaken it. */
export const MINIMUM_SECRET_BYTES = 32;

/**
 * - `active`: may be the ring's current key; fingerprints made under it are looked up.
 *   Several keys are active while instances of a deployment switch to a new current key one by one.
 * - `verify_only`: never makes new fingerprints; kept so executions fingerprinted under it are still
 *   found until its records age out of every correlation window. Then remove it (retire it).
 */
export type KeyState = 'active' | 'verify_only';

/** A key secret: raw bytes, or a string of hex digits (as kept in a config file or environment). */
export type KeySecretInput = Uint8Array | string;

export interface FingerprintKeyConfig {
  /** `[a-z0-9-]{1,32}`; written into every fingerprint made under this key. */
  readonly id: string;
  /** At least 32 bytes. */
  readonly secret: KeySecretInput;
  /** Default `active`. */
  readonly state?: KeyState;
}

export interface KeyRingConfig {
  /** Id of the key that makes new fingerprints; must name an `active` key of `keys`. */
  readonly current: string;
  /** Fingerprint keys, in the order a look-up tries them after the current key. At least one. */
  readonly keys: readonly FingerprintKeyConfig[];
  /**
   * The key that replaces `secret` arguments by `hmac-sha256:<id>:<hex>` before canonicalisation.
   * Separate from the fingerprint keys (different id and secret), so a value of the record never is a
   * MAC under a fingerprint key. It is long-lived: changing it changes the fingerprint of every
   * record with a secret argument, so such calls made before the change are no longer matched.
   */
  readonly argumentKey: { readonly id: string; readonly secret: KeySecretInput };
}

/** A fingerprint key as the ring shows it: the secret is never reachable from a ring's properties. */
export interface KeyDescription {
  readonly id: string;
  readonly state: KeyState;
}

interface RingSecrets {
  readonly fingerprint: ReadonlyMap<string, Buffer>;
  readonly argument: Buffer;
}

// Set by KeyRing's static block: the one way for this module to read a ring's private secrets.
let secretsOf: (ring: KeyRing) => RingSecrets;

/**
 * A validated key ring. Made only by `keyRingFromConfig`, so every ring in use has been checked.
 * Secrets are copied at creation and held in a private field: they do not show in `JSON.stringify`,
 * `util.inspect` or a log line of the ring, and later changes to the caller's buffers do not affect it.
 */
export class KeyRing {
  readonly #secrets: RingSecrets;

  /** Fingerprint keys in look-up order: the current key first, then the others in configured order. */
  readonly lookupOrder: readonly string[];

  private constructor(
    /** Id of the key new fingerprints are made under. */
    readonly current: string,
    readonly keys: readonly KeyDescription[],
    readonly argumentKeyId: string,
    secrets: RingSecrets,
  ) {
    this.#secrets = secrets;
    this.lookupOrder = Object.freeze([current, ...keys.map((key) => key.id).filter((id) => id !== current)]);
    Object.freeze(this);
  }

  static {
    secretsOf = (ring) => ring.#secrets;
  }

  /** Use `keyRingFromConfig`. */
  static fromConfig(config: KeyRingConfig): KeyRing {
    const keys: KeyDescription[] = [];
    const fingerprintSecrets = new Map<string, Buffer>();
    if (!Array.isArray(config.keys) || config.keys.length === 0) throw new InvalidKeyRingError('no_keys', undefined);
    config.keys.forEach((key, index) => {
      const id = checkKeyId(key.id, `keys[${index}].id`);
      const state = key.state ?? 'active';
      if (state !== 'active' && state !== 'verify_only') throw new InvalidKeyRingError('invalid_key_state', id);
      if (fingerprintSecrets.has(id)) throw new InvalidKeyRingError('duplicate_key_id', id);
      fingerprintSecrets.set(id, decodeSecret(id, key.secret));
      keys.push(Object.freeze({ id, state }));
    });

    const current = checkKeyId(config.current, 'current');
    const currentKey = keys.find((key) => key.id === current);
    if (currentKey === undefined) throw new InvalidKeyRingError('unknown_current_key', current);
    if (currentKey.state !== 'active') throw new InvalidKeyRingError('current_key_not_active', current);

    const argumentKeyId = checkKeyId(config.argumentKey?.id, 'argumentKey.id');
    const argumentSecret = decodeSecret(argumentKeyId, config.argumentKey.secret);
    const sharesSecret = [...fingerprintSecrets.values()].some((secret) => secret.equals(argumentSecret));
    if (fingerprintSecrets.has(argumentKeyId) || sharesSecret) {
      throw new InvalidKeyRingError('argument_key_not_separate', argumentKeyId);
    }

    return new KeyRing(current, Object.freeze(keys), argumentKeyId, {
      fingerprint: fingerprintSecrets,
      argument: argumentSecret,
    });
  }
}

/**
 * Validates a key ring configuration and returns the ring.
 *
 * @throws InvalidKeyIdError a key id (or `current`) does not match `[a-z0-9-]{1,32}`
 * @throws InvalidKeySecretError a secret is shorter than 32 bytes, not hex, or not bytes
 * @throws InvalidKeyRingError no keys, a duplicate id, `current` unknown or not `active`, an unknown
 *   state, or an argument key that shares an id or a secret with a fingerprint key
 */
export function keyRingFromConfig(config: KeyRingConfig): KeyRing {
  return KeyRing.fromConfig(config);
}

/** HMAC-SHA256 of `text` (UTF-8) under fingerprint key `keyId`, lowercase hex. */
export function hmacUnderFingerprintKey(ring: KeyRing, keyId: string, text: string): string {
  const secret = secretsOf(ring).fingerprint.get(keyId);
  // lookupOrder and current only name keys of the ring, so this is a programming error.
  if (secret === undefined) throw new InvalidKeyRingError('unknown_current_key', keyId);
  return createHmac('sha256', secret).update(text, 'utf8').digest('hex');
}

/** HMAC-SHA256 of `text` (UTF-8) under the ring's argument key, lowercase hex. */
export function hmacUnderArgumentKey(ring: KeyRing, text: string): string {
  return createHmac('sha256', secretsOf(ring).argument).update(text, 'utf8').digest('hex');
}

function checkKeyId(id: unknown, field: string): string {
  if (typeof id !== 'string' || !KEY_ID_PATTERN.test(id)) throw new InvalidKeyIdError(field, id);
  return id;
}

const HEX = /^(?:[0-9a-fA-F]{2})+$/;

function decodeSecret(keyId: string, secret: unknown): Buffer {
  let bytes: Buffer;
  if (secret instanceof Uint8Array) {
    // Copy: the ring must not change when the caller reuses or zeroes its buffer.
    bytes = Buffer.from(secret);
  } else if (typeof secret === 'string') {
    if (!HEX.test(secret)) throw new InvalidKeySecretError(keyId, 'not_hex', 0, MINIMUM_SECRET_BYTES);
    bytes = Buffer.from(secret, 'hex');
  } else {
    throw new InvalidKeySecretError(keyId, 'not_bytes', 0, MINIMUM_SECRET_BYTES);
  }
  if (bytes.length < MINIMUM_SECRET_BYTES) {
    throw new InvalidKeySecretError(keyId, 'too_short', bytes.length, MINIMUM_SECRET_BYTES);
  }
  return bytes;
}

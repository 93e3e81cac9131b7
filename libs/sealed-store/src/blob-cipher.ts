import { createCipheriv, createDecipheriv } from 'node:crypto';
import { pooledRandomBytes } from '@oncegate/event-store';

export interface SealingKey {
  /** Short id stored beside each sealed value, so keys can rotate. */
  readonly id: string;
  /** 32 bytes. */
  readonly key: Buffer;
}

/** One AES-256-GCM sealed value; `aad` binds it to where it belongs (moving it elsewhere fails to open). */
export interface SealedValue {
  readonly keyId: string;
  readonly iv: Buffer;
  readonly tag: Buffer;
  readonly ciphertext: Buffer;
}

export class SealedValueError extends Error {
  readonly kind = 'sealed_value_unreadable' as const;
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'SealedValueError';
  }
}

/** AES-256-GCM under a current key, opening with the current or any previous key. */
export class BlobCipher {
  private readonly keys: Map<string, Buffer>;

  constructor(
    private readonly current: SealingKey,
    previous: readonly SealingKey[] = [],
  ) {
    for (const key of [current, ...previous]) {
      if (key.key.length !== 32) throw new Error(`sealing key ${key.id} must be 32 bytes, got ${key.key.length}`);
    }
    this.keys = new Map([current, ...previous].map((k) => [k.id, k.key]));
  }

  seal(plaintext: Uint8Array, aad: Buffer): SealedValue {
    // A GCM nonce must never repeat under one key, not be secret: 96 random bits from the pool (one system call per
    // 4 KiB, copied out of it), as many as each seal asked the system for before.
    const iv = Buffer.from(pooledRandomBytes(12));
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    cipher.setAAD(aad);
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return { keyId: this.current.id, iv, tag: cipher.getAuthTag(), ciphertext };
  }

  open(value: SealedValue, aad: Buffer): Buffer {
    const key = this.keys.get(value.keyId);
    if (key === undefined) throw new SealedValueError(`sealed under key ${value.keyId}, which is not configured`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, value.iv);
      decipher.setAAD(aad);
      decipher.setAuthTag(value.tag);
      return Buffer.concat([decipher.update(value.ciphertext), decipher.final()]);
    } catch {
      throw new SealedValueError('authentication failed (tampered, or the wrong key)');
    }
  }
}

import { LRUCache } from 'lru-cache';
import type { OpenedBlob, SealedKind, SealedRef, SealedStore } from './sealed-store';

export interface RecentlySealedOptions {
  /** Plaintexts kept at most (default 1,024). */
  readonly entries?: number;
  /** Their bytes at most, together (default 16 MiB); a larger plaintext is not kept. */
  readonly bytes?: number;
}

/**
 * A sealed store that keeps the plaintexts this process sealed last, so opening them again — the answer a call
 * just received, the arguments it was just accepted with — decrypts and reads nothing. Each open returns a copy.
 * In memory only, bounded, the least recently used dropped first: what is in the file is as sealed as ever.
 */
export class RecentlySealed implements SealedStore {
  private readonly recent: LRUCache<string, OpenedBlob>;

  constructor(
    private readonly store: SealedStore,
    options: RecentlySealedOptions = {},
  ) {
    this.recent = new LRUCache<string, OpenedBlob>({
      max: options.entries ?? 1_024,
      maxSize: options.bytes ?? 16 * 1024 * 1024,
      sizeCalculation: (blob) => Math.max(1, blob.plaintext.byteLength),
    });
  }

  async seal(kind: SealedKind, owner: string, plaintext: Uint8Array): Promise<SealedRef> {
    const sealed = await this.store.seal(kind, owner, plaintext);
    // A plaintext larger than all the bytes kept is not kept.
    this.recent.set(sealed.ref, { kind, owner, plaintext: Buffer.from(plaintext), digest: sealed.digest });
    return sealed;
  }

  async open(ref: string): Promise<OpenedBlob | undefined> {
    const kept = this.recent.get(ref);
    if (kept === undefined) return this.store.open(ref);
    return { ...kept, plaintext: Buffer.from(kept.plaintext) };
  }

  close(): Promise<void> {
    this.recent.clear();
    return this.store.close();
  }
}

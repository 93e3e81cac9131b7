import { LRUCache } from 'lru-cache';
import type { OpenedBlob, SealedKind, SealedRef, SealedStore } from './sealed-store';

export interface RecentlySealedOptions {
  /** Plaintexts kept at most (default 1,024). */
  readonly entries?: number;
  /** Their bytes at most, together (default 16 MiB); a larger plaintext is not kept. */
  readonly bytes?: number;
}

/**
 * A sealed store that keeps the plaintexts this process sealed, so opening them again — the answer a call just
 * received, the arguments it was just accepted with — decrypts and reads nothing. Each open returns a copy. Kept for
 * the call's lifetime: until `forget` says the call is done with them, bounded all the same (the least recently used
 * dropped first). A plaintext dropped for any reason is zero-filled first, as a credential is: arguments and results
 * may carry secrets of their own, and a copy left to the garbage collector stays readable in the heap until reused.
 * In memory only: what is in the store is as sealed as ever.
 */
export class RecentlySealed implements SealedStore {
  private readonly recent: LRUCache<string, OpenedBlob>;
  /** The refs kept for each owner (an execution), for `forget`. */
  private readonly byOwner = new Map<string, Set<string>>();

  constructor(
    private readonly store: SealedStore,
    options: RecentlySealedOptions = {},
  ) {
    this.recent = new LRUCache<string, OpenedBlob>({
      max: options.entries ?? 1_024,
      maxSize: options.bytes ?? 16 * 1024 * 1024,
      sizeCalculation: (blob) => Math.max(1, blob.plaintext.byteLength),
      dispose: (blob, ref) => {
        blob.plaintext.fill(0);
        const refs = this.byOwner.get(blob.owner);
        refs?.delete(ref);
        if (refs?.size === 0) this.byOwner.delete(blob.owner);
      },
    });
  }

  async seal(kind: SealedKind, owner: string, plaintext: Uint8Array): Promise<SealedRef> {
    const sealed = await this.store.seal(kind, owner, plaintext);
    // A plaintext larger than all the bytes kept is not kept (and its copy is zero-filled at once).
    this.recent.set(sealed.ref, { kind, owner, plaintext: Buffer.from(plaintext), digest: sealed.digest });
    if (this.recent.has(sealed.ref)) {
      const refs = this.byOwner.get(owner) ?? new Set<string>();
      refs.add(sealed.ref);
      this.byOwner.set(owner, refs);
    }
    return sealed;
  }

  async open(ref: string): Promise<OpenedBlob | undefined> {
    const kept = this.recent.get(ref);
    if (kept === undefined) return this.store.open(ref);
    return { ...kept, plaintext: Buffer.from(kept.plaintext) };
  }

  async discard(ref: string): Promise<void> {
    this.recent.delete(ref);
    await this.store.discard?.(ref);
  }

  /** The call of `owner` is done here: what this process sealed for it is zero-filled and dropped. */
  forget(owner: string): void {
    for (const ref of [...(this.byOwner.get(owner) ?? [])]) this.recent.delete(ref);
  }

  close(): Promise<void> {
    this.recent.clear();
    return this.store.close();
  }
}

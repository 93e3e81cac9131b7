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
  private readonly recent = new Map<string, OpenedBlob>();
  private keptBytes = 0;
  private readonly entries: number;
  private readonly bytes: number;

  constructor(
    private readonly store: SealedStore,
    options: RecentlySealedOptions = {},
  ) {
    this.entries = options.entries ?? 1_024;
    this.bytes = options.bytes ?? 16 * 1024 * 1024;
  }

  async seal(kind: SealedKind, owner: string, plaintext: Uint8Array): Promise<SealedRef> {
    const sealed = await this.store.seal(kind, owner, plaintext);
    if (plaintext.byteLength <= this.bytes) {
      this.keep(sealed.ref, { kind, owner, plaintext: Buffer.from(plaintext), digest: sealed.digest });
    }
    return sealed;
  }

  async open(ref: string): Promise<OpenedBlob | undefined> {
    const kept = this.recent.get(ref);
    if (kept === undefined) return this.store.open(ref);
    this.recent.delete(ref);
    this.recent.set(ref, kept);
    return { ...kept, plaintext: Buffer.from(kept.plaintext) };
  }

  close(): Promise<void> {
    this.recent.clear();
    this.keptBytes = 0;
    return this.store.close();
  }

  private keep(ref: string, blob: OpenedBlob): void {
    this.recent.set(ref, blob);
    this.keptBytes += blob.plaintext.byteLength;
    while (this.recent.size > this.entries || this.keptBytes > this.bytes) {
      const [oldest, dropped] = this.recent.entries().next().value!;
      this.recent.delete(oldest);
      this.keptBytes -= dropped.plaintext.byteLength;
    }
  }
}

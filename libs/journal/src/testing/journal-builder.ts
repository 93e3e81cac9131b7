import type { KeyObject } from 'node:crypto';
import { eventHash, GENESIS_HASH } from '@oncegate/event-store/chain';
import type { JournalEvent } from '../export-format';
import { planSeal, publicKeyId, SEAL_EVENT_TYPE, SEAL_STREAM, signSeal, type JournalSealedData } from '../seal';

/**
 * Builds a journal in memory the way the store and the sealer would: positions from 1, revisions per
 * stream, `prev`/`hash` links, and signed seals over the global order. For tests and benchmarks only.
 */
export class JournalBuilder {
  private position = 0;
  private readonly tips = new Map<string, { revision: number; hash: string }>();
  private unsealed: Array<{ position: number; hash: string }> = [];
  private lastSeal: JournalSealedData | undefined;
  private readonly keyId: string;

  constructor(
    private readonly privateKey: KeyObject,
    publicKey: KeyObject,
    /** Receives every event as it is appended. */
    private readonly sink: (event: JournalEvent) => void,
    private readonly recordedAt: (position: number) => string = (p) => new Date(Date.UTC(2026, 0, 1) + p * 1000).toISOString(),
  ) {
    this.keyId = publicKeyId(publicKey);
  }

  get head(): number {
    return this.position;
  }

  append(streamId: string, type: string, data: unknown, metadata: Record<string, unknown> = {}): JournalEvent {
    const tip = this.tips.get(streamId);
    const revision = tip === undefined ? 0 : tip.revision + 1;
    const prev = tip?.hash ?? GENESIS_HASH;
    this.position += 1;
    const fields = { streamId, revision, id: `evt-${this.position}`, type, data, metadata, recordedAt: this.recordedAt(this.position) };
    const hash = eventHash(prev, fields);
    const event: JournalEvent = { position: this.position, ...fields, prev, hash };
    this.tips.set(streamId, { revision, hash });
    this.unsealed.push({ position: this.position, hash });
    this.sink(event);
    return event;
  }

  /**
   * Seals everything up to the head, then lets `concurrent` events land between the sealed range and the
   * seal event, as concurrent appends would. Returns the seal, or undefined when nothing was new.
   */
  seal(concurrent: Array<() => void> = []): JournalSealedData | undefined {
    const body = planSeal({ previous: this.lastSeal, events: this.unsealed, keyId: this.keyId });
    if (body === undefined) return undefined;
    const sealed = signSeal(body, this.privateKey);
    this.unsealed = this.unsealed.filter((e) => e.position > body.toPosition);
    for (const append of concurrent) append();
    this.append(SEAL_STREAM, SEAL_EVENT_TYPE, sealed);
    this.lastSeal = sealed;
    return sealed;
  }
}

import type { KeyObject } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { EventStore } from '@oncegate/event-store';
import { backoffMs, newEventId, readLinks, WrongExpectedRevisionError } from '@oncegate/event-store';
import { isoNow, type Clock } from '@oncegate/execution-journal';
import {
  planSeal,
  publicKeyId,
  SEAL_EVENT_TYPE,
  SEAL_STREAM,
  signSeal,
  type JournalSealedData,
} from '@oncegate/journal';

/** Most events one seal covers, so sealing a long unsealed stretch never holds it all in memory. */
const MAX_EVENTS_PER_SEAL = 10_000;
/** Longest pause between two sealing rounds while they keep failing (a full disk, say). */
const MAX_BACKOFF_MS = 5 * 60_000;

/**
 * Appends signed seals over the global order (docs/design.md section 8): each seal covers every position after the
 * previous seal, so deleting, inserting, reordering or editing a sealed event is detected offline. Competing
 * sealers are safe: a seal is appended with the expected revision of the seal stream.
 */
export class JournalSealer {
  private readonly log = new Logger('journal-sealer');
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;
  /** Sealing rounds failed in a row; each doubles the pause before the next, up to `MAX_BACKOFF_MS`. */
  private failures = 0;
  private readonly keyId: string;

  constructor(
    private readonly store: EventStore,
    private readonly privateKey: KeyObject,
    publicKey: KeyObject,
    private readonly clock: Clock,
    private readonly everyMs: number,
  ) {
    this.keyId = publicKeyId(publicKey);
  }

  /**
   * Seals every `everyMs`. While rounds fail, the pause doubles (up to 5 minutes) and only the 1st, 2nd, 4th, 8th…
   * failure in a row is logged; the first success after failures says so and restores the pace.
   */
  start(): void {
    this.schedule(this.everyMs);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.running.then(() => this.round());
    }, delayMs);
    this.timer.unref();
  }

  private async round(): Promise<void> {
    try {
      await this.sealAll();
      if (this.failures > 0) this.log.log(`sealing resumed after ${this.failures} failed rounds`);
      this.failures = 0;
    } catch (error) {
      this.failures += 1;
      if ((this.failures & (this.failures - 1)) === 0) {
        this.log.error(`sealing failed (${this.failures} in a row; next try in ${(this.nextDelayMs() / 1000).toFixed(1)} s): ${(error as Error).message}`);
      }
    }
    this.schedule(this.nextDelayMs());
  }

  private nextDelayMs(): number {
    return this.failures === 0 ? this.everyMs : Math.max(this.everyMs, backoffMs(this.failures, this.everyMs, MAX_BACKOFF_MS));
  }

  /** Stops the timer and seals what is there, so a stopped gateway leaves no unsealed events but the last seal. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running.catch(() => undefined);
    await this.sealAll();
  }

  /** Seals until the seal covers the head as it was when sealing began. */
  async sealAll(): Promise<number> {
    let seals = 0;
    while (await this.sealOnce()) seals += 1;
    return seals;
  }

  async sealOnce(): Promise<JournalSealedData | undefined> {
    const [last] = await this.store.readStream(SEAL_STREAM, { direction: 'backwards', maxCount: 1 });
    const previous = last?.data as JournalSealedData | undefined;
    const from = previous?.toPosition ?? 0;
    const head = await this.store.headPosition();
    // The previous seal event itself lies after its range; sealing only it would chase its own tail forever.
    if (head <= from || (last !== undefined && head === last.position && from === last.position - 1)) return undefined;
    // Positions and hashes only: the seal covers nothing else, so no event's data is read or parsed.
    const links = await readLinks(this.store, { after: from, maxCount: MAX_EVENTS_PER_SEAL });
    const body = planSeal({
      ...(previous ? { previous } : {}),
      events: links,
      keyId: this.keyId,
    });
    if (body === undefined) return undefined;
    const data = signSeal(body, this.privateKey);
    const eventId = newEventId();
    try {
      await this.store.appendToStream(
        SEAL_STREAM,
        [{ id: eventId, type: SEAL_EVENT_TYPE, data, metadata: { eventId, actor: 'service:journal-sealer', recordedAt: isoNow(this.clock), schemaVersion: 1 } }],
        { expectedRevision: last?.revision ?? 'no_stream' },
      );
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError) return undefined;
      throw error;
    }
    return data;
  }
}

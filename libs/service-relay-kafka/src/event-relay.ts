import type { LoggerService } from '@nestjs/common';
import { backoffMs, type EventStore, type RecordedEvent, type Subscription } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';
import type { KafkaConfig } from '@oncegate/service-host/config/gateway-config';
import type { BusProducer } from './bus-client';
import { cloudEventMessage, topicOf } from './cloud-events';

/** The relay's checkpoint (the last position the broker acknowledged) and its claim on publishing go by this name. */
export const RELAY_CONSUMER = 'relay-kafka';
/** Most events in one batch sent to the broker. */
const BATCH_EVENTS = 1_000;
/** Most events read ahead of the broker's acknowledgements; the store's reader waits beyond it. */
const MAX_BUFFERED = 10_000;
/** Longest pause between two tries while sends keep failing. */
const MAX_BACKOFF_MS = 10_000;

export interface EventRelayOptions {
  readonly store: EventStore;
  readonly producer: BusProducer;
  readonly config: KafkaConfig;
  readonly clock: Clock;
  readonly logger: LoggerService;
  /** This relay's name in the claim (`relay-kafka@host/instance`). */
  readonly owner: string;
}

/** What the relay has done so far, for its summary, the benchmark and the tests. */
export interface RelayProgress {
  readonly publishing: boolean;
  /** The last global position the broker acknowledged (the checkpoint). */
  readonly relayed: number;
  /** Events sent and acknowledged by this relay since it started. */
  readonly sent: number;
}

/**
 * Publishes every event of the journal to Kafka, in the store's global order, at least once.
 *
 * One relay publishes at a time: it holds the claim `relay-kafka` and renews it; any other relay on the store waits
 * and takes over when the claim lapses (a relay killed is replaced within `kafka.lease`). The publishing relay reads
 * from its checkpoint with a catch-up subscription, sends batches of up to 1,000 events with an idempotent producer and
 * `acks=all`, and writes the checkpoint only after the broker acknowledged the batch. After a crash the next relay
 * sends again what was sent but not yet checkpointed: duplicates carry the same `ce_id`.
 */
export class EventRelay {
  private readonly log: LoggerService;
  private readonly leaseMs: number;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;
  private holding = false;
  private subscription: Subscription | undefined;
  private flushing: Promise<void> | undefined;
  private buffer: RecordedEvent[] = [];
  private wakeFlusher: (() => void) | undefined;
  private roomWaiters: Array<() => void> = [];
  private relayed = 0;
  private sent = 0;
  private failures = 0;

  constructor(private readonly options: EventRelayOptions) {
    this.log = options.logger;
    this.leaseMs = options.config.leaseMs;
  }

  /** Takes the claim when it is free and starts publishing; renews it every third of `kafka.lease`. */
  start(): void {
    this.tick();
  }

  progress(): RelayProgress {
    return { publishing: this.holding, relayed: this.relayed, sent: this.sent };
  }

  private tick(): void {
    if (this.stopped) return;
    this.ticking = this.ticking.then(() => this.renew()).catch((error: unknown) => this.log.error(`relay claim: ${(error as Error).message}`, RELAY_CONSUMER));
    this.timer = setTimeout(() => this.tick(), Math.max(100, Math.floor(this.leaseMs / 3)));
    this.timer.unref();
  }

  private async renew(): Promise<void> {
    if (this.stopped) return;
    const now = this.options.clock.now();
    const claim = await this.options.store.claim(RELAY_CONSUMER, this.options.owner, new Date(now.getTime() + this.leaseMs).toISOString(), now.toISOString());
    const holds = claim.owner === this.options.owner;
    if (holds && !this.holding) await this.begin();
    else if (!holds && this.holding) {
      this.log.warn(`another relay (${claim.owner}) holds ${RELAY_CONSUMER} now; this one stops publishing`, RELAY_CONSUMER);
      await this.end();
    }
  }

  private async begin(): Promise<void> {
    const { store } = this.options;
    this.relayed = (await store.readCheckpoint(RELAY_CONSUMER)) ?? 0;
    this.holding = true;
    this.buffer = [];
    this.log.log(`publishing to ${this.options.config.brokers.join(', ')} from position ${this.relayed}`, RELAY_CONSUMER);
    this.flushing = this.flushLoop();
    this.subscription = store.subscribeToAll((event) => this.accept(event), { from: { after: this.relayed } });
  }

  private async end(): Promise<void> {
    this.holding = false;
    this.wakeFlusher?.();
    for (const waiter of this.roomWaiters.splice(0)) waiter();
    await this.subscription?.stop();
    this.subscription = undefined;
    await this.flushing;
    this.flushing = undefined;
    this.buffer = [];
  }

  /** The subscription's handler: queues the event, and waits while the queue is full (the broker is slow or away). */
  private async accept(event: RecordedEvent): Promise<void> {
    if (!this.holding) return;
    this.buffer.push(event);
    this.wakeFlusher?.();
    if (this.buffer.length >= MAX_BUFFERED) await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
  }

  private async flushLoop(): Promise<void> {
    while (this.holding) {
      if (this.buffer.length === 0) {
        await new Promise<void>((resolve) => (this.wakeFlusher = resolve));
        this.wakeFlusher = undefined;
        continue;
      }
      const batch = this.buffer.slice(0, BATCH_EVENTS);
      try {
        await this.options.producer.send(batch.map((event) => ({ topic: topicOf(event, this.options.config), message: cloudEventMessage(event, this.options.config.source) })));
        const last = batch[batch.length - 1]!.position;
        // A relay that lost its claim meanwhile leaves the checkpoint to the one that holds it now.
        if (!this.holding) return;
        await this.options.store.storeCheckpoint(RELAY_CONSUMER, last);
        this.relayed = last;
        this.sent += batch.length;
        this.buffer.splice(0, batch.length);
        for (const waiter of this.roomWaiters.splice(0)) waiter();
        if (this.failures > 0) this.log.log(`publishing resumed after ${this.failures} failed tries`, RELAY_CONSUMER);
        this.failures = 0;
      } catch (error) {
        this.failures += 1;
        const pause = backoffMs(this.failures, 200, MAX_BACKOFF_MS);
        if ((this.failures & (this.failures - 1)) === 0) {
          this.log.error(`publishing failed (${this.failures} in a row, ${this.buffer.length} events waiting from position ${batch[0]!.position}; next try in ${(pause / 1000).toFixed(1)} s): ${(error as Error).message}`, RELAY_CONSUMER);
        }
        await new Promise((resolve) => setTimeout(resolve, pause).unref());
      }
    }
  }

  /** Stops publishing and gives the claim up, so a standby relay takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.ticking;
    const held = this.holding;
    await this.end();
    if (held) await this.options.store.releaseClaim(RELAY_CONSUMER, this.options.owner).catch(() => undefined);
  }
}

import type { LoggerService } from '@nestjs/common';
import { backoffMs, type EventStore, type RecordedEvent, type Subscription } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';
import type { KafkaConfig } from '@oncegate/host-config';
import type { BusPublisher } from './bus-publisher';
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
  readonly publisher: BusPublisher;
  readonly config: KafkaConfig;
  readonly clock: Clock;
  readonly logger: LoggerService;
  /** This relay's name in the claim (`relay-kafka@host/instance`). */
  readonly owner: string;
}

/** What the relay has done so far, for its summary, the benchmark and the tests. */
export interface RelayProgress {
  readonly publishing: boolean;
  /** The last global position the bus holds (the checkpoint). */
  readonly relayed: number;
  /** Events sent and acknowledged by this relay since it started. */
  readonly sent: number;
}

/**
 * Publishes every event of the journal to Kafka, in the store's global order: exactly once for consumers that read
 * committed messages (`kafka.delivery: exactly_once`, Kafka transactions), or at least once.
 *
 * One relay publishes at a time: it holds the claim `relay-kafka` and renews it; any other relay on the store waits
 * and takes over when the claim lapses (a relay killed is replaced within `kafka.lease`). The publishing relay asks
 * its publisher where the bus stands (the checkpoint committed in Kafka with the last transaction), reads from there
 * with a catch-up subscription, and sends batches of up to 1,000 events. With transactions a batch and its checkpoint
 * are committed together, so after a crash or a failed send the relay resumes right after the last batch Kafka holds.
 * At least once, the checkpoint is the store's, written after the broker acknowledged the batch: after a crash the
 * next relay sends again what was sent but not yet checkpointed, and duplicates carry the same `ce_id`. The store's
 * checkpoint is written after every batch in both modes (the lag metric and the tests read it).
 */
export class EventRelay {
  private readonly log: LoggerService;
  private readonly leaseMs: number;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;
  private holding = false;
  private subscription: Subscription | undefined;
  /** Counts subscriptions: events handed over by an earlier one (before a resumption) are dropped. */
  private generation = 0;
  private publishing: Promise<void> | undefined;
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
    if (holds && !this.holding) {
      this.holding = true;
      // In the background: waiting for the broker must not hold up the claim's renewal.
      this.publishing = this.publishWhileHolding();
    } else if (!holds && this.holding) {
      this.log.warn(`another relay (${claim.owner}) holds ${RELAY_CONSUMER} now; this one stops publishing`, RELAY_CONSUMER);
      await this.end();
    }
  }

  /** Resumes from where the bus stands, publishes until a send fails, and resumes again, while this relay holds the claim. */
  private async publishWhileHolding(): Promise<void> {
    const { store, publisher, config } = this.options;
    let announced = false;
    while (this.holding) {
      let from: number;
      try {
        const onBus = await publisher.open();
        const stored = (await store.readCheckpoint(RELAY_CONSUMER)) ?? 0;
        // The bus's checkpoint is never behind the store's (that one is written after the commit), unless the relay ran at
        // least once for a while: then the store's is where the bus stands.
        from = Math.max(onBus ?? 0, stored);
      } catch (error) {
        await this.failed(error, `while connecting to ${config.brokers.join(', ')}`);
        continue;
      }
      if (!this.holding) break;
      if (!announced || this.failures > 0) {
        this.log.log(`publishing to ${config.brokers.join(', ')} from position ${from} (${publisher.delivery.replaceAll('_', ' ')})`, RELAY_CONSUMER);
        announced = true;
      }
      this.relayed = from;
      const generation = ++this.generation;
      this.subscription = store.subscribeToAll((event) => this.accept(event, generation), { from: { after: from } });
      await this.flushUntilFailure(generation);
      await this.dropSubscription();
    }
  }

  private async dropSubscription(): Promise<void> {
    this.generation += 1;
    this.wakeFlusher?.();
    for (const waiter of this.roomWaiters.splice(0)) waiter();
    const subscription = this.subscription;
    this.subscription = undefined;
    await subscription?.stop();
    this.buffer = [];
  }

  private async end(): Promise<void> {
    this.holding = false;
    await this.dropSubscription();
    await this.publishing;
    this.publishing = undefined;
  }

  /** The subscription's handler: queues the event, and waits while the queue is full (the broker is slow or away). */
  private async accept(event: RecordedEvent, generation: number): Promise<void> {
    if (!this.holding || generation !== this.generation) return;
    this.buffer.push(event);
    this.wakeFlusher?.();
    if (this.buffer.length >= MAX_BUFFERED) await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
  }

  /** Sends batches while this subscription lasts; returns after a failed send (the caller resumes from the bus). */
  private async flushUntilFailure(generation: number): Promise<void> {
    const { publisher, store, config } = this.options;
    while (this.holding && generation === this.generation) {
      if (this.buffer.length === 0) {
        await new Promise<void>((resolve) => (this.wakeFlusher = resolve));
        this.wakeFlusher = undefined;
        continue;
      }
      const batch = this.buffer.slice(0, BATCH_EVENTS);
      const last = batch[batch.length - 1]!.position;
      try {
        await publisher.publish(
          batch.map((event) => ({ topic: topicOf(event, config), message: cloudEventMessage(event, config.source) })),
          last,
        );
        // A relay that lost its claim meanwhile leaves the checkpoint to the one that holds it now.
        if (!this.holding) return;
        // The store's checkpoint first: what progress() says relayed is in it by then (the lag metric reads both).
        await store.storeCheckpoint(RELAY_CONSUMER, last);
        this.relayed = last;
        this.sent += batch.length;
        this.buffer.splice(0, batch.length);
        for (const waiter of this.roomWaiters.splice(0)) waiter();
        if (this.failures > 0) this.log.log(`publishing resumed after ${this.failures} failed tries`, RELAY_CONSUMER);
        this.failures = 0;
      } catch (error) {
        await this.failed(error, `${this.buffer.length} events waiting from position ${batch[0]!.position}`);
        return;
      }
    }
  }

  /** Counts a failure, says so (the 1st, 2nd, 4th, 8th… in a row), lets the connection go and pauses before the next try. */
  private async failed(error: unknown, where: string): Promise<void> {
    this.failures += 1;
    const pause = backoffMs(this.failures, 200, MAX_BACKOFF_MS);
    if ((this.failures & (this.failures - 1)) === 0) {
      this.log.error(`publishing failed (${this.failures} in a row, ${where}; next try in ${(pause / 1000).toFixed(1)} s): ${(error as Error).message}`, RELAY_CONSUMER);
    }
    await this.options.publisher.reset();
    // Cut short when the relay stops or loses its claim.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, pause);
      this.wakeFlusher = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wakeFlusher = undefined;
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

import { Logger } from '@nestjs/common';
import { BaseRpcContext, Server, type CustomTransportStrategy } from '@nestjs/microservices';
import { isObservable, lastValueFrom } from 'rxjs';
import { backoffMs, EventStoreUnavailableError, type EventStore, type RecordedEvent, type SubscriptionStart, type Subscription } from '@oncegate/event-store';

/** What a handler can learn about the event beyond its payload. */
export class EventStoreContext extends BaseRpcContext<[RecordedEvent, string]> {
  get event(): RecordedEvent {
    return this.args[0];
  }
  /** The durable consumer (service) handling it. */
  get consumer(): string {
    return this.args[1];
  }
}

export interface EventStoreTransportOptions {
  readonly store: EventStore;
  /** Durable consumer name: one per service; it resumes after its checkpoint on restart. */
  readonly consumer: string;
  /** Only streams with these prefixes. Default: `['execution-']`. */
  readonly streamPrefixes?: readonly string[];
  /** Where a consumer without a checkpoint starts. Default: `'start'`. */
  readonly from?: SubscriptionStart;
  /** Attempts per event before it is logged and skipped. Default: 5. Storage being unavailable does not count. */
  readonly attempts?: number;
  /** Longest wait between two tries while the store cannot write. Default: 5000 ms. */
  readonly unavailableRetryMaxMs?: number;
}

/** Thrown into the subscription when it is closed while waiting for storage, so the event is not checkpointed. */
class StoppedWhileStorageUnavailable extends Error {
  constructor() {
    super('stopped while the store could not write; the event is handled again at the next start');
  }
}

/**
 * A `@nestjs/microservices` transport fed by an event-store subscription: `@EventPattern('Dispatched')` handlers
 * of a service receive the recorded events of that type, in global order, one at a time. Services therefore talk
 * only through events, and any service can run as its own process against a shared store.
 *
 * Handlers must be idempotent (they load the stream and decide from its state), because delivery is at least
 * once: the checkpoint moves after the handler resolves.
 */
export class EventStoreTransport extends Server implements CustomTransportStrategy {
  private subscription: Subscription | undefined;
  private readonly log: Logger;
  private stopping = false;

  constructor(private readonly options: EventStoreTransportOptions) {
    super();
    this.log = new Logger(`EventStoreTransport:${options.consumer}`);
  }

  listen(callback: () => void): void {
    const eventTypes = [...this.messageHandlers.keys()];
    if (eventTypes.length === 0) {
      callback();
      return;
    }
    this.subscription = this.options.store.subscribeToAll((event) => this.deliver(event), {
      consumer: this.options.consumer,
      from: this.options.from,
      filter: { streamPrefixes: this.options.streamPrefixes ?? ['execution-'], eventTypes },
    });
    this.subscription.done.catch((error: unknown) => this.log.error(`subscription stopped: ${String(error)}`));
    void this.subscription.caughtUp.then(() => callback());
  }

  private async deliver(event: RecordedEvent): Promise<void> {
    const handler = this.getHandlerByPattern(event.type);
    if (!handler) return;
    const attempts = this.options.attempts ?? 5;
    let unavailable = 0;
    for (let attempt = 1; ; attempt += 1) {
      try {
        const result = await handler(event, new EventStoreContext([event, this.options.consumer]));
        if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
        if (unavailable > 0) this.log.log(`storage is back: handled ${event.type} ${event.streamId}@${event.revision} after ${unavailable} tries`);
        return;
      } catch (error) {
        const where = `${event.type} ${event.streamId}@${event.revision} (position ${event.position})`;
        if (error instanceof EventStoreUnavailableError) {
          // Not the handler's fault: the event waits (and the ones after it) until the store can write again.
          if (this.stopping) throw new StoppedWhileStorageUnavailable();
          unavailable += 1;
          attempt -= 1;
          if ((unavailable & (unavailable - 1)) === 0) this.log.warn(`${where} waits for storage (${unavailable} tries): ${error.message}`);
          const maxMs = this.options.unavailableRetryMaxMs ?? 5000;
          await new Promise((resolve) => setTimeout(resolve, backoffMs(unavailable, 50, maxMs)));
          continue;
        }
        if (attempt >= attempts) {
          this.log.error(`gave up on ${where} after ${attempt} attempts: ${(error as Error)?.message ?? error}`);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt, 20)));
      }
    }
  }

  /** The subscription does not emit transport events. */
  on(): void {}

  unwrap<T>(): T {
    return this.subscription as T;
  }

  async close(): Promise<void> {
    this.stopping = true;
    await this.subscription?.stop();
    this.subscription = undefined;
  }
}

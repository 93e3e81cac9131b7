import { Logger } from '@nestjs/common';
import { BaseRpcContext, Server, type CustomTransportStrategy } from '@nestjs/microservices';
import { isObservable, lastValueFrom } from 'rxjs';
import type { EventStore, RecordedEvent, SubscriptionStart, Subscription } from '@oncegate/event-store';

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
  /** Attempts per event before it is logged and skipped. Default: 5. */
  readonly attempts?: number;
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
    for (let attempt = 1; ; attempt += 1) {
      try {
        const result = await handler(event, new EventStoreContext([event, this.options.consumer]));
        if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
        return;
      } catch (error) {
        const where = `${event.type} ${event.streamId}@${event.revision} (position ${event.position})`;
        if (attempt >= attempts) {
          this.log.error(`gave up on ${where} after ${attempt} attempts: ${(error as Error)?.message ?? error}`);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** attempt));
      }
    }
  }

  /** The subscription does not emit transport events. */
  on(): void {}

  unwrap<T>(): T {
    return this.subscription as T;
  }

  async close(): Promise<void> {
    await this.subscription?.stop();
    this.subscription = undefined;
  }
}

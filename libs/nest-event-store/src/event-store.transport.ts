import { Logger } from '@nestjs/common';
import { BaseRpcContext, Server, type CustomTransportStrategy } from '@nestjs/microservices';
import { isObservable, lastValueFrom } from 'rxjs';
import { parkedStream } from '@oncegate/domain';
import {
  backoffMs,
  EventStoreUnavailableError,
  partitionOf,
  subscribeAsGroupMember,
  type EventStore,
  type GroupSubscription,
  type RecordedEvent,
  type SubscriptionStart,
  type Subscription,
} from '@oncegate/event-store';
import { appendParked, PARKED_EVENT_TYPES, readParked, type EventParkedData, type ParkedEvent } from './parked-events';

/**
 * A handler called as its controller's method, without Nest's per-call pipeline (see `directEventHandlers`): given
 * the event and its context, it resolves or rejects as the method does.
 */
export type DirectEventHandler = (event: RecordedEvent, context: EventStoreContext) => unknown;

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
  /**
   * Attempts per event before it is parked (with its error, on `parked-<consumer>`; the later events of its stream
   * wait behind it until an operator replays it). Default: 5. Storage being unavailable does not count.
   */
  readonly attempts?: number;
  /** Longest wait between two tries while the store cannot write. Default: 5000 ms. */
  readonly unavailableRetryMaxMs?: number;
  /**
   * Runs as one member of the consumer's group (`libs/event-store/src/consumer-group.ts`): instances of the
   * service share its events by partition, one execution at a time per instance. Absent: this process handles
   * every event under the consumer's single checkpoint (the embedded gateway).
   */
  readonly group?: { readonly member: string; readonly partitions?: number; readonly leaseMs?: number };
  /**
   * Test only: asked before every handling; when it returns a reason, the handling fails with it (a dependency of
   * the handlers gone), as a real fault would: tried again, then parked.
   */
  readonly fault?: () => string | undefined;
  /** Told of every event this consumer took: handled, or parked (its own failure, or behind a parked event). */
  readonly took?: (result: 'handled' | 'parked') => void;
  /** Wraps each handling of an event (a trace span around it, say); it must call `handle` once and return its promise. */
  readonly around?: <T>(event: RecordedEvent, handle: () => Promise<T>) => Promise<T>;
}

/** What handling an event came to: handled, or failed for good (to be parked) after its attempts. */
type HandlingOutcome = { readonly ok: true } | { readonly ok: false; readonly error: string; readonly attempts: number };
const HANDLED = { ok: true } as const satisfies HandlingOutcome;

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
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
  private subscription: Subscription | GroupSubscription | undefined;
  private caughtUpOnce = false;
  private replays: Subscription | undefined;
  private readonly log: Logger;
  private stopping = false;
  /** Streams with a parked event, and the first parked event of each: their later events wait behind it. */
  private readonly blocked = new Map<string, string>();
  /** Ids of the events parked and not yet replayed: delivered again (after a restart or a take-over), they wait. */
  private readonly parkedEventIds = new Set<string>();
  /**
   * Each event type's handler, looked up once: the handlers are all registered before `listen`, and Nest's own
   * look-up normalises the pattern again for every event (it was 2 % of the gateway's busy time).
   */
  private readonly handlers = new Map<string, ReturnType<Server['getHandlerByPattern']>>();
  /** Handlers called as their methods (`invokeDirectly`), by event type; the others go through Nest's pipeline. */
  private direct: ReadonlyMap<string, DirectEventHandler> = new Map();
  /** Work queued by `inTurn` and not yet settled: while none is and nothing is parked, an event needs no turn. */
  private turnsQueued = 0;
  /** Parking and replaying take turns, so an event is never judged blocked while its stream is being unblocked. */
  private turn: Promise<unknown> = Promise.resolve();
  private replaying = false;
  private replayAgain = false;

  constructor(private readonly options: EventStoreTransportOptions) {
    super();
    this.log = new Logger(`EventStoreTransport:${options.consumer}`);
  }

  /**
   * Calls these handlers as their controllers' methods instead of through Nest's per-call pipeline (its context,
   * parameter pipes, interceptors and exception zone: several promises and closures per event, for handlers that
   * use none of them). `createEventStoreMicroservice` finds them; handlers it does not name go through Nest.
   */
  invokeDirectly(handlers: ReadonlyMap<string, DirectEventHandler>): void {
    this.direct = handlers;
  }

  listen(callback: () => void): void {
    const eventTypes = [...this.messageHandlers.keys()];
    if (eventTypes.length === 0) {
      callback();
      return;
    }
    void this.start(eventTypes).then(callback, (error: unknown) => this.log.error(`could not start: ${String(error)}`));
  }

  private async start(eventTypes: string[]): Promise<void> {
    const { store, consumer } = this.options;
    if (this.options.group === undefined) {
      for (const parked of (await readParked(store, consumer)).open) this.blockBehind(parked.streamId, parked.parkedId, parked.eventId);
    }
    this.follow(eventTypes, 0);
    // Replays asked for from now on; those asked while the service was down are looked at once, below.
    this.followReplays(0);
    if (this.blocked.size > 0) this.replayRequested();
    await this.subscription!.caughtUp;
  }

  /** Follows the replay requests of this consumer's parked events, from the end (see `start`). */
  private followReplays(failures: number): void {
    const replays = this.options.store.subscribeToAll(() => this.replayRequested(), {
      from: 'end',
      filter: { streamPrefixes: [parkedStream(this.options.consumer)], eventTypes: [PARKED_EVENT_TYPES.replayRequested] },
    });
    this.replays = replays;
    this.remakeWhenFailed(replays, 'following replay requests', () => this.replays === replays, failures, (inRow) => {
      this.followReplays(inRow);
      // Requests made while nothing followed them are looked at now.
      this.replayRequested();
    });
  }

  /**
   * Makes a subscription again (`remake`) when it fails, after a pause: 1 s, doubling for failures in a row (one that
   * caught up first counts as a fresh start), at most 30 s. A subscription that stopped would leave the service
   * running with nothing to do.
   */
  private remakeWhenFailed(subscription: Subscription | GroupSubscription, what: string, current: () => boolean, failures: number, remake: (inRow: number) => void): void {
    let caughtUp = false;
    void subscription.caughtUp.then(() => (caughtUp = true), () => undefined);
    subscription.done.catch((error: unknown) => {
      if (this.stopping || !current()) return;
      const inRow = caughtUp ? 1 : failures + 1;
      const pauseMs = backoffMs(inRow - 1, 1000, 30_000);
      this.log.error(`${what} stopped: ${String(error)}; following again in ${pauseMs} ms`);
      setTimeout(() => {
        if (!this.stopping && current()) remake(inRow);
      }, pauseMs).unref();
    });
  }

  /**
   * Subscribes to the service's events: alone, from the consumer's checkpoint, or as a member of its group. A
   * subscription that fails is made again (see `remakeWhenFailed`), from the checkpoint or the partitions'
   * checkpoints: a service whose subscription stopped would leave every later execution unanswered.
   */
  private follow(eventTypes: string[], failures: number): void {
    const { store, consumer } = this.options;
    const filter = { streamPrefixes: this.options.streamPrefixes ?? ['execution-'], eventTypes };
    const group = this.options.group;
    if (group === undefined) {
      // Unhurried: in a process where a step was taken inline, the services' deliveries of its commit find it taken,
      // and wait until the call's own continuations (and the requests they send) have run.
      this.subscription = store.subscribeToAll((event) => this.deliver(event), { consumer, from: this.options.from, filter, unhurried: true });
    } else {
      this.subscription = subscribeAsGroupMember(store, (event) => this.deliver(event), {
        group: consumer,
        member: group.member,
        partitions: group.partitions,
        leaseMs: group.leaseMs,
        filter,
        log: (message, level) => (level === 'warn' ? this.log.warn(message) : this.log.debug(message)),
        // A partition taken over brings the parked events of its streams: their later events wait behind them.
        onAssigned: (partition, partitions) =>
          this.inTurn(async () => {
            // What this instance knew of the partition may be stale: another instance may have replayed since.
            for (const streamId of [...this.blocked.keys()]) if (partitionOf(streamId, partitions) === partition) this.blocked.delete(streamId);
            const open = (await readParked(store, consumer)).open.filter((parked) => partitionOf(parked.streamId, partitions) === partition);
            for (const parked of open) this.blockBehind(parked.streamId, parked.parkedId, parked.eventId);
            if (open.some((parked) => parked.replayRequested)) setImmediate(() => this.replayRequested());
          }),
      });
    }
    const subscription = this.subscription;
    void subscription.caughtUp.then(() => (this.caughtUpOnce = true), () => undefined);
    this.remakeWhenFailed(subscription, 'subscription', () => this.subscription === subscription, failures, (inRow) => this.follow(eventTypes, inRow));
  }

  private handlerFor(type: string): ReturnType<Server['getHandlerByPattern']> {
    if (!this.handlers.has(type)) this.handlers.set(type, this.getHandlerByPattern(type));
    return this.handlers.get(type)!;
  }

  /**
   * Hands the event to its handler. With nothing parked and no parking or replay under way, the event waits behind
   * nothing and takes no turn; a handler that returns without a promise (most deliveries to a service the event is
   * not for) is then done without one: `undefined` says the event was handled.
   */
  private deliver(event: RecordedEvent): Promise<void> | undefined {
    if (!this.handlerFor(event.type)) return undefined;
    if (this.blocked.size !== 0 || this.turnsQueued !== 0) return this.deliverInTurn(event);
    const outcome = this.handle(event);
    if (!(outcome instanceof Promise)) {
      this.options.took?.('handled');
      return undefined;
    }
    return outcome.then((settled) => (settled.ok ? this.options.took?.('handled') : this.settled(event, settled)));
  }

  private async deliverInTurn(event: RecordedEvent): Promise<void> {
    const parkedBehind = await this.inTurn(async () => {
      const head = this.blocked.get(event.streamId);
      if (head === undefined) return false;
      if (this.parkedEventIds.has(event.id)) return true;
      await this.park(event, `waits behind the parked event ${head} of its stream`, 0, head);
      return true;
    });
    if (parkedBehind) {
      this.options.took?.('parked');
      return;
    }
    await this.settled(event, await this.handle(event));
  }

  /** Counts what became of the event; one that failed for good is parked first. */
  private async settled(event: RecordedEvent, outcome: HandlingOutcome): Promise<void> {
    if (!outcome.ok) await this.inTurn(() => this.park(event, outcome.error, outcome.attempts, null));
    this.options.took?.(outcome.ok ? 'handled' : 'parked');
  }

  /**
   * Runs the event's handler, trying again with a pause; never rejects for the handler's own failure. The store being
   * unable to write is not the handler's fault: the event (and the ones after it) waits until the store can write
   * again, without counting against the attempts. A first attempt done without a promise is answered without one.
   */
  private handle(event: RecordedEvent): typeof HANDLED | Promise<HandlingOutcome> {
    // The first attempt alone, as nearly every event needs no more: the retries' closures are made only on a failure.
    let attempted: Promise<void> | undefined;
    try {
      attempted = this.attempt(event);
    } catch (error) {
      return this.handleAgain(event, error);
    }
    if (attempted === undefined) return HANDLED;
    return attempted.then(
      () => HANDLED,
      (error: unknown) => this.handleAgain(event, error),
    );
  }

  /** One attempt at the event, inside `around` when given (a trace span, say); `undefined` when it is done already. */
  private attempt(event: RecordedEvent): Promise<void> | undefined {
    return this.options.around ? this.options.around(event, () => this.invoke(event) ?? Promise.resolve()) : this.invoke(event);
  }

  /**
   * Calls the event's handler once, and waits for the promise or observable it may answer with; `undefined` when it
   * answered with neither.
   */
  private invoke(event: RecordedEvent): Promise<void> | undefined {
    const fault = this.options.fault?.();
    if (fault !== undefined) throw new Error(fault);
    const handler = this.direct.get(event.type) ?? this.handlerFor(event.type)!;
    const result = handler(event, new EventStoreContext([event, this.options.consumer]));
    if (isObservable(result)) return lastValueFrom(result, { defaultValue: undefined }).then(() => undefined);
    if (!isPromiseLike(result)) return undefined;
    return Promise.resolve(result).then((value) => (isObservable(value) ? lastValueFrom(value, { defaultValue: undefined }).then(() => undefined) : undefined));
  }

  /** After the first attempt failed with `firstError`: the waits for storage and the further attempts. */
  private async handleAgain(event: RecordedEvent, firstError: unknown): Promise<HandlingOutcome> {
    const attempts = this.options.attempts ?? 5;
    const where = () => `${event.type} ${event.streamId}@${event.revision} (position ${event.position})`;
    const run = async (): Promise<void> => {
      await this.attempt(event);
    };
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.whenWritable(where, run, attempt === 1 ? { error: firstError } : undefined);
        return HANDLED;
      } catch (error) {
        if (error instanceof StoppedWhileStorageUnavailable) throw error;
        if (attempt >= attempts) return { ok: false, error: describeError(error), attempts: attempt };
        this.log.warn(`${where()} failed (attempt ${attempt} of ${attempts}), trying again: ${describeError(error)}`);
        await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt, 20)));
      }
    }
  }

  /** Sets the event aside on the consumer's parked stream; the later events of its stream wait behind it. */
  private async park(event: RecordedEvent, error: string, attempts: number, behind: string | null): Promise<void> {
    const { store, consumer } = this.options;
    const data: EventParkedData = {
      consumer,
      position: event.position,
      eventId: event.id,
      streamId: event.streamId,
      revision: event.revision,
      type: event.type,
      error,
      attempts,
      behind,
    };
    const where = `${event.type} ${event.streamId}@${event.revision} (position ${event.position})`;
    // A handler that failed while the store went away may find it still away: the event waits to be parked, as it
    // would to be handled, and the subscription goes on once it is.
    const parkedId = await this.whenWritable(() => `parking ${where}`, () => appendParked(store, consumer, PARKED_EVENT_TYPES.parked, data, `service:${consumer}`));
    this.blockBehind(event.streamId, parkedId, event.id);
    if (behind === null) this.log.error(`parked ${where} as ${parkedId} after ${attempts} attempts: ${error}; see oncegate parked list`);
    else this.log.warn(`parked ${where} as ${parkedId}: ${error}`);
  }

  /**
   * Runs `write` until the store takes it, pausing (at most `unavailableRetryMaxMs`) while it cannot write; any other
   * error is thrown. Stopped meanwhile, it throws so that the event is not checkpointed.
   */
  private async whenWritable<T>(what: () => string, write: () => Promise<T>, tried?: { readonly error: unknown }): Promise<T> {
    let failed = tried;
    for (let unavailable = 1; ; unavailable += 1) {
      try {
        // A first try made by the caller counts as this loop's first.
        if (failed !== undefined) throw failed.error;
        const done = await write();
        if (unavailable > 1) this.log.log(`storage is back: ${what()} done after ${unavailable} tries`);
        return done;
      } catch (error) {
        failed = undefined;
        if (!(error instanceof EventStoreUnavailableError)) throw error;
        if (this.stopping) throw new StoppedWhileStorageUnavailable();
        if ((unavailable & (unavailable - 1)) === 0) this.log.warn(`${what()} waits for storage (${unavailable} tries): ${error.message}`);
        await new Promise((resolve) => setTimeout(resolve, backoffMs(unavailable, 50, this.options.unavailableRetryMaxMs ?? 5000)));
      }
    }
  }

  private blockBehind(streamId: string, parkedId: string, eventId: string): void {
    if (!this.blocked.has(streamId)) this.blocked.set(streamId, parkedId);
    this.parkedEventIds.add(eventId);
  }

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    this.turnsQueued += 1;
    const run = this.turn.then(work, work).finally(() => (this.turnsQueued -= 1));
    this.turn = run.catch(() => undefined);
    return run;
  }

  /** Replays what an operator asked for; a request that arrives meanwhile makes it look again. */
  private replayRequested(): void {
    if (this.replaying) {
      this.replayAgain = true;
      return;
    }
    this.replaying = true;
    void (async () => {
      try {
        do {
          this.replayAgain = false;
          await this.replayRound();
        } while (this.replayAgain && !this.stopping);
      } catch (error) {
        this.log.error(`replaying parked events failed: ${describeError(error)}`);
      } finally {
        this.replaying = false;
      }
    })();
  }

  /**
   * For each stream whose first parked event an operator asked to replay: its parked events are handled again in
   * journal order; the first that fails again stays parked (with the new error) and stops its stream there.
   */
  private async replayRound(): Promise<void> {
    const { store, consumer } = this.options;
    // In a group, each instance replays the streams of the partitions it holds.
    const owns = (streamId: string) => !('owns' in this.subscription!) || this.subscription.owns(streamId);
    const asked = (await readParked(store, consumer)).open.filter((parked) => parked.behind === null && parked.replayRequested && owns(parked.streamId));
    for (const streamId of new Set(asked.map((parked) => parked.streamId))) {
      if (this.stopping) return;
      await this.inTurn(async () => {
        const waiting = (await readParked(store, consumer)).open.filter((parked) => parked.streamId === streamId);
        for (const parked of waiting) {
          const event = await this.eventOf(parked);
          const outcome = event === undefined ? { ok: false as const, error: `event ${parked.eventId} is not at position ${parked.position}`, attempts: 0 } : await this.handle(event);
          if (!outcome.ok) {
            await appendParked(store, consumer, PARKED_EVENT_TYPES.replayFailed, { parkedId: parked.parkedId, error: outcome.error }, `service:${consumer}`);
            this.blocked.set(streamId, parked.parkedId);
            this.log.error(`replaying ${parked.parkedId} (${parked.type} ${parked.streamId}@${parked.revision}) failed again: ${outcome.error}`);
            return;
          }
          await appendParked(store, consumer, PARKED_EVENT_TYPES.handled, { parkedId: parked.parkedId }, `service:${consumer}`);
          this.parkedEventIds.delete(parked.eventId);
          this.log.log(`replayed ${parked.parkedId} (${parked.type} ${parked.streamId}@${parked.revision})`);
        }
        this.blocked.delete(streamId);
      });
    }
  }

  private async eventOf(parked: ParkedEvent): Promise<RecordedEvent | undefined> {
    const [event] = (await this.options.store.readAll({ after: parked.position - 1, maxCount: 1 })).events;
    return event?.id === parked.eventId ? event : undefined;
  }

  /** Whether the subscription has read, since the start, everything that was committed when it started. */
  hasCaughtUp(): boolean {
    return this.caughtUpOnce;
  }

  /** How far this consumer has read the store: the position of the last event it handled or passed over. */
  readPosition(): number {
    return this.subscription?.position ?? 0;
  }

  /** The subscription does not emit transport events. */
  on(): void {}

  unwrap<T>(): T {
    return this.subscription as T;
  }

  async close(): Promise<void> {
    this.stopping = true;
    await this.replays?.stop();
    await this.subscription?.stop();
    this.subscription = undefined;
    this.replays = undefined;
  }
}

/** A handler's error as kept with a parked event: its message, bounded. */
function describeError(error: unknown): string {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return message.length > 500 ? `${message.slice(0, 500)}…` : message;
}

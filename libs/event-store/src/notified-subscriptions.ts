import { settledOrAborted } from './abortable';
import { runCatchUpSubscription, type SubscriptionSource } from './catch-up-subscription';
import type { EventFilter, EventHandler, SubscribeOptions, Subscription } from './event-store';

/**
 * How a listener reports what it heard: a commit up to `last`, with the types of its events when the adapter's
 * notification names them, and the streams it wrote when the notification carries its events; `last` `undefined`:
 * anything may have been committed (a notification may have been lost).
 */
export type CommitReport = (last: number | undefined, types?: readonly string[], streams?: readonly string[]) => void;

/**
 * A store's one connection that hears of every commit, whichever process made it (PostgreSQL's LISTEN, KurrentDB's
 * live subscription to the log). The adapter says how to make and end its connection; this keeps at most one, made on
 * the first need and made again on the next need after it is lost. Making it and losing it are both reported as
 * "anything may have been committed": commits in between were heard by nobody.
 */
export abstract class CommitListener<Connection> {
  private connection: Connection | undefined;
  private connecting: Promise<void> | undefined;
  private closed = false;

  constructor(protected readonly report: CommitReport) {}

  /** Whether the connection is up: every commit from now on is heard. */
  get listening(): boolean {
    return this.connection !== undefined;
  }

  /** Resolves once the store listens, or once making the connection failed (the poll then stands in until a later try succeeds). */
  ensure(): Promise<void> {
    if (this.closed || this.connection !== undefined) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  /**
   * Makes a connection that reports what it hears through `report` and calls `lost` when it fails or ends;
   * `undefined` when it could not be made (whatever it left open is ended by then).
   */
  protected abstract open(): Promise<Connection | undefined>;

  /** Ends a connection; never rejects. */
  protected abstract end(connection: Connection): Promise<void>;

  private async connect(): Promise<void> {
    const connection = await this.open();
    if (connection === undefined) return;
    if (this.closed) {
      await this.end(connection);
      return;
    }
    this.connection = connection;
    // Commits made while nobody listened were never heard here.
    this.report(undefined);
  }

  /** The connection failed or ended: anything may have been committed since, and the next `ensure` makes another. */
  protected lost(connection: Connection): void {
    if (this.connection !== connection) return;
    this.connection = undefined;
    void this.end(connection);
    this.report(undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.connecting;
    const connection = this.connection;
    this.connection = undefined;
    if (connection !== undefined) await this.end(connection);
  }
}

export interface NotifiedSubscriptionsOptions {
  /** The adapter's reads and checkpoints, which the shared catch-up loop runs on (the store itself). */
  readonly source: Pick<SubscriptionSource, 'readAll' | 'headPosition' | 'readCheckpoint' | 'storeCheckpoint'>;
  /** The highest committed position, read from the server. */
  readonly head: () => Promise<number>;
  /** Makes the store's listener; it reports what it hears to `report`. */
  readonly listen: (report: CommitReport) => CommitListener<unknown>;
  /** How often, while any subscription waits, the head is read in case the listener missed a commit. */
  readonly pollIntervalMs: number;
  /** Whether the store is closing: a wait then returns at once. */
  readonly closed: () => boolean;
  /**
   * Whether the listener, for as long as it is connected, hears of every commit with the types of its events. A wait
   * then tells from what was heard since the connection was made (and the head read when it was) whether it must read
   * now, without reading the head. Default `false`: every wait reads the head.
   */
  readonly heardIsComplete?: boolean;
}

interface Waiter {
  readonly position: number;
  /** Event types the waiting subscription takes (absent or empty: every type). */
  readonly types: readonly string[] | undefined;
  /** Prefixes of the streams the waiting subscription takes (absent or empty: every stream). */
  readonly prefixes: readonly string[] | undefined;
  readonly wake: () => void;
}

/** Whether a commit of these types and streams (either unknown: any) may hold an event the waiter takes. */
function mayConcern(waiter: Waiter, types: readonly string[] | undefined, streams: readonly string[] | undefined): boolean {
  const takes = waiter.types;
  if (types !== undefined && takes !== undefined && takes.length > 0 && !types.some((type) => takes.includes(type))) return false;
  const prefixes = waiter.prefixes;
  if (streams === undefined || prefixes === undefined || prefixes.length === 0) return true;
  return streams.some((stream) => prefixes.some((prefix) => stream.startsWith(prefix)));
}

/**
 * The subscriptions of a store whose commits are heard through a listener (see {@link CommitListener}): the shared
 * catch-up loop, and the wait it makes at the head, woken by what the listener hears, by this process's own commits
 * (`wake`) and, as the fallback for a commit the listener missed, by reading the head every `pollIntervalMs` while
 * anyone waits. The adapter keeps only its native parts: its reads, its listener and its commits.
 */
export class NotifiedSubscriptions {
  private readonly listener: CommitListener<unknown>;
  private readonly waiters = new Set<Waiter>();
  private readonly subscriptions = new Set<Subscription>();
  private pollTimer: NodeJS.Timeout | undefined;
  /**
   * With `heardIsComplete`, while the listener is connected: the last position heard for each event type (`*` for
   * commits whose types were not named). A waiter behind one of its types needs no read of the head to know it must read.
   */
  private heard = new Map<string, number>();
  /** Whether `heard` covers every commit: set once the head as of the listener's connection was read. */
  private heardComplete = false;
  private heardEpoch = 0;
  /** The highest position in `heard`: a commit at or past it has been heard (or the head read when the listener connected). */
  private heardMax = 0;
  /** Callers of `heardSince` waiting for `heardMax` to reach their position. */
  private readonly heardWaiters = new Set<() => void>();

  constructor(private readonly options: NotifiedSubscriptionsOptions) {
    this.listener = options.listen((last, types, streams) => {
      if (last === undefined) this.forgetHeard();
      else if (options.heardIsComplete === true) {
        for (const type of types ?? ['*']) this.heard.set(type, Math.max(last, this.heard.get(type) ?? 0));
        this.raiseHeard(last);
      }
      this.wake(last, types, streams);
    });
  }

  /** Whether the listener is connected: every commit from now on is heard, and wakes its waiters. */
  get listening(): boolean {
    return this.listener.listening;
  }

  /** A catch-up subscription on the adapter's source, stopped by `close`. */
  subscribe(handler: EventHandler, options: SubscribeOptions = {}): Subscription {
    const source = this.options.source;
    const subscription = runCatchUpSubscription(
      {
        readAll: (readOptions) => source.readAll(readOptions),
        headPosition: () => source.headPosition(),
        readCheckpoint: (consumer) => source.readCheckpoint(consumer),
        storeCheckpoint: (consumer, position) => source.storeCheckpoint(consumer, position),
        waitForAppend: (position, signal, filter, onIdle) => this.waitForAppend(position, signal, filter, onIdle),
      },
      handler,
      options,
    );
    this.subscriptions.add(subscription);
    subscription.done.finally(() => this.subscriptions.delete(subscription)).catch(() => undefined);
    return subscription;
  }

  /**
   * Wakes the waiters behind `last` (every waiter when it is unknown). A commit whose event types are known wakes
   * only the subscriptions that take one of them, and one whose streams are known only those that take one of its
   * streams: the others would read nothing, and their next read, woken by a commit they take (or by the poll), covers
   * this one too.
   */
  wake(last: number | undefined, types?: readonly string[], streams?: readonly string[]): void {
    for (const waiter of [...this.waiters]) {
      if (last !== undefined && (waiter.position >= last || !mayConcern(waiter, types, streams))) continue;
      waiter.wake();
    }
  }

  /**
   * Whether a commit naming one of `types` (or naming none) was heard after position `after`, told from what the
   * listener heard, without a query. It answers once a commit at or past `through` has been heard: a commit whose
   * append was answered before the one at `through` was inserted is then heard too, because the server hands out
   * notifications in the order their transactions commit and an append is answered only once its notification is
   * committed (the adapter's side of `heardIsComplete`). `through` in the answer is how far that holds: every position
   * up to it was committed when the answer was given. `undefined` when it cannot tell: the listener is not connected
   * (it is asked to connect), it has not yet read the head it connected at, or nothing at `through` was heard within
   * `waitMs`.
   */
  async heardSince(after: number, through: number, types: readonly string[], waitMs: number): Promise<{ changed: boolean; through: number } | undefined> {
    if (this.options.heardIsComplete !== true || this.options.closed()) return undefined;
    if (!this.listener.listening) {
      void this.listener.ensure();
      return undefined;
    }
    const deadline = Date.now() + waitMs;
    while (!this.heardComplete || this.heardMax < through) {
      const left = deadline - Date.now();
      if (left <= 0 || !this.listener.listening || this.options.closed()) return undefined;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.heardWaiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, left);
        this.heardWaiters.add(done);
      });
    }
    const changed = ['*', ...types].some((type) => (this.heard.get(type) ?? 0) > after);
    return { changed, through: this.heardMax };
  }

  /** Whether a commit after `position` naming one of `types` (absent or empty: any type), or naming none, was heard. */
  private heardAfter(position: number, types: readonly string[] | undefined): boolean {
    if ((this.heard.get('*') ?? 0) > position) return true;
    if (types === undefined || types.length === 0) {
      for (const heard of this.heard.values()) if (heard > position) return true;
      return false;
    }
    for (const type of types) if ((this.heard.get(type) ?? 0) > position) return true;
    return false;
  }

  private raiseHeard(position: number): void {
    if (position <= this.heardMax) return;
    this.heardMax = position;
    for (const waiter of [...this.heardWaiters]) waiter();
  }

  /** Call once the store's own writes are done: stops every subscription, wakes every waiter and closes the listener. */
  async close(): Promise<void> {
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
    this.wake(undefined);
    for (const waiter of [...this.heardWaiters]) waiter();
    if (this.pollTimer !== undefined) clearInterval(this.pollTimer);
    await this.listener.close();
  }

  /**
   * Resolves once an event after `position` may be committed. The waiter is registered (and the store listens)
   * before the head is read, so a commit after that read is always heard of: by the listener, by this process's own
   * commit or, if the listener missed it, by the poll.
   */
  private async waitForAppend(position: number, signal: AbortSignal, filter: EventFilter | undefined, onIdle?: () => void): Promise<void> {
    const closed = this.options.closed;
    if (signal.aborted || closed()) return;
    if (!this.listener.listening) {
      // A stop while the listening connection is being made does not wait for it, nor wait after it.
      await settledOrAborted(this.listener.ensure(), signal);
      if (signal.aborted || closed()) return;
    }
    await new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        position,
        types: filter?.eventTypes,
        prefixes: filter?.streamPrefixes,
        wake: () => {
          this.waiters.delete(waiter);
          signal.removeEventListener('abort', waiter.wake);
          resolve();
        },
      };
      this.waiters.add(waiter);
      signal.addEventListener('abort', waiter.wake, { once: true });
      this.ensurePolling();
      if (this.listener.listening && this.heardComplete) {
        // Every commit since the listener connected is heard: what was heard before this waiter says whether it must
        // read now; a later commit wakes it.
        if (this.heardAfter(position, waiter.types)) waiter.wake();
        else onIdle?.();
        return;
      }
      this.options.head().then(
        (head) => {
          if (head > position || closed()) waiter.wake();
          else onIdle?.();
        },
        (error: unknown) => {
          this.waiters.delete(waiter);
          signal.removeEventListener('abort', waiter.wake);
          reject(error);
        },
      );
    });
  }

  /**
   * The listener connected or dropped: commits may have been missed. With `heardIsComplete`, the head read now
   * stands for every commit before it; commits after it are heard.
   */
  private forgetHeard(): void {
    this.heard = new Map();
    this.heardComplete = false;
    this.heardMax = 0;
    // A `heardSince` waiting on the dropped connection gives up rather than trust what it heard.
    for (const waiter of [...this.heardWaiters]) waiter();
    const epoch = ++this.heardEpoch;
    if (this.options.heardIsComplete !== true || this.options.closed() || !this.listener.listening) return;
    this.options.head().then(
      (head) => {
        if (epoch !== this.heardEpoch) return;
        this.heard.set('*', Math.max(head, this.heard.get('*') ?? 0));
        this.heardComplete = true;
        this.raiseHeard(head);
      },
      () => undefined,
    );
  }

  /** The fallback for a missed commit: while anyone waits, read the head now and then, and try to listen again. */
  private ensurePolling(): void {
    if (this.pollTimer !== undefined) return;
    this.pollTimer = setInterval(() => {
      if (this.options.closed() || this.waiters.size === 0) {
        clearInterval(this.pollTimer);
        this.pollTimer = undefined;
        return;
      }
      void this.listener.ensure();
      this.options.head().then(
        (head) => this.wake(head),
        () => undefined,
      );
    }, this.options.pollIntervalMs);
    this.pollTimer.unref();
  }
}

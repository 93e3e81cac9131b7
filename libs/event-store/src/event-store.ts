/**
 * The event-store port. Every adapter (SQLite, PostgreSQL, KurrentDB) implements this interface and
 * runs the shared contract suite in `../testing`. Positions and revisions are plain numbers: revisions
 * start at 0 within a stream, global positions start at 1 and grow in commit order.
 */

/** What the writer believes the stream's last revision to be. */
export type ExpectedRevision =
  /** Append whatever the stream holds. */
  | 'any'
  /** The stream must not exist yet. */
  | 'no_stream'
  /** The stream must already hold at least one event. */
  | 'stream_exists'
  /** The stream's last revision must be exactly this number. */
  | number;

export interface EventToAppend {
  /** UUID of the event; the adapter assigns a UUIDv7 when absent. Unique across the store. */
  readonly id?: string;
  readonly type: string;
  /** JSON-serialisable payload. */
  readonly data: unknown;
  /** JSON-serialisable metadata envelope (causation, correlation, actor, schema version…). */
  readonly metadata?: Readonly<Record<string, unknown>>;
}

/**
 * An event as the store holds it. Read-only, down to its data: a store may hand the same object to several readers
 * and to its live subscribers (the SQLite store answers reads that follow its own commits from the events it kept).
 */
export interface RecordedEvent<Data = unknown> {
  readonly streamId: string;
  /** 0-based position of the event inside its stream. */
  readonly revision: number;
  /** 1-based position in the store's global commit order. */
  readonly position: number;
  readonly id: string;
  readonly type: string;
  readonly data: Data;
  readonly metadata: Readonly<Record<string, unknown>>;
  /** ISO-8601 time the store took the append (every event of one append, or one `appendMany`, shares it). */
  readonly recordedAt: string;
  /** Hash of the previous event of the same stream (`GENESIS_HASH` for revision 0): the journal's chain. */
  readonly prev: string;
  /** This event's link: `eventHash(prev, event)` (`chain.ts`), computed by the store at append. */
  readonly hash: string;
}

export interface AppendOptions {
  /** Default: `'any'`. */
  readonly expectedRevision?: ExpectedRevision;
  /**
   * Nothing waits for this append promptly (a record of what has already happened, such as an answer's delivery):
   * the store may hold it, a few milliseconds at most, so that it commits in the transaction of the next append
   * instead of one of its own. It is checked, made durable and answered like any other append. A signal instead of
   * `true`: held the same way until the signal aborts (something now waits for the append: the next command on the
   * same stream, say), then written at once. A store that does not hold appends ignores it. Default `false`.
   */
  readonly deferrable?: boolean | AbortSignal;
}

export interface AppendResult {
  readonly streamId: string;
  /** Revision of the last appended event: pass it as `expectedRevision` for the next append. */
  readonly nextExpectedRevision: number;
  /** Global position of the last appended event. */
  readonly position: number;
  /**
   * The events appended to this stream, as stored: what a read of them returns (positions, hashes, `recordedAt`).
   * A writer that keeps a fold of the stream extends it with them instead of reading back what it wrote.
   */
  readonly events: readonly RecordedEvent[];
}

/** One stream's part of an {@link EventStore.appendMany} batch. */
export interface AppendManyEntry {
  readonly streamId: string;
  readonly events: readonly EventToAppend[];
  /** Checked against this stream alone. Default: `'any'`. */
  readonly expectedRevision?: ExpectedRevision;
}

export type ReadDirection = 'forwards' | 'backwards';

export interface ReadStreamOptions {
  /** Default: `'forwards'`. */
  readonly direction?: ReadDirection;
  /** First revision to return (inclusive). Default: the start (forwards) or the end (backwards). */
  readonly fromRevision?: number;
  /** Default: no limit. */
  readonly maxCount?: number;
}

export interface EventFilter {
  /** Only streams whose id starts with one of these prefixes. */
  readonly streamPrefixes?: readonly string[];
  /** Only events of these types. */
  readonly eventTypes?: readonly string[];
}

export interface ReadAllOptions {
  /** Default: `'forwards'`. */
  readonly direction?: ReadDirection;
  /**
   * Forwards: return events strictly after this position (default 0: from the start).
   * Backwards: return events strictly before this position (default: from the end).
   */
  readonly after?: number;
  readonly before?: number;
  /** Default: 1000. */
  readonly maxCount?: number;
  readonly filter?: EventFilter;
}

export interface ReadAllPage {
  readonly events: readonly RecordedEvent[];
  /**
   * The last position examined, whether or not it matched the filter. A caller continues with
   * `after: lastPosition`; a filtered reader advances past events it does not want.
   */
  readonly lastPosition: number;
}

export interface ReadLinksOptions {
  /** Links of the events strictly after this global position. Default: 0 (from the start). */
  readonly after?: number;
  /** Default: 1000. */
  readonly maxCount?: number;
}

/** An event's global position and its hash-chain link: all that a seal covers. */
export interface EventLink {
  readonly position: number;
  readonly hash: string;
}

/** Where a catch-up subscription starts. */
export type SubscriptionStart =
  | 'start'
  | 'end'
  /** Strictly after this global position. */
  | { readonly after: number };

export interface SubscribeOptions {
  /** Default: `'start'`, or after the consumer's checkpoint when `consumer` is set and has one. */
  readonly from?: SubscriptionStart;
  readonly filter?: EventFilter;
  /**
   * Durable consumer name. When set, the position of every handled event is checkpointed
   * (after the handler resolves) and a later subscription with the same name resumes after it.
   */
  readonly consumer?: string;
  /** Events read per page while catching up. Default: 1000. */
  readonly pageSize?: number;
  /**
   * How often, at most, a durable consumer's position is written while it runs (it is always written when
   * the subscription stops or fails). Delivery is at least once: after a crash, up to this much is handed
   * to the handler again. Default: 1000 ms; 0 writes after every page.
   */
  readonly checkpointEveryMs?: number;
  /**
   * For a handler whose work is never on a call's path (a service that finds the step taken inline, a projection):
   * after a commit of this process it is woken only once what the commit's answer set off has run, including the
   * requests that were sent (two turns of the event loop later), instead of before them. Events and their order are
   * the same. An adapter without a live feed of its own commits has nothing to hold back and ignores it.
   */
  readonly unhurried?: boolean;
}

/** A holder's liveness lease: the holder counts as alive until `expiresAt` unless it renews. */
export interface Lease {
  readonly holder: string;
  /** ISO-8601 instant, from the renewing process's clock. */
  readonly expiresAt: string;
}

/**
 * An exclusive claim on a named resource (a partition of a consumer group): one owner at a time, until it expires
 * unless its owner renews it.
 */
export interface Claim {
  readonly name: string;
  readonly owner: string;
  /** ISO-8601 instant, from the claiming process's clock. */
  readonly expiresAt: string;
}

/** A durable consumer's position, for {@link EventStore.storeCheckpoints}. */
export interface ConsumerCheckpoint {
  readonly consumer: string;
  readonly position: number;
}

/** What {@link EventStore.notifiedSince} could tell. */
export interface NotifiedSince {
  readonly changed: boolean;
  readonly through: number;
}

export type EventHandler = (event: RecordedEvent) => void | Promise<void>;

export interface Subscription {
  /** Resolves once the subscription has read everything committed when it started and turned live. */
  readonly caughtUp: Promise<void>;
  /** Resolves when the subscription stops; rejects with the handler's or the store's error. */
  readonly done: Promise<void>;
  /** Position of the last event handled (or skipped by the filter). */
  readonly position: number;
  /** Stops after the event being handled; checkpoints what was handled. */
  stop(): Promise<void>;
}

export interface EventStore {
  appendToStream(streamId: string, events: readonly EventToAppend[], options?: AppendOptions): Promise<AppendResult>;
  /**
   * Appends to several streams at once: every entry's events are committed in one transaction, or none are.
   * Each entry's expected revision is checked against its own stream; the first mismatch is a
   * `WrongExpectedRevisionError` naming that stream, and a stored event id a `DuplicateEventIdError`, with
   * nothing of the batch written. The events take consecutive global positions in batch order, and each stream's
   * hash chain continues from its tip. A stream may appear in one entry only, and an event id once in the whole
   * batch (`invalid_argument` otherwise: put one stream's events in one entry). The results are the entries'
   * `AppendResult`s, in batch order.
   */
  appendMany(batch: readonly AppendManyEntry[]): Promise<AppendResult[]>;
  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /** Last revision of the stream, or `undefined` when it does not exist. */
  streamRevision(streamId: string): Promise<number | undefined>;
  readAll(options?: ReadAllOptions): Promise<ReadAllPage>;
  /**
   * The global positions and hashes of the events after `after`, in global order, without their data: what the
   * journal's sealer reads. Optional: `readLinks` (read-links.ts) reads whole events where an adapter lacks it.
   */
  readLinks?(options?: ReadLinksOptions): Promise<EventLink[]>;
  /** Global position of the last committed event (0 when empty). */
  headPosition(): Promise<number>;
  /**
   * The highest position this store object has seen without asking anyone (its own commits, what it read, what its
   * commit notifications said): never past the head, so every event committed later is after it. A place to search
   * on from, not the head. Optional: where an adapter lacks it, or keeps nothing of the kind, ask `headPosition`.
   */
  seenPosition?(): number;
  /**
   * Whether an event of one of `types` may have been committed after position `after`, told from the commit
   * notifications this object heard, without a query. The answer covers every commit this object knows of (its own,
   * those it read, those notified) and every append answered before the newest of them was made, in any process:
   * `changed: false` means none of these holds an event of `types` after `after`. `through`: every position up to it
   * was committed when the answer was given, so a read made after it covers them. `undefined` when the store cannot
   * tell (then read); an adapter that does not hear every commit leaves it out. An adapter that knows at once may
   * answer without a promise (SQLite: it reads its own file); one that waits for a notification answers with one.
   */
  notifiedSince?(after: number, types: readonly string[]): NotifiedSince | undefined | Promise<NotifiedSince | undefined>;
  subscribeToAll(handler: EventHandler, options?: SubscribeOptions): Subscription;
  readCheckpoint(consumer: string): Promise<number | undefined>;
  storeCheckpoint(consumer: string, position: number): Promise<void>;
  /**
   * `storeCheckpoint` of each entry, in one statement where the adapter can (a consumer group's partitions). A
   * consumer named twice takes its last position. Optional: without it, each is stored on its own.
   */
  storeCheckpoints?(checkpoints: readonly ConsumerCheckpoint[]): Promise<void>;
  /**
   * Liveness leases, shared by every process on the store: a process renews the leases of its instances before
   * they expire, and another reads them to tell a live owner from a gone one. Last write wins. Leases are not
   * events: they are not in the journal, and no subscription sees them.
   */
  renewLease(holder: string, expiresAt: string): Promise<void>;
  /**
   * `renewLease` of each of `holders` (distinct) until the same instant, in one statement where the adapter can.
   * Optional: without it, each is renewed on its own.
   */
  renewLeases?(holders: readonly string[], expiresAt: string): Promise<void>;
  /** `releaseLease` of each of `holders`, in one statement where the adapter can. Optional, as `renewLeases`. */
  releaseLeases?(holders: readonly string[]): Promise<void>;
  /** The holder's lease, expired or not; `undefined` when it never held one or released it. */
  readLease(holder: string): Promise<Lease | undefined>;
  /** Drops the holder's lease (a clean stop): from then on it counts as gone. */
  releaseLease(holder: string): Promise<void>;
  /** The leases whose holder starts with `prefix`, expired or not, ordered by holder. */
  readLeases(prefix: string): Promise<Lease[]>;
  /**
   * Takes or renews the claim `name` for `owner` until `expiresAt`, in one atomic step, when nobody holds it, when
   * its holder's claim expired at or before `now`, or when `owner` holds it already; and returns the claim as it
   * then stands: `owner` holds it exactly when the returned owner is `owner`. Like leases, claims are not events.
   */
  claim(name: string, owner: string, expiresAt: string, now: string): Promise<Claim>;
  /**
   * `claim` of each of `names` (distinct) for the same owner and instants, in one statement where the adapter can (a
   * group member renewing its partitions); the claims as they then stand, in the order of `names`. Optional: without
   * it, each is claimed on its own.
   */
  claimAll?(names: readonly string[], owner: string, expiresAt: string, now: string): Promise<Claim[]>;
  /** Gives the claim up when `owner` holds it (a clean hand-over); does nothing otherwise. */
  releaseClaim(name: string, owner: string): Promise<void>;
  /** The claims whose name starts with `prefix`, expired or not, ordered by name. */
  readClaims(prefix: string): Promise<Claim[]>;
  close(): Promise<void>;
}

import {
  ANY,
  BACKWARDS,
  END,
  FORWARDS,
  jsonEvent,
  KurrentDBClient,
  NO_STREAM,
  START,
  type AppendStreamState,
  type JSONType,
  type ReadStreamOptions as KurrentReadOptions,
  type StreamSubscription,
  type WrongExpectedVersionError,
} from '@kurrent/kurrentdb-client';
import {
  backoffMs,
  CommitListener,
  EventStoreClosedError,
  EventStoreOpenError,
  EventStoreUnavailableError,
  GroupCommit,
  InvalidEventStoreArgumentError,
  NotifiedSubscriptions,
  submitAppend,
  submitAppendMany,
  validateCount,
  validateFilter,
  validateInstant,
  validatePosition,
  validateStreamId,
  type AppendManyEntry,
  type AppendOptions,
  type AppendResult,
  type Claim,
  type CommitReport,
  type EventHandler,
  type EventStore,
  type EventToAppend,
  type Lease,
  type ReadAllOptions,
  type ReadAllPage,
  type ReadStreamOptions,
  type RecordedEvent,
  type SerialisedAppend,
  type SubscribeOptions,
  type Subscription,
} from '@oncegate/event-store';
import { appendRequests, planGroup, type AppendOutcome, type GroupPlan, type GroupState, type StreamTip } from './append-plan';
import {
  isStreamNotFound,
  isTooLarge,
  isUnavailable,
  isUnsupported,
  kurrentDetail,
  multiStreamAppendMissing,
  openFailure,
  unavailableOr,
  wrongExpectedRevision,
  wrongExpectedVersionOf,
} from './kurrentdb-errors';
import {
  claimsDocumentOf,
  claimsWithPrefix,
  EMPTY_CLAIMS,
  EMPTY_LEASES,
  leaseOf,
  leasesDocumentOf,
  leasesWithPrefix,
  releaseClaim,
  releaseLease,
  renewLease,
  takeClaim,
  type ClaimsDocument,
  type LeasesDocument,
} from './lease-documents';
import { backwardPage, forwardPage } from './log-pages';
import {
  decodeLogRecord,
  decodeStreamRecord,
  logRevisionOfPosition,
  portRevision,
  positionOfLogRevision,
  type StoredRecord,
} from './record-encoding';
import { streamNames, type StreamNames } from './stream-names';
import { exactStreamState } from './stream-states';

/** The calls of the official client the store makes: a `KurrentDBClient` has them all. */
export type KurrentDbClientApi = Pick<
  KurrentDBClient,
  'readStream' | 'appendToStream' | 'multiStreamAppend' | 'subscribeToStream' | 'setStreamMetadata' | 'dispose'
>;

export interface KurrentDbEventStoreOptions {
  /**
   * Connection string as the official client reads it (`kurrentdb://admin:changeit@localhost:2113?tls=false`,
   * `kurrentdb+discover://…` for a cluster). Either `url` or `client`.
   */
  readonly url?: string;
  /** A client already made (its connection settings and credentials are its own); the store does not dispose it. */
  readonly client?: KurrentDbClientApi;
  /**
   * Prefix of every stream the store uses, so several stores share a server: the port's stream `s` is
   * `<namespace>:s`, the store's own streams `<namespace>~…`. Letters, digits, `_`, `.`, `-`. Default `'oncegate'`.
   */
  readonly namespace?: string;
  /**
   * How often a waiting subscription reads the head in case the live subscription to the log missed a commit (it
   * dropped and is being made again). Default 5000 ms.
   */
  readonly pollIntervalMs?: number;
  /** Largest number of log records a filtered read examines in one call, so a rare filter never blocks long. Default 50,000. */
  readonly maxScan?: number;
  /** Most appends written in one multi-stream append when many are issued together. Default 100. */
  readonly maxGroup?: number;
  /** Clock for `recordedAt` and the documents' times. Default: the system clock. */
  readonly clock?: () => Date;
}

/** The layout of the streams (stream-names.ts, record-encoding.ts); a store written by a newer layout is refused. */
export const LAYOUT_VERSION = 1;

/** One caller's append: a single stream, or every entry of an `appendMany`, all committed or none. */
interface PendingAppend {
  readonly entries: readonly SerialisedAppend[];
  /** Which argument names the events when the server finds the append too large. */
  readonly argument: 'events' | 'batch';
  readonly resolve: (results: AppendResult[]) => void;
  readonly reject: (error: unknown) => void;
}

const DEFAULT_READ_ALL_COUNT = 1000;
/** Tries of one append or one document change against other writers before it is reported unavailable. */
const MAX_CONFLICTS = 200;
/** How many versions of a document (leases, claims, a checkpoint) the server keeps readable. */
const DOCUMENT_HISTORY = 10;
/** How long the live subscription to the log may take to be confirmed before the poll stands in. */
const CONFIRM_TIMEOUT_MS = 5000;

/** Where the store is, for errors and logs: the server's address and the namespace, never the password. */
function describeLocation(url: string | undefined, namespace: string): string {
  if (url === undefined) return `a KurrentDB client's server (namespace ${namespace})`;
  const match = /^([a-z+]+:\/\/)(?:[^@/]*@)?([^/?]*)/i.exec(url);
  return match === null ? `a KurrentDB server (namespace ${namespace})` : `${match[1]}${match[2]} (namespace ${namespace})`;
}

/** A pause before the next try of a write another writer beat, spread so that competing writers do not meet again. */
function conflictPause(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, backoffMs(attempt, 1, 100) * (0.5 + Math.random())));
}

/**
 * The live subscription to the store's log, from its end: every record appended to the log (by any process) is
 * reported. When it fails or ends, every waiter is woken (a commit may have been missed) and the next wait makes it
 * again.
 */
class LogListener extends CommitListener<StreamSubscription> {
  constructor(
    private readonly client: KurrentDbClientApi,
    private readonly log: string,
    report: CommitReport,
  ) {
    super(report);
  }

  /** Resolves with the subscription once the server confirms it; `undefined` when it fails or is not confirmed in time. */
  protected open(): Promise<StreamSubscription | undefined> {
    return new Promise((resolve) => {
      let subscription: StreamSubscription;
      try {
        subscription = this.client.subscribeToStream(this.log, { fromRevision: END });
      } catch {
        resolve(undefined);
        return;
      }
      let confirmed = false;
      const timer = setTimeout(() => {
        void this.end(subscription);
        resolve(undefined);
      }, CONFIRM_TIMEOUT_MS);
      subscription.on('confirmation', () => {
        clearTimeout(timer);
        confirmed = true;
        resolve(subscription);
      });
      subscription.on('data', (resolved) => {
        const record = resolved.event;
        this.report(record === undefined ? undefined : positionOfLogRevision(record.revision));
      });
      const lost = () => {
        clearTimeout(timer);
        if (confirmed) this.lost(subscription);
        else {
          void this.end(subscription);
          resolve(undefined);
        }
      };
      subscription.on('error', lost);
      subscription.on('close', lost);
    });
  }

  protected async end(subscription: StreamSubscription): Promise<void> {
    await subscription.unsubscribe().catch(() => undefined);
  }
}

/**
 * The event store on KurrentDB. Each port stream is a KurrentDB stream; the port's global order is a stream of its
 * own, the log, which holds every event again: an append writes its events to their streams, one record per event id
 * (so an id is stored once in the whole store) and the events to the log, in one multi-stream append that the server
 * commits whole or not at all, naming each stream's exact last revision and the log's. Positions are therefore the
 * log's revisions plus one: dense, from 1, in commit order, consecutive within an append (see docs/event-store.md).
 */
export class KurrentDbEventStore implements EventStore {
  private readonly client: KurrentDbClientApi;
  private readonly ownsClient: boolean;
  private readonly names: StreamNames;
  /** Subscriptions, woken by the live subscription to the log (see `LogListener`). */
  private readonly subscriptions: NotifiedSubscriptions;
  private readonly clock: () => Date;
  private readonly pollIntervalMs: number;
  private readonly maxScan: number;
  private readonly location: string;
  private readonly groups: GroupCommit<PendingAppend>;
  private closed = false;

  private constructor(options: KurrentDbEventStoreOptions) {
    if (options.url === undefined && options.client === undefined) {
      throw new InvalidEventStoreArgumentError('url', 'openKurrentDbEventStore needs `url` or `client`');
    }
    this.names = streamNames(options.namespace ?? 'oncegate');
    this.clock = options.clock ?? (() => new Date());
    this.pollIntervalMs = options.pollIntervalMs ?? 5000;
    this.maxScan = options.maxScan ?? 50_000;
    validateCount(this.pollIntervalMs, 'pollIntervalMs');
    validateCount(this.maxScan, 'maxScan');
    const maxGroup = options.maxGroup ?? 100;
    validateCount(maxGroup, 'maxGroup');
    // Appends issued while a group is written share the next (group commit).
    this.groups = new GroupCommit(maxGroup, (group) => this.commitGroup(group));
    this.location = describeLocation(options.client === undefined ? options.url : undefined, this.names.namespace);
    if (options.client !== undefined) {
      this.client = options.client;
      this.ownsClient = false;
    } else {
      try {
        this.client = KurrentDBClient.connectionString(options.url!);
      } catch (error) {
        throw new InvalidEventStoreArgumentError('url', `is not a KurrentDB connection string: ${(error as Error).message}`);
      }
      this.ownsClient = true;
    }
    this.subscriptions = new NotifiedSubscriptions({
      source: this,
      head: () => this.head(),
      listen: (report) => new LogListener(this.client, this.names.log, report),
      pollIntervalMs: this.pollIntervalMs,
      closed: () => this.closed,
    });
  }

  /**
   * Connects, writes the store's layout version when the namespace is new (a multi-stream append, so a server without
   * one is refused here rather than at the first append), and refuses a layout written by a newer version.
   */
  static async open(options: KurrentDbEventStoreOptions): Promise<KurrentDbEventStore> {
    const store = new KurrentDbEventStore(options);
    try {
      await store.prepare();
    } catch (error) {
      if (store.ownsClient) await store.client.dispose().catch(() => undefined);
      throw openFailure(store.location, error);
    }
    return store;
  }

  private async prepare(): Promise<void> {
    for (;;) {
      const marker = await this.readLast(this.names.store);
      if (marker !== undefined) {
        const version = (marker.data as { layoutVersion?: unknown })?.layoutVersion;
        if (typeof version !== 'number') throw new EventStoreOpenError(this.location, 'corrupt', `${this.names.store} holds no layout version`);
        if (version > LAYOUT_VERSION) {
          throw new EventStoreOpenError(this.location, 'newer_schema', `layout version ${version}, this build reads ${LAYOUT_VERSION}`);
        }
        return;
      }
      try {
        await this.client.multiStreamAppend([
          {
            streamName: this.names.store,
            expectedState: NO_STREAM,
            events: [jsonEvent({ type: 'StoreCreated', data: { layoutVersion: LAYOUT_VERSION }, metadata: {} })],
          },
        ]);
        return;
      } catch (error) {
        // Another process created the namespace meanwhile: read its marker.
        if (wrongExpectedVersionOf(error) === undefined) throw error;
      }
    }
  }

  appendToStream(streamId: string, events: readonly EventToAppend[], options: AppendOptions = {}): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new EventStoreClosedError());
    return submitAppend(streamId, events, options, (entries) => this.enqueue(entries, 'events'));
  }

  appendMany(batch: readonly AppendManyEntry[]): Promise<AppendResult[]> {
    if (this.closed) return Promise.reject(new EventStoreClosedError());
    return submitAppendMany(batch, (entries) => this.enqueue(entries, 'batch'));
  }

  private enqueue(entries: readonly SerialisedAppend[], argument: PendingAppend['argument']): Promise<AppendResult[]> {
    return new Promise((resolve, reject) => {
      this.groups.add({ entries, argument, resolve, reject });
    });
  }

  /**
   * Reads the head and the streams' tips, decides every append of the group on them (`planGroup`), and writes what
   * was accepted in one multi-stream append. When the server refuses it because another writer moved the log, a
   * stream or took an event id in between, nothing was written: the store learns what the refusal says, reads again
   * and decides again.
   */
  private async commitGroup(group: readonly PendingAppend[]): Promise<void> {
    const takenIds = new Set<string>();
    for (let attempt = 0; ; attempt += 1) {
      let plan: GroupPlan;
      try {
        plan = planGroup(
          group.map((request) => request.entries),
          await this.groupState(group, takenIds),
        );
      } catch (error) {
        this.rejectAll(group, unavailableOr(this.location, error));
        return;
      }
      if (plan.writes.length === 0) {
        this.settle(group, plan.outcomes);
        return;
      }
      try {
        await this.client.multiStreamAppend(appendRequests(plan, this.names));
      } catch (error) {
        const refusal = wrongExpectedVersionOf(error);
        if (refusal !== undefined) {
          const eventId = this.names.eventIdOf(refusal.streamName);
          if (eventId !== undefined) takenIds.add(eventId);
          if (this.decidedByRefusal(group, refusal)) return;
          if (attempt + 1 >= MAX_CONFLICTS) {
            this.rejectAll(group, new EventStoreUnavailableError(this.location, `gave up after ${MAX_CONFLICTS} appends refused because other writers wrote first`));
            return;
          }
          await conflictPause(attempt);
          continue;
        }
        await this.failGroup(group, plan, error);
        return;
      }
      this.settle(group, plan.outcomes);
      this.subscriptions.wake(plan.writes.at(-1)!.event.position);
      return;
    }
  }

  /**
   * The head, the tip of every stream the group names, and which event ids are known to be stored. Ids are not looked
   * up: a stored id makes the server refuse the append, naming the id's stream, and the next try knows it.
   */
  private async groupState(group: readonly PendingAppend[], takenIds: ReadonlySet<string>): Promise<GroupState> {
    const streams = [...new Set(group.flatMap((request) => request.entries.map((entry) => entry.streamId)))];
    const [head, tips] = await Promise.all([
      this.head(),
      Promise.all(streams.map(async (streamId) => [streamId, await this.tip(streamId)] as const)),
    ]);
    const known = new Map<string, StreamTip>();
    for (const [streamId, tip] of tips) if (tip !== undefined) known.set(streamId, tip);
    return { head, tips: known, takenIds, recordedAt: this.clock().toISOString() };
  }

  private async tip(streamId: string): Promise<StreamTip | undefined> {
    const record = await this.readLast(this.names.stream(streamId));
    if (record === undefined) return undefined;
    const event = decodeStreamRecord(record);
    return { revision: event.revision, hash: event.hash };
  }

  /**
   * A refusal of a group of one append on one of its streams is the port's answer when the caller's expectation
   * does not hold against the revision the server found: the append is refused with those facts, no read needed.
   */
  private decidedByRefusal(group: readonly PendingAppend[], refusal: WrongExpectedVersionError): boolean {
    if (group.length !== 1) return false;
    const streamId = this.names.portStreamId(refusal.streamName);
    const entry = group[0]!.entries.find((candidate) => candidate.streamId === streamId);
    if (entry === undefined) return false;
    const error = wrongExpectedRevision(refusal, entry.streamId, entry.expected);
    if (error === undefined) return false;
    group[0]!.reject(error);
    return true;
  }

  /**
   * A group's append failed otherwise. Too large for the server: a group of several appends is written one append at
   * a time, and a single append is refused. Unavailable: the append may have been committed before the answer was
   * lost, so the log is read where the group's first event would be, and the appends are answered as decided if it
   * is there.
   */
  private async failGroup(group: readonly PendingAppend[], plan: GroupPlan, error: unknown): Promise<void> {
    if (isTooLarge(error)) {
      if (group.length > 1) {
        for (const request of group) await this.commitGroup([request]);
        return;
      }
      const request = group[0]!;
      request.reject(new InvalidEventStoreArgumentError(request.argument, `is larger than this KurrentDB takes in one append; nothing was written (${kurrentDetail(error)})`));
      return;
    }
    if (isUnavailable(error) && (await this.committed(plan))) {
      this.settle(group, plan.outcomes);
      this.subscriptions.wake(plan.writes.at(-1)!.event.position);
      return;
    }
    const failure = isUnsupported(error) ? new EventStoreUnavailableError(this.location, multiStreamAppendMissing(error)) : unavailableOr(this.location, error);
    this.rejectAll(group, failure);
  }

  private async committed(plan: GroupPlan): Promise<boolean> {
    const first = plan.writes[0]!.event;
    try {
      const [record] = await this.readRecords(this.names.log, { direction: FORWARDS, fromRevision: logRevisionOfPosition(first.position), maxCount: 1 });
      return record !== undefined && decodeLogRecord(record).id === first.id;
    } catch {
      return false;
    }
  }

  private settle(group: readonly PendingAppend[], outcomes: readonly AppendOutcome[]): void {
    group.forEach((request, index) => {
      const outcome = outcomes[index]!;
      if ('results' in outcome) request.resolve(outcome.results);
      else request.reject(outcome.error);
    });
  }

  private rejectAll(group: readonly PendingAppend[], error: unknown): void {
    for (const request of group) request.reject(error);
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    validateStreamId(streamId);
    const direction = options.direction ?? 'forwards';
    if (options.fromRevision !== undefined) validatePosition(options.fromRevision, 'fromRevision');
    if (options.maxCount !== undefined) validateCount(options.maxCount, 'maxCount');
    const records = await this.readRecords(this.names.stream(streamId), {
      direction: direction === 'forwards' ? FORWARDS : BACKWARDS,
      fromRevision: options.fromRevision !== undefined ? BigInt(options.fromRevision) : direction === 'forwards' ? START : END,
      maxCount: options.maxCount ?? Number.MAX_SAFE_INTEGER,
    });
    return records.map(decodeStreamRecord);
  }

  async streamRevision(streamId: string): Promise<number | undefined> {
    this.assertOpen();
    validateStreamId(streamId);
    const record = await this.readLast(this.names.stream(streamId));
    return record === undefined ? undefined : portRevision(record.revision);
  }

  async headPosition(): Promise<number> {
    this.assertOpen();
    return this.head();
  }

  private async head(): Promise<number> {
    const record = await this.readLast(this.names.log);
    return record === undefined ? 0 : positionOfLogRevision(record.revision);
  }

  /**
   * Pages of the log. Unfiltered, a page reads `maxCount` records; filtered, it examines at most `maxScan` records
   * (or `maxCount`, when larger) and stops reading once the page is full. The filter is applied here: the log is one
   * stream, which the server reads by revision but does not filter.
   */
  async readAll(options: ReadAllOptions = {}): Promise<ReadAllPage> {
    this.assertOpen();
    const direction = options.direction ?? 'forwards';
    const maxCount = options.maxCount ?? DEFAULT_READ_ALL_COUNT;
    validateCount(maxCount, 'maxCount');
    validateFilter(options.filter);
    const filtered = (options.filter?.streamPrefixes?.length ?? 0) > 0 || (options.filter?.eventTypes?.length ?? 0) > 0;
    const filter = filtered ? options.filter : undefined;
    const window = filtered ? Math.max(this.maxScan, maxCount) : maxCount;
    if (direction === 'forwards') {
      const after = options.after ?? 0;
      validatePosition(after, 'after');
      return forwardPage(this.logRecords({ direction: FORWARDS, fromRevision: BigInt(after), maxCount: window }), after, maxCount, filter);
    }
    if (options.before !== undefined) validatePosition(options.before, 'before');
    const before = options.before;
    if (before !== undefined && before <= 1) return { events: [], lastPosition: before };
    // From the end, `from` only matters when the read finds nothing: the store is empty, its head 0.
    const from = before === undefined ? 0 : before - 1;
    const fromRevision = before === undefined ? END : logRevisionOfPosition(from);
    return backwardPage(this.logRecords({ direction: BACKWARDS, fromRevision, maxCount: window }), from, maxCount, filter);
  }

  /** The log's records from a revision, decoded as they arrive (a page that is full stops the read). */
  private async *logRecords(options: KurrentReadOptions): AsyncGenerator<RecordedEvent> {
    try {
      for await (const resolved of this.client.readStream(this.names.log, options)) {
        if (resolved.event !== undefined) yield decodeLogRecord(resolved.event);
      }
    } catch (error) {
      if (isStreamNotFound(error)) return;
      throw unavailableOr(this.location, error);
    }
  }

  subscribeToAll(handler: EventHandler, options: SubscribeOptions = {}): Subscription {
    this.assertOpen();
    return this.subscriptions.subscribe(handler, options);
  }

  async readCheckpoint(consumer: string): Promise<number | undefined> {
    this.assertOpen();
    validateStreamId(consumer, 'consumer');
    const record = await this.readLast(this.names.checkpoint(consumer));
    if (record === undefined) return undefined;
    const position = (record.data as { position?: unknown })?.position;
    if (typeof position !== 'number' || !Number.isSafeInteger(position) || position < 0) {
      throw new TypeError(`${this.names.checkpoint(consumer)} holds no checkpoint this store wrote`);
    }
    return position;
  }

  /** A checkpoint is an event of the consumer's own stream, written whatever its revision (last write wins). */
  async storeCheckpoint(consumer: string, position: number): Promise<void> {
    this.assertOpen();
    validateStreamId(consumer, 'consumer');
    validatePosition(position, 'position');
    const streamName = this.names.checkpoint(consumer);
    const written = await this.write(streamName, 'CheckpointStored', { position, storedAt: this.clock().toISOString() }, ANY);
    if (written === 0n) await this.limitHistory(streamName);
  }

  async renewLease(holder: string, expiresAt: string): Promise<void> {
    this.assertOpen();
    validateStreamId(holder, 'holder');
    validateInstant(expiresAt, 'expiresAt');
    const renewedAt = this.clock().toISOString();
    await this.changeLeases((document) => ({ document: renewLease(document, holder, expiresAt, renewedAt), result: undefined }));
  }

  async readLease(holder: string): Promise<Lease | undefined> {
    this.assertOpen();
    validateStreamId(holder, 'holder');
    return leaseOf((await this.leasesDocument()).document, holder);
  }

  async releaseLease(holder: string): Promise<void> {
    this.assertOpen();
    validateStreamId(holder, 'holder');
    await this.changeLeases((document) => ({ document: releaseLease(document, holder), result: undefined }));
  }

  async readLeases(prefix: string): Promise<Lease[]> {
    this.assertOpen();
    validateStreamId(prefix, 'prefix');
    return leasesWithPrefix((await this.leasesDocument()).document, prefix);
  }

  async claim(name: string, owner: string, expiresAt: string, now: string): Promise<Claim> {
    this.assertOpen();
    validateStreamId(name, 'name');
    validateStreamId(owner, 'owner');
    validateInstant(expiresAt, 'expiresAt');
    validateInstant(now, 'now');
    return this.changeClaims((document) => {
      const { document: next, claim } = takeClaim(document, name, owner, expiresAt, now);
      return { document: next, result: claim };
    });
  }

  async releaseClaim(name: string, owner: string): Promise<void> {
    this.assertOpen();
    validateStreamId(name, 'name');
    validateStreamId(owner, 'owner');
    await this.changeClaims((document) => ({ document: releaseClaim(document, name, owner), result: undefined }));
  }

  async readClaims(prefix: string): Promise<Claim[]> {
    this.assertOpen();
    validateStreamId(prefix, 'prefix');
    return claimsWithPrefix((await this.readDocument(this.names.claims, claimsDocumentOf, EMPTY_CLAIMS)).document, prefix);
  }

  private leasesDocument(): Promise<{ revision: number | undefined; document: LeasesDocument }> {
    return this.readDocument(this.names.leases, leasesDocumentOf, EMPTY_LEASES);
  }

  private changeLeases<R>(change: (document: LeasesDocument) => { document: LeasesDocument | undefined; result: R }): Promise<R> {
    return this.changeDocument(this.names.leases, 'LeasesChanged', leasesDocumentOf, EMPTY_LEASES, change);
  }

  private changeClaims<R>(change: (document: ClaimsDocument) => { document: ClaimsDocument | undefined; result: R }): Promise<R> {
    return this.changeDocument(this.names.claims, 'ClaimsChanged', claimsDocumentOf, EMPTY_CLAIMS, change);
  }

  private async readDocument<T>(streamName: string, parse: (data: unknown) => T, empty: T): Promise<{ revision: number | undefined; document: T }> {
    const record = await this.readLast(streamName);
    return record === undefined ? { revision: undefined, document: empty } : { revision: portRevision(record.revision), document: parse(record.data) };
  }

  /**
   * Compare-and-set on a document's stream: the change is decided on the last version read and written expecting
   * that version's revision; when another writer wrote first, the server refuses and the change is decided again on
   * the newer version.
   */
  private async changeDocument<T, R>(
    streamName: string,
    type: string,
    parse: (data: unknown) => T,
    empty: T,
    change: (document: T) => { document: T | undefined; result: R },
  ): Promise<R> {
    for (let attempt = 0; ; attempt += 1) {
      const { revision, document } = await this.readDocument(streamName, parse, empty);
      const { document: next, result } = change(document);
      if (next === undefined) return result;
      try {
        await this.write(streamName, type, next, exactStreamState(revision));
        if (revision === undefined) await this.limitHistory(streamName);
        return result;
      } catch (error) {
        if (wrongExpectedVersionOf(error) === undefined) throw error;
        if (attempt + 1 >= MAX_CONFLICTS) {
          throw new EventStoreUnavailableError(this.location, `gave up writing ${streamName} after ${MAX_CONFLICTS} tries refused because other writers wrote first`);
        }
        await conflictPause(attempt);
      }
    }
  }

  /** Appends one JSON event; returns its revision. The server's refusal of the expected state is thrown as the client's. */
  private async write(streamName: string, type: string, data: unknown, streamState: AppendStreamState): Promise<bigint> {
    try {
      const result = await this.client.appendToStream(streamName, jsonEvent({ type, data: data as JSONType }), { streamState });
      return result.nextExpectedRevision;
    } catch (error) {
      if (wrongExpectedVersionOf(error) !== undefined) throw error;
      throw unavailableOr(this.location, error);
    }
  }

  /**
   * Only a document's last versions matter: the server is asked to keep a few (`$maxCount`) and may scavenge the
   * rest. Best effort: a server that refuses it (a user without the right to write stream metadata) keeps the whole
   * history, which costs space and changes no answer.
   */
  private async limitHistory(streamName: string): Promise<void> {
    await this.client.setStreamMetadata(streamName, { maxCount: DOCUMENT_HISTORY }).catch(() => undefined);
  }

  /** The last record of a stream, or `undefined` when it has none. */
  private async readLast(streamName: string): Promise<StoredRecord | undefined> {
    const [record] = await this.readRecords(streamName, { direction: BACKWARDS, fromRevision: END, maxCount: 1 });
    return record;
  }

  /** A stream's records (none for a stream that does not exist); an unavailable server is `store_unavailable`. */
  private async readRecords(streamName: string, options: KurrentReadOptions): Promise<StoredRecord[]> {
    const records: StoredRecord[] = [];
    try {
      for await (const resolved of this.client.readStream(streamName, options)) {
        if (resolved.event !== undefined) records.push(resolved.event);
      }
    } catch (error) {
      if (isStreamNotFound(error)) return [];
      throw unavailableOr(this.location, error);
    }
    return records;
  }

  private assertOpen(): void {
    if (this.closed) throw new EventStoreClosedError();
  }

  /** Appends already issued are written first; then subscriptions stop and the connection is closed. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.groups.drained();
    await this.subscriptions.close();
    if (this.ownsClient) await this.client.dispose().catch(() => undefined);
  }
}

/**
 * Opens the event store on KurrentDB (25.1 or later: every append is a multi-stream append): connects, writes the
 * layout version in a new namespace, and refuses a layout written by a newer version (`store_open_failed`,
 * `newer_schema`) or a server without the multi-stream append (`store_open_failed`). An unreachable server is
 * `store_unavailable`.
 */
export function openKurrentDbEventStore(options: KurrentDbEventStoreOptions): Promise<KurrentDbEventStore> {
  return KurrentDbEventStore.open(options);
}

import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementResultingChanges } from 'node:sqlite';
import {
  DEFERRED_WAIT_MS,
  holdsForCompany,
  matchesFilter,
  newEventId,
  DuplicateEventIdError,
  EventStoreClosedError,
  EventStoreOpenError,
  EventStoreUnavailableError,
  WrongExpectedRevisionError,
  runCatchUpSubscription,
  submitAppend,
  submitAppendMany,
  validateCount,
  validateFilter,
  validateInstant,
  validatePosition,
  validateStreamId,
  eventHash,
  GENESIS_HASH,
  type AppendManyEntry,
  type AppendOptions,
  type AppendResult,
  type EventFilter,
  type EventHandler,
  type EventLink,
  type EventStore,
  type EventToAppend,
  type Lease,
  type Claim,
  type LiveFeed,
  type LiveSegment,
  type NotifiedSince,
  type ReadAllOptions,
  type ReadAllPage,
  type ReadLinksOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type SerialisedAppend,
  type SerialisedEvent,
  type SubscribeOptions,
  type Subscription,
} from '@oncegate/event-store';
import { OwnTails } from './own-tails';
import { SCHEMA_STATEMENTS, SCHEMA_VERSION } from './schema';
import { openFailure, sqliteCode } from './sqlite-errors';
import { HASH_LENGTH, wireRow, type CommittedReply, type SqlRow, type WireError, type WriteItem } from './writer-protocol';
import { walIndexHeader, type WalIndexHeader } from './wal-index-header';
import { WRITE_LOCK_TAKEN, WriterConnection } from './writer-connection';
import { WriterThread } from './writer-thread';

export interface SqliteEventStoreOptions {
  /** Path of the store's single data file (created with its folder's permissions when absent). */
  readonly file: string;
  /**
   * SQLite `synchronous` level. Default `'FULL'`: an acknowledged append has been fsynced to the WAL.
   * `'NORMAL'` may lose the last commits on power loss (never on a process crash).
   */
  readonly synchronous?: 'FULL' | 'EXTRA' | 'NORMAL';
  /** How often commits by other processes are looked for while a subscription waits. Default 50 ms. */
  readonly pollIntervalMs?: number;
  /** How long a write waits for another process's lock before failing. Default 5000 ms. */
  readonly busyTimeoutMs?: number;
  /** Largest number of rows a filtered read scans in one call, so a rare filter never blocks long. Default 50,000. */
  readonly maxScan?: number;
  /** Clock for `recordedAt`. Default: the system clock. */
  readonly clock?: () => Date;
  /**
   * Open for reading only: nothing is created, migrated or written, and appends fail. When the file's folder
   * cannot be written (SQLite needs its `-shm` beside a WAL file), a private copy in the temporary folder is
   * read instead. Default `false`.
   */
  readonly readOnly?: boolean;
  /**
   * Most events of this process's commits queued for one subscriber at the head; a subscriber that falls further
   * behind drops its queue and reads the store instead. Default 10,000.
   */
  readonly liveQueueLimit?: number;
  /**
   * How long an append made with `deferrable` waits for another write to share its transaction (and its fsync), when
   * nothing else is written meanwhile; then it is committed alone. Default 20 ms (`DEFERRED_WAIT_MS`).
   */
  readonly deferredWaitMs?: number;
}

/**
 * What an append's answer needs of an entry once it is posted: its events' types and values. The texts and canonical
 * texts went to the writer thread in the message; not kept here, they die young instead of being copied by every
 * collection of the young generation that comes while the write waits for its answer.
 */
interface PostedEntry {
  readonly streamId: string;
  readonly events: ReadonlyArray<Pick<SerialisedEvent, 'type' | 'dataValue' | 'metadataValue'>>;
}

/**
 * One caller's write waiting for the writer thread's answer: an append (a single stream, or every entry of an
 * `appendMany`, all committed or none; its events' ids assigned) or rows that are not events.
 */
type PendingWrite =
  | {
      readonly kind: 'append';
      readonly entries: readonly PostedEntry[];
      readonly ids: readonly string[];
      readonly recordedAt: string;
      readonly resolve: (results: AppendResult[]) => void;
      readonly reject: (error: unknown) => void;
    }
  | { readonly kind: 'rows'; readonly resolve: () => void; readonly reject: (error: unknown) => void };

/**
 * Writes rows of other tables into a store's file through its writer thread, so they never wait for the write
 * lock on the calling thread (the sealed store's blobs, kept in the events' file).
 */
export interface SqliteRowWriter {
  /**
   * Runs the statements in the writer thread's next transaction, on a savepoint of their own (they fail alone);
   * resolves once that transaction is committed, with the store's `synchronous` level.
   */
  writeRows(rows: readonly SqlRow[]): Promise<void>;
}

/** Rows of the store's own tables that are not events, written through the writer thread. */
const STORE_CHECKPOINT = `INSERT INTO checkpoints (consumer, position, updated_at) VALUES (?, ?, ?)
  ON CONFLICT (consumer) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at`;
const RENEW_LEASE = `INSERT INTO leases (holder, expires_at, renewed_at) VALUES (?, ?, ?)
  ON CONFLICT (holder) DO UPDATE SET expires_at = excluded.expires_at, renewed_at = excluded.renewed_at`;
const RELEASE_LEASE = 'DELETE FROM leases WHERE holder = ?';
/** Takes the claim when it is free, expired, or the owner's already; leaves another owner's live claim alone. */
const TAKE_CLAIM = `INSERT INTO claims (name, owner, expires_at) VALUES (?, ?, ?)
  ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
  WHERE claims.owner = excluded.owner OR claims.expires_at <= ?`;
const RELEASE_CLAIM = 'DELETE FROM claims WHERE name = ? AND owner = ?';

/**
 * An event row in the order of {@link COLUMNS}. Event reads ask node:sqlite for arrays: building an object per
 * row costs about a third of a full read's throughput.
 */
type EventRow = [
  position: number,
  streamId: string,
  revision: number,
  eventId: string,
  type: string,
  data: string,
  metadata: string,
  recordedAt: string,
  prevHash: string,
  hash: string,
];

/** A prepared statement with the parameter and row types this store gives it. */
interface Statement<Params extends SQLInputValue[] = SQLInputValue[], Row = unknown> {
  run(...params: Params): StatementResultingChanges;
  get(...params: Params): Row | undefined;
  all(...params: Params): Row[];
}

function prepare<Params extends SQLInputValue[] = [], Row = unknown>(db: DatabaseSync, sql: string): Statement<Params, Row> {
  return db.prepare(sql) as unknown as Statement<Params, Row>;
}

/**
 * At most this many events above the last one known to be this process's are looked at, stream by stream (a group
 * commit of the writer thread holds fewer); more make every tail unusable until this process's writes are answered.
 */
const EVENTS_ABOVE_LIMIT = 1_024;

/**
 * At most this many events are read at once for their types (`notifiedSince`); after a larger burst the types are
 * known again only from the head, and asks about positions before it cannot be told.
 */
const TYPES_READ_LIMIT = 50_000;

/** A statement whose rows are arrays. */
function prepareArrays<Params extends SQLInputValue[], Row extends unknown[]>(db: DatabaseSync, sql: string): Statement<Params, Row> {
  const statement = db.prepare(sql);
  statement.setReturnArrays(true);
  return statement as unknown as Statement<Params, Row>;
}

/** A statement that reads whole event rows, as arrays. */
function prepareEventRead<Params extends SQLInputValue[]>(db: DatabaseSync, sql: string): Statement<Params, EventRow> {
  const statement = db.prepare(sql);
  statement.setReturnArrays(true);
  return statement as unknown as Statement<Params, EventRow>;
}

const COLUMNS = 'position, stream_id, revision, event_id, type, data, metadata, recorded_at, prev_hash, hash';
const DEFAULT_READ_ALL_COUNT = 1000;

function toRecordedEvent([position, streamId, revision, id, type, data, metadata, recordedAt, prev, hash]: EventRow): RecordedEvent {
  return { streamId, revision, position, id, type, data: JSON.parse(data), metadata: JSON.parse(metadata), recordedAt, prev, hash };
}

interface QueuedSegment {
  readonly after: number;
  last: number;
  readonly events: RecordedEvent[];
}

/**
 * One subscriber's queue of this process's commits. Adjacent commits merge into one segment, and a commit none
 * of whose events the filter takes only extends the range (it wakes nobody); another process's commit or a queue
 * grown past its limit empties it and tells the subscriber to read.
 */
class CommitFeed implements LiveFeed {
  private segments: QueuedSegment[] = [];
  private queued = 0;
  private mustRead = false;
  private wakeUp: (() => void) | undefined;
  /** An unhurried subscriber's wake-up is on its way (`wakeAfterCommit`). */
  private wakeScheduled = false;

  /**
   * @param lastPushed the store's head when the feed opened: a commit that does not start there (or where the
   * previous one ended) follows another process's events, which only a read delivers.
   */
  constructor(
    private readonly filter: EventFilter | undefined,
    private readonly limit: number,
    private readonly onClose: (feed: CommitFeed) => void,
    private lastPushed: number,
    private readonly unhurried: boolean,
  ) {}

  /** Every event this process committed at positions `(after, last]`, in position order. */
  push(after: number, last: number, events: readonly RecordedEvent[]): void {
    const filter = this.filter;
    const taken = filter === undefined ? events : events.filter((event) => matchesFilter(filter, event));
    // Another process committed between this commit and the one before (or the feed's opening): its events lie in
    // the gap, perhaps ones the filter takes, so the subscriber must be woken to read even when this commit
    // holds nothing for it (the poll may not tell: this commit already moved the known head past them).
    const gap = after !== this.lastPushed;
    this.lastPushed = last;
    if (gap) {
      this.readInstead();
      return;
    }
    const tail = this.segments.at(-1);
    if (tail !== undefined && tail.last === after) {
      tail.last = last;
      for (const event of taken) tail.events.push(event);
    } else {
      this.segments.push({ after, last, events: [...taken] });
    }
    this.queued += taken.length;
    if (this.queued > this.limit) this.readInstead();
    else if (taken.length > 0) this.wakeAfterCommit();
  }

  /** Another process committed, or the queue is too long: what is queued is dropped and the store is read. */
  readInstead(): void {
    this.segments = [];
    this.queued = 0;
    this.mustRead = true;
    this.wake();
  }

  take(): LiveSegment | 'read' | undefined {
    if (this.mustRead) {
      this.mustRead = false;
      return 'read';
    }
    const segment = this.segments.shift();
    if (segment !== undefined) this.queued -= segment.events.length;
    return segment;
  }

  wait(signal: AbortSignal, onIdle: () => void): Promise<void> {
    if (signal.aborted || this.mustRead || this.segments.length > 0) return Promise.resolve();
    onIdle();
    return new Promise((resolve) => {
      const done = () => {
        this.wakeUp = undefined;
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.wakeUp = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }

  close(): void {
    this.segments = [];
    this.wake();
    this.onClose(this);
  }

  private wake(): void {
    this.wakeUp?.();
  }

  /**
   * At once; for an unhurried subscriber (`SubscribeOptions.unhurried`) two `setImmediate`s after the commit's
   * answer: the continuations of the appends it answered run first, and with them the requests they send (an HTTP
   * client writes on an idle kept-alive socket one `setImmediate` after it is asked), so a subscriber with nothing
   * to do for those events does not stand between a call and its request.
   */
  private wakeAfterCommit(): void {
    if (!this.unhurried) {
      this.wake();
      return;
    }
    if (this.wakeScheduled) return;
    this.wakeScheduled = true;
    setImmediate(() =>
      setImmediate(() => {
        this.wakeScheduled = false;
        this.wake();
      }),
    );
  }
}

/**
 * Writes of one turn posted before the turn ends once this many have gathered: the writer thread starts on them
 * while this thread checks the rest, so a burst is committed as two overlapping transactions instead of one after
 * all is checked (64 closed-loop writers, three interleaved rounds on a busy machine: 6 to 30 % more events/s than
 * posting at the end of the turn alone; 16 measured no better than that).
 */
const POST_CHUNK = 32;

/**
 * The writes of one turn the calling thread commits itself at most (`commitHere`): a call's commit is one to three
 * (its events, a sealed blob, a checkpoint); more come together only when many calls are under way.
 */
const COMMIT_HERE_MAX_WRITES = 4;

/**
 * How long the event loop must have waited for work since the last transaction was answered before the calling
 * thread commits a write itself (`commitHere`): a call made alone waits for its target or for the agent's next
 * request between its commits, while under load the loop always has another call's work to do, and the fsync of a
 * commit here would hold that work up.
 */
const IDLE_BEFORE_COMMIT_HERE_MS = 0.05;

/** The stores open in this process that may write, for {@link limitWriterPages}. */
const writableStores = new Set<SqliteEventStore>();

/**
 * Sets `PRAGMA max_page_count` on the write connections of every store of this process open on `file`
 * (a test's full disk: SQLite answers SQLITE_FULL once the file would grow past it); resolves once applied.
 */
export async function limitWriterPages(file: string, maxPageCount: number): Promise<void> {
  const target = resolve(file);
  await Promise.all(
    [...writableStores]
      .filter((store) => resolve(store.location) === target)
      .map((store) => store.limitPages(maxPageCount)),
  );
}

/** The smallest string greater than every string starting with `prefix` (for index range scans). */
function prefixUpperBound(prefix: string): string {
  return prefix + '\u{10FFFF}';
}

/**
 * The embedded event store: one SQLite file in WAL mode. Writes are serialised by SQLite's write lock,
 * so global positions become visible strictly in order: a reader that sees position N sees every
 * position below it, which is what lets catch-up subscriptions turn live with no gap.
 *
 * The calling thread reads through its own connection; the writes of the store (appends, checkpoints, leases,
 * and the rows of a {@link SqliteRowWriter}) go to a writer thread that holds a write connection, so no commit's
 * fsync and no wait for another process's lock blocks an event loop that has other work. A write that comes when
 * nothing else is going on is committed by the calling thread itself, on a write connection of its own
 * (`commitHere`).
 */
export class SqliteEventStore implements EventStore, SqliteRowWriter {
  private readonly db: DatabaseSync;
  private readonly clock: () => Date;
  private readonly pollIntervalMs: number;
  private readonly maxScan: number;
  private readonly readOnly: boolean;
  private readonly synchronous: 'FULL' | 'EXTRA' | 'NORMAL';
  private readonly busyTimeoutMs: number;
  private writer: WriterThread | undefined;
  /** The calling thread's own write connection, for the writes it commits itself (see `commitHere`). */
  private inline: WriterConnection | undefined;
  /** The page limit `limitPages` set, for the calling thread's write connection when it is made. */
  private pageLimit: string | undefined;
  /** The event loop's idle time (ms, `performance.eventLoopUtilization`) when the last transaction was answered. */
  private idleAtAnswer = Number.NEGATIVE_INFINITY;
  /** Writes handed to the writer thread (or about to be), by id, until it answers. */
  private readonly pendingWrites = new Map<number, PendingWrite>();
  /** Writes of this turn of the event loop, posted together. */
  private outbox: WriteItem[] = [];
  private postScheduled = false;
  /**
   * Deferrable appends waiting for company: posted ahead of the next write (so nothing issued after them overtakes
   * them), or alone once `deferredWaitMs` has passed, or at close.
   */
  private held: WriteItem[] = [];
  private heldTimer: NodeJS.Timeout | undefined;
  private readonly deferredWaitMs: number;
  private nextWriteId = 1;
  /** The last write id posted to the writer thread, and the last one answered: writes are answered in order. */
  private lastPostedId = 0;
  private lastAnsweredId = 0;
  /**
   * The head the poll saw while writes of this process were in flight (some of those events may be ours), to be
   * compared with the known head once the writes posted by then are answered.
   */
  private deferredPoll: { head: number; untilId: number } | undefined;
  private closed = false;
  private readonly waiters = new Set<{ readonly wake: () => void; readonly filter: EventFilter | undefined }>();
  private readonly feeds = new Set<CommitFeed>();
  private readonly liveQueueLimit: number;
  private pollTimer: NodeJS.Timeout | undefined;
  private lastDataVersion = 0;
  /** `data_version` as asked in the current run of the microtask queue (`dataVersion`). */
  private versionOfThisRun: number | undefined;
  /**
   * The highest position this process knows to be handed to its feeds or told to them as another's: every event
   * above it is another process's, committed since. The poll uses it to tell another process's events from other
   * writes to the file (checkpoints, leases, sealed blobs in the same file), which need no read.
   */
  private knownHead = 0;
  /** The latest events of the streams this process committed or read to their end, for the reads that follow. */
  private readonly tails = new OwnTails();
  /**
   * The position up to which every event in the file is known to the tails: this process's own, or read, or older
   * than every tail. The events above it are looked at before a tail is used (`ownTailHolds`).
   */
  private ownThrough = 0;
  /** The `data_version` at which the tails were last checked against the file: unchanged since, nobody committed. */
  private ownVerifiedAt: number | undefined;
  /**
   * Streams with events in the file above `ownThrough` while writes of this process were unanswered (as of
   * `ownVerifiedAt`): their tails may be behind the file.
   */
  private streamsAbove: ReadonlySet<string> = new Set();
  /**
   * The types of every event at positions `(typesFrom, typesThrough]`, as the highest position of each
   * (`notifiedSince`): this process's commits extend it as they are answered; whatever else was committed is read
   * once the file says somebody committed (`typesVerifiedAt`). Positions up to `typesFrom` (the head when the store
   * opened) are not known.
   */
  private typesFrom = 0;
  private typesThrough = 0;
  /** The `data_version` at which `typesThrough` was the file's head. */
  private typesVerifiedAt: number | undefined;
  /** The highest position this process read: an event's, or the head's. */
  private readThrough = 0;
  private readonly lastOfType = new Map<string, number>();
  private readonly subscriptions = new Set<Subscription>();
  private readonly readAllStatements = new Map<string, Statement<SQLInputValue[], EventRow>>();
  private readonly file: string;
  /** A temporary copy read instead of an unwritable folder's file (read-only mode only). */
  private copyDir: string | undefined;

  private readonly dataVersionStatement: Statement<[], { data_version: number }>;
  /** The file's WAL index header (`wal-index-header.ts`), to tell that nobody committed since this process's last commit. */
  private readonly walHeader: WalIndexHeader;
  /**
   * The WAL index header as the writer thread's last answered commit left it, when it could tell (`CommittedReply`):
   * while the file's header is still this and every write posted is answered, nobody has committed since.
   */
  private ownWalHeader: Uint8Array | undefined;
  /** Whether the header was `ownWalHeader` when asked in the current run of the microtask queue (`quietSinceOwnCommit`). */
  private quietOfThisRun: boolean | undefined;
  private readonly statements: {
    streamRevision: Statement<[string], { revision: number | null }>;
    readForwards: Statement<[string, number, number], EventRow>;
    readBackwards: Statement<[string, number, number], EventRow>;
    head: Statement<[], { head: number | null }>;
    eventsAbove: Statement<[number, number], [position: number, streamId: string, type: string]>;
    readCheckpoint: Statement<[string], { position: number }>;
    readLinks: Statement<[number, number], [position: number, hash: string]>;
    readLease: Statement<[string], { holder: string; expires_at: string }>;
    readLeases: Statement<[string, string], { holder: string; expires_at: string }>;
    readClaim: Statement<[string], { name: string; owner: string; expires_at: string }>;
    readClaims: Statement<[string, string], { name: string; owner: string; expires_at: string }>;
  };

  constructor(options: SqliteEventStoreOptions) {
    this.clock = options.clock ?? (() => new Date());
    this.pollIntervalMs = options.pollIntervalMs ?? 50;
    this.maxScan = options.maxScan ?? 50_000;
    this.liveQueueLimit = options.liveQueueLimit ?? 10_000;
    validateCount(this.liveQueueLimit, 'liveQueueLimit');
    this.deferredWaitMs = options.deferredWaitMs ?? DEFERRED_WAIT_MS;
    validatePosition(this.deferredWaitMs, 'deferredWaitMs');
    const synchronous = options.synchronous ?? 'FULL';
    if (!['FULL', 'EXTRA', 'NORMAL'].includes(synchronous)) {
      throw new Error(`synchronous must be FULL, EXTRA or NORMAL, got ${String(synchronous)}`);
    }
    this.file = options.file;
    this.readOnly = options.readOnly ?? false;
    this.synchronous = synchronous;
    this.busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    try {
      if (options.readOnly) {
        this.db = this.openReadOnly(options.file, options.busyTimeoutMs ?? 5000);
      } else {
        this.db = new DatabaseSync(options.file, { timeout: options.busyTimeoutMs ?? 5000 });
        this.db.exec('PRAGMA journal_mode = WAL');
        this.db.exec(`PRAGMA synchronous = ${synchronous}`);
        this.db.exec('PRAGMA foreign_keys = ON');
        // 16 MiB of page cache, as better-sqlite3 gave every connection (Node's SQLite is built with 2 MiB).
        this.db.exec('PRAGMA cache_size = -16000');
        this.migrate();
        // SQLite opens a file it may not write read-only without a word; one write now says so at the start.
        this.db.exec("UPDATE store_meta SET value = value WHERE key = 'schema_version'");
      }
    } catch (error) {
      this.removeCopy();
      throw openFailure(options.file, error);
    }
    this.statements = {
      streamRevision: prepare(this.db, 'SELECT max(revision) AS revision FROM events WHERE stream_id = ?'),
      readForwards: prepareEventRead(
        this.db,
        `SELECT ${COLUMNS} FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision ASC LIMIT ?`,
      ),
      readBackwards: prepareEventRead(
        this.db,
        `SELECT ${COLUMNS} FROM events WHERE stream_id = ? AND revision <= ? ORDER BY revision DESC LIMIT ?`,
      ),
      head: prepare(this.db, 'SELECT max(position) AS head FROM events'),
      eventsAbove: prepareArrays(this.db, 'SELECT position, stream_id, type FROM events WHERE position > ? ORDER BY position LIMIT ?'),
      readCheckpoint: prepare(this.db, 'SELECT position FROM checkpoints WHERE consumer = ?'),
      readLinks: prepareArrays(this.db, 'SELECT position, hash FROM events WHERE position > ? ORDER BY position LIMIT ?'),
      readLease: prepare(this.db, 'SELECT holder, expires_at FROM leases WHERE holder = ?'),
      readLeases: prepare(this.db, 'SELECT holder, expires_at FROM leases WHERE substr(holder, 1, length(?)) = ? ORDER BY holder'),
      readClaim: prepare(this.db, 'SELECT name, owner, expires_at FROM claims WHERE name = ?'),
      readClaims: prepare(this.db, 'SELECT name, owner, expires_at FROM claims WHERE substr(name, 1, length(?)) = ? ORDER BY name'),
    };
    this.dataVersionStatement = prepare<[], { data_version: number }>(this.db, 'PRAGMA data_version');
    this.walHeader = walIndexHeader(this.location);
    if (!this.readOnly) writableStores.add(this);
    this.lastDataVersion = this.dataVersion();
    this.knownHead = this.head();
    this.ownThrough = this.knownHead;
    this.typesFrom = this.knownHead;
    this.typesThrough = this.knownHead;
  }

  /** The store's data file, as given. */
  get location(): string {
    return this.file;
  }

  private openReadOnly(file: string, timeout: number): DatabaseSync {
    try {
      const db = new DatabaseSync(file, { readOnly: true, timeout });
      this.checkSchemaVersion(db);
      return db;
    } catch (error) {
      if (!/^SQLITE_(READONLY|CANTOPEN)/.test(sqliteCode(error)) || !existsSync(file)) throw error;
    }
    // A WAL file needs its -shm beside it; in a folder nobody may write, read a private copy instead.
    this.copyDir = mkdtempSync(join(tmpdir(), 'oncegate-read-'));
    const copy = join(this.copyDir, basename(file));
    copyFileSync(file, copy);
    if (existsSync(`${file}-wal`)) copyFileSync(`${file}-wal`, `${copy}-wal`);
    const db = new DatabaseSync(copy, { readOnly: true, timeout });
    this.checkSchemaVersion(db);
    return db;
  }

  private checkSchemaVersion(db: DatabaseSync): void {
    const row = db.prepare("SELECT value FROM store_meta WHERE key = 'schema_version'").get() as { value: string } | undefined;
    if (row !== undefined && Number(row.value) > SCHEMA_VERSION) {
      throw new EventStoreOpenError(this.file, 'newer_schema', `schema version ${row.value}, this build reads ${SCHEMA_VERSION}`);
    }
  }

  private removeCopy(): void {
    if (this.copyDir !== undefined) rmSync(this.copyDir, { recursive: true, force: true });
    this.copyDir = undefined;
  }

  private migrate(): void {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      for (const statement of SCHEMA_STATEMENTS) this.db.exec(statement);
      const row = this.db.prepare("SELECT value FROM store_meta WHERE key = 'schema_version'").get() as
        | { value: string }
        | undefined;
      if (row === undefined) {
        this.db.prepare("INSERT INTO store_meta (key, value) VALUES ('schema_version', ?)").run(String(SCHEMA_VERSION));
      } else if (Number(row.value) > SCHEMA_VERSION) {
        throw new EventStoreOpenError(this.file, 'newer_schema', `schema version ${row.value}, this build reads ${SCHEMA_VERSION}`);
      } else if (Number(row.value) === 1) {
        this.addHashChain();
        this.db.prepare("UPDATE store_meta SET value = ? WHERE key = 'schema_version'").run(String(SCHEMA_VERSION));
      }
      this.db.exec('COMMIT');
    } catch (error) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw error;
    }
  }

  /** Version 1 stores had no hash chain: add the columns and link every existing event, stream by stream. */
  private addHashChain(): void {
    this.db.exec("ALTER TABLE events ADD COLUMN prev_hash TEXT NOT NULL DEFAULT ''");
    this.db.exec("ALTER TABLE events ADD COLUMN hash TEXT NOT NULL DEFAULT ''");
    const update = this.db.prepare('UPDATE events SET prev_hash = ?, hash = ? WHERE position = ?');
    const tips = new Map<string, string>();
    const rows = this.db
      .prepare('SELECT position, stream_id, revision, event_id, type, data, metadata, recorded_at FROM events ORDER BY stream_id, revision')
      .all() as unknown as Array<{
      position: number;
      stream_id: string;
      revision: number;
      event_id: string;
      type: string;
      data: string;
      metadata: string;
      recorded_at: string;
    }>;
    for (const row of rows) {
      const prev = tips.get(row.stream_id) ?? GENESIS_HASH;
      const hash = eventHash(prev, {
        streamId: row.stream_id,
        revision: row.revision,
        id: row.event_id,
        type: row.type,
        data: JSON.parse(row.data),
        metadata: JSON.parse(row.metadata),
        recordedAt: row.recorded_at,
      });
      update.run(prev, hash, row.position);
      tips.set(row.stream_id, hash);
    }
  }

  appendToStream(streamId: string, events: readonly EventToAppend[], options: AppendOptions = {}): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new EventStoreClosedError());
    return submitAppend(streamId, events, options, (entries) => this.enqueueAppend(entries, options.deferrable ?? false));
  }

  appendMany(batch: readonly AppendManyEntry[]): Promise<AppendResult[]> {
    if (this.closed) return Promise.reject(new EventStoreClosedError());
    return submitAppendMany(batch, (entries) => this.enqueueAppend(entries));
  }

  /**
   * Writes rows of other tables into this store's file in the writer thread's next transaction (see
   * {@link SqliteRowWriter}): once this resolves the rows are in the WAL, before any event that references them,
   * and they are durable with the next commit of events (a transaction of rows only is not synced on its own).
   */
  writeRows(rows: readonly SqlRow[]): Promise<void> {
    return this.enqueueRows(rows, false);
  }

  /** Queues rows as one write; `threadOnly`: for the writer thread's connection itself, never committed here. */
  private enqueueRows(rows: readonly SqlRow[], threadOnly: boolean): Promise<void> {
    if (this.closed) return Promise.reject(new EventStoreClosedError());
    return new Promise<void>((resolve, reject) => {
      const id = this.nextWriteId++;
      this.enqueue({ kind: 'rows', id, rows: rows.map(wireRow), ...(threadOnly ? { threadOnly } : {}) }, { kind: 'rows', resolve, reject });
    });
  }

  private enqueueAppend(entries: readonly SerialisedAppend[], deferrable: boolean | AbortSignal = false): Promise<AppendResult[]> {
    return new Promise((resolve, reject) => {
      const id = this.nextWriteId++;
      // The calling thread assigns ids and the time: the writer thread gets plain texts, and live subscribers get
      // the events from what is kept here.
      const recordedAt = this.clock().toISOString();
      const ids: string[] = [];
      const wire = entries.map((entry) => ({
        streamId: entry.streamId,
        expected: entry.expected,
        events: entry.events.map((event) => {
          const eventId = event.id ?? newEventId();
          ids.push(eventId);
          return {
            id: eventId,
            type: event.type,
            data: event.data,
            metadata: event.metadata,
            ...(event.canonicalData === event.data ? {} : { canonicalData: event.canonicalData }),
            ...(event.canonicalMetadata === event.metadata ? {} : { canonicalMetadata: event.canonicalMetadata }),
          };
        }),
      }));
      const item: WriteItem = { kind: 'append', id, recordedAt, entries: wire };
      const posted: PostedEntry[] = entries.map((entry) => ({
        streamId: entry.streamId,
        events: entry.events.map(({ type, dataValue, metadataValue }) => ({ type, dataValue, metadataValue })),
      }));
      const pending: PendingWrite = { kind: 'append', entries: posted, ids, recordedAt, resolve, reject };
      if (holdsForCompany(deferrable) && !this.readOnly) this.hold(item, pending, deferrable instanceof AbortSignal ? deferrable : undefined);
      else this.enqueue(item, pending);
    });
  }

  /**
   * A deferrable append: written with the next write, or alone once it has waited `deferredWaitMs`, or at once when
   * its signal aborts (something now waits for it).
   */
  private hold(item: WriteItem, pending: PendingWrite, hurry: AbortSignal | undefined): void {
    this.pendingWrites.set(item.id, pending);
    this.held.push(item);
    this.heldTimer ??= setTimeout(() => {
      this.heldTimer = undefined;
      this.postHeld();
    }, this.deferredWaitMs);
    hurry?.addEventListener(
      'abort',
      () => {
        if (this.held.includes(item)) this.postHeld();
      },
      { once: true },
    );
  }

  /** The held appends are written with whatever else this turn of the event loop writes. */
  private postHeld(): void {
    this.release();
    this.schedulePost();
  }

  /** The held appends go into the outbox ahead of whatever comes next. */
  private release(): void {
    if (this.heldTimer !== undefined) {
      clearTimeout(this.heldTimer);
      this.heldTimer = undefined;
    }
    if (this.held.length === 0) return;
    this.outbox.push(...this.held);
    this.held = [];
  }

  /**
   * Queues a write for the writer thread. Writes of the same turn of the event loop go in one message (or one per
   * `POST_CHUNK`); the thread writes whatever arrived while it committed the previous transaction as the next one
   * (group commit).
   */
  private enqueue(item: WriteItem, pending: PendingWrite): void {
    if (this.readOnly) {
      pending.reject(new EventStoreUnavailableError(this.file, 'SQLITE_READONLY: opened read-only'));
      return;
    }
    this.pendingWrites.set(item.id, pending);
    this.release();
    this.outbox.push(item);
    if (this.outbox.length >= POST_CHUNK) this.postOutbox();
    else this.schedulePost();
  }

  /** Posts the outbox once this turn of the event loop ends (or commits it here, see `commitHere`). */
  private schedulePost(): void {
    if (this.postScheduled) return;
    this.postScheduled = true;
    setImmediate(() => {
      this.postScheduled = false;
      this.postOutbox(true);
    });
  }

  private postOutbox(mayCommitHere = false): void {
    const items = this.outbox;
    if (items.length === 0) return;
    this.outbox = [];
    this.lastPostedId = items[items.length - 1]!.id;
    if (mayCommitHere && this.commitHere(items)) return;
    try {
      this.writer ??= new WriterThread(
        { file: this.file, synchronous: this.synchronous, busyTimeoutMs: this.busyTimeoutMs },
        { committed: (reply) => this.onCommitted(reply), stopped: (reason) => this.onWriterStopped(reason) },
      );
    } catch (error) {
      this.onWriterStopped(`it could not start: ${(error as Error).message}`);
      return;
    }
    this.writer.post({ kind: 'write', items }, items.length);
  }

  /**
   * Commits the writes of this turn on this thread, with its own write connection, when nothing else is going on:
   * the writer thread has nothing in flight, the event loop has waited for something to do for at least
   * `IDLE_BEFORE_COMMIT_HERE_MS` since the last transaction was answered, and only a few writes came in this turn. A
   * write that comes alone is then spared the writer thread's two wake-ups (posted to the thread, answered back:
   * about 0.09 ms each on a 2-core machine, a call's commits' largest cost after their fsync), and the fsync blocks
   * an event loop that has nothing else to do. Under load writes
   * follow one another and go to the writer thread, which commits them together while this thread works on. Nothing
   * is committed here when another connection holds the file's write lock (the lock is asked for once, without
   * waiting): the writer thread then waits for it, as it does for every write.
   */
  private commitHere(items: readonly WriteItem[]): boolean {
    if (items.length > COMMIT_HERE_MAX_WRITES || this.writer?.idle === false) return false;
    if (performance.eventLoopUtilization().idle - this.idleAtAnswer < IDLE_BEFORE_COMMIT_HERE_MS) return false;
    if (items.some((item) => item.kind === 'rows' && item.threadOnly === true)) return false;
    let reply: CommittedReply | typeof WRITE_LOCK_TAKEN;
    try {
      if (this.inline === undefined) {
        this.inline = new WriterConnection({ file: this.file, synchronous: this.synchronous, busyTimeoutMs: 0 });
        if (this.pageLimit !== undefined) this.inline.run(this.pageLimit);
      }
      reply = this.inline.tryCommitTogether(items);
    } catch {
      // The connection could not be made: the writer thread's reports what is wrong.
      return false;
    }
    if (reply === WRITE_LOCK_TAKEN) return false;
    this.onCommitted(reply);
    return true;
  }

  /**
   * `PRAGMA max_page_count` on both write connections (`limitWriterPages`): the calling thread's now or when it is
   * made, the writer thread's in its next transaction.
   */
  limitPages(maxPageCount: number): Promise<void> {
    if (this.closed) return Promise.reject(new EventStoreClosedError());
    const sql = `PRAGMA max_page_count = ${Math.trunc(maxPageCount)}`;
    this.pageLimit = sql;
    this.inline?.run(sql);
    return this.enqueueRows([{ sql, params: [] }], true);
  }

  /**
   * One transaction of a write connection (the writer thread's, or this thread's own): settles its writes, hands
   * what it appended to the live feeds (the events this thread kept, with the positions and links the writer
   * computed) and wakes waiting subscriptions.
   */
  private onCommitted(reply: CommittedReply): void {
    this.idleAtAnswer = performance.eventLoopUtilization().idle;
    const live = this.feeds.size > 0;
    // Another writer's events came before this transaction: the kept tails may be behind the file.
    if (reply.headBefore > this.ownThrough) this.tails.clear();
    const waiting = this.waiters.size > 0;
    const recorded: RecordedEvent[] = [];
    const committed: Array<{ streamId: string; type: string }> = [];
    const errors = new Map(reply.errors);
    const { positions, revisions, prevs, hashes } = reply;
    /** The next event's row in the reply's columns. */
    let n = 0;
    reply.ids.forEach((id, index) => {
      const pending = this.pendingWrites.get(id);
      this.lastAnsweredId = id;
      this.pendingWrites.delete(id);
      const error = errors.get(index);
      if (pending === undefined) return;
      if (error !== undefined) {
        if (error.kind === 'wrong_expected_revision') this.tails.forget(error.streamId);
        pending.reject(this.storeError(error));
        return;
      }
      if (pending.kind === 'rows') {
        pending.resolve();
        return;
      }
      const results: AppendResult[] = [];
      let k = 0;
      for (const entry of pending.entries) {
        const from = recorded.length;
        entry.events.forEach((event) => {
          if (waiting) committed.push({ streamId: entry.streamId, type: event.type });
          recorded.push({
            streamId: entry.streamId,
            revision: revisions[n]!,
            position: positions[n]!,
            id: pending.ids[k]!,
            type: event.type,
            data: event.dataValue,
            metadata: event.metadataValue,
            recordedAt: pending.recordedAt,
            prev: prevs.slice(n * HASH_LENGTH, (n + 1) * HASH_LENGTH),
            hash: hashes.slice(n * HASH_LENGTH, (n + 1) * HASH_LENGTH),
          });
          n += 1;
          k += 1;
        });
        if (recorded.length > from) this.tails.committed(entry.streamId, recorded.slice(from));
        results.push({ streamId: entry.streamId, nextExpectedRevision: revisions[n - 1]!, position: positions[n - 1]!, events: recorded.slice(from) });
      }
      pending.resolve(results);
    });
    const last = n > 0 ? positions[n - 1]! : 0;
    // Another process committed between this process's last known event and this transaction: waiters whose
    // filter takes nothing of ours may want its events (the feeds see the gap themselves).
    const othersBefore = reply.headBefore > this.knownHead;
    if (n > 0 && reply.headBefore === this.typesThrough) {
      for (const event of recorded) this.lastOfType.set(event.type, event.position);
      this.typesThrough = last;
    }
    this.ownThrough = Math.max(this.ownThrough, reply.headBefore, last);
    // The streams found above may be answered now: check again on the next read.
    if (this.streamsAbove.size > 0) this.ownVerifiedAt = undefined;
    if (last > this.knownHead) this.knownHead = last;
    this.ownWalHeader = reply.walHeader;
    this.quietOfThisRun = undefined;
    if (live && recorded.length > 0) for (const feed of this.feeds) feed.push(reply.headBefore, last, recorded);
    if (othersBefore) this.wakeWaiters();
    else if (committed.length > 0) this.wakeWaiters(committed);
    if (this.deferredPoll !== undefined && this.lastAnsweredId >= this.deferredPoll.untilId) {
      const { head } = this.deferredPoll;
      this.deferredPoll = undefined;
      this.othersCommitted(head);
    }
  }

  /** The writer thread stopped unasked: every write not answered fails, and the next write starts a new thread. */
  private onWriterStopped(reason: string): void {
    this.writer = undefined;
    // Writes it did not answer may or may not be in the file: the tails are no longer known to be the head.
    this.tails.clear();
    this.ownThrough = -1;
    this.ownWalHeader = undefined;
    const error = new EventStoreUnavailableError(
      this.file,
      `the writer thread stopped (${reason}) before answering; writes in flight may or may not be stored`,
    );
    const unanswered = [...this.pendingWrites.entries()].filter(([id]) => id <= this.lastPostedId);
    for (const [id, pending] of unanswered) {
      this.pendingWrites.delete(id);
      pending.reject(error);
    }
    this.lastAnsweredId = this.lastPostedId;
    if (this.deferredPoll !== undefined) {
      const { head } = this.deferredPoll;
      this.deferredPoll = undefined;
      this.othersCommitted(head);
    }
  }

  private storeError(error: WireError): Error {
    switch (error.kind) {
      case 'wrong_expected_revision':
        return new WrongExpectedRevisionError(error.streamId, error.expected, error.actual);
      case 'duplicate_event_id':
        return new DuplicateEventIdError(error.streamId, error.eventId);
      case 'store_unavailable':
        return new EventStoreUnavailableError(this.file, error.detail);
      case 'failed':
        return new Error(`the store ${this.file} could not write: ${error.message}`);
    }
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    validateStreamId(streamId);
    const direction = options.direction ?? 'forwards';
    if (options.fromRevision !== undefined) validatePosition(options.fromRevision, 'fromRevision');
    if (options.maxCount !== undefined) validateCount(options.maxCount, 'maxCount');
    if (this.tails.has(streamId) && this.ownTailHolds(streamId)) {
      const kept = this.tails.read(streamId, options);
      if (kept !== undefined) return kept;
    }
    const limit = options.maxCount ?? -1;
    const rows =
      direction === 'forwards'
        ? this.statements.readForwards.all(streamId, options.fromRevision ?? 0, limit)
        : this.statements.readBackwards.all(streamId, options.fromRevision ?? Number.MAX_SAFE_INTEGER, limit);
    const events = rows.map(toRecordedEvent);
    this.noteRead(direction === 'forwards' ? events.at(-1) : events[0]);
    // A read that reached the stream's end is kept as its tail, as a commit of this process's would be.
    if (direction === 'forwards') {
      if (limit === -1 || events.length < limit) {
        if (events.length > 0) this.tails.learned(streamId, events, events.at(-1)!.revision);
        else if ((options.fromRevision ?? 0) === 0) this.tails.learned(streamId, [], -1);
      }
    } else if (options.fromRevision === undefined) {
      this.tails.learned(streamId, [...events].reverse(), events[0]?.revision ?? -1);
    }
    return events;
  }

  async streamRevision(streamId: string): Promise<number | undefined> {
    this.assertOpen();
    validateStreamId(streamId);
    if (this.tails.has(streamId) && this.ownTailHolds(streamId)) {
      const kept = this.tails.revision(streamId);
      if (kept !== undefined) return kept === -1 ? undefined : kept;
    }
    const revision = this.statements.streamRevision.get(streamId)?.revision ?? undefined;
    this.tails.learned(streamId, [], revision ?? -1);
    return revision;
  }

  /**
   * Whether the stream's kept tail is still its head in the file. Nobody committed since the tails were last
   * checked (`data_version` unchanged): yes. Otherwise the events above the last one known to be this process's are
   * looked at, and the tails of the streams they touch are not used: while writes of this process are unanswered
   * those events may be its own, committed by the writer thread (their tails are behind until the answer comes);
   * with none unanswered they are another writer's, and those tails are forgotten.
   */
  private ownTailHolds(streamId: string): boolean {
    if (this.quietSinceOwnCommit()) {
      // The file is as this process's last commit left it: every tail kept is its stream's head.
      if (this.streamsAbove.size > 0) this.streamsAbove = new Set();
      return true;
    }
    const version = this.dataVersion();
    if (version !== this.ownVerifiedAt && !this.lookAbove(version)) return false;
    return !this.streamsAbove.has(streamId);
  }

  /**
   * One look at the events above what this process knows, for the tails (`ownThrough`) and the types
   * (`typesThrough`) at once, after `data_version` moved; `false` when there were too many to tell the tails by
   * while writes of this process are unanswered (then they are not used, and the next read looks again).
   */
  private lookAbove(version: number): boolean {
    const from = Math.min(this.ownThrough, this.typesThrough);
    const rows = this.statements.eventsAbove.all(from, EVENTS_ABOVE_LIMIT);
    const full = rows.length === EVENTS_ABOVE_LIMIT;
    for (const [position, , type] of rows) {
      if (position <= this.typesThrough) continue;
      this.lastOfType.set(type, position);
      this.typesThrough = position;
    }
    if (!full) this.typesVerifiedAt = version;
    const unanswered = this.lastAnsweredId < this.lastPostedId;
    if (full) {
      // Too many to look at one by one: another writer's burst, or this process's unanswered.
      if (unanswered) return false;
      this.tails.clear();
      this.ownThrough = this.head();
      this.streamsAbove = new Set();
    } else {
      const above = rows.filter(([position]) => position > this.ownThrough);
      if (unanswered) {
        this.streamsAbove = new Set(above.map(([, stream]) => stream));
      } else {
        for (const [, stream] of above) this.tails.forget(stream);
        if (above.length > 0) this.ownThrough = above.at(-1)![0];
        this.streamsAbove = new Set();
      }
    }
    this.ownVerifiedAt = version;
    return true;
  }

  async headPosition(): Promise<number> {
    this.assertOpen();
    return this.head();
  }

  /** The highest of this process's answered commits, of the commits of others it noticed, and of what it read. */
  seenPosition(): number {
    return Math.max(this.knownHead, this.readThrough);
  }

  /**
   * From the types of every event committed in the file when asked, not only those this process knows of: a verdict
   * decided before the call's own commit counts a run ended or a vault locked by another process (the CLI) whose
   * command has returned. This process's commits add their types as they are answered; when the file says somebody
   * committed since the last look (`PRAGMA data_version`, asked once per run of the microtask queue), the events
   * above the last type known are read (one indexed range, usually of nothing: this process's own, already added).
   * `undefined` for a position before the store was opened.
   */
  notifiedSince(after: number, types: readonly string[]): NotifiedSince | undefined {
    this.assertOpen();
    this.learnTypes();
    if (after < this.typesFrom) return undefined;
    return { changed: types.some((type) => (this.lastOfType.get(type) ?? -1) > after), through: this.typesThrough };
  }

  /** A read returned events up to `highest`: the commits holding them are known to this process (`seenPosition`). */
  private noteRead(highest: RecordedEvent | undefined): void {
    if (highest !== undefined && highest.position > this.readThrough) this.readThrough = highest.position;
  }

  /** Learns the types of what was committed since they were last brought to the file's head. */
  private learnTypes(): void {
    // The file is as this process's last commit left it, whose types are known when nothing before it is missing.
    if (this.typesThrough >= this.ownThrough && this.quietSinceOwnCommit()) return;
    const version = this.dataVersion();
    if (version === this.typesVerifiedAt) return;
    if (version !== this.ownVerifiedAt) this.lookAbove(version);
    if (version === this.typesVerifiedAt) return;
    const rows = this.statements.eventsAbove.all(this.typesThrough, TYPES_READ_LIMIT + 1);
    if (rows.length > TYPES_READ_LIMIT) {
      // Too many to take one by one: known again from the head on.
      this.lastOfType.clear();
      this.typesFrom = this.head();
      this.typesThrough = this.typesFrom;
    } else {
      for (const [position, , type] of rows) this.lastOfType.set(type, position);
      if (rows.length > 0) this.typesThrough = rows.at(-1)![0];
    }
    this.typesVerifiedAt = version;
  }

  private head(): number {
    const head = this.statements.head.get()?.head ?? 0;
    if (head > this.readThrough) this.readThrough = head;
    return head;
  }

  async readAll(options: ReadAllOptions = {}): Promise<ReadAllPage> {
    this.assertOpen();
    return this.readAllNow(options);
  }

  private readAllNow(options: ReadAllOptions): ReadAllPage {
    const direction = options.direction ?? 'forwards';
    const maxCount = options.maxCount ?? DEFAULT_READ_ALL_COUNT;
    validateCount(maxCount, 'maxCount');
    validateFilter(options.filter);
    const head = this.head();
    let low: number;
    let high: number;
    if (direction === 'forwards') {
      const after = options.after ?? 0;
      validatePosition(after, 'after');
      low = after;
      high = options.filter ? Math.min(head, after + Math.max(this.maxScan, maxCount)) : head;
    } else {
      const before = options.before ?? head + 1;
      validatePosition(before, 'before');
      high = before - 1;
      low = options.filter ? Math.max(0, high - Math.max(this.maxScan, maxCount)) : 0;
    }
    if (high <= low) return { events: [], lastPosition: direction === 'forwards' ? low : high + 1 };
    const { sql, params } = this.readAllQuery(direction, options.filter);
    const rows = this.readAllStatement(sql).all(low, high, ...params, maxCount);
    const events = rows.map(toRecordedEvent);
    this.noteRead(direction === 'forwards' ? events.at(-1) : events[0]);
    const full = rows.length === maxCount;
    const lastPosition =
      direction === 'forwards' ? (full ? rows[rows.length - 1]![0] : high) : full ? rows[rows.length - 1]![0] : low + 1;
    return { events, lastPosition };
  }

  private readAllQuery(direction: 'forwards' | 'backwards', filter: EventFilter | undefined) {
    const where = ['position > ?', 'position <= ?'];
    const params: string[] = [];
    const prefixes = filter?.streamPrefixes ?? [];
    if (prefixes.length > 0) {
      where.push(`(${prefixes.map(() => '(stream_id >= ? AND stream_id < ?)').join(' OR ')})`);
      for (const prefix of prefixes) params.push(prefix, prefixUpperBound(prefix));
    }
    const types = filter?.eventTypes ?? [];
    if (types.length > 0) {
      where.push(`type IN (${types.map(() => '?').join(', ')})`);
      params.push(...types);
    }
    const order = direction === 'forwards' ? 'ASC' : 'DESC';
    return { sql: `SELECT ${COLUMNS} FROM events WHERE ${where.join(' AND ')} ORDER BY position ${order} LIMIT ?`, params };
  }

  private readAllStatement(sql: string): Statement<SQLInputValue[], EventRow> {
    let statement = this.readAllStatements.get(sql);
    if (statement === undefined) {
      statement = prepareEventRead<SQLInputValue[]>(this.db, sql);
      this.readAllStatements.set(sql, statement);
    }
    return statement;
  }

  async readLinks(options: ReadLinksOptions = {}): Promise<EventLink[]> {
    this.assertOpen();
    const after = options.after ?? 0;
    const maxCount = options.maxCount ?? DEFAULT_READ_ALL_COUNT;
    validatePosition(after, 'after');
    validateCount(maxCount, 'maxCount');
    return this.statements.readLinks.all(after, maxCount).map(([position, hash]) => ({ position, hash }));
  }

  subscribeToAll(handler: EventHandler, options: SubscribeOptions = {}): Subscription {
    this.assertOpen();
    const subscription = runCatchUpSubscription(
      {
        readAll: (readOptions) => this.readAll(readOptions),
        headPosition: () => this.headPosition(),
        readCheckpoint: (consumer) => this.readCheckpoint(consumer),
        storeCheckpoint: (consumer, position) => this.storeCheckpoint(consumer, position),
        waitForAppend: (position, signal, filter, onIdle) => this.waitForAppend(position, signal, filter, onIdle),
        openLiveFeed: (filter, unhurried) => this.openLiveFeed(filter, unhurried === true),
      },
      handler,
      options,
    );
    this.subscriptions.add(subscription);
    subscription.done.finally(() => this.subscriptions.delete(subscription)).catch(() => undefined);
    return subscription;
  }

  async readCheckpoint(consumer: string): Promise<number | undefined> {
    this.assertOpen();
    validateStreamId(consumer, 'consumer');
    return this.statements.readCheckpoint.get(consumer)?.position;
  }

  async storeCheckpoint(consumer: string, position: number): Promise<void> {
    this.assertOpen();
    validateStreamId(consumer, 'consumer');
    validatePosition(position, 'position');
    await this.writeRows([{ sql: STORE_CHECKPOINT, params: [consumer, position, this.clock().toISOString()] }]);
  }

  async renewLease(holder: string, expiresAt: string): Promise<void> {
    this.assertOpen();
    validateStreamId(holder, 'holder');
    validateInstant(expiresAt, 'expiresAt');
    await this.writeRows([{ sql: RENEW_LEASE, params: [holder, expiresAt, this.clock().toISOString()] }]);
  }

  async readLease(holder: string): Promise<Lease | undefined> {
    this.assertOpen();
    validateStreamId(holder, 'holder');
    const row = this.statements.readLease.get(holder);
    return row === undefined ? undefined : { holder: row.holder, expiresAt: row.expires_at };
  }

  async releaseLease(holder: string): Promise<void> {
    this.assertOpen();
    validateStreamId(holder, 'holder');
    await this.writeRows([{ sql: RELEASE_LEASE, params: [holder] }]);
  }

  async readLeases(prefix: string): Promise<Lease[]> {
    this.assertOpen();
    validateStreamId(prefix, 'prefix');
    return this.statements.readLeases.all(prefix, prefix).map((row) => ({ holder: row.holder, expiresAt: row.expires_at }));
  }

  async claim(name: string, owner: string, expiresAt: string, now: string): Promise<Claim> {
    this.assertOpen();
    validateStreamId(name, 'name');
    validateStreamId(owner, 'owner');
    validateInstant(expiresAt, 'expiresAt');
    validateInstant(now, 'now');
    // The writer's one statement decides; what it left is read back (a live claim of another owner stays theirs).
    await this.writeRows([{ sql: TAKE_CLAIM, params: [name, owner, expiresAt, now] }]);
    const row = this.statements.readClaim.get(name)!;
    return { name: row.name, owner: row.owner, expiresAt: row.expires_at };
  }

  async releaseClaim(name: string, owner: string): Promise<void> {
    this.assertOpen();
    validateStreamId(name, 'name');
    validateStreamId(owner, 'owner');
    await this.writeRows([{ sql: RELEASE_CLAIM, params: [name, owner] }]);
  }

  async readClaims(prefix: string): Promise<Claim[]> {
    this.assertOpen();
    validateStreamId(prefix, 'prefix');
    return this.statements.readClaims.all(prefix, prefix).map((row) => ({ name: row.name, owner: row.owner, expiresAt: row.expires_at }));
  }

  private openLiveFeed(filter: EventFilter | undefined, unhurried: boolean): LiveFeed {
    const feed = new CommitFeed(filter, this.liveQueueLimit, (closed) => this.feeds.delete(closed), this.head(), unhurried);
    this.feeds.add(feed);
    this.ensurePolling();
    return feed;
  }

  private waitForAppend(position: number, signal: AbortSignal, filter?: EventFilter, onIdle?: () => void): Promise<void> {
    if (signal.aborted || this.closed || this.head() > position) return Promise.resolve();
    onIdle?.();
    return new Promise((resolve) => {
      const waiter = {
        filter,
        wake: () => {
          this.waiters.delete(waiter);
          signal.removeEventListener('abort', waiter.wake);
          resolve();
        },
      };
      this.waiters.add(waiter);
      signal.addEventListener('abort', waiter.wake, { once: true });
      this.ensurePolling();
    });
  }

  /**
   * Wakes waiting subscriptions. After our own commit we know what was written and wake only those whose
   * filter takes one of the events; after another process's commit (`committed` unknown) we wake them all.
   */
  private wakeWaiters(committed?: ReadonlyArray<{ streamId: string; type: string }>): void {
    for (const waiter of [...this.waiters]) {
      if (committed === undefined || waiter.filter === undefined || committed.some((event) => matchesFilter(waiter.filter!, event))) {
        waiter.wake();
      }
    }
  }

  /** Commits by other connections (other processes) change `data_version`; our own wake waiters directly. */
  private ensurePolling(): void {
    if (this.pollTimer !== undefined) return;
    this.pollTimer = setInterval(() => {
      if (this.closed || (this.waiters.size === 0 && this.feeds.size === 0)) {
        clearInterval(this.pollTimer);
        this.pollTimer = undefined;
        return;
      }
      // data_version moves for other connections' commits: another process's, another store object's, and this
      // store's writer thread's.
      const version = this.dataVersion();
      if (version !== this.lastDataVersion) {
        this.lastDataVersion = version;
        const head = this.head();
        if (this.lastAnsweredId >= this.lastPostedId) this.othersCommitted(head);
        // Events above the known head may be this process's, committed and not yet answered: decide once the
        // writes posted by now are answered (each then either extends the known head or shows a gap).
        else this.deferredPoll = { head: Math.max(head, this.deferredPoll?.head ?? 0), untilId: this.lastPostedId };
      }
    }, this.pollIntervalMs);
    this.pollTimer.unref();
  }

  /**
   * Another connection wrote. Events of its below this process's later commits are found by those commits' gaps;
   * events above everything known are found only by reading. Writes that are not events need nothing.
   */
  private othersCommitted(head: number): void {
    if (head <= this.knownHead) return;
    this.knownHead = head;
    for (const feed of this.feeds) feed.readInstead();
    this.wakeWaiters();
  }

  /**
   * Whether nobody has committed to the file since this process's last commit: every write posted is answered and
   * the WAL index header is the one that commit left (one `pread`, where `data_version` begins a read transaction,
   * and after each of the writer thread's own commits sends the tails and types to a look at the events above).
   * The header is read once per run of the microtask queue, as `data_version` is; `false` whenever it cannot tell.
   */
  private quietSinceOwnCommit(): boolean {
    if (this.ownWalHeader === undefined || this.lastAnsweredId < this.lastPostedId) return false;
    if (this.quietOfThisRun === undefined) {
      this.quietOfThisRun = this.walHeader.is(this.ownWalHeader);
      process.nextTick(() => (this.quietOfThisRun = undefined));
    }
    return this.quietOfThisRun;
  }

  /**
   * The file's `data_version`, asked once per run of the microtask queue: the answer is kept until the queue and
   * `process.nextTick`'s have both run dry, when the event loop goes on to its next callback (a tick queued while
   * microtasks run waits for all of them, those queued after it included; one queued by a callback itself runs
   * before them, and then the next ask is kept for the rest of the run). Within a run no I/O callback, timer or
   * message from another thread is handled, so nothing this process does can depend on a commit made after the
   * first ask of the run: a read answered with it is one made at that moment. (A busy gateway asked about nine
   * times a call, mostly from the continuations of one writer answer; 0.97 times a call at concurrency 32 while the
   * answer was forgotten at the first microtask after the ask, 0.82 now.)
   */
  private dataVersion(): number {
    if (this.versionOfThisRun !== undefined) return this.versionOfThisRun;
    const version = this.dataVersionStatement.get()!.data_version;
    this.versionOfThisRun = version;
    process.nextTick(() => (this.versionOfThisRun = undefined));
    return version;
  }

  private assertOpen(): void {
    if (this.closed) throw new EventStoreClosedError();
  }

  /** Commits every write issued before it, then stops the writer thread and closes the read connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.release();
    this.postOutbox();
    await this.writer?.close();
    this.inline?.close();
    writableStores.delete(this);
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
    for (const waiter of [...this.waiters]) waiter.wake();
    if (this.pollTimer !== undefined) clearInterval(this.pollTimer);
    this.walHeader.close();
    this.db.close();
    this.removeCopy();
  }
}

export function openSqliteEventStore(options: SqliteEventStoreOptions): SqliteEventStore {
  return new SqliteEventStore(options);
}

import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementResultingChanges } from 'node:sqlite';
import { v7 as uuidv7 } from 'uuid';
import {
  DuplicateEventIdError,
  EventStoreClosedError,
  EventStoreOpenError,
  EventStoreUnavailableError,
  WrongExpectedRevisionError,
  expectedRevisionHolds,
  runCatchUpSubscription,
  validateAppend,
  validateAppendMany,
  validateCount,
  validateFilter,
  validateInstant,
  validatePosition,
  validateStreamId,
  type AppendManyEntry,
  type AppendOptions,
  type AppendResult,
  type EventFilter,
  type EventHandler,
  type EventStore,
  type EventToAppend,
  type Lease,
  type LiveFeed,
  type LiveSegment,
  type ReadAllOptions,
  type ReadAllPage,
  type ReadStreamOptions,
  type RecordedEvent,
  type SerialisedAppend,
  type SubscribeOptions,
  type Subscription,
} from '@oncegate/event-store';
import { eventHash, GENESIS_HASH } from '@oncegate/journal';
import { SCHEMA_STATEMENTS, SCHEMA_VERSION } from './schema';
import { isUniqueViolation, isUnwritable, openFailure, sqliteCode } from './sqlite-errors';

export interface SqliteEventStoreOptions {
  /** Path of the store's single data file (created with its folder's permissions when absent). */
  readonly file: string;
  /**
   * SQLite `synchronous` level. Default `'FULL'`: an acknowledged append has been fsynced to the WAL.
   * `'NORMAL'` may lose the last commits on power loss (never on a process crash).
   */
  readonly synchronous?: 'FULL' | 'EXTRA' | 'NORMAL';
  /** Concurrent appends from this process share one transaction and one fsync. Default `true`. */
  readonly groupCommit?: boolean;
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
}

/** One caller's append: a single stream, or every entry of an `appendMany`, all committed or none. */
interface PendingAppend {
  readonly entries: readonly SerialisedAppend[];
  readonly resolve: (results: AppendResult[]) => void;
  readonly reject: (error: unknown) => void;
}

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

function matchesFilter(filter: EventFilter, event: { streamId: string; type: string }): boolean {
  const prefixes = filter.streamPrefixes ?? [];
  const types = filter.eventTypes ?? [];
  return (
    (prefixes.length === 0 || prefixes.some((prefix) => event.streamId.startsWith(prefix))) &&
    (types.length === 0 || types.includes(event.type))
  );
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

  /**
   * @param lastPushed the store's head when the feed opened: a commit that does not start there (or where the
   * previous one ended) follows another process's events, which only a read delivers.
   */
  constructor(
    private readonly filter: EventFilter | undefined,
    private readonly limit: number,
    private readonly onClose: (feed: CommitFeed) => void,
    private lastPushed: number,
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
    else if (taken.length > 0) this.wake();
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
}

/** The smallest string greater than every string starting with `prefix` (for index range scans). */
function prefixUpperBound(prefix: string): string {
  return prefix + '\u{10FFFF}';
}

/**
 * The embedded event store: one SQLite file in WAL mode. Writes are serialised by SQLite's write lock,
 * so global positions become visible strictly in order: a reader that sees position N sees every
 * position below it, which is what lets catch-up subscriptions turn live with no gap.
 */
export class SqliteEventStore implements EventStore {
  private readonly db: DatabaseSync;
  private readonly clock: () => Date;
  private readonly groupCommit: boolean;
  private readonly pollIntervalMs: number;
  private readonly maxScan: number;
  private pending: PendingAppend[] = [];
  private flushScheduled = false;
  private closed = false;
  private readonly waiters = new Set<{ readonly wake: () => void; readonly filter: EventFilter | undefined }>();
  private readonly feeds = new Set<CommitFeed>();
  private readonly liveQueueLimit: number;
  private pollTimer: NodeJS.Timeout | undefined;
  private lastDataVersion = 0;
  /**
   * The highest position this process knows to be handed to its feeds or told to them as another's: every event
   * above it is another process's, committed since. The poll uses it to tell another process's events from other
   * writes to the file (checkpoints, leases, sealed blobs in the same file), which need no read.
   */
  private knownHead = 0;
  private readonly subscriptions = new Set<Subscription>();
  private readonly readAllStatements = new Map<string, Statement<SQLInputValue[], EventRow>>();
  private readonly file: string;
  /** A temporary copy read instead of an unwritable folder's file (read-only mode only). */
  private copyDir: string | undefined;

  private readonly dataVersionStatement: Statement<[], { data_version: number }>;
  private readonly statements: {
    streamRevision: Statement<[string], { revision: number | null }>;
    streamTip: Statement<[string], { revision: number; hash: string }>;
    insert: Statement<[string, number, string, string, string, string, string, string, string]>;
    readForwards: Statement<[string, number, number], EventRow>;
    readBackwards: Statement<[string, number, number], EventRow>;
    head: Statement<[], { head: number | null }>;
    readCheckpoint: Statement<[string], { position: number }>;
    storeCheckpoint: Statement<[string, number, string]>;
    renewLease: Statement<[string, string, string]>;
    readLease: Statement<[string], { holder: string; expires_at: string }>;
    releaseLease: Statement<[string]>;
    begin: Statement<[]>;
    commit: Statement<[]>;
    rollback: Statement<[]>;
    savepoint: Statement<[]>;
    release: Statement<[]>;
    rollbackToSavepoint: Statement<[]>;
  };

  constructor(options: SqliteEventStoreOptions) {
    this.clock = options.clock ?? (() => new Date());
    this.groupCommit = options.groupCommit ?? true;
    this.pollIntervalMs = options.pollIntervalMs ?? 50;
    this.maxScan = options.maxScan ?? 50_000;
    this.liveQueueLimit = options.liveQueueLimit ?? 10_000;
    validateCount(this.liveQueueLimit, 'liveQueueLimit');
    const synchronous = options.synchronous ?? 'FULL';
    if (!['FULL', 'EXTRA', 'NORMAL'].includes(synchronous)) {
      throw new Error(`synchronous must be FULL, EXTRA or NORMAL, got ${String(synchronous)}`);
    }
    this.file = options.file;
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
      streamTip: prepare(this.db, 'SELECT revision, hash FROM events WHERE stream_id = ? ORDER BY revision DESC LIMIT 1'),
      insert: prepare(
        this.db,
        `INSERT INTO events (stream_id, revision, event_id, type, data, metadata, recorded_at, prev_hash, hash)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      readForwards: prepareEventRead(
        this.db,
        `SELECT ${COLUMNS} FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision ASC LIMIT ?`,
      ),
      readBackwards: prepareEventRead(
        this.db,
        `SELECT ${COLUMNS} FROM events WHERE stream_id = ? AND revision <= ? ORDER BY revision DESC LIMIT ?`,
      ),
      head: prepare(this.db, 'SELECT max(position) AS head FROM events'),
      readCheckpoint: prepare(this.db, 'SELECT position FROM checkpoints WHERE consumer = ?'),
      storeCheckpoint: prepare(
        this.db,
        `INSERT INTO checkpoints (consumer, position, updated_at) VALUES (?, ?, ?)
         ON CONFLICT (consumer) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at`,
      ),
      renewLease: prepare(
        this.db,
        `INSERT INTO leases (holder, expires_at, renewed_at) VALUES (?, ?, ?)
         ON CONFLICT (holder) DO UPDATE SET expires_at = excluded.expires_at, renewed_at = excluded.renewed_at`,
      ),
      readLease: prepare(this.db, 'SELECT holder, expires_at FROM leases WHERE holder = ?'),
      releaseLease: prepare(this.db, 'DELETE FROM leases WHERE holder = ?'),
      begin: prepare(this.db, 'BEGIN IMMEDIATE'),
      commit: prepare(this.db, 'COMMIT'),
      rollback: prepare(this.db, 'ROLLBACK'),
      savepoint: prepare(this.db, 'SAVEPOINT oncegate_append'),
      release: prepare(this.db, 'RELEASE oncegate_append'),
      rollbackToSavepoint: prepare(this.db, 'ROLLBACK TO oncegate_append'),
    };
    this.dataVersionStatement = prepare<[], { data_version: number }>(this.db, 'PRAGMA data_version');
    this.lastDataVersion = this.dataVersion();
    this.knownHead = this.head();
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
    const expected = options.expectedRevision ?? 'any';
    let entries: SerialisedAppend[];
    try {
      entries = [{ streamId, events: validateAppend(streamId, events, expected), expected }];
    } catch (error) {
      return Promise.reject(error);
    }
    return this.enqueue(entries).then(([result]) => result!);
  }

  appendMany(batch: readonly AppendManyEntry[]): Promise<AppendResult[]> {
    if (this.closed) return Promise.reject(new EventStoreClosedError());
    let entries: SerialisedAppend[];
    try {
      entries = validateAppendMany(batch);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.enqueue(entries);
  }

  private enqueue(entries: readonly SerialisedAppend[]): Promise<AppendResult[]> {
    return new Promise((resolve, reject) => {
      this.pending.push({ entries, resolve, reject });
      if (!this.groupCommit) {
        this.flush();
      } else if (!this.flushScheduled) {
        // Appends issued in the same turn of the event loop are collected and share one commit.
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /**
   * Writes every pending append in one transaction; each append (a single stream, or a whole `appendMany`) is
   * checked and rolled back on its own (a savepoint each when several share the commit).
   */
  private flush(): void {
    this.flushScheduled = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    const outcomes: Array<{ ok: AppendResult[]; events: RecordedEvent[] } | { error: unknown }> = [];
    // Subscribers at the head are handed what this commit wrote: every position after `headBefore` (the write lock
    // is held from BEGIN IMMEDIATE, so no other process can commit in between) up to our last one.
    const live = this.feeds.size > 0;
    let headBefore = 0;
    const recordedAt = this.clock().toISOString();
    const { begin, commit, rollback, savepoint, release, rollbackToSavepoint } = this.statements;
    const shared = batch.length > 1;
    try {
      begin.run();
      try {
        if (live) headBefore = this.head();
        for (const request of batch) {
          if (shared) savepoint.run();
          try {
            const events: RecordedEvent[] = [];
            const collect = live ? events : undefined;
            outcomes.push({ ok: request.entries.map((entry) => this.appendInTransaction(entry, recordedAt, collect)), events });
            if (shared) release.run();
          } catch (error) {
            if (!shared) throw error;
            rollbackToSavepoint.run();
            release.run();
            outcomes.push({ error: isUnwritable(error) ? new EventStoreUnavailableError(this.file, sqliteCode(error)) : error });
          }
        }
        commit.run();
      } catch (error) {
        if (this.db.isTransaction) rollback.run();
        throw error;
      }
    } catch (error) {
      const failure = isUnwritable(error) ? new EventStoreUnavailableError(this.file, sqliteCode(error)) : error;
      for (const request of batch) request.reject(failure);
      return;
    }
    const committed: Array<{ streamId: string; type: string }> = [];
    const recorded: RecordedEvent[] = [];
    batch.forEach((request, index) => {
      const outcome = outcomes[index]!;
      if ('ok' in outcome) {
        request.resolve(outcome.ok);
        for (const event of outcome.events) recorded.push(event);
        for (const entry of request.entries) {
          for (const event of entry.events) committed.push({ streamId: entry.streamId, type: event.type });
        }
      } else request.reject(outcome.error);
    });
    if (live && recorded.length > 0) {
      const last = recorded[recorded.length - 1]!.position;
      if (last > this.knownHead) this.knownHead = last;
      for (const feed of this.feeds) feed.push(headBefore, last, recorded);
    }
    if (committed.length > 0) this.wakeWaiters(committed);
  }

  /** Writes one entry's events; with `recorded`, also collects them as a reader would get them back. */
  private appendInTransaction(request: SerialisedAppend, recordedAt: string, recorded?: RecordedEvent[]): AppendResult {
    const tip = this.statements.streamTip.get(request.streamId);
    const actual = tip?.revision;
    if (!expectedRevisionHolds(request.expected, actual)) {
      throw new WrongExpectedRevisionError(request.streamId, request.expected, actual);
    }
    let revision = actual ?? -1;
    let prev = tip?.hash ?? GENESIS_HASH;
    let position = 0;
    for (const event of request.events) {
      revision += 1;
      const id = event.id ?? uuidv7();
      // The link covers the event as a reader will parse it back, so verification needs nothing but the export.
      const data: unknown = JSON.parse(event.data);
      const metadata = JSON.parse(event.metadata) as Record<string, unknown>;
      const hash = eventHash(prev, { streamId: request.streamId, revision, id, type: event.type, data, metadata, recordedAt });
      try {
        const info = this.statements.insert.run(
          request.streamId,
          revision,
          id,
          event.type,
          event.data,
          event.metadata,
          recordedAt,
          prev,
          hash,
        );
        position = Number(info.lastInsertRowid);
        recorded?.push({ streamId: request.streamId, revision, position, id, type: event.type, data, metadata, recordedAt, prev, hash });
      } catch (error) {
        if (isUniqueViolation(error) && String((error as Error).message).includes('event_id')) {
          throw new DuplicateEventIdError(request.streamId, id);
        }
        throw error;
      }
      prev = hash;
    }
    return { streamId: request.streamId, nextExpectedRevision: revision, position };
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    validateStreamId(streamId);
    const direction = options.direction ?? 'forwards';
    if (options.fromRevision !== undefined) validatePosition(options.fromRevision, 'fromRevision');
    if (options.maxCount !== undefined) validateCount(options.maxCount, 'maxCount');
    const limit = options.maxCount ?? -1;
    const rows =
      direction === 'forwards'
        ? this.statements.readForwards.all(streamId, options.fromRevision ?? 0, limit)
        : this.statements.readBackwards.all(streamId, options.fromRevision ?? Number.MAX_SAFE_INTEGER, limit);
    return rows.map(toRecordedEvent);
  }

  async streamRevision(streamId: string): Promise<number | undefined> {
    this.assertOpen();
    validateStreamId(streamId);
    return this.statements.streamRevision.get(streamId)?.revision ?? undefined;
  }

  async headPosition(): Promise<number> {
    this.assertOpen();
    return this.head();
  }

  private head(): number {
    return this.statements.head.get()?.head ?? 0;
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

  subscribeToAll(handler: EventHandler, options: SubscribeOptions = {}): Subscription {
    this.assertOpen();
    const subscription = runCatchUpSubscription(
      {
        readAll: (readOptions) => this.readAll(readOptions),
        headPosition: () => this.headPosition(),
        readCheckpoint: (consumer) => this.readCheckpoint(consumer),
        storeCheckpoint: (consumer, position) => this.storeCheckpoint(consumer, position),
        waitForAppend: (position, signal, filter, onIdle) => this.waitForAppend(position, signal, filter, onIdle),
        openLiveFeed: (filter) => this.openLiveFeed(filter),
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
    try {
      this.statements.storeCheckpoint.run(consumer, position, this.clock().toISOString());
    } catch (error) {
      throw isUnwritable(error) ? new EventStoreUnavailableError(this.file, sqliteCode(error)) : error;
    }
  }

  async renewLease(holder: string, expiresAt: string): Promise<void> {
    this.assertOpen();
    validateStreamId(holder, 'holder');
    validateInstant(expiresAt, 'expiresAt');
    this.statements.renewLease.run(holder, expiresAt, this.clock().toISOString());
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
    this.statements.releaseLease.run(holder);
  }

  private openLiveFeed(filter: EventFilter | undefined): LiveFeed {
    const feed = new CommitFeed(filter, this.liveQueueLimit, (closed) => this.feeds.delete(closed), this.head());
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
      // data_version moves only for other connections' commits (another process, or another store object).
      const version = this.dataVersion();
      if (version !== this.lastDataVersion) {
        this.lastDataVersion = version;
        // Another connection wrote. Events of its below our own later commits are found by those commits' gaps;
        // events above everything known are found only by reading. Writes that are not events need nothing.
        const head = this.head();
        if (head > this.knownHead) {
          this.knownHead = head;
          for (const feed of this.feeds) feed.readInstead();
        }
        this.wakeWaiters();
      }
    }, this.pollIntervalMs);
    this.pollTimer.unref();
  }

  private dataVersion(): number {
    return this.dataVersionStatement.get()!.data_version;
  }

  private assertOpen(): void {
    if (this.closed) throw new EventStoreClosedError();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
    for (const waiter of [...this.waiters]) waiter.wake();
    if (this.pollTimer !== undefined) clearInterval(this.pollTimer);
    this.db.close();
    this.removeCopy();
  }
}

export function openSqliteEventStore(options: SqliteEventStoreOptions): SqliteEventStore {
  return new SqliteEventStore(options);
}

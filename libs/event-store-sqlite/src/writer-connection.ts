/**
 * A SQLite store's write connection: the writer thread's (`sqlite-writer-worker.ts`), and the calling thread's own
 * when it commits a write itself because nothing else is going on (`SqliteEventStore`, "commits on the calling
 * thread"). Whatever it is given is written as one transaction (group commit); each write is checked and rolled back
 * on its own savepoint, so a failing one never harms its neighbours, and the transaction is answered as one
 * `CommittedReply`. Between transactions it keeps its prepared statements and the chain tips of the streams it wrote
 * last, which it trusts only while the file's head is the last position it committed itself (read under the write
 * lock at the start of each transaction: anything another connection committed moves it).
 */
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { LRUCache } from 'lru-cache';
import { expectedRevisionHolds, linkEvents, type ChainTip } from '@oncegate/event-store';
import { isUniqueViolation, isUnwritable, sqliteCode } from './sqlite-errors';
import { walIndexHeader, type WalIndexHeader } from './wal-index-header';
import type { CommittedReply, WireError, WriteItem, WriterConfig } from './writer-protocol';

/** A write refused for a reason the calling thread turns into the port's typed error. */
class WriteRefused extends Error {
  constructor(readonly wire: WireError) {
    super(wire.kind);
  }
}

function wireError(error: unknown): WireError {
  if (error instanceof WriteRefused) return error.wire;
  if (isUnwritable(error)) return { kind: 'store_unavailable', detail: sqliteCode(error) };
  return { kind: 'failed', message: String((error as Error)?.message ?? error) };
}

/** What the transaction appended so far, in columns; an append rolled back is cut off again. */
interface Written {
  positions: number[];
  revisions: number[];
  prevs: string;
  hashes: string;
}

/** `tryCommitTogether`'s answer when another connection holds the file's write lock: nothing was written. */
export const WRITE_LOCK_TAKEN = Symbol('the write lock is taken');

export class WriterConnection {
  private readonly db: DatabaseSync;
  private readonly unsynced: StatementSync;
  private readonly synced: StatementSync;
  private readonly streamTip: StatementSync;
  private readonly insert: StatementSync;
  private readonly head: StatementSync;
  private readonly begin: StatementSync;
  private readonly commit: StatementSync;
  private readonly rollback: StatementSync;
  private readonly savepoint: StatementSync;
  private readonly release: StatementSync;
  private readonly rollbackToSavepoint: StatementSync;
  /** The file's WAL index header, read around each commit so the store can tell whether anyone committed after it. */
  private readonly walHeader: WalIndexHeader;
  /** The statements of rows that are not events, by their text (a handful: checkpoints, leases, sealed blobs). */
  private readonly rowStatements = new Map<string, StatementSync>();
  /**
   * The tips of streams this connection committed to, valid while `tipsThrough` is the file's head: the last position
   * it committed (`undefined` while unknown). Reading a tip from the file cost more than inserting an event.
   */
  private readonly keptTips = new LRUCache<string, ChainTip>({ max: 8_192 });
  private tipsThrough: number | undefined;
  /** Tips the current transaction moved: its committed writes' (`transactionTips`) and the current write's (`itemTips`). */
  private readonly transactionTips = new Map<string, ChainTip>();
  private readonly itemTips = new Map<string, ChainTip>();

  constructor(config: WriterConfig) {
    this.db = new DatabaseSync(config.file, { timeout: config.busyTimeoutMs });
    const db = this.db;
    // A connection that cannot be made whole (a file without the store's tables) leaves nothing open: the calling
    // thread tries again at its next lone write.
    try {
      db.exec(`PRAGMA synchronous = ${config.synchronous}`);
      // A transaction of rows only (sealed blobs, checkpoints, leases) is written without an fsync of its own: WAL
      // frames are appended in order, so the next commit of events (at the store's level) syncs them too, and an event
      // that references a blob is always committed after it. Its own fsync would put a second one on every call's path.
      this.unsynced = db.prepare('PRAGMA synchronous = NORMAL');
      this.synced = db.prepare(`PRAGMA synchronous = ${config.synchronous}`);
      db.exec('PRAGMA foreign_keys = ON');
      db.exec('PRAGMA cache_size = -16000');
      this.streamTip = db.prepare('SELECT revision, hash FROM events WHERE stream_id = ? ORDER BY revision DESC LIMIT 1');
      this.insert = db.prepare(
        `INSERT INTO events (stream_id, revision, event_id, type, data, metadata, recorded_at, prev_hash, hash)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      this.head = db.prepare('SELECT max(position) AS head FROM events');
      this.begin = db.prepare('BEGIN IMMEDIATE');
      this.commit = db.prepare('COMMIT');
      this.rollback = db.prepare('ROLLBACK');
      this.savepoint = db.prepare('SAVEPOINT oncegate_write');
      this.release = db.prepare('RELEASE oncegate_write');
      this.rollbackToSavepoint = db.prepare('ROLLBACK TO oncegate_write');
      this.walHeader = walIndexHeader(config.file);
    } catch (error) {
      db.close();
      throw error;
    }
  }

  /** Writes `items` in one transaction; each on its own savepoint when several share it. */
  commitTogether(items: readonly WriteItem[]): CommittedReply {
    const reply = this.write(items, false);
    if (reply === WRITE_LOCK_TAKEN) throw new Error('unreachable: a write that waits for the lock never finds it taken');
    return reply;
  }

  /**
   * `commitTogether`, or nothing at all when another connection holds the file's write lock (after this connection's
   * busy timeout: none for the calling thread's, which asks once and goes to the writer thread).
   */
  tryCommitTogether(items: readonly WriteItem[]): CommittedReply | typeof WRITE_LOCK_TAKEN {
    return this.write(items, true);
  }

  /** Runs a statement of this connection's own (a setting such as `PRAGMA max_page_count`). */
  run(sql: string): void {
    this.db.exec(sql);
  }

  /** Closes the connection and the WAL index file it reads. */
  close(): void {
    this.walHeader.close();
    if (this.db.isOpen) this.db.close();
  }

  private write(items: readonly WriteItem[], orNotAtAll: boolean): CommittedReply | typeof WRITE_LOCK_TAKEN {
    const rowsOnly = items.every((item) => item.kind === 'rows');
    if (rowsOnly) this.unsynced.run();
    try {
      return this.commitInTransaction(items, orNotAtAll);
    } finally {
      if (rowsOnly) this.synced.run();
    }
  }

  private knownTip(streamId: string): ChainTip | undefined {
    return this.itemTips.get(streamId) ?? this.transactionTips.get(streamId) ?? this.keptTips.get(streamId);
  }

  /** The stream's tip as this connection knows it without a read, else as the file says. */
  private tipOf(streamId: string): ChainTip | undefined {
    return this.knownTip(streamId) ?? (this.streamTip.get(streamId) as ChainTip | undefined);
  }

  private append(item: Extract<WriteItem, { kind: 'append' }>, written: Written): void {
    const { positions, revisions } = written;
    for (const entry of item.entries) {
      // A stream expected not to exist (a new execution, a new claim) is not read for its tip: the unique index on
      // (stream, revision) refuses a first event of a stream that exists, and only then is its tip read.
      const fresh = entry.expected === 'no_stream' && this.knownTip(entry.streamId) === undefined;
      const tip = fresh ? undefined : this.tipOf(entry.streamId);
      if (!expectedRevisionHolds(entry.expected, tip?.revision)) {
        throw new WriteRefused({ kind: 'wrong_expected_revision', streamId: entry.streamId, expected: entry.expected, actual: tip?.revision });
      }
      const links = linkEvents(
        entry.streamId,
        tip,
        entry.events.map((event) => ({
          id: event.id,
          type: event.type,
          canonicalData: event.canonicalData ?? event.data,
          canonicalMetadata: event.canonicalMetadata ?? event.metadata,
        })),
        item.recordedAt,
      );
      entry.events.forEach((event, i) => {
        const { revision, prev, hash } = links[i]!;
        try {
          const info = this.insert.run(entry.streamId, revision, event.id, event.type, event.data, event.metadata, item.recordedAt, prev, hash);
          positions.push(Number(info.lastInsertRowid));
        } catch (error) {
          if (isUniqueViolation(error) && String((error as Error).message).includes('event_id')) {
            throw new WriteRefused({ kind: 'duplicate_event_id', streamId: entry.streamId, eventId: event.id });
          }
          if (fresh && isUniqueViolation(error)) {
            const actual = (this.streamTip.get(entry.streamId) as ChainTip | undefined)?.revision;
            throw new WriteRefused({ kind: 'wrong_expected_revision', streamId: entry.streamId, expected: entry.expected, actual });
          }
          throw error;
        }
        revisions.push(revision);
        written.prevs += prev;
        written.hashes += hash;
      });
      const last = links[links.length - 1];
      if (last !== undefined) this.itemTips.set(entry.streamId, { revision: last.revision, hash: last.hash });
    }
  }

  private writeRows(item: Extract<WriteItem, { kind: 'rows' }>): void {
    for (const row of item.rows) {
      let prepared = this.rowStatements.get(row.sql);
      if (prepared === undefined) {
        prepared = this.db.prepare(row.sql);
        this.rowStatements.set(row.sql, prepared);
      }
      prepared.run(...row.params);
    }
  }

  private commitInTransaction(items: readonly WriteItem[], orNotAtAll: boolean): CommittedReply | typeof WRITE_LOCK_TAKEN {
    const ids = items.map((item) => item.id);
    const errors: Array<[number, WireError]> = [];
    const written: Written = { positions: [], revisions: [], prevs: '', hashes: '' };
    const shared = items.length > 1;
    let headBefore = 0;
    let headerBefore: Uint8Array | undefined;
    try {
      if (!orNotAtAll) this.begin.run();
      else if (!this.lockNow()) return WRITE_LOCK_TAKEN;
      try {
        headBefore = (this.head.get() as { head: number | null }).head ?? 0;
        if (headBefore !== this.tipsThrough) this.keptTips.clear();
        items.forEach((item, index) => {
          if (shared) this.savepoint.run();
          const mark = { events: written.positions.length, text: written.hashes.length };
          this.itemTips.clear();
          try {
            if (item.kind === 'append') this.append(item, written);
            else this.writeRows(item);
            if (shared) this.release.run();
            for (const [streamId, tip] of this.itemTips) this.transactionTips.set(streamId, tip);
          } catch (error) {
            // SQLite rolls the whole transaction back by itself on some errors (a full disk, an I/O error): then
            // there is no savepoint to return to, and every write of the transaction fails with that error.
            if (!shared || !this.db.isTransaction) throw error;
            this.rollbackToSavepoint.run();
            this.release.run();
            written.positions.length = written.revisions.length = mark.events;
            written.prevs = written.prevs.slice(0, mark.text);
            written.hashes = written.hashes.slice(0, mark.text);
            errors.push([index, wireError(error)]);
          }
        });
        // Read under the write lock: no other connection commits between this and the commit below.
        headerBefore = this.walHeader.read();
        this.commit.run();
      } catch (error) {
        if (this.db.isTransaction) this.rollback.run();
        throw error;
      }
    } catch (error) {
      this.tipsThrough = undefined;
      this.transactionTips.clear();
      const failure = wireError(error);
      return { kind: 'committed', headBefore, ids, errors: ids.map((_, index) => [index, failure] as const), positions: [], revisions: [], prevs: '', hashes: '' };
    }
    const walHeaderAfter = this.walHeader.afterOwnCommit(headerBefore);
    for (const [streamId, tip] of this.transactionTips) this.keptTips.set(streamId, tip);
    this.transactionTips.clear();
    // Positions only grow: the last one written is the head now (none written: the head is unchanged).
    this.tipsThrough = written.positions.at(-1) ?? headBefore;
    return {
      kind: 'committed',
      headBefore,
      ids,
      errors,
      positions: written.positions,
      revisions: written.revisions,
      prevs: written.prevs,
      hashes: written.hashes,
      ...(walHeaderAfter === undefined ? {} : { walHeader: walHeaderAfter }),
    };
  }

  /**
   * Begins the transaction when the write lock is free; `false` (nothing begun) when another connection holds it and
   * the busy timeout passed (a connection made for `tryCommitTogether` has none: it asks once).
   */
  private lockNow(): boolean {
    try {
      this.begin.run();
      return true;
    } catch (error) {
      if (sqliteCode(error).startsWith('SQLITE_BUSY')) return false;
      throw error;
    }
  }
}

/**
 * The writer thread of a SQLite store (`writer-thread.ts` starts it): it holds the store's only write connection,
 * so a commit's fsync never blocks the calling thread's event loop. Whatever arrived while the previous
 * transaction was being committed is written as one transaction (group commit); each write is checked and rolled
 * back on its own savepoint, so a failing one never harms its neighbours. Each transaction is answered in one
 * message. Between transactions it keeps its prepared statements and the chain tips of the streams it wrote last,
 * which it trusts only while the file's head is the last position it committed itself (read under the write lock
 * at the start of each transaction: anything another connection committed moves it).
 */
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { LRUCache } from 'lru-cache';
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { expectedRevisionHolds, linkEvents, type ChainTip } from '@oncegate/event-store';
import { isUniqueViolation, isUnwritable, sqliteCode } from './sqlite-errors';
import { walIndexHeader } from './wal-index-header';
import type { CommittedReply, WireError, WriteItem, WriterConfig, WriterReply, WriterRequest } from './writer-protocol';

const port = parentPort;
if (port === null) throw new Error('sqlite-writer-worker.ts runs as a worker thread only');
const config = workerData as WriterConfig;

const db = new DatabaseSync(config.file, { timeout: config.busyTimeoutMs });
db.exec(`PRAGMA synchronous = ${config.synchronous}`);
// A transaction of rows only (sealed blobs, checkpoints, leases) is written without an fsync of its own: WAL frames
// are appended in order, so the next commit of events (at the store's level) syncs them too, and an event that
// references a blob is always committed after it. Its own fsync would put a second one on every call's path.
const unsynced = db.prepare('PRAGMA synchronous = NORMAL');
const synced = db.prepare(`PRAGMA synchronous = ${config.synchronous}`);
db.exec('PRAGMA foreign_keys = ON');
db.exec('PRAGMA cache_size = -16000');

const statement = (sql: string) => db.prepare(sql);
const streamTip = statement('SELECT revision, hash FROM events WHERE stream_id = ? ORDER BY revision DESC LIMIT 1');
const insert = statement(
  `INSERT INTO events (stream_id, revision, event_id, type, data, metadata, recorded_at, prev_hash, hash)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
);
const head = statement('SELECT max(position) AS head FROM events');
const begin = statement('BEGIN IMMEDIATE');
const commit = statement('COMMIT');
const rollback = statement('ROLLBACK');
const savepoint = statement('SAVEPOINT oncegate_write');
const release = statement('RELEASE oncegate_write');
const rollbackToSavepoint = statement('ROLLBACK TO oncegate_write');
/** The file's WAL index header, read around each commit so the store can tell whether anyone committed after it. */
const walHeader = walIndexHeader(config.file);
/** The statements of rows that are not events, by their text (a handful: checkpoints, leases, sealed blobs). */
const rowStatements = new Map<string, StatementSync>();

/**
 * The tips of streams this thread committed to, valid while `tipsThrough` is the file's head: the last position
 * this thread committed (`undefined` while unknown). Reading a tip from the file cost more than inserting an event.
 */
const keptTips = new LRUCache<string, ChainTip>({ max: 8_192 });
let tipsThrough: number | undefined;
/** Tips the current transaction moved: its committed writes' (`transactionTips`) and the current write's (`itemTips`). */
const transactionTips = new Map<string, ChainTip>();
const itemTips = new Map<string, ChainTip>();

/** The stream's tip as this thread knows it without a read; `undefined` when it would have to read the file. */
function knownTip(streamId: string): ChainTip | undefined {
  return itemTips.get(streamId) ?? transactionTips.get(streamId) ?? keptTips.get(streamId);
}

function tipOf(streamId: string): ChainTip | undefined {
  return knownTip(streamId) ?? (streamTip.get(streamId) as ChainTip | undefined);
}

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

function append(item: Extract<WriteItem, { kind: 'append' }>, written: Written): void {
  const { positions, revisions } = written;
  for (const entry of item.entries) {
    // A stream expected not to exist (a new execution, a new claim) is not read for its tip: the unique index on
    // (stream, revision) refuses a first event of a stream that exists, and only then is its tip read.
    const fresh = entry.expected === 'no_stream' && knownTip(entry.streamId) === undefined;
    const tip = fresh ? undefined : tipOf(entry.streamId);
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
        const info = insert.run(entry.streamId, revision, event.id, event.type, event.data, event.metadata, item.recordedAt, prev, hash);
        positions.push(Number(info.lastInsertRowid));
      } catch (error) {
        if (isUniqueViolation(error) && String((error as Error).message).includes('event_id')) {
          throw new WriteRefused({ kind: 'duplicate_event_id', streamId: entry.streamId, eventId: event.id });
        }
        if (fresh && isUniqueViolation(error)) {
          const actual = (streamTip.get(entry.streamId) as ChainTip | undefined)?.revision;
          throw new WriteRefused({ kind: 'wrong_expected_revision', streamId: entry.streamId, expected: entry.expected, actual });
        }
        throw error;
      }
      revisions.push(revision);
      written.prevs += prev;
      written.hashes += hash;
    });
    const last = links[links.length - 1];
    if (last !== undefined) itemTips.set(entry.streamId, { revision: last.revision, hash: last.hash });
  }
}

function writeRows(item: Extract<WriteItem, { kind: 'rows' }>): void {
  for (const row of item.rows) {
    let prepared = rowStatements.get(row.sql);
    if (prepared === undefined) {
      prepared = db.prepare(row.sql);
      rowStatements.set(row.sql, prepared);
    }
    prepared.run(...row.params);
  }
}

/** Writes `items` in one transaction; each on its own savepoint when several share it. */
function commitTogether(items: readonly WriteItem[]): CommittedReply {
  const rowsOnly = items.every((item) => item.kind === 'rows');
  if (rowsOnly) unsynced.run();
  try {
    return commitInTransaction(items);
  } finally {
    if (rowsOnly) synced.run();
  }
}

function commitInTransaction(items: readonly WriteItem[]): CommittedReply {
  const ids = items.map((item) => item.id);
  const errors: Array<[number, WireError]> = [];
  const written: Written = { positions: [], revisions: [], prevs: '', hashes: '' };
  const shared = items.length > 1;
  let headBefore = 0;
  let headerBefore: Uint8Array | undefined;
  try {
    begin.run();
    try {
      headBefore = (head.get() as { head: number | null }).head ?? 0;
      if (headBefore !== tipsThrough) keptTips.clear();
      items.forEach((item, index) => {
        if (shared) savepoint.run();
        const mark = { events: written.positions.length, text: written.hashes.length };
        itemTips.clear();
        try {
          if (item.kind === 'append') append(item, written);
          else writeRows(item);
          if (shared) release.run();
          for (const [streamId, tip] of itemTips) transactionTips.set(streamId, tip);
        } catch (error) {
          // SQLite rolls the whole transaction back by itself on some errors (a full disk, an I/O error): then
          // there is no savepoint to return to, and every write of the transaction fails with that error.
          if (!shared || !db.isTransaction) throw error;
          rollbackToSavepoint.run();
          release.run();
          written.positions.length = written.revisions.length = mark.events;
          written.prevs = written.prevs.slice(0, mark.text);
          written.hashes = written.hashes.slice(0, mark.text);
          errors.push([index, wireError(error)]);
        }
      });
      // Read under the write lock: no other connection commits between this and the commit below.
      headerBefore = walHeader.read();
      commit.run();
    } catch (error) {
      if (db.isTransaction) rollback.run();
      throw error;
    }
  } catch (error) {
    tipsThrough = undefined;
    transactionTips.clear();
    const failure = wireError(error);
    return { kind: 'committed', headBefore, ids, errors: ids.map((_, index) => [index, failure] as const), positions: [], revisions: [], prevs: '', hashes: '' };
  }
  const walHeaderAfter = walHeader.afterOwnCommit(headerBefore);
  for (const [streamId, tip] of transactionTips) keptTips.set(streamId, tip);
  transactionTips.clear();
  // Positions only grow: the last one written is the head now (none written: the head is unchanged).
  tipsThrough = written.positions.at(-1) ?? headBefore;
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

const queue: WriteItem[] = [];
let closing = false;

function accept(request: WriterRequest): void {
  if (request.kind === 'write') for (const item of request.items) queue.push(item);
  else closing = true;
}

port.on('message', (request: WriterRequest) => {
  accept(request);
  // Everything that arrived while the previous transaction committed is the next one, until nothing is waiting.
  for (;;) {
    for (let next = receiveMessageOnPort(port); next !== undefined; next = receiveMessageOnPort(port)) accept(next.message as WriterRequest);
    if (queue.length === 0) break;
    const reply = commitTogether(queue.splice(0));
    port.postMessage(reply);
  }
  if (closing) {
    db.close();
    port.postMessage({ kind: 'closed' } satisfies WriterReply);
    port.close();
  }
});

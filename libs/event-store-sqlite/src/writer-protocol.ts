/**
 * Messages between the SQLite store (its calling thread) and its writer thread (`sqlite-writer-worker.ts`).
 * Everything is plain data, copied by the structured clone of `postMessage`.
 */
import type { SQLInputValue } from 'node:sqlite';
import type { ExpectedRevision } from '@oncegate/event-store';

/** How the writer thread opens its connection. */
export interface WriterConfig {
  readonly file: string;
  readonly synchronous: 'FULL' | 'EXTRA' | 'NORMAL';
  readonly busyTimeoutMs: number;
}

/** One event to write, its id assigned and its JSON texts built by the calling thread. */
export interface WireEvent {
  readonly id: string;
  readonly type: string;
  readonly data: string;
  readonly metadata: string;
  /**
   * Absent when the canonical text is the stored one (a value whose keys are all in canonical order already, which
   * few events' are): the message then carries the text once.
   */
  readonly canonicalData?: string;
  readonly canonicalMetadata?: string;
}

export interface WireEntry {
  readonly streamId: string;
  readonly expected: ExpectedRevision;
  readonly events: readonly WireEvent[];
}

/** A statement with its parameters, run by the writer thread as given (rows that are not events). */
export interface SqlRow {
  readonly sql: string;
  readonly params: readonly SQLInputValue[];
}

/**
 * `row` as it is posted to the writer thread. The structured clone copies a byte array's whole `ArrayBuffer`, and
 * a small Buffer of Node's pool (`Buffer.from`, `Buffer.concat`, most of a cipher's output) is a view of a 64 KiB
 * one shared with other buffers: a sealed blob's row (nonce, tag, ciphertext) cost a 64 KiB copy, its clone on
 * the other side and an allocation there. Such a view is copied to bytes of its own; every other value is kept.
 */
export function wireRow(row: SqlRow): SqlRow {
  if (!row.params.some(isPartialView)) return row;
  return { sql: row.sql, params: row.params.map((param) => (isPartialView(param) ? new Uint8Array(param) : param)) };
}

function isPartialView(param: SQLInputValue): param is Uint8Array {
  return param instanceof Uint8Array && param.byteLength !== param.buffer.byteLength;
}

/**
 * One caller's write, checked and rolled back on its own inside the writer's transaction: an append (a single
 * stream, or every entry of an `appendMany`, all or nothing) or rows of other kinds (a checkpoint, a lease, a
 * sealed blob). Ids grow by one in the order the calling thread posts them.
 */
export type WriteItem =
  | { readonly kind: 'append'; readonly id: number; readonly recordedAt: string; readonly entries: readonly WireEntry[] }
  | {
      readonly kind: 'rows';
      readonly id: number;
      readonly rows: readonly SqlRow[];
      /** For the writer thread's connection itself (a setting of that connection), never committed by another. */
      readonly threadOnly?: true;
    };

export type WriterRequest =
  | { readonly kind: 'write'; readonly items: readonly WriteItem[] }
  /** Commit what has arrived, close the connection and answer `closed`. */
  | { readonly kind: 'close' };

/** Why one write failed, with the facts to build the port's error on the calling thread. */
export type WireError =
  | { readonly kind: 'wrong_expected_revision'; readonly streamId: string; readonly expected: ExpectedRevision; readonly actual: number | undefined }
  | { readonly kind: 'duplicate_event_id'; readonly streamId: string; readonly eventId: string }
  | { readonly kind: 'store_unavailable'; readonly detail: string }
  | { readonly kind: 'failed'; readonly message: string };

/** Length of an event hash in hex: `prevs` and `hashes` are these, end to end. */
export const HASH_LENGTH = 64;

/**
 * One transaction: every write that arrived while the previous one was being committed, answered in columns (a
 * few large values clone much faster than an object per event).
 */
export interface CommittedReply {
  readonly kind: 'committed';
  /**
   * The store's last position when the transaction took the write lock: nothing of another process lies between it
   * and this transaction's events.
   */
  readonly headBefore: number;
  /** The writes' ids, in the order posted. */
  readonly ids: readonly number[];
  /** The writes that failed, by their index in `ids`; the others committed. */
  readonly errors: ReadonlyArray<readonly [index: number, error: WireError]>;
  /** Per event appended, in order (each committed append's events in batch order): position and revision. */
  readonly positions: readonly number[];
  readonly revisions: readonly number[];
  /** Per event appended: the previous event's hash and its own, `HASH_LENGTH` characters each, end to end. */
  readonly prevs: string;
  readonly hashes: string;
  /**
   * The file's WAL index header as this transaction's commit left it (`wal-index-header.ts`), when the thread could
   * tell that no other connection committed between that commit and its read; absent otherwise.
   */
  readonly walHeader?: Uint8Array;
}

export type WriterReply = CommittedReply | { readonly kind: 'closed' };

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
  readonly canonicalData: string;
  readonly canonicalMetadata: string;
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
 * One caller's write, checked and rolled back on its own inside the writer's transaction: an append (a single
 * stream, or every entry of an `appendMany`, all or nothing) or rows of other kinds (a checkpoint, a lease, a
 * sealed blob). Ids grow by one in the order the calling thread posts them.
 */
export type WriteItem =
  | { readonly kind: 'append'; readonly id: number; readonly recordedAt: string; readonly entries: readonly WireEntry[] }
  | { readonly kind: 'rows'; readonly id: number; readonly rows: readonly SqlRow[] };

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

/** What an append wrote, per event in batch order (every entry's events in turn). */
export interface AppendWritten {
  readonly positions: readonly number[];
  readonly revisions: readonly number[];
  readonly prevs: readonly string[];
  readonly hashes: readonly string[];
}

export type WriteOutcome =
  | { readonly id: number; readonly written: AppendWritten | null }
  | { readonly id: number; readonly error: WireError };

export type WriterReply =
  /**
   * One transaction: every write that arrived while the previous one was being committed. `headBefore` is the
   * store's last position when the transaction took the write lock (nothing of another process lies between it
   * and this transaction's events). One outcome per write, in the order posted.
   */
  | { readonly kind: 'committed'; readonly headBefore: number; readonly outcomes: readonly WriteOutcome[] }
  | { readonly kind: 'closed' };

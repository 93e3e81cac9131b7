import type { ExpectedRevision } from './event-store';

/** The stream's revision was not the one the writer expected; nothing of the append was written. */
export class WrongExpectedRevisionError extends Error {
  readonly kind = 'wrong_expected_revision' as const;
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    /** Last revision found, or `undefined` when the stream does not exist. */
    readonly actual: number | undefined,
  ) {
    super(
      `stream ${streamId}: expected revision ${String(expected)}, found ${actual === undefined ? 'no stream' : actual}`,
    );
    this.name = 'WrongExpectedRevisionError';
  }
}

/** An event id is already in the store; nothing of the append was written. */
export class DuplicateEventIdError extends Error {
  readonly kind = 'duplicate_event_id' as const;
  constructor(
    readonly streamId: string,
    readonly eventId: string,
  ) {
    super(`stream ${streamId}: event id ${eventId} is already stored`);
    this.name = 'DuplicateEventIdError';
  }
}

/** A call's arguments were rejected before touching the store. */
export class InvalidEventStoreArgumentError extends Error {
  readonly kind = 'invalid_argument' as const;
  constructor(
    readonly argument: string,
    readonly reason: string,
  ) {
    super(`${argument}: ${reason}`);
    this.name = 'InvalidEventStoreArgumentError';
  }
}

export class EventStoreClosedError extends Error {
  readonly kind = 'store_closed' as const;
  constructor() {
    super('the event store is closed');
    this.name = 'EventStoreClosedError';
  }
}

/**
 * Why a store could not be opened: its file (`corrupt`, `read_only`, `cannot_open`, `no_space`), its schema
 * (`newer_schema`), or, for a store on a server, a database the server does not have (`no_database`) or a login or
 * privilege it refused (`access_denied`).
 */
export type StoreOpenProblem = 'corrupt' | 'read_only' | 'cannot_open' | 'no_space' | 'newer_schema' | 'no_database' | 'access_denied';

const OPEN_ADVICE: Record<StoreOpenProblem, string> = {
  corrupt: 'it is not a database or it is corrupted; restore it from a backup, or move it away to start an empty journal',
  read_only:
    'it or its folder is read-only and the store must write; give the user running the gateway write access to the file and its folder (a read-only copy can still be exported with `oncegate journal export`)',
  cannot_open: 'it cannot be opened; check that its folder exists and that the user running the gateway may read and write it',
  no_space: 'the disk holding it is full or failing; free space (or fix the disk), then start again',
  newer_schema: 'it was written by a newer version; run that version, or restore a backup made by this one',
  no_database: 'the database it names does not exist on that server; create it, then start again',
  access_denied: "the server refused the login or a privilege the store needs; check the user and password it connects with and that user's grants",
};

/** The store cannot be used: names the file (or the server's URL, without a password), what is wrong and what to do. */
export class EventStoreOpenError extends Error {
  readonly kind = 'store_open_failed' as const;
  constructor(
    readonly file: string,
    readonly problem: StoreOpenProblem,
    /** The driver's own code or message, for the operator. */
    readonly detail: string,
    /** What to do, in the adapter's words when the remedy names what only it knows (the database to create and how). */
    readonly advice: string = OPEN_ADVICE[problem],
  ) {
    super(`cannot open the store ${file}: ${advice} (${detail})`);
    this.name = 'EventStoreOpenError';
  }
}

/**
 * The store could not write (disk full, I/O error, file turned read-only); nothing of the append was written.
 * Reads still work, and a later append succeeds once the cause is gone.
 */
export class EventStoreUnavailableError extends Error {
  readonly kind = 'store_unavailable' as const;
  constructor(
    readonly file: string,
    /** The driver's own code, e.g. `SQLITE_FULL`. */
    readonly detail: string,
  ) {
    super(`storage unavailable: the store ${file} cannot write (${detail}); nothing was written`);
    this.name = 'EventStoreUnavailableError';
  }
}

export type EventStoreError =
  | WrongExpectedRevisionError
  | DuplicateEventIdError
  | InvalidEventStoreArgumentError
  | EventStoreClosedError
  | EventStoreOpenError
  | EventStoreUnavailableError;

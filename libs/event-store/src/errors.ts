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

export type EventStoreError =
  | WrongExpectedRevisionError
  | DuplicateEventIdError
  | InvalidEventStoreArgumentError
  | EventStoreClosedError;

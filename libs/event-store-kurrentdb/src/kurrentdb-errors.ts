import {
  convertToCommandError,
  ErrorType,
  isCommandError,
  type CommandError,
  type WrongExpectedVersionError,
} from '@kurrent/kurrentdb-client';
import {
  EventStoreOpenError,
  EventStoreUnavailableError,
  expectedRevisionHolds,
  WrongExpectedRevisionError,
  type ExpectedRevision,
} from '@oncegate/event-store';
import { actualRevisionOf } from './stream-states';

/**
 * The client's errors as the event-store port speaks of them. Reads go through the client's native bridge and fail
 * with the client's typed errors (`UnavailableError`, `StreamNotFoundError`, …); the gRPC calls (the multi-stream
 * append) may fail with a bare gRPC error (`code` 14 for a server that cannot be reached), which the client's
 * `convertToCommandError` turns into the same types.
 */

/** The client's typed error for any error of a call, or the error as it was when it is not the client's. */
export function commandError(error: unknown): CommandError | unknown {
  if (!(error instanceof Error)) return error;
  return convertToCommandError(error);
}

/** The client's error type of any error (a bare gRPC error converted first); `undefined` for other errors. */
function typeOf(error: unknown): ErrorType | undefined {
  const converted = commandError(error);
  return converted instanceof Error && isCommandError(converted) ? converted.type : undefined;
}

/** Failures of the connection or of the server now, not of the request: a later call may succeed. */
const UNAVAILABLE = new Set<ErrorType>([
  ErrorType.UNAVAILABLE,
  ErrorType.DEADLINE_EXCEEDED,
  ErrorType.TIMEOUT,
  ErrorType.NOT_LEADER,
  ErrorType.CANCELLED,
]);

export function isUnavailable(error: unknown): boolean {
  const type = typeOf(error);
  return type !== undefined && UNAVAILABLE.has(type);
}

export function isStreamNotFound(error: unknown): boolean {
  return typeOf(error) === ErrorType.STREAM_NOT_FOUND;
}

/** The server's refusal of an expected stream state, as the client's error (converted from a bare gRPC error). */
export function wrongExpectedVersionOf(error: unknown): WrongExpectedVersionError | undefined {
  const converted = commandError(error);
  return converted instanceof Error && isCommandError(converted) && converted.type === ErrorType.WRONG_EXPECTED_VERSION ? converted : undefined;
}

/** The server's limits on one append (bytes of a record, of an append, of a multi-stream transaction). */
export function isTooLarge(error: unknown): boolean {
  const type = typeOf(error);
  return (
    type === ErrorType.MAXIMUM_APPEND_SIZE_EXCEEDED ||
    type === ErrorType.TRANSACTION_MAX_SIZE_EXCEEDED ||
    type === ErrorType.APPEND_RECORD_SIZE_EXCEEDED
  );
}

/** The server is older than the multi-stream append (KurrentDB 25.1): the client says so before sending anything. */
export function isUnsupported(error: unknown): boolean {
  return typeOf(error) === ErrorType.UNSUPPORTED;
}

export function isAccessDenied(error: unknown): boolean {
  return typeOf(error) === ErrorType.ACCESS_DENIED;
}

/** The error's own words, for the operator. */
export function kurrentDetail(error: unknown): string {
  const type = typeOf(error);
  const converted = commandError(error);
  const message = String((converted as Error)?.message ?? converted);
  return type !== undefined && !message.includes(type) ? `${type}: ${message}` : message;
}

/** A client error as the port's `EventStoreUnavailableError` when the server is unavailable; others as they are. */
export function unavailableOr(location: string, error: unknown): unknown {
  const converted = commandError(error);
  return isUnavailable(converted) ? new EventStoreUnavailableError(location, kurrentDetail(converted)) : converted;
}

/**
 * An error while opening the store: an unreachable server is `store_unavailable` (a later open succeeds once it is
 * back); refused credentials, or a server without the multi-stream append, are `store_open_failed`; others as they are.
 */
export function openFailure(location: string, error: unknown): unknown {
  if (error instanceof EventStoreOpenError || error instanceof EventStoreUnavailableError) return error;
  const converted = commandError(error);
  if (isUnavailable(converted)) return new EventStoreUnavailableError(location, kurrentDetail(converted));
  if (isAccessDenied(converted)) return new EventStoreOpenError(location, 'cannot_open', kurrentDetail(converted));
  if (isUnsupported(converted)) return new EventStoreOpenError(location, 'cannot_open', multiStreamAppendMissing(converted));
  return converted;
}

/** What cannot be done on a server without the multi-stream append, and what to do. */
export function multiStreamAppendMissing(error: unknown): string {
  return (
    'this KurrentDB has no multi-stream append, which every append of the store needs (an event and its place in the ' +
    `store's global order are written in one atomic append); use KurrentDB 25.1 or later (${kurrentDetail(error)})`
  );
}

/**
 * A refusal of the server on one of the port's streams, when it alone decides the append: the port's
 * `WrongExpectedRevisionError` when the caller's expectation does not hold against the revision the server found,
 * `undefined` when it does (another writer moved the stream after the store read it: the store reads again).
 */
export function wrongExpectedRevision(
  error: WrongExpectedVersionError,
  streamId: string,
  expected: ExpectedRevision,
): WrongExpectedRevisionError | undefined {
  const actual = actualRevisionOf(error.actualState);
  return expectedRevisionHolds(expected, actual) ? undefined : new WrongExpectedRevisionError(streamId, expected, actual);
}

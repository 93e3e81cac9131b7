import { NO_STREAM, ANY, STREAM_EXISTS, type AppendStreamState, type CurrentStreamState } from '@kurrent/kurrentdb-client';
import type { ExpectedRevision } from '@oncegate/event-store';

/**
 * The port's expected revisions as KurrentDB's stream states: the same four cases under the same names, and a
 * revision as a bigint. The store's own documents (leases, claims, checkpoints) are written with them directly.
 */
export function streamStateOf(expected: ExpectedRevision): AppendStreamState {
  switch (expected) {
    case 'any':
      return ANY;
    case 'no_stream':
      return NO_STREAM;
    case 'stream_exists':
      return STREAM_EXISTS;
    default:
      return BigInt(expected);
  }
}

/**
 * What an append of events names to the server: always the stream's exact last revision (or no stream), whatever the
 * caller expected, because the new events' hash chain continues from that tip. The caller's expectation is decided
 * against the same tip before the append (see `planGroup`); a writer that moves the tip in between makes the server
 * refuse, and the store reads the tip again.
 */
export function exactStreamState(lastRevision: number | undefined): AppendStreamState {
  return lastRevision === undefined ? NO_STREAM : BigInt(lastRevision);
}

/**
 * A stream's state as KurrentDB reports it in a refusal, as the port's actual revision: `undefined` for no stream.
 * A deleted or tombstoned stream (negative states) has no last revision either.
 */
export function actualRevisionOf(state: CurrentStreamState): number | undefined {
  if (state === NO_STREAM || state < 0n) return undefined;
  const revision = Number(state);
  if (!Number.isSafeInteger(revision)) throw new RangeError(`stream revision ${state} is out of the port's range`);
  return revision;
}

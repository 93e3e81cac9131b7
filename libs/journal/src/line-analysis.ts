import { eventHash } from './chain';
import { JournalFormatError, parseEventLine } from './export-format';
import { SEAL_EVENT_TYPE, SEAL_STREAM } from './seal';

/**
 * What the verifier needs of one event line once it is parsed and hashed: the work that does not depend on
 * any other line, so it can run on worker threads (`verify-pool.ts`) while the ordered checks stay on the
 * calling thread.
 */
export interface AnalyzedEvent {
  readonly kind: 'event';
  readonly position: number;
  readonly streamId: string;
  readonly revision: number;
  readonly type: string;
  readonly prev: string;
  readonly hash: string;
  /** The event's data: kept for seal events (the only ones whose data is checked further), else `null`. */
  readonly data: unknown;
  /** `eventHash(prev, event) === hash`. */
  readonly hashMatches: boolean;
  /**
   * What computing the hash threw (e.g. for a number JSON.parse read as Infinity): rethrown when the
   * verifier reaches the hash check of this line, as the verifier did when it hashed in place.
   */
  readonly hashError?: unknown;
}

export type LineAnalysis =
  | { readonly kind: 'blank' }
  | { readonly kind: 'malformed'; readonly detail: string }
  | AnalyzedEvent;

const BLANK: LineAnalysis = { kind: 'blank' };

export const isSealEvent = (streamId: string, type: string): boolean => streamId === SEAL_STREAM && type === SEAL_EVENT_TYPE;

/** Parses, shape-checks and hashes one event line (never the header). */
export function analyzeLine(text: string, lineNumber: number): LineAnalysis {
  if (text === '') return BLANK;
  let event;
  try {
    event = parseEventLine(text, lineNumber);
  } catch (error) {
    if (error instanceof JournalFormatError) return { kind: 'malformed', detail: error.detail };
    throw error;
  }
  let hashMatches = false;
  let hashError: unknown;
  let threw = false;
  try {
    hashMatches = eventHash(event.prev, event) === event.hash;
  } catch (error) {
    threw = true;
    hashError = error;
  }
  const analyzed: AnalyzedEvent = {
    kind: 'event',
    position: event.position,
    streamId: event.streamId,
    revision: event.revision,
    type: event.type,
    prev: event.prev,
    hash: event.hash,
    data: isSealEvent(event.streamId, event.type) ? event.data : null,
    hashMatches,
    ...(threw ? { hashError } : {}),
  };
  return analyzed;
}

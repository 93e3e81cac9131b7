import { InvalidEventStoreArgumentError } from './errors';
import { eventJson, type EventJson } from './event-json';
import type { AppendManyEntry, AppendOptions, AppendResult, EventFilter, EventToAppend, ExpectedRevision } from './event-store';

/**
 * An event checked and serialised once, ready for any adapter to write and link (`linkEvents` takes the
 * canonical texts), with its data and metadata as a reader will parse them back (for live delivery).
 */
export interface SerialisedEvent {
  readonly id: string | undefined;
  readonly type: string;
  /** `JSON.stringify` of the data: what is stored. */
  readonly data: string;
  readonly metadata: string;
  /** RFC 8785 canonical JSON of the data as a reader parses it back: what the hash chain covers. */
  readonly canonicalData: string;
  readonly canonicalMetadata: string;
  /** The data as `JSON.parse(data)` gives it (fresh objects, never the caller's). */
  readonly dataValue: unknown;
  readonly metadataValue: Readonly<Record<string, unknown>>;
}

const MAX_STREAM_ID_LENGTH = 512;
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

export function validateStreamId(streamId: unknown, argument = 'streamId'): asserts streamId is string {
  if (typeof streamId !== 'string' || streamId.length === 0) {
    throw new InvalidEventStoreArgumentError(argument, 'must be a non-empty string');
  }
  if (streamId.length > MAX_STREAM_ID_LENGTH) {
    throw new InvalidEventStoreArgumentError(argument, `longer than ${MAX_STREAM_ID_LENGTH} characters`);
  }
  if (CONTROL_CHARACTERS.test(streamId)) {
    throw new InvalidEventStoreArgumentError(argument, 'contains a control character');
  }
}

export function validateExpectedRevision(expected: unknown): asserts expected is ExpectedRevision {
  if (expected === 'any' || expected === 'no_stream' || expected === 'stream_exists') return;
  if (typeof expected === 'number' && Number.isSafeInteger(expected) && expected >= 0) return;
  throw new InvalidEventStoreArgumentError(
    'expectedRevision',
    `must be 'any', 'no_stream', 'stream_exists' or a revision >= 0, got ${JSON.stringify(expected)}`,
  );
}

export function validatePosition(value: unknown, argument: string): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidEventStoreArgumentError(argument, `must be an integer >= 0, got ${JSON.stringify(value)}`);
  }
}

/** An ISO-8601 instant as `Date.prototype.toISOString` writes it (UTC, milliseconds). */
export function validateInstant(value: unknown, argument: string): asserts value is string {
  const parsed = typeof value === 'string' ? new Date(value) : undefined;
  if (parsed === undefined || Number.isNaN(parsed.getTime()) || parsed.toISOString() !== value) {
    throw new InvalidEventStoreArgumentError(argument, `must be an ISO-8601 instant such as 2026-11-30T06:00:00.000Z, got ${JSON.stringify(value)}`);
  }
}

export function validateCount(value: unknown, argument: string): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidEventStoreArgumentError(argument, `must be an integer >= 1, got ${JSON.stringify(value)}`);
  }
}

export function validateFilter(filter: EventFilter | undefined): void {
  if (filter === undefined) return;
  for (const prefix of filter.streamPrefixes ?? []) {
    if (typeof prefix !== 'string' || prefix.length === 0) {
      throw new InvalidEventStoreArgumentError('filter.streamPrefixes', 'each prefix must be a non-empty string');
    }
  }
  for (const type of filter.eventTypes ?? []) {
    if (typeof type !== 'string' || type.length === 0) {
      throw new InvalidEventStoreArgumentError('filter.eventTypes', 'each type must be a non-empty string');
    }
  }
}

function serialiseJson(value: unknown, argument: string): EventJson {
  let json: EventJson | undefined;
  try {
    json = eventJson(value);
  } catch (error) {
    throw new InvalidEventStoreArgumentError(argument, `is not JSON-serialisable: ${(error as Error).message}`);
  }
  if (json === undefined) throw new InvalidEventStoreArgumentError(argument, 'is not JSON-serialisable');
  return json;
}

/** Checks an append's arguments up front and serialises each event once. */
export function validateAppend(
  streamId: unknown,
  events: readonly EventToAppend[],
  expectedRevision: unknown,
): SerialisedEvent[] {
  validateStreamId(streamId);
  validateExpectedRevision(expectedRevision);
  if (!Array.isArray(events) || events.length === 0) {
    throw new InvalidEventStoreArgumentError('events', 'must hold at least one event');
  }
  const seen = new Set<string>();
  return events.map((event, index) => {
    const at = `events[${index}]`;
    if (typeof event?.type !== 'string' || event.type.length === 0) {
      throw new InvalidEventStoreArgumentError(`${at}.type`, 'must be a non-empty string');
    }
    if (event.id !== undefined) {
      if (typeof event.id !== 'string' || event.id.length === 0) {
        throw new InvalidEventStoreArgumentError(`${at}.id`, 'must be a non-empty string when given');
      }
      if (seen.has(event.id)) throw new InvalidEventStoreArgumentError(`${at}.id`, `repeats ${event.id} in one append`);
      seen.add(event.id);
    }
    const metadata = event.metadata ?? {};
    if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
      throw new InvalidEventStoreArgumentError(`${at}.metadata`, 'must be an object');
    }
    const data = serialiseJson(event.data, `${at}.data`);
    const serialisedMetadata = serialiseJson(metadata, `${at}.metadata`);
    return {
      id: event.id,
      type: event.type,
      data: data.text,
      metadata: serialisedMetadata.text,
      canonicalData: data.canonical,
      canonicalMetadata: serialisedMetadata.canonical,
      dataValue: data.value,
      metadataValue: serialisedMetadata.value as Readonly<Record<string, unknown>>,
    };
  });
}

/** One entry of a multi-stream append, checked and serialised. */
export interface SerialisedAppend {
  readonly streamId: string;
  readonly events: readonly SerialisedEvent[];
  readonly expected: ExpectedRevision;
}

/**
 * Checks a multi-stream append up front: at least one entry, each checked as a single append (arguments named
 * `batch[i].…`), every stream in one entry only and every event id once in the whole batch.
 */
export function validateAppendMany(batch: readonly AppendManyEntry[]): SerialisedAppend[] {
  if (!Array.isArray(batch) || batch.length === 0) {
    throw new InvalidEventStoreArgumentError('batch', 'must hold at least one entry');
  }
  const streams = new Map<string, number>();
  const ids = new Map<string, string>();
  return batch.map((entry: AppendManyEntry | undefined, index) => {
    const at = `batch[${index}]`;
    if (typeof entry !== 'object' || entry === null) throw new InvalidEventStoreArgumentError(at, 'must be an object');
    const expected = entry.expectedRevision ?? 'any';
    let events: SerialisedEvent[];
    try {
      events = validateAppend(entry.streamId, entry.events, expected);
    } catch (error) {
      if (!(error instanceof InvalidEventStoreArgumentError)) throw error;
      throw new InvalidEventStoreArgumentError(`${at}.${error.argument}`, error.reason);
    }
    const earlier = streams.get(entry.streamId);
    if (earlier !== undefined) {
      throw new InvalidEventStoreArgumentError(
        `${at}.streamId`,
        `repeats stream ${entry.streamId} of batch[${earlier}]; put a stream's events in one entry`,
      );
    }
    streams.set(entry.streamId, index);
    events.forEach((event, position) => {
      if (event.id === undefined) return;
      const first = ids.get(event.id);
      if (first !== undefined) {
        throw new InvalidEventStoreArgumentError(`${at}.events[${position}].id`, `repeats ${event.id} of ${first} in one append`);
      }
      ids.set(event.id, `${at}.events[${position}]`);
    });
    return { streamId: entry.streamId, events, expected };
  });
}

/** Does the expected revision accept the stream's actual last revision? */
export function expectedRevisionHolds(expected: ExpectedRevision, actual: number | undefined): boolean {
  switch (expected) {
    case 'any':
      return true;
    case 'no_stream':
      return actual === undefined;
    case 'stream_exists':
      return actual !== undefined;
    default:
      return actual === expected;
  }
}

/** Where an adapter commits checked appends: each call is one append (one stream, or a whole `appendMany`). */
export type CommitAppend = (entries: readonly SerialisedAppend[]) => Promise<AppendResult[]>;

/**
 * `appendToStream` of an adapter: the arguments checked and serialised up front (a mistake is a rejected promise,
 * as every failure of the port is), then committed by `commit`.
 */
export function submitAppend(streamId: string, events: readonly EventToAppend[], options: AppendOptions, commit: CommitAppend): Promise<AppendResult> {
  const expected = options.expectedRevision ?? 'any';
  let entries: SerialisedAppend[];
  try {
    entries = [{ streamId, events: validateAppend(streamId, events, expected), expected }];
  } catch (error) {
    return Promise.reject(error);
  }
  return commit(entries).then(([result]) => result!);
}

/** `appendMany` of an adapter: the batch checked up front, then committed by `commit` as one append. */
export function submitAppendMany(batch: readonly AppendManyEntry[], commit: CommitAppend): Promise<AppendResult[]> {
  let entries: SerialisedAppend[];
  try {
    entries = validateAppendMany(batch);
  } catch (error) {
    return Promise.reject(error);
  }
  return commit(entries);
}

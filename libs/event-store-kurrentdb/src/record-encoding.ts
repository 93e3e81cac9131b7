import { v5 as uuidv5 } from 'uuid';
import { jsonEvent, type EventData, type JSONType } from '@kurrent/kurrentdb-client';
import type { RecordedEvent } from '@oncegate/event-store';

/**
 * How an event of the port is written as KurrentDB records and read back.
 *
 * The KurrentDB event keeps the port's type and data as they are (JSON), so the server's tools show them. What the
 * port adds — the stream id and revision as the port knows them, the event id, the global position, `recordedAt`,
 * the hash-chain link and the caller's metadata — travels in the record's metadata as string properties: the
 * multi-stream append takes metadata only as a flat object of strings, and the server returns it as such an object
 * (with its own `$schema.*` keys beside ours, which are ignored). The caller's metadata is kept as the JSON text the
 * append checked, so what a reader parses back is what the hash covers.
 */

export const PROPERTY = {
  streamId: 'oncegate.streamId',
  revision: 'oncegate.revision',
  eventId: 'oncegate.eventId',
  position: 'oncegate.position',
  recordedAt: 'oncegate.recordedAt',
  prev: 'oncegate.prev',
  hash: 'oncegate.hash',
  metadata: 'oncegate.metadata',
} as const;

/** An event the store is about to write: the port's recorded event and its metadata as the JSON text stored. */
export interface EventToWrite {
  readonly event: RecordedEvent;
  readonly metadataText: string;
}

/** A record as the client hands it back from a read (the fields of its `RecordedEvent` that decoding uses). */
export interface StoredRecord {
  readonly streamId: string;
  readonly revision: bigint;
  readonly type: string;
  readonly data: unknown;
  readonly metadata: unknown;
}

/** Fixed UUID namespaces: a log or event-id record's id is derived from the event's, the same on every try. */
const LOG_RECORD_IDS = '5b0e8f0e-7d4a-4c4e-9d3b-0a4f3c1e6b21';
const EVENT_ID_RECORD_IDS = 'c3a1d2e4-5f60-4b7a-8c9d-1e2f3a4b5c6d';

function envelope({ event, metadataText }: EventToWrite): Record<string, string> {
  return {
    [PROPERTY.streamId]: event.streamId,
    [PROPERTY.revision]: String(event.revision),
    [PROPERTY.eventId]: event.id,
    [PROPERTY.position]: String(event.position),
    [PROPERTY.recordedAt]: event.recordedAt,
    [PROPERTY.prev]: event.prev,
    [PROPERTY.hash]: event.hash,
    [PROPERTY.metadata]: metadataText,
  };
}

/** The record of the event in its own stream; its KurrentDB id is the event's id. */
export function streamRecord(write: EventToWrite): EventData {
  // The client writes `JSON.stringify(data)`: the data value is the parsed copy of the checked append, so the bytes
  // stored are the text the append checked.
  return jsonEvent({ id: write.event.id, type: write.event.type, data: write.event.data as JSONType, metadata: envelope(write) });
}

/** The same event in the store's log, where the port's global order lives. */
export function logRecord(write: EventToWrite): EventData {
  return jsonEvent({
    id: uuidv5(write.event.id, LOG_RECORD_IDS),
    type: write.event.type,
    data: write.event.data as JSONType,
    metadata: envelope(write),
  });
}

/** The one record of an event-id stream: says where the event with that id went. */
export function eventIdRecord(event: RecordedEvent): EventData {
  return jsonEvent({
    id: uuidv5(event.id, EVENT_ID_RECORD_IDS),
    type: 'EventIdTaken',
    data: { streamId: event.streamId, revision: event.revision, position: event.position },
    metadata: {},
  });
}

/** Thrown when a record lacks the store's envelope: something other than this store wrote into its streams. */
export class ForeignRecordError extends Error {
  constructor(
    readonly streamName: string,
    readonly revision: bigint,
    readonly reason: string,
  ) {
    super(`${streamName}@${revision} was not written by the oncegate store (${reason}); only the store may write to its streams`);
    this.name = 'ForeignRecordError';
  }
}

function property(record: StoredRecord, properties: Record<string, unknown>, name: string): string {
  const value = properties[name];
  if (typeof value !== 'string') throw new ForeignRecordError(record.streamId, record.revision, `no ${name}`);
  return value;
}

function integer(record: StoredRecord, text: string, name: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value)) throw new ForeignRecordError(record.streamId, record.revision, `${name} ${JSON.stringify(text)}`);
  return value;
}

/** A stream or log record as the port's event. */
export function decodeRecord(record: StoredRecord): RecordedEvent {
  const properties = record.metadata;
  if (typeof properties !== 'object' || properties === null || Array.isArray(properties) || properties instanceof Uint8Array) {
    throw new ForeignRecordError(record.streamId, record.revision, 'its metadata is not a JSON object');
  }
  const props = properties as Record<string, unknown>;
  let metadata: unknown;
  try {
    metadata = JSON.parse(property(record, props, PROPERTY.metadata));
  } catch (error) {
    if (error instanceof ForeignRecordError) throw error;
    throw new ForeignRecordError(record.streamId, record.revision, `${PROPERTY.metadata} is not JSON`);
  }
  return {
    streamId: property(record, props, PROPERTY.streamId),
    revision: integer(record, property(record, props, PROPERTY.revision), PROPERTY.revision),
    position: integer(record, property(record, props, PROPERTY.position), PROPERTY.position),
    id: property(record, props, PROPERTY.eventId),
    type: record.type,
    data: record.data,
    metadata: metadata as Record<string, unknown>,
    recordedAt: property(record, props, PROPERTY.recordedAt),
    prev: property(record, props, PROPERTY.prev),
    hash: property(record, props, PROPERTY.hash),
  };
}

/** A record of a port stream: its revision in the envelope is its revision in KurrentDB, as the store wrote it. */
export function decodeStreamRecord(record: StoredRecord): RecordedEvent {
  const event = decodeRecord(record);
  if (BigInt(event.revision) !== record.revision) {
    throw new ForeignRecordError(record.streamId, record.revision, `it says revision ${event.revision}`);
  }
  return event;
}

/** A record of the log: its position in the envelope is its place in the log, as the store wrote it. */
export function decodeLogRecord(record: StoredRecord): RecordedEvent {
  const event = decodeRecord(record);
  if (logRevisionOfPosition(event.position) !== record.revision) {
    throw new ForeignRecordError(record.streamId, record.revision, `it says position ${event.position}`);
  }
  return event;
}

/**
 * Position N of the port is revision N - 1 of the log stream: the log is appended to with its exact last revision as
 * the expected one, so its revisions are dense, 0-based and in commit order, which is what the port promises of
 * positions (dense, 1-based, in commit order).
 */
export function positionOfLogRevision(revision: bigint): number {
  const position = Number(revision) + 1;
  if (revision < 0n || !Number.isSafeInteger(position)) throw new RangeError(`log revision ${revision} has no position`);
  return position;
}

/** The log revision holding position `position` (≥ 1). */
export function logRevisionOfPosition(position: number): bigint {
  if (!Number.isSafeInteger(position) || position < 1) throw new RangeError(`position ${position} is not a position of an event`);
  return BigInt(position - 1);
}

/** A stream revision of KurrentDB as the port's revision. */
export function portRevision(revision: bigint): number {
  const value = Number(revision);
  if (revision < 0n || !Number.isSafeInteger(value)) throw new RangeError(`stream revision ${revision} is out of the port's range`);
  return value;
}

import { describe, expect, it } from 'vitest';
import type { EventData } from '@kurrent/kurrentdb-client';
import { eventHash, validateAppend, type RecordedEvent } from '@oncegate/event-store';
import { planGroup } from './append-plan';
import {
  decodeLogRecord,
  decodeRecord,
  decodeStreamRecord,
  ForeignRecordError,
  logRecord,
  logRevisionOfPosition,
  portRevision,
  positionOfLogRevision,
  streamRecord,
  type EventToWrite,
  type StoredRecord,
} from './record-encoding';

const recordedAt = '2026-12-02T08:00:00.000Z';

/** Events as the store plans them: checked by the port's validation, linked, at positions after `head`. */
function planned(streamId: string, events: Parameters<typeof validateAppend>[1], head = 0): EventToWrite[] {
  const entries = [{ streamId, events: validateAppend(streamId, events, 'any'), expected: 'any' as const }];
  return [...planGroup([entries], { head, tips: new Map(), takenIds: new Set(), recordedAt }).writes];
}

/**
 * What a read hands back for a record written by the multi-stream append: the data as JSON text parsed again, and the
 * string properties as the event's metadata object beside the server's own schema keys.
 */
function storedAndRead(record: EventData, streamId: string, revision: bigint): StoredRecord {
  const metadata = { ...(record.metadata as Record<string, string>), '$schema.format': 'Json', '$schema.name': record.type };
  return { streamId, revision, type: record.type, data: JSON.parse(JSON.stringify(record.data)), metadata: JSON.parse(JSON.stringify(metadata)) };
}

describe('kurrentdb record encoding', () => {
  it('given an event with nested data and metadata, when its stream record is stored and read back, then it is the same recorded event and its hash recomputes', () => {
    const [write] = planned('execution-1', [
      { type: 'Dispatched', data: { text: 'naïve ✓ "quoted"\n', nested: { list: [1, 2.5, null, true] } }, metadata: { causationId: 'c-1', correlation: { jsonRpcId: 7 } } },
    ]);
    const read = decodeStreamRecord(storedAndRead(streamRecord(write!), 'oncegate:execution-1', 0n));
    expect(read).toEqual(write!.event);
    expect(read.hash).toBe(eventHash(read.prev, read));
  });

  it('given a record to append, then its metadata is a flat object of strings, as the multi-stream append requires, and its id is the event id', () => {
    const [write] = planned('s', [{ type: 'E', data: 5, metadata: { n: 1, list: [true] } }]);
    const record = streamRecord(write!);
    expect(record.id).toBe(write!.event.id);
    expect(record.type).toBe('E');
    expect(record.data).toBe(5);
    expect(Object.values(record.metadata as Record<string, unknown>).every((value) => typeof value === 'string')).toBe(true);
    expect(JSON.parse((record.metadata as Record<string, string>)['oncegate.metadata']!)).toEqual({ n: 1, list: [true] });
  });

  it('given an event, when its log record is stored at the revision of its position and read back, then it is the same recorded event', () => {
    const writes = planned('s', [{ type: 'A', data: {} }, { type: 'B', data: [1] }], 41);
    for (const write of writes) {
      const record = logRecord(write);
      const read = decodeLogRecord(storedAndRead(record, 'oncegate~log', logRevisionOfPosition(write.event.position)));
      expect(read).toEqual(write.event);
    }
    expect(writes.map((write) => write.event.position)).toEqual([42, 43]);
  });

  it('given an event, then its log record has an id of its own, derived from the event id the same way on every try', () => {
    const [write] = planned('s', [{ id: '01890a5d-ac96-774b-bcce-b302099a8057', type: 'E', data: {} }]);
    const first = logRecord(write!).id;
    expect(first).not.toBe(write!.event.id);
    expect(logRecord(write!).id).toBe(first);
    expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('given a record in the wrong place, then reading it refuses it instead of answering with another place', () => {
    const [write] = planned('s', [{ type: 'E', data: {} }], 9);
    expect(() => decodeStreamRecord(storedAndRead(streamRecord(write!), 'oncegate:s', 3n))).toThrow(ForeignRecordError);
    expect(() => decodeLogRecord(storedAndRead(logRecord(write!), 'oncegate~log', 3n))).toThrow(/oncegate~log@3 was not written by the oncegate store \(it says position 10\)/);
  });

  it('given records another writer put into the store’s streams, then reading them is a ForeignRecordError naming the record', () => {
    const foreign = (metadata: unknown): StoredRecord => ({ streamId: 'oncegate:s', revision: 2n, type: 'E', data: {}, metadata });
    expect(() => decodeRecord(foreign(undefined))).toThrow(/oncegate:s@2 .*metadata is not a JSON object/);
    expect(() => decodeRecord(foreign({ 'oncegate.metadata': '{}' }))).toThrow(/no oncegate.streamId/);
    const [write] = planned('s', [{ type: 'E', data: {} }]);
    const props = (storedAndRead(streamRecord(write!), 'oncegate:s', 0n).metadata as Record<string, string>);
    expect(() => decodeRecord(foreign({ ...props, 'oncegate.metadata': 'not json' }))).toThrow(/oncegate.metadata is not JSON/);
    expect(() => decodeRecord(foreign({ ...props, 'oncegate.position': '-1' }))).toThrow(/oncegate.position "-1"/);
    expect(() => decodeRecord(foreign({ ...props, 'oncegate.revision': '1e3' }))).toThrow(ForeignRecordError);
  });
});

describe('kurrentdb positions', () => {
  it('given the log, then position N is its revision N - 1, both ways', () => {
    expect(positionOfLogRevision(0n)).toBe(1);
    expect(positionOfLogRevision(41n)).toBe(42);
    expect(logRevisionOfPosition(1)).toBe(0n);
    for (const position of [1, 2, 1000, Number.MAX_SAFE_INTEGER]) expect(positionOfLogRevision(logRevisionOfPosition(position))).toBe(position);
  });

  it('given a revision or position out of the port’s range, then the mapping refuses it rather than rounding', () => {
    expect(() => positionOfLogRevision(-1n)).toThrow(RangeError);
    expect(() => positionOfLogRevision(BigInt(Number.MAX_SAFE_INTEGER))).toThrow(RangeError);
    expect(() => logRevisionOfPosition(0)).toThrow(RangeError);
    expect(() => logRevisionOfPosition(1.5)).toThrow(RangeError);
    expect(portRevision(7n)).toBe(7);
    expect(() => portRevision(2n ** 60n)).toThrow(RangeError);
  });

  it('given events planned after a head, then their positions and log revisions follow the head with no gap', () => {
    const writes = planned('s', [{ type: 'A', data: {} }, { type: 'B', data: {} }, { type: 'C', data: {} }], 7);
    const events: RecordedEvent[] = writes.map((write) => write.event);
    expect(events.map((event) => event.position)).toEqual([8, 9, 10]);
    expect(events.map((event) => logRevisionOfPosition(event.position))).toEqual([7n, 8n, 9n]);
  });
});

import { describe, expect, it } from 'vitest';
import { InvalidEventStoreArgumentError } from '@oncegate/event-store';
import { streamNames } from './stream-names';

describe('kurrentdb stream names', () => {
  it('given a namespace, then port streams and the store’s own streams are named apart', () => {
    const names = streamNames('oncegate');
    expect(names.stream('execution-1')).toBe('oncegate:execution-1');
    expect(names.log).toBe('oncegate~log');
    expect(names.eventId('0189')).toBe('oncegate~event-id-0189');
    expect(names.checkpoint('authorization')).toBe('oncegate~checkpoint-authorization');
    expect([names.leases, names.claims, names.store]).toEqual(['oncegate~leases', 'oncegate~claims', 'oncegate~store']);
  });

  it('given port stream ids that look like the store’s own names, then they still name port streams', () => {
    const names = streamNames('oncegate');
    const own = new Set([names.log, names.leases, names.claims, names.store, names.eventId('x'), names.checkpoint('c')]);
    for (const streamId of ['~log', 'log', '~leases', 'oncegate~log', '~event-id-x', ':x']) {
      expect(own.has(names.stream(streamId))).toBe(false);
      expect(names.portStreamId(names.stream(streamId))).toBe(streamId);
    }
    expect(names.portStreamId(names.log)).toBeUndefined();
    expect(names.eventIdOf(names.eventId('0189'))).toBe('0189');
    expect(names.eventIdOf(names.stream('~event-id-0189'))).toBeUndefined();
  });

  it('given two namespaces, then neither names a stream of the other', () => {
    const a = streamNames('a');
    const b = streamNames('a.b');
    expect(b.portStreamId(a.stream('b:x'))).toBeUndefined();
    expect(a.portStreamId(b.stream('x'))).toBeUndefined();
  });

  it('given a namespace with a separator or nothing in it, then it is refused naming the argument', () => {
    for (const namespace of ['', 'a:b', 'a~b', 'with space', '-leading', 'x'.repeat(101)]) {
      const error = (() => {
        try {
          streamNames(namespace);
        } catch (caught) {
          return caught;
        }
      })();
      expect(error, namespace).toBeInstanceOf(InvalidEventStoreArgumentError);
      expect((error as InvalidEventStoreArgumentError).argument).toBe('namespace');
    }
  });
});

import { describe, expect, it } from 'vitest';
import type { ReadAllOptions, ReadAllPage, RecordedEvent } from './event-store';
import { readAllFrom } from './read-all-from';

/** A store of `count` events (streams `a-` and `b-` in turn) that, like the SQLite adapter, scans at most `maxScan` positions per filtered page. */
function fakeStore(count: number, maxScan = 4) {
  const events = Array.from({ length: count }, (_, index): RecordedEvent => ({
    streamId: index % 2 === 0 ? 'a-1' : 'b-1',
    revision: Math.floor(index / 2),
    position: index + 1,
    id: `e${index + 1}`,
    type: 'T',
    data: {},
    metadata: {},
    recordedAt: '2026-01-01T00:00:00.000Z',
    prev: '',
    hash: '',
  }));
  const reads: ReadAllOptions[] = [];
  const store = {
    reads,
    async readAll(options: ReadAllOptions): Promise<ReadAllPage> {
      reads.push(options);
      const after = options.after ?? 0;
      const maxCount = options.maxCount ?? 1000;
      const high = options.filter ? Math.min(count, after + Math.max(maxScan, maxCount)) : count;
      const found = events
        .filter((event) => event.position > after && event.position <= high)
        .filter((event) => !options.filter?.streamPrefixes || options.filter.streamPrefixes.some((prefix) => event.streamId.startsWith(prefix)))
        .slice(0, maxCount);
      const full = found.length === maxCount;
      return { events: found, lastPosition: full ? found.at(-1)!.position : Math.max(after, high) };
    },
  };
  return store;
}

async function positions(read: AsyncIterable<RecordedEvent>): Promise<number[]> {
  const seen: number[] = [];
  for await (const event of read) seen.push(event.position);
  return seen;
}

describe('readAllFrom', () => {
  it('given more events than a page, when read, then every event comes once in order and the position ends at the head', async () => {
    const store = fakeStore(7);
    const read = readAllFrom(store, { pageSize: 3 });
    expect(await positions(read)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(read.position).toBe(7);
    expect(store.reads.map((options) => options.after)).toEqual([0, 3, 6, 7]);
  });

  it('given a filter, when pages hold nothing wanted, then it reads on past them and the position ends at the last examined', async () => {
    const store = fakeStore(9, 2);
    const read = readAllFrom(store, { after: 1, filter: { streamPrefixes: ['a-'] }, pageSize: 1 });
    expect(await positions(read)).toEqual([3, 5, 7, 9]);
    expect(read.position).toBe(9);
  });

  it('given an empty store or nothing after the start, when read, then nothing comes and the position stays', async () => {
    const read = readAllFrom(fakeStore(5), { after: 5 });
    expect(await positions(read)).toEqual([]);
    expect(read.position).toBe(5);
    expect(await positions(readAllFrom(fakeStore(0)))).toEqual([]);
  });

  it('given `to`, when read, then nothing after it comes and no page starts at or after it', async () => {
    const store = fakeStore(10);
    const read = readAllFrom(store, { after: 2, to: 6, pageSize: 3 });
    expect(await positions(read)).toEqual([3, 4, 5, 6]);
    expect(read.position).toBe(6);
    expect(store.reads.map((options) => options.after)).toEqual([2, 5]);
    expect(await positions(readAllFrom(store, { after: 6, to: 6 }))).toEqual([]);
  });

  it('given a break, when iterated again, then it goes on after the last event handed out', async () => {
    const read = readAllFrom(fakeStore(6), { pageSize: 4 });
    for await (const event of read) if (event.position === 2) break;
    expect(read.position).toBe(2);
    expect(await positions(read)).toEqual([3, 4, 5, 6]);
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ReadStreamOptions, RecordedEvent } from '@oncegate/event-store';
import { OwnTails } from './own-tails';

const recorded = (streamId: string, revision: number): RecordedEvent => ({
  streamId,
  revision,
  position: revision + 1,
  id: `${streamId}-${revision}`,
  type: 'E',
  data: {},
  metadata: {},
  recordedAt: '2026-12-01T00:00:00.000Z',
  prev: '',
  hash: '',
});

/** What the file answers for a stream of revisions 0..last (the SQL of the SQLite store, written as a model). */
function fileRead(last: number, options: ReadStreamOptions): number[] {
  const all = Array.from({ length: last + 1 }, (_, revision) => revision);
  const limit = options.maxCount ?? Infinity;
  if ((options.direction ?? 'forwards') === 'forwards') return all.filter((r) => r >= (options.fromRevision ?? 0)).slice(0, limit);
  return all
    .filter((r) => r <= (options.fromRevision ?? Number.MAX_SAFE_INTEGER))
    .reverse()
    .slice(0, limit);
}

describe('own tails', () => {
  it('given any commits, with or without the stream’s start, when read in any shape, then a tail answers exactly what the file holds or declines', () => {
    let answered = 0;
    let declined = 0;
    fc.assert(
      fc.property(
        fc.nat({ max: 6 }),
        fc.array(fc.record({ size: fc.integer({ min: 1, max: 5 }), readBack: fc.option(fc.nat({ max: 20 }), { nil: undefined }) }), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 10 }),
        fc.array(
          fc.record({
            direction: fc.constantFrom('forwards' as const, 'backwards' as const),
            fromRevision: fc.option(fc.nat({ max: 70 }), { nil: undefined }),
            maxCount: fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined }),
          }),
          { minLength: 1, maxLength: 10 },
        ),
        (before, commits, depth, reads) => {
          // `before` events were in the file before this process committed anything.
          const tails = new OwnTails(8, depth);
          let next = before;
          for (const { size, readBack } of commits) {
            tails.committed('s', Array.from({ length: size }, (_, i) => recorded('s', next + i)));
            next += size;
            // A read of the file that reached the end: its last `readBack` events (all there are, at most).
            if (readBack !== undefined) {
              const count = Math.min(readBack, next);
              tails.learned('s', Array.from({ length: count }, (_, i) => recorded('s', next - count + i)), next - 1);
            }
            expect(tails.revision('s')).toBe(next - 1);
            for (const options of reads) {
              const kept = tails.read('s', options);
              if (kept === undefined) {
                declined += 1;
                continue;
              }
              answered += 1;
              expect(kept.map((event) => event.revision)).toEqual(fileRead(next - 1, options));
            }
          }
        },
      ),
      { numRuns: 500, seed: 20261201 },
    );
    // Both answers happen: the property checks tails that answer, not only ones that decline.
    expect(answered).toBeGreaterThan(1_000);
    expect(declined).toBeGreaterThan(100);
  });

  it('given reads past the head or of the latest event, then the tail answers them without the file', () => {
    const tails = new OwnTails();
    tails.committed('s', [recorded('s', 7), recorded('s', 8)]);
    expect(tails.read('s', { fromRevision: 9 })).toEqual([]);
    expect(tails.read('s', { fromRevision: 8 })!.map((e) => e.revision)).toEqual([8]);
    expect(tails.read('s', { direction: 'backwards', maxCount: 1 })!.map((e) => e.revision)).toEqual([8]);
    // Revisions before the tail are only in the file.
    expect(tails.read('s', {})).toBeUndefined();
    expect(tails.read('s', { direction: 'backwards', maxCount: 3 })).toBeUndefined();
    expect(tails.read('other', { fromRevision: 9 })).toBeUndefined();
  });

  it('given a read that found no stream, or only its revision, then the tail answers what lies past it and declines the rest', () => {
    const tails = new OwnTails();
    tails.learned('none', [], -1);
    expect(tails.revision('none')).toBe(-1);
    expect(tails.read('none', {})).toEqual([]);
    expect(tails.read('none', { direction: 'backwards', maxCount: 1 })).toEqual([]);
    tails.learned('counted', [], 4);
    expect(tails.revision('counted')).toBe(4);
    expect(tails.read('counted', { fromRevision: 5 })).toEqual([]);
    expect(tails.read('counted', { fromRevision: 4 })).toBeUndefined();
    expect(tails.read('counted', { direction: 'backwards', maxCount: 1 })).toBeUndefined();
    tails.committed('counted', [recorded('counted', 5)]);
    expect(tails.read('counted', { fromRevision: 5 })!.map((e) => e.revision)).toEqual([5]);
    expect(tails.read('counted', { direction: 'backwards', maxCount: 1 })!.map((e) => e.revision)).toEqual([5]);
  });

  it('given more events in all than it keeps, then the least recently used tails go until they fit', () => {
    const tails = new OwnTails(100, 8, 10);
    const run = (streamId: string, from: number, count: number) => Array.from({ length: count }, (_, i) => recorded(streamId, from + i));
    tails.committed('a', run('a', 0, 4));
    tails.committed('b', run('b', 0, 4));
    tails.learned('c', run('c', 0, 2), 1);
    expect([tails.has('a'), tails.has('b'), tails.has('c')]).toEqual([true, true, true]);
    tails.revision('a');
    // Three more events of b (now used last): 13 in all, so c (used longest ago) goes, then a (11 are still too many).
    tails.committed('b', run('b', 4, 3));
    expect([tails.has('a'), tails.has('b'), tails.has('c')]).toEqual([false, true, false]);
    expect(tails.read('b', {})!.map((e) => e.revision)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    tails.committed('d', run('d', 0, 4));
    expect([tails.has('b'), tails.has('d')]).toEqual([false, true]);
    // A forgotten tail gives its room back.
    tails.forget('d');
    tails.committed('e', run('e', 0, 6));
    tails.committed('f', run('f', 0, 4));
    expect([tails.has('e'), tails.has('f')]).toEqual([true, true]);
  });

  it('given more streams than it keeps, or a refused append, then the oldest tail, or that stream’s, is forgotten', () => {
    const tails = new OwnTails(2, 4);
    tails.committed('a', [recorded('a', 0)]);
    tails.committed('b', [recorded('b', 0)]);
    tails.committed('a', [recorded('a', 1)]);
    tails.committed('c', [recorded('c', 0)]);
    expect([tails.has('a'), tails.has('b'), tails.has('c')]).toEqual([true, false, true]);
    expect(tails.read('a', {})!.map((e) => e.revision)).toEqual([0, 1]);
    tails.forget('a');
    expect(tails.revision('a')).toBeUndefined();
    // A commit that does not follow the tail starts a new one.
    tails.committed('c', [recorded('c', 5)]);
    expect(tails.read('c', { fromRevision: 4 })).toBeUndefined();
    expect(tails.read('c', { fromRevision: 5 })!.map((e) => e.revision)).toEqual([5]);
  });
});

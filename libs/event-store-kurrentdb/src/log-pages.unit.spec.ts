import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '@oncegate/event-store';
import { backwardPage, filterTakes, forwardPage } from './log-pages';

const event = (position: number, streamId: string, type = 'E'): RecordedEvent => ({
  streamId,
  revision: 0,
  position,
  id: `id-${position}`,
  type,
  data: {},
  metadata: {},
  recordedAt: '2026-12-02T08:00:00.000Z',
  prev: '0'.repeat(64),
  hash: String(position).padStart(64, '0'),
});

const log = [event(4, 'execution-1', 'ExecutionAccepted'), event(5, 'intent-1', 'IntentClaimed'), event(6, 'execution-2', 'Dispatched'), event(7, 'executionless', 'Dispatched')];

/** Hands out the records and fails if asked for more than `allowed`: a page must stop reading once full. */
async function* reading(records: readonly RecordedEvent[], allowed = records.length): AsyncGenerator<RecordedEvent> {
  for (const [i, record] of records.entries()) {
    if (i >= allowed) throw new Error(`read past record ${allowed}`);
    yield record;
  }
}

describe('kurrentdb pages of the log', () => {
  it('given a filter, then it takes an event by one of its stream prefixes and one of its types', () => {
    expect(filterTakes(undefined, log[0]!)).toBe(true);
    expect(filterTakes({ streamPrefixes: ['execution-'] }, log[0]!)).toBe(true);
    expect(filterTakes({ streamPrefixes: ['execution-'] }, log[3]!)).toBe(false);
    expect(filterTakes({ streamPrefixes: ['intent-', 'execution-2'], eventTypes: ['IntentClaimed', 'Dispatched'] }, log[2]!)).toBe(true);
    expect(filterTakes({ eventTypes: ['Dispatched'] }, log[1]!)).toBe(false);
  });

  it('given a filtered forward read, then the page holds what the filter takes and its last position is the last record examined', async () => {
    const page = await forwardPage(reading(log), 3, 10, { streamPrefixes: ['execution-'] });
    expect(page.events.map((e) => e.position)).toEqual([4, 6]);
    expect(page.lastPosition).toBe(7);
  });

  it('given a page that fills, then it ends at its last event and reads no further', async () => {
    const page = await forwardPage(reading(log, 3), 3, 2, { eventTypes: ['ExecutionAccepted', 'Dispatched'] });
    expect(page.events.map((e) => e.position)).toEqual([4, 6]);
    expect(page.lastPosition).toBe(6);
  });

  it('given nothing after the position, then the page is empty and stays where it was', async () => {
    expect(await forwardPage(reading([]), 7, 10)).toEqual({ events: [], lastPosition: 7 });
  });

  it('given a backward read, then events come newest first, and a page that is not full ends at the lowest position examined', async () => {
    const descending = [...log].reverse();
    expect((await backwardPage(reading(descending), 7, 2)).events.map((e) => e.position)).toEqual([7, 6]);
    expect(await backwardPage(reading(descending), 7, 2).then((page) => page.lastPosition)).toBe(6);
    const filtered = await backwardPage(reading(descending), 7, 10, { streamPrefixes: ['intent-'] });
    expect(filtered).toMatchObject({ events: [{ position: 5 }], lastPosition: 4 });
    expect(await backwardPage(reading([]), 3, 10)).toEqual({ events: [], lastPosition: 4 });
  });
});

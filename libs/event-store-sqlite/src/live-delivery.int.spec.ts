import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RecordedEvent, Subscription } from '@oncegate/event-store';
import { openSqliteEventStore, type SqliteEventStore, type SqliteEventStoreOptions } from './sqlite-event-store';

const dirs: string[] = [];
const stores: SqliteEventStore[] = [];

function open(options: Partial<SqliteEventStoreOptions> = {}, file?: string): SqliteEventStore {
  if (file === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-live-'));
    dirs.push(dir);
    file = join(dir, 'events.db');
  }
  const store = openSqliteEventStore({ file, ...options });
  stores.push(store);
  return store;
}

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

const positions = (events: readonly RecordedEvent[]) => events.map((event) => event.position);

describe('sqlite store: live delivery of this process commits', () => {
  it('given subscribers at the head, when this process commits, then every subscriber gets the events without a read of the store', async () => {
    const store = open({ pollIntervalMs: 5 });
    await store.appendToStream('execution-old', [{ type: 'Old', data: {} }]);
    const filters = [undefined, { streamPrefixes: ['execution-'] }, { eventTypes: ['B'] }, { streamPrefixes: ['other-'] }];
    const seen = filters.map(() => [] as RecordedEvent[]);
    const subscriptions: Subscription[] = filters.map((filter, i) =>
      store.subscribeToAll((event) => void seen[i]!.push(event), { filter, from: 'start' }),
    );
    await Promise.all(subscriptions.map((subscription) => subscription.caughtUp));
    const readAll = vi.spyOn(store, 'readAll');
    const readStream = vi.spyOn(store, 'readStream');

    const appends: Promise<unknown>[] = [];
    for (let i = 0; i < 30; i += 1) {
      appends.push(store.appendToStream(`execution-${i % 4}`, [{ type: i % 3 === 0 ? 'B' : 'A', data: { i } }]));
      if (i % 5 === 4) {
        appends.push(store.appendMany([{ streamId: `other-${i}`, events: [{ type: 'B', data: {} }, { type: 'A', data: {} }] }]));
        await Promise.all(appends.splice(0));
      }
    }
    await Promise.all(appends);
    const head = await store.headPosition();
    await until(() => (seen[0]!.at(-1)?.position ?? 0) >= head, 'delivery');
    await new Promise((resolve) => setTimeout(resolve, 30));

    const all = (await store.readAll({ maxCount: 1000 })).events;
    expect(positions(seen[0]!)).toEqual(positions(all));
    expect(positions(seen[1]!)).toEqual(positions(all.filter((e) => e.streamId.startsWith('execution-'))));
    expect(positions(seen[2]!)).toEqual(positions(all.filter((e) => e.type === 'B')));
    expect(positions(seen[3]!)).toEqual(positions(all.filter((e) => e.streamId.startsWith('other-'))));
    expect(seen[0]!.at(-1)).toEqual(all.at(-1));
    // The spies also counted the comparison read above.
    expect(readAll).toHaveBeenCalledTimes(1);
    expect(readStream).not.toHaveBeenCalled();
  });

  it('given another connection commits between two of this process commits, then a live subscriber reads it instead of skipping it, even before the poll notices', async () => {
    const store = open({ pollIntervalMs: 60_000 });
    const file = (store as unknown as { file: string }).file;
    const other = open({}, file);
    const seen: RecordedEvent[] = [];
    const subscription = store.subscribeToAll((event) => void seen.push(event));
    await subscription.caughtUp;
    await store.appendToStream('local', [{ type: 'Local', data: { n: 1 } }]);
    await until(() => seen.length === 1, 'the first local event');
    await other.appendToStream('remote', [{ type: 'Remote', data: {} }]);
    await store.appendToStream('local', [{ type: 'Local', data: { n: 2 } }]);
    await until(() => seen.length >= 3, 'the events after the remote one');
    expect(seen.map((e) => e.type)).toEqual(['Local', 'Remote', 'Local']);
    expect(positions(seen)).toEqual([1, 2, 3]);
  });

  it('given a filtered subscriber, when another connection appends an event it takes and this process then commits one it does not, then it gets the other connection event before the poll notices', async () => {
    const store = open({ pollIntervalMs: 60_000 });
    const other = open({}, (store as unknown as { file: string }).file);
    const seen: RecordedEvent[] = [];
    const subscription = store.subscribeToAll((event) => void seen.push(event), { filter: { streamPrefixes: ['agent-'] } });
    await subscription.caughtUp;
    await other.appendToStream('agent-a', [{ type: 'TokenRevoked', data: {} }]);
    // This process's commit holds nothing for the filter, and it moves the known head past the revocation.
    await store.appendToStream('session-1', [{ type: 'SessionStarted', data: {} }]);
    await until(() => seen.length === 1, 'the other connection event');
    expect(seen.map((e) => [e.streamId, e.position])).toEqual([['agent-a', 1]]);
  });

  it('given another connection writes only leases and checkpoints, then live subscribers do not read; when it appends an event, they read it', async () => {
    const store = open({ pollIntervalMs: 5 });
    const other = open({}, (store as unknown as { file: string }).file);
    const seen: RecordedEvent[] = [];
    const subscription = store.subscribeToAll((event) => void seen.push(event));
    await subscription.caughtUp;
    await store.appendToStream('local', [{ type: 'Local', data: {} }]);
    await until(() => seen.length === 1, 'the local event');
    const readAll = vi.spyOn(store, 'readAll');
    for (let i = 0; i < 5; i += 1) {
      await other.renewLease('instance-b', new Date(Date.now() + 60_000).toISOString());
      await other.storeCheckpoint('svc-b', i);
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
    expect(readAll).not.toHaveBeenCalled();
    await other.appendToStream('remote', [{ type: 'Remote', data: {} }]);
    await until(() => seen.length === 2, 'the other connection event');
    expect(seen.map((e) => e.type)).toEqual(['Local', 'Remote']);
    expect(readAll).toHaveBeenCalled();
  });

  it('given a slow subscriber, when its queue passes the limit, then it falls back to reading and still sees every event once, in order', async () => {
    const store = open({ liveQueueLimit: 25 });
    const slow: RecordedEvent[] = [];
    const fast: RecordedEvent[] = [];
    // Told apart in the reads by the slow one's filter (which takes every event).
    const slowSubscription = store.subscribeToAll(
      async (event) => {
        await new Promise((resolve) => setTimeout(resolve, 1));
        slow.push(event);
      },
      { filter: { streamPrefixes: ['s-'] } },
    );
    const fastSubscription = store.subscribeToAll((event) => void fast.push(event), { pageSize: 3 });
    await Promise.all([slowSubscription.caughtUp, fastSubscription.caughtUp]);
    const readAll = vi.spyOn(store, 'readAll');
    for (let burst = 0; burst < 20; burst += 1) {
      await Promise.all(Array.from({ length: 10 }, (_, i) => store.appendToStream(`s-${i}`, [{ type: 'E', data: { burst } }])));
    }
    const head = await store.headPosition();
    await until(() => (slow.at(-1)?.position ?? 0) >= head && (fast.at(-1)?.position ?? 0) >= head, 'both subscribers');
    const expected = Array.from({ length: 200 }, (_, i) => i + 1);
    expect(positions(slow)).toEqual(expected);
    expect(positions(fast)).toEqual(expected);
    const reads = readAll.mock.calls.map(([options]) => options?.filter);
    expect(reads.filter((filter) => filter !== undefined).length).toBeGreaterThan(0);
    expect(reads.filter((filter) => filter === undefined)).toHaveLength(0);
  });

  it('given a durable consumer fed live, when it stops, then its checkpoint is the last event it handled', async () => {
    const store = open();
    const seen: RecordedEvent[] = [];
    const subscription = store.subscribeToAll((event) => void seen.push(event), { consumer: 'svc', checkpointEveryMs: 0 });
    await subscription.caughtUp;
    for (let i = 0; i < 5; i += 1) await store.appendToStream('s', [{ type: 'E', data: { i } }]);
    await until(() => seen.length === 5, 'delivery');
    await subscription.stop();
    expect(await store.readCheckpoint('svc')).toBe(5);
  });
});

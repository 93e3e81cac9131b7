import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RecordedEvent } from '@oncegate/event-store';
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
/* eslint-disable @nx/enforce-module-boundaries -- the same full-disk helper and polling the gateway's tests use */
import { fillDisk, freeDisk } from '../../../test/support/full-disk';
import { eventually } from '../../../test/support/journal';
/* eslint-enable @nx/enforce-module-boundaries */
import { EventStoreTransport } from './event-store.transport';

vi.mock('node:sqlite', async (original) => {
  // eslint-disable-next-line @nx/enforce-module-boundaries -- see above
  const { trackedSqlite } = await import('../../../test/support/full-disk');
  return trackedSqlite(await original());
});

describe('EventStoreTransport while the SQLite store cannot write (files that cannot grow)', () => {
  let dir: string;
  let store: SqliteEventStore;
  let transport: EventStoreTransport | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-transport-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
  });

  afterEach(async () => {
    await freeDisk();
    await transport?.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('given a handler whose append finds the disk full, when room returns, then the event is handled, not skipped', async () => {
    await store.appendToStream('execution-1', [{ type: 'Dispatched', data: {} }]);
    await fillDisk();
    transport = new EventStoreTransport({ store, consumer: 'recorder', unavailableRetryMaxMs: 100 });
    transport.addHandler('Dispatched', async (event: RecordedEvent) => {
      await store.appendToStream('handled-1', [{ type: 'Handled', data: { of: event.streamId } }]);
    }, true);
    // Not awaited: it calls back once caught up, which is only after the event is handled.
    transport.listen(() => undefined);

    // Five ordinary attempts are over within about a second; a full disk must not use them up.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await store.readStream('handled-1')).toEqual([]);
    await freeDisk();
    const handled = await eventually(async () => ((await store.readStream('handled-1')).length > 0 ? store.readStream('handled-1') : undefined));
    expect(handled.map((event) => event.type)).toEqual(['Handled']);
  });

  it('given a checkpoint that cannot be written, when the subscription goes on, then it keeps delivering and checkpoints once there is room', async () => {
    await store.appendToStream('execution-1', [{ type: 'Dispatched', data: {} }]);
    await fillDisk();
    const seen: string[] = [];
    const subscription = store.subscribeToAll(async (event) => void seen.push(event.streamId), {
      consumer: 'reader',
      checkpointEveryMs: 0,
      filter: { streamPrefixes: ['execution-'] },
    });
    await subscription.caughtUp;
    await new Promise((resolve) => setTimeout(resolve, 200));
    await freeDisk();
    const second = await store.appendToStream('execution-2', [{ type: 'Dispatched', data: {} }]);
    await eventually(() => (seen.includes('execution-2') ? true : undefined), 5_000, 'the subscription to deliver after the outage');
    await eventually(async () => ((await store.readCheckpoint('reader')) === second.position ? true : undefined), 5_000, 'the checkpoint');
    await subscription.stop();
  });
});

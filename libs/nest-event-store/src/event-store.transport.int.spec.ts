import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, Logger, Module, type INestMicroservice } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
/* eslint-disable @nx/enforce-module-boundaries -- the same full-disk helper and polling the gateway's tests use */
import { fillDisk, freeDisk } from '../../../test/support/full-disk';
import { eventually } from '../../../test/support/journal';
/* eslint-enable @nx/enforce-module-boundaries */
import { createEventStoreMicroservice } from './event-store.microservice';
import { EventStoreTransport } from './event-store.transport';
import { readParked, requestReplay } from './parked-events';

/** A Nest service of one controller that appends `Handled` for every `Dispatched`, failing first while `failing` says so. */
async function recorderService(store: EventStore, transport: EventStoreTransport, failing: () => Error | undefined = () => undefined): Promise<INestMicroservice> {
  @Controller()
  class Recorder {
    @EventPattern('Dispatched')
    async onDispatched(@Payload() event: RecordedEvent): Promise<void> {
      const failure = failing();
      if (failure !== undefined) throw failure;
      await store.appendToStream(`handled-${event.streamId}`, [{ type: 'Handled', data: { of: event.streamId } }]);
    }
  }
  @Module({ controllers: [Recorder] })
  class RecorderModule {}
  const app = await createEventStoreMicroservice(RecorderModule, transport, { logger: false });
  // Not awaited: it resolves once caught up, which is only after the events there are handled.
  void app.listen();
  return app;
}

vi.mock('node:sqlite', async (original) => {
  // eslint-disable-next-line @nx/enforce-module-boundaries -- see above
  const { trackedSqlite } = await import('../../../test/support/full-disk');
  return trackedSqlite(await original());
});

describe('EventStoreTransport while the SQLite store cannot write (files that cannot grow)', () => {
  let dir: string;
  let store: SqliteEventStore;
  let transport: EventStoreTransport | undefined;
  let app: INestMicroservice | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-transport-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
  });

  afterEach(async () => {
    await freeDisk();
    await app?.close();
    app = undefined;
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

  it('given a Nest service whose handler finds the disk full, when room returns, then the event is handled and nothing is parked', async () => {
    // Nest turns a handler's error into a generic one unless told otherwise: the transport must still see that the
    // store could not write, and wait for it rather than use up the event's attempts.
    await store.appendToStream('execution-1', [{ type: 'Dispatched', data: {} }]);
    await fillDisk();
    transport = new EventStoreTransport({ store, consumer: 'recorder', unavailableRetryMaxMs: 100 });
    app = await recorderService(store, transport);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await store.readStream('handled-execution-1')).toEqual([]);
    await freeDisk();
    await eventually(async () => ((await store.readStream('handled-execution-1')).length > 0 ? true : undefined), 5_000, 'the event handled');
    expect((await readParked(store, 'recorder')).open).toEqual([]);
  });

  it('given a Nest handler that keeps failing on its own, then the event is parked with its error, and while the disk is full it waits to be parked and the service goes on', async () => {
    await store.appendToStream('execution-1', [{ type: 'Dispatched', data: {} }]);
    const errors = vi.spyOn(Logger.prototype, 'error');
    onTestFinished(() => errors.mockRestore());
    let fault: Error | undefined = new TypeError('the handler cannot read field x');
    transport = new EventStoreTransport({ store, consumer: 'recorder', unavailableRetryMaxMs: 100 });
    // The first event's attempts fail while the disk is full, so that its parking finds the disk full too.
    await fillDisk();
    app = await recorderService(store, transport, () => fault);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await freeDisk();
    const [parked] = await eventually(async () => {
      const { open } = await readParked(store, 'recorder');
      return open.length > 0 ? open : undefined;
    }, 5_000, 'the event parked');
    expect(parked).toMatchObject({ streamId: 'execution-1', type: 'Dispatched' });
    expect(parked!.error).toBe('TypeError: the handler cannot read field x');
    // The subscription lives on: a later execution's event is handled.
    fault = undefined;
    await store.appendToStream('execution-2', [{ type: 'Dispatched', data: {} }]);
    await eventually(async () => ((await store.readStream('handled-execution-2')).length > 0 ? true : undefined), 5_000, 'a later event handled');
    // Parking waited for the disk: the subscription itself never failed.
    expect(errors.mock.calls.flat().map(String).filter((message) => message.includes('subscription stopped'))).toEqual([]);
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

describe('EventStoreTransport when its subscription fails', () => {
  it('given a read that fails with an error that is not the store being away, then the subscription is made again and later events are handled', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-transport-'));
    const store = openSqliteEventStore({ file: join(dir, 'events.db') });
    const errors = vi.spyOn(Logger.prototype, 'error');
    onTestFinished(() => errors.mockRestore());
    const transport = new EventStoreTransport({ store, consumer: 'recorder' });
    const app = await recorderService(store, transport);
    try {
      await store.appendToStream('execution-1', [{ type: 'Dispatched', data: {} }]);
      await eventually(async () => ((await store.readStream('handled-execution-1')).length > 0 ? true : undefined), 5_000, 'the first event handled');
      // The next read fails (a driver that could not parse a row, say).
      const read = vi.spyOn(store, 'readAll').mockRejectedValueOnce(new Error('a row could not be read'));
      // Appended by another writer (as another process would), so the subscription reads it rather than being handed it.
      const other = openSqliteEventStore({ file: join(dir, 'events.db') });
      await other.appendToStream('execution-2', [{ type: 'Dispatched', data: {} }]);
      await other.close();
      await eventually(async () => ((await store.readStream('handled-execution-2')).length > 0 ? true : undefined), 10_000, 'the event after the failed read handled');
      expect(read).toHaveBeenCalled();
      expect(errors.mock.calls.flat().map(String).find((message) => message.includes('subscription stopped'))).toMatch(/a row could not be read; following again in 1000 ms/);
      // Handled once: the new subscription starts after what the old one had handled.
      expect(await store.readStream('handled-execution-1')).toHaveLength(1);
    } finally {
      await app.close();
      await transport.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('given the following of replay requests failing, then it is made again and a replay asked meanwhile is carried out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-transport-'));
    const store = openSqliteEventStore({ file: join(dir, 'events.db') });
    const errors = vi.spyOn(Logger.prototype, 'error');
    onTestFinished(() => errors.mockRestore());
    let fault: Error | undefined = new Error('the target is down');
    const transport = new EventStoreTransport({ store, consumer: 'recorder' });
    const app = await recorderService(store, transport, () => fault);
    try {
      await store.appendToStream('execution-1', [{ type: 'Dispatched', data: {} }]);
      const [parked] = await eventually(async () => {
        const { open } = await readParked(store, 'recorder');
        return open.length > 0 ? open : undefined;
      }, 5_000, 'the event parked');
      fault = undefined;
      // The next read of the parked stream's replay requests fails (a driver that could not parse a row, say).
      const readAll = store.readAll.bind(store);
      const read = vi.spyOn(store, 'readAll').mockImplementation((options) => {
        if (!(options?.filter?.streamPrefixes ?? []).includes('parked-recorder')) return readAll(options);
        read.mockRestore();
        return Promise.reject(new Error('a row could not be read'));
      });
      // Asked by another writer (as the CLI does), so the following reads it rather than being handed it.
      const other = openSqliteEventStore({ file: join(dir, 'events.db') });
      await requestReplay(other, 'recorder', [parked!.parkedId], 'user:alice');
      await other.close();
      await eventually(async () => ((await store.readStream('handled-execution-1')).length > 0 ? true : undefined), 10_000, 'the replay carried out');
      expect(errors.mock.calls.flat().map(String).find((message) => message.includes('following replay requests stopped'))).toMatch(/a row could not be read; following again in 1000 ms/);
      await eventually(async () => ((await readParked(store, 'recorder')).open.length === 0 ? true : undefined), 5_000, 'nothing parked any more');
    } finally {
      await app.close();
      await transport.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

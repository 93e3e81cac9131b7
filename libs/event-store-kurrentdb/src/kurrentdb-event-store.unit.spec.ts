import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DuplicateEventIdError,
  eventHash,
  EventStoreOpenError,
  EventStoreUnavailableError,
  GENESIS_HASH,
  InvalidEventStoreArgumentError,
  type EventStore,
} from '@oncegate/event-store';
import { jsonEvent } from '@kurrent/kurrentdb-client';
import { openKurrentDbEventStore, type KurrentDbEventStore } from './kurrentdb-event-store';
import { ForeignRecordError } from './record-encoding';
import { InMemoryKurrentDb } from './testing/in-memory-kurrentdb';

const opened: EventStore[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});

async function open(server: InMemoryKurrentDb, namespace = 'unit'): Promise<KurrentDbEventStore> {
  const store = await openKurrentDbEventStore({ client: server.client(), namespace, pollIntervalMs: 200 });
  opened.push(store);
  return store;
}

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const event = (type: string, data: unknown = {}, id?: string) => ({ type, data, ...(id === undefined ? {} : { id }) });

describe('kurrentdb event store, with the official client', () => {
  it('given no server at the address, when the store opens, then it is store_unavailable naming the server without its password', async () => {
    const port = await closedPort();
    const error = await openKurrentDbEventStore({ url: `kurrentdb://admin:secret@127.0.0.1:${port}?tls=false`, namespace: 'unit' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventStoreUnavailableError);
    expect((error as Error).message).toContain(`kurrentdb://127.0.0.1:${port} (namespace unit)`);
    expect((error as Error).message).not.toContain('secret');
  });

  it('given something that is not a connection string, when the store opens, then the url is refused as an argument', async () => {
    await expect(openKurrentDbEventStore({ url: 'postgres://localhost/db' })).rejects.toMatchObject({ kind: 'invalid_argument', argument: 'url' });
    await expect(openKurrentDbEventStore({})).rejects.toMatchObject({ kind: 'invalid_argument', argument: 'url' });
  });
});

describe('kurrentdb event store, on the in-memory stand-in', () => {
  it('given a server without the multi-stream append, when the store opens, then it cannot open and says KurrentDB 25.1 is needed', async () => {
    const error = await openKurrentDbEventStore({ client: new InMemoryKurrentDb({ multiStreamAppend: false }).client() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventStoreOpenError);
    expect(error).toMatchObject({ problem: 'cannot_open' });
    expect((error as EventStoreOpenError).detail).toContain('KurrentDB 25.1 or later');
  });

  it('given a namespace written by a newer layout, when the store opens, then it is refused as newer_schema', async () => {
    const server = new InMemoryKurrentDb();
    await server.client().appendToStream('unit~store', jsonEvent({ type: 'StoreCreated', data: { layoutVersion: 99 } }));
    await expect(open(server)).rejects.toMatchObject({ kind: 'store_open_failed', problem: 'newer_schema' });
  });

  it('given bad arguments, when they are passed, then they are refused without a call to the server', async () => {
    const server = new InMemoryKurrentDb();
    const client = server.client();
    const store = await openKurrentDbEventStore({ client, namespace: 'unit' });
    opened.push(store);
    const before = client.calls;
    const calls: Array<() => Promise<unknown>> = [
      () => store.appendToStream('', [event('E')]),
      () => store.appendToStream('s', [event('E', { n: 1n })]),
      () => store.appendToStream('s', [event('E')], { expectedRevision: -1 }),
      () => store.appendMany([{ streamId: 'a', events: [event('E')] }, { streamId: 'a', events: [event('E')] }]),
      () => store.readAll({ after: -5 }),
      () => store.readStream('s', { maxCount: 0 }),
      () => store.claim('p', 'a', 'soon', '2026-11-30T06:00:00.000Z'),
      () => store.storeCheckpoint('c', 1.5),
    ];
    for (const call of calls) await expect(Promise.resolve().then(call)).rejects.toBeInstanceOf(InvalidEventStoreArgumentError);
    expect(client.calls).toBe(before);
  });

  it('given an append, then KurrentDB holds the event in its stream, in the log at its position, and its id’s stream', async () => {
    const server = new InMemoryKurrentDb();
    const store = await open(server);
    await store.appendToStream('other', [event('X')]);
    const { position } = await store.appendToStream('execution-1', [{ id: '01890a5d-ac96-774b-bcce-b302099a8057', type: 'Dispatched', data: { n: 1 } }]);
    expect(position).toBe(2);
    const [stored] = server.storedEvents('unit:execution-1');
    expect(stored).toMatchObject({ type: 'Dispatched', data: '{"n":1}', id: '01890a5d-ac96-774b-bcce-b302099a8057', revision: 0n });
    expect(server.storedEvents('unit~log').map((record) => record.revision)).toEqual([0n, 1n]);
    expect(server.storedEvents('unit~event-id-01890a5d-ac96-774b-bcce-b302099a8057')).toHaveLength(1);
  });

  it('given the server goes away before an append is written, then the append is store_unavailable, nothing is written, and the next append succeeds', async () => {
    const server = new InMemoryKurrentDb();
    const store = await open(server);
    server.failNextAppend('before');
    const error = await store.appendToStream('s', [event('Lost')]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventStoreUnavailableError);
    expect(await store.headPosition()).toBe(0);
    expect(await store.appendToStream('s', [event('Kept')], { expectedRevision: 'no_stream' })).toMatchObject({ nextExpectedRevision: 0, position: 1 });
  });

  it('given the answer to a committed append is lost, then the store finds it in the log and acknowledges it where it was written', async () => {
    const server = new InMemoryKurrentDb();
    const store = await open(server);
    server.failNextAppend('after');
    const result = await store.appendToStream('s', [event('A'), event('B')]);
    expect(result).toMatchObject({ streamId: 's', nextExpectedRevision: 1, position: 2 });
    expect((await store.readAll()).events.map((e) => e.type)).toEqual(['A', 'B']);
    expect(result.events).toEqual(await store.readStream('s'));
  });

  it('given two connections appending to the same streams at once, then both are written, positions are dense and every chain links', async () => {
    const server = new InMemoryKurrentDb();
    const [a, b] = [await open(server), await open(server)];
    await Promise.all(
      [a, b].flatMap((store, writer) =>
        Array.from({ length: 20 }, (_, i) => store.appendToStream(`shared-${i % 3}`, [event('W', { writer, i }), event('W2', { writer, i })])),
      ),
    );
    const all = (await a.readAll({ maxCount: 1000 })).events;
    expect(all.map((e) => e.position)).toEqual(Array.from({ length: 80 }, (_, i) => i + 1));
    for (const streamId of ['shared-0', 'shared-1', 'shared-2']) {
      const events = await b.readStream(streamId);
      expect(events[0]!.prev).toBe(GENESIS_HASH);
      events.forEach((e, i) => {
        expect(e.revision).toBe(i);
        if (i > 0) expect(e.prev).toBe(events[i - 1]!.hash);
        expect(e.hash).toBe(eventHash(e.prev, e));
      });
    }
  });

  it('given two connections appending the same event id at once, then exactly one is stored and the other is DuplicateEventIdError', async () => {
    const server = new InMemoryKurrentDb();
    const [a, b] = [await open(server), await open(server)];
    const id = '01890a5d-ac96-774b-bcce-b302099a8059';
    const results = await Promise.allSettled([a.appendToStream('first', [event('E', {}, id)]), b.appendToStream('second', [event('E', {}, id)])]);
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    const refused = results.find((result) => result.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(DuplicateEventIdError);
    expect(refused.reason).toMatchObject({ eventId: id });
    expect(await a.headPosition()).toBe(1);
  });

  it('given an event written into a port stream by something else than the store, then reading it is a ForeignRecordError', async () => {
    const server = new InMemoryKurrentDb();
    const store = await open(server);
    await server.client().appendToStream('unit:s', jsonEvent({ type: 'Sneaked', data: {} }));
    await expect(store.readStream('s')).rejects.toBeInstanceOf(ForeignRecordError);
  });

  it('given documents and checkpoints, then only their last versions are kept readable on the server', async () => {
    const server = new InMemoryKurrentDb();
    const store = await open(server);
    for (let i = 0; i < 15; i += 1) {
      await store.renewLease('holder', new Date(Date.UTC(2026, 10, 30, 6, 0, i)).toISOString());
      await store.storeCheckpoint('projector', i + 1);
    }
    expect(await store.readLease('holder')).toEqual({ holder: 'holder', expiresAt: '2026-11-30T06:00:14.000Z' });
    expect(await store.readCheckpoint('projector')).toBe(15);
    const visible = [];
    for await (const resolved of server.client().readStream('unit~leases')) visible.push(resolved);
    expect(visible).toHaveLength(10);
    expect(await store.headPosition()).toBe(0);
  });

  it('given a subscriber at the head, when another connection appends, then the live subscription to the log wakes it before the poll would', async () => {
    const server = new InMemoryKurrentDb();
    const reader = await openKurrentDbEventStore({ client: server.client(), namespace: 'unit', pollIntervalMs: 60_000 });
    opened.push(reader);
    const writer = await open(server);
    const seen: string[] = [];
    const subscription = reader.subscribeToAll((e) => void seen.push(e.type));
    await subscription.caughtUp;
    await writer.appendToStream('s', [event('FromElsewhere')]);
    const deadline = Date.now() + 5000;
    while (seen.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(seen).toEqual(['FromElsewhere']);
    await subscription.stop();
  });
});

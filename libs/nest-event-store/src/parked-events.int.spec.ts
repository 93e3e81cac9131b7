import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RecordedEvent } from '@oncegate/event-store';
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the polling helper the gateway's tests use
import { eventually } from '../../../test/support/journal';
import { EventStoreTransport } from './event-store.transport';
import { ParkedReplayRefusal, readParked, requestReplay } from './parked-events';

describe.each([
  { mode: 'alone', group: undefined },
  { mode: 'as the one member of its group', group: { member: 'only', leaseMs: 1_500 } },
])('EventStoreTransport parks what its handler keeps failing on (SQLite store, $mode)', ({ group }) => {
  let dir: string;
  let store: SqliteEventStore;
  let transport: EventStoreTransport | undefined;
  /** Events handled, as `<stream>@<revision>`, in order. */
  let handled: string[];
  /** The fault: events of this stream fail while it is set. */
  let failing: string | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-parked-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    handled = [];
    failing = undefined;
  });

  afterEach(async () => {
    await transport?.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function startTransport(): Promise<void> {
    transport = recorder(store, group);
    await new Promise<void>((resolve) => transport!.listen(resolve));
  }

  function recorder(on: SqliteEventStore, member: typeof group, log = handled): EventStoreTransport {
    const running = new EventStoreTransport({ store: on, consumer: 'recorder', attempts: 2, group: member });
    running.addHandler(
      'Step',
      async (event: RecordedEvent) => {
        if (event.streamId === failing) throw new Error(`the ${event.streamId} handler cannot reach its dependency`);
        log.push(`${event.streamId}@${event.revision}`);
      },
      true,
    );
    return running;
  }

  const step = (stream: string) => store.appendToStream(stream, [{ type: 'Step', data: {} }]);

  /** The consumer's parked events, once there are `count` of them. */
  async function untilParked(count: number) {
    return eventually(async () => {
      const { open } = await readParked(store, 'recorder');
      return open.length === count ? open : undefined;
    }, 10_000, `${count} parked events`);
  }

  it('given a handler that fails on one event, when it keeps failing, then the event is parked with its error, the later events of its stream wait behind it, and other streams go on', async () => {
    failing = 'execution-a';
    await startTransport();
    await step('execution-a');
    await step('execution-b');
    await eventually(() => (handled.includes('execution-b@0') ? true : undefined), 5_000, 'the other stream to be handled');
    failing = undefined;
    // The fault is gone, but a later event of the same stream must not overtake the parked one.
    await step('execution-a');
    await step('execution-b');
    await eventually(() => (handled.includes('execution-b@1') ? true : undefined), 5_000, 'the other stream to go on');
    const open = await untilParked(2);
    expect(handled).toEqual(['execution-b@0', 'execution-b@1']);
    expect(open.map((parked) => `${parked.streamId}@${parked.revision}`)).toEqual(['execution-a@0', 'execution-a@1']);
    expect(open[0]).toMatchObject({ consumer: 'recorder', type: 'Step', attempts: 2, behind: null, replayRequested: false });
    expect(open[0]!.error).toContain('cannot reach its dependency');
    expect(open[1]).toMatchObject({ behind: open[0]!.parkedId, attempts: 0 });
  });

  it('given parked events, when the fault is fixed and the first is replayed, then both are handled in journal order and the stream is handled live again', async () => {
    failing = 'execution-a';
    await startTransport();
    await step('execution-a');
    await step('execution-a');
    const open = await untilParked(2);
    await expect(requestReplay(store, 'recorder', [open[1]!.parkedId], 'user:alice')).rejects.toBeInstanceOf(ParkedReplayRefusal);

    failing = undefined;
    expect(await requestReplay(store, 'recorder', [open[0]!.parkedId], 'user:alice')).toEqual([open[0]!.parkedId]);
    await untilParked(0);
    expect(handled).toEqual(['execution-a@0', 'execution-a@1']);
    await step('execution-a');
    await eventually(() => (handled.includes('execution-a@2') ? true : undefined), 5_000, 'the next event of the stream');
  });

  it('given a replay that fails again, when it is looked at, then the event stays parked with the new error and nothing behind it ran', async () => {
    failing = 'execution-a';
    await startTransport();
    await step('execution-a');
    await step('execution-a');
    const open = await untilParked(2);
    await requestReplay(store, 'recorder', 'all', 'user:alice');
    const after = await eventually(async () => {
      const parked = (await readParked(store, 'recorder')).open;
      return parked[0]?.lastReplayError !== null && parked[0]?.replayRequested === false ? parked : undefined;
    }, 10_000, 'the failed replay');
    expect(after.map((parked) => parked.parkedId)).toEqual(open.map((parked) => parked.parkedId));
    expect(after[0]!.lastReplayError).toContain('cannot reach its dependency');
    expect(handled).toEqual([]);
  });

  it('given events parked before a restart, when the service starts again, then their stream still waits and a replay asked while it was down is carried out', async () => {
    failing = 'execution-a';
    await startTransport();
    await step('execution-a');
    const open = await untilParked(1);
    await transport!.close();
    transport = undefined;
    failing = undefined;
    await step('execution-a');
    await requestReplay(store, 'recorder', [open[0]!.parkedId], 'user:alice');

    await startTransport();
    await untilParked(0);
    expect(handled).toEqual(['execution-a@0', 'execution-a@1']);
  });

  // Only a group has other instances to take over.
  if (group !== undefined) it('given an instance that parked an event and died, when another instance of the group takes its partition over, then the stream still waits behind it and a replay is carried out there', async () => {
    failing = 'execution-a';
    const first = openSqliteEventStore({ file: join(dir, 'events.db') });
    const dying = recorder(first, { member: 'first', leaseMs: 600 });
    await new Promise<void>((resolve) => dying.listen(resolve));
    await step('execution-a');
    const open = await untilParked(1);
    // Gone without a word: its claims lapse.
    await first.close();
    failing = undefined;
    const second: string[] = [];
    transport = recorder(store, { member: 'second', leaseMs: 600 }, second);
    await new Promise<void>((resolve) => transport!.listen(resolve));
    await step('execution-a');
    await untilParked(2);
    expect(second).toEqual([]);
    await requestReplay(store, 'recorder', [open[0]!.parkedId], 'user:alice');
    await untilParked(0);
    expect(second).toEqual(['execution-a@0', 'execution-a@1']);
    await dying.close();
  });
});

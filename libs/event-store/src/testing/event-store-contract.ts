import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DuplicateEventIdError,
  InvalidEventStoreArgumentError,
  WrongExpectedRevisionError,
} from '../errors';
import { eventHash, GENESIS_HASH } from '../chain';
import type { EventStore, RecordedEvent } from '../event-store';
import { readLinks } from '../read-links';
import { partitionOf, subscribeAsGroupMember, type GroupSubscription } from '../consumer-group';
import type { ChildReport, ChildTask } from './store-child';

/**
 * How the shared contract suite reaches one adapter. `Location` is whatever names a store's storage:
 * a file path, a schema, a connection string with a stream prefix.
 */
export interface EventStoreContractHarness<Location> {
  /** When set, every contract test is reported as skipped with this reason. */
  readonly unavailable?: string;
  /** Creates fresh, empty storage. */
  createLocation(): Promise<Location>;
  /** Opens a store on the location; may be called several times (a reopen, a second connection). */
  open(location: Location): Promise<EventStore>;
  disposeLocation?(location: Location): Promise<void>;
  /**
   * For the tests between OS processes: the adapter module exporting `openEventStore(config)` and the
   * config that opens `location` from another process. Absent: those tests are skipped with a reason.
   */
  readonly childProcess?: { readonly module: string; config(location: Location): unknown };
}

const CHILD_SCRIPT = fileURLToPath(new URL('./store-child.ts', import.meta.url));

interface RunningChild {
  readonly process: ChildProcess;
  readonly reports: ChildReport[];
  readonly exited: Promise<number | null>;
  /** Resolves once `count` reports have arrived. */
  waitForReports(count: number): Promise<void>;
  /** Resolves once a report matching `check` has arrived. */
  waitFor(check: (report: ChildReport) => boolean): Promise<void>;
}

function startChild(task: ChildTask): RunningChild {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD_SCRIPT, JSON.stringify(task)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const reports: ChildReport[] = [];
  const listeners: Array<() => void> = [];
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += String(chunk)));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    reports.push(JSON.parse(line) as ChildReport);
    for (const listener of listeners) listener();
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code, signal) => {
      if (code !== 0 && signal === null) process.stderr.write(`store child failed (${code}): ${stderr}\n`);
      resolve(code);
    }),
  );
  return {
    process: child,
    reports,
    exited,
    waitForReports: (count) =>
      new Promise((resolve, reject) => {
        const check = () => reports.length >= count && resolve();
        listeners.push(check);
        exited.then(() => (reports.length >= count ? resolve() : reject(new Error(`child exited: ${stderr}`))));
        check();
      }),
    waitFor: (match) =>
      new Promise((resolve, reject) => {
        const check = () => reports.some(match) && resolve();
        listeners.push(check);
        exited.then(() => (reports.some(match) ? resolve() : reject(new Error(`child exited: ${stderr}`))));
        check();
      }),
  };
}

const event = (type: string, data: unknown = {}, id?: string) => ({ type, data, ...(id ? { id } : {}) });

/** Waits until a subscription has delivered everything up to `head`. */
async function collectUntil(positions: RecordedEvent[], head: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while ((positions.at(-1)?.position ?? 0) < head) {
    if (Date.now() > deadline) throw new Error(`subscription stuck at ${positions.at(-1)?.position} of ${head}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * The contract every event-store adapter keeps. Each adapter's spec calls this with its own harness;
 * the adapter's name is in every test title.
 */
export function describeEventStoreContract<Location>(adapter: string, harness: EventStoreContractHarness<Location>): void {
  describe(`${adapter} event store contract`, () => {
    if (harness.unavailable !== undefined) {
      it(`${adapter}: contract suite`, (context) => context.skip(harness.unavailable));
      return;
    }

    const opened: EventStore[] = [];
    const locations: Location[] = [];
    const children: RunningChild[] = [];

    const freshStore = async (): Promise<{ store: EventStore; location: Location }> => {
      const location = await harness.createLocation();
      locations.push(location);
      const store = await harness.open(location);
      opened.push(store);
      return { store, location };
    };
    const reopen = async (location: Location): Promise<EventStore> => {
      const store = await harness.open(location);
      opened.push(store);
      return store;
    };
    const child = (location: Location, task: Omit<ChildTask, 'module' | 'config'>): RunningChild => {
      const spec = harness.childProcess!;
      const running = startChild({ module: spec.module, config: spec.config(location), ...task });
      children.push(running);
      return running;
    };
    const needsChildProcess = (context: { skip: (note?: string) => void }) => {
      if (harness.childProcess === undefined) context.skip(`${adapter} offers no child-process entry point`);
    };

    afterEach(async () => {
      for (const running of children.splice(0)) {
        if (running.process.exitCode === null) running.process.kill('SIGKILL');
        await running.exited;
      }
      for (const store of opened.splice(0)) await store.close().catch(() => undefined);
      for (const location of locations.splice(0)) await harness.disposeLocation?.(location);
    });

    describe(`${adapter}: appending with an expected revision`, () => {
      it(`${adapter}: a new stream starts at revision 0 and positions grow`, async () => {
        const { store } = await freshStore();
        const first = await store.appendToStream('execution-a', [event('A1'), event('A2')], { expectedRevision: 'no_stream' });
        const second = await store.appendToStream('execution-b', [event('B1')], { expectedRevision: 'no_stream' });
        expect(first.nextExpectedRevision).toBe(1);
        expect(second.nextExpectedRevision).toBe(0);
        expect(second.position).toBeGreaterThan(first.position);
        expect(await store.streamRevision('execution-a')).toBe(1);
        expect(await store.streamRevision('execution-missing')).toBeUndefined();
        expect(await store.headPosition()).toBe(second.position);
      });

      it(`${adapter}: the events an append answers with are the ones a read returns, whatever appends commit beside it`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('execution-0', [event('Started', { n: 0 })]);
        // Concurrent appends: the adapters that commit them together place each one's events after the others'.
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            store.appendToStream(`execution-${i % 4}`, [event('Step', { i, text: 'ünïcode ✓', nested: { a: [1, null] } }), event('Next', { i })]),
          ),
        );
        const streams = await Promise.all([0, 1, 2, 3].map((n) => store.readStream(`execution-${n}`)));
        const read = new Map(streams.flat().map((stored) => [stored.id, stored]));
        for (const result of results) {
          expect(result.events.map((answered) => answered.streamId)).toEqual([result.streamId, result.streamId]);
          expect(result.events.at(-1)).toMatchObject({ revision: result.nextExpectedRevision, position: result.position });
          for (const answered of result.events) expect(answered).toEqual(read.get(answered.id));
        }
      });

      it(`${adapter}: an append that may wait is checked, committed and answered like any other, alone or beside others`, async () => {
        const { store } = await freshStore();
        const alone = await store.appendToStream('execution-a', [event('Delivered')], { expectedRevision: 'no_stream', deferrable: true });
        const [waited, prompt] = await Promise.all([
          store.appendToStream('execution-a', [event('Again')], { expectedRevision: alone.nextExpectedRevision, deferrable: true }),
          store.appendToStream('execution-b', [event('Accepted')], { expectedRevision: 'no_stream' }),
        ]);
        const refused = await store.appendToStream('execution-b', [event('Late')], { expectedRevision: 'no_stream', deferrable: true }).catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(WrongExpectedRevisionError);
        expect((await store.readStream('execution-a')).map((stored) => stored.type)).toEqual(['Delivered', 'Again']);
        expect(waited.nextExpectedRevision).toBe(1);
        expect(prompt.position).not.toBe(waited.position);
      });

      it(`${adapter}: no_stream on an existing stream is refused with the facts and writes nothing`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('s', [event('E')], { expectedRevision: 'no_stream' });
        const error = await store.appendToStream('s', [event('E2')], { expectedRevision: 'no_stream' }).catch((e) => e);
        expect(error).toBeInstanceOf(WrongExpectedRevisionError);
        expect(error).toMatchObject({ kind: 'wrong_expected_revision', streamId: 's', expected: 'no_stream', actual: 0 });
        expect((await store.readStream('s')).map((e) => e.type)).toEqual(['E']);
      });

      it(`${adapter}: an exact revision must match the last revision`, async () => {
        const { store } = await freshStore();
        const { nextExpectedRevision } = await store.appendToStream('s', [event('E1'), event('E2')]);
        await expect(store.appendToStream('s', [event('Stale')], { expectedRevision: 0 })).rejects.toMatchObject({
          kind: 'wrong_expected_revision',
          expected: 0,
          actual: 1,
        });
        const ok = await store.appendToStream('s', [event('E3')], { expectedRevision: nextExpectedRevision });
        expect(ok.nextExpectedRevision).toBe(2);
        await expect(store.appendToStream('absent', [event('X')], { expectedRevision: 0 })).rejects.toMatchObject({
          actual: undefined,
        });
      });

      it(`${adapter}: stream_exists refuses an absent stream, any accepts both`, async () => {
        const { store } = await freshStore();
        await expect(store.appendToStream('s', [event('E')], { expectedRevision: 'stream_exists' })).rejects.toBeInstanceOf(
          WrongExpectedRevisionError,
        );
        await store.appendToStream('s', [event('E')], { expectedRevision: 'any' });
        await store.appendToStream('s', [event('E')], { expectedRevision: 'stream_exists' });
        expect(await store.streamRevision('s')).toBe(1);
      });

      it(`${adapter}: a duplicate event id is refused and the whole append is discarded`, async () => {
        const { store } = await freshStore();
        const id = '01890a5d-ac96-774b-bcce-b302099a8057';
        await store.appendToStream('s', [event('E', {}, id)]);
        const error = await store
          .appendToStream('t', [event('Fresh'), event('Dup', {}, id)], { expectedRevision: 'no_stream' })
          .catch((e) => e);
        expect(error).toBeInstanceOf(DuplicateEventIdError);
        expect(error).toMatchObject({ eventId: id, streamId: 't' });
        expect(await store.streamRevision('t')).toBeUndefined();
      });

      it(`${adapter}: bad arguments are refused up front with the argument named`, async () => {
        const { store } = await freshStore();
        const cases: Array<[() => Promise<unknown>, string]> = [
          [() => store.appendToStream('', [event('E')]), 'streamId'],
          [() => store.appendToStream('s', []), 'events'],
          [() => store.appendToStream('s', [{ type: '', data: {} }]), 'events[0].type'],
          [() => store.appendToStream('s', [event('E', { n: 1n })]), 'events[0].data'],
          [() => store.appendToStream('s', [event('E')], { expectedRevision: -1 }), 'expectedRevision'],
          [() => store.appendToStream('s', [event('E')], { expectedRevision: 'later' as never }), 'expectedRevision'],
          [() => store.readStream('s', { maxCount: 0 }), 'maxCount'],
          [() => store.readAll({ after: -5 }), 'after'],
        ];
        for (const [call, argument] of cases) {
          const error = await Promise.resolve()
            .then(call)
            .catch((e: unknown) => e);
          expect(error, argument).toBeInstanceOf(InvalidEventStoreArgumentError);
          expect((error as InvalidEventStoreArgumentError).argument).toBe(argument);
        }
        expect(await store.headPosition()).toBe(0);
      });

      it(`${adapter}: of many concurrent appends with one expected revision exactly one wins`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('contested', [event('Start')]);
        const attempts = await Promise.allSettled(
          Array.from({ length: 25 }, (_, i) =>
            store.appendToStream('contested', [event('Claim', { i })], { expectedRevision: 0 }),
          ),
        );
        const won = attempts.filter((a) => a.status === 'fulfilled');
        const lost = attempts.filter((a) => a.status === 'rejected') as PromiseRejectedResult[];
        expect(won).toHaveLength(1);
        expect(lost).toHaveLength(24);
        for (const failure of lost) expect(failure.reason).toBeInstanceOf(WrongExpectedRevisionError);
        expect(await store.streamRevision('contested')).toBe(1);
      });

      it(`${adapter}: appends issued together keep each stream's check and are not harmed by a failing neighbour`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('busy', [event('E')]);
        const results = await Promise.allSettled([
          store.appendToStream('quiet-1', [event('Q')], { expectedRevision: 'no_stream' }),
          store.appendToStream('busy', [event('Wrong')], { expectedRevision: 'no_stream' }),
          store.appendToStream('quiet-2', [event('Q')], { expectedRevision: 'no_stream' }),
          store.appendToStream('quiet-1', [event('Q2')], { expectedRevision: 0 }),
        ]);
        expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
        expect(await store.streamRevision('quiet-1')).toBe(1);
        expect(await store.streamRevision('busy')).toBe(0);
      });
    });

    describe(`${adapter}: appending to several streams at once`, () => {
      it(`${adapter}: every entry commits, with consecutive positions in batch order and a result per entry`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('execution-x', [event('First')]);
        const head = await store.headPosition();
        const results = await store.appendMany([
          { streamId: 'intent-a', events: [event('IntentClaimed')], expectedRevision: 'no_stream' },
          { streamId: 'execution-x', events: [event('A'), event('B')], expectedRevision: 0 },
          { streamId: 'other', events: [event('O')] },
        ]);
        expect(results.map(({ events: _, ...result }) => result)).toEqual([
          { streamId: 'intent-a', nextExpectedRevision: 0, position: head + 1 },
          { streamId: 'execution-x', nextExpectedRevision: 2, position: head + 3 },
          { streamId: 'other', nextExpectedRevision: 0, position: head + 4 },
        ]);
        const page = await store.readAll({ after: head });
        // Each result holds its entry's events as stored, field for field.
        expect(results.flatMap((result) => result.events)).toEqual(page.events);
        expect(page.events.map((e) => `${e.position}:${e.streamId}:${e.revision}:${e.type}`)).toEqual([
          `${head + 1}:intent-a:0:IntentClaimed`,
          `${head + 2}:execution-x:1:A`,
          `${head + 3}:execution-x:2:B`,
          `${head + 4}:other:0:O`,
        ]);
        expect(new Set(page.events.map((e) => e.recordedAt)).size).toBe(1);
        expect(await store.headPosition()).toBe(head + 4);
      });

      it(`${adapter}: a wrong expected revision on the second stream names it and leaves the first unwritten`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('taken', [event('E')]);
        const head = await store.headPosition();
        const error = await store
          .appendMany([
            { streamId: 'fresh', events: [event('F1'), event('F2')], expectedRevision: 'no_stream' },
            { streamId: 'taken', events: [event('T')], expectedRevision: 'no_stream' },
          ])
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(WrongExpectedRevisionError);
        expect(error).toMatchObject({ kind: 'wrong_expected_revision', streamId: 'taken', expected: 'no_stream', actual: 0 });
        expect(await store.streamRevision('fresh')).toBeUndefined();
        expect(await store.headPosition()).toBe(head);
        await expect(
          store.appendMany([
            { streamId: 'fresh', events: [event('F1')], expectedRevision: 'no_stream' },
            { streamId: 'taken', events: [event('T')], expectedRevision: 0 },
          ]),
        ).resolves.toHaveLength(2);
      });

      it(`${adapter}: an append refused beside others written at the same moment leaves no trace in the next append to its streams`, async () => {
        const { store, location } = await freshStore();
        await store.appendToStream('taken', [event('E')]);
        const [refused, written] = await Promise.allSettled([
          store.appendMany([
            { streamId: 'fresh', events: [event('F1')] },
            { streamId: 'taken', events: [event('T')], expectedRevision: 'no_stream' },
          ]),
          store.appendToStream('beside', [event('B')]),
        ]);
        expect(refused.status === 'rejected' && refused.reason).toBeInstanceOf(WrongExpectedRevisionError);
        expect(written.status).toBe('fulfilled');
        await store.appendToStream('fresh', [event('F')], { expectedRevision: 'no_stream' });
        await store.appendToStream('taken', [event('T')], { expectedRevision: 0 });
        const other = await reopen(location);
        const [fresh] = await other.readStream('fresh');
        expect(fresh).toMatchObject({ type: 'F', revision: 0, prev: GENESIS_HASH });
        const taken = await other.readStream('taken');
        expect(taken.map((e) => e.type)).toEqual(['E', 'T']);
        expect(taken[1]!.prev).toBe(taken[0]!.hash);
      });

      it(`${adapter}: an event id already stored refuses the whole batch`, async () => {
        const { store } = await freshStore();
        const id = '01890a5d-ac96-774b-bcce-b302099a8058';
        await store.appendToStream('s', [event('E', {}, id)]);
        const error = await store
          .appendMany([
            { streamId: 'first', events: [event('Fresh')] },
            { streamId: 'second', events: [event('Dup', {}, id)] },
          ])
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(DuplicateEventIdError);
        expect(error).toMatchObject({ eventId: id, streamId: 'second' });
        expect(await store.streamRevision('first')).toBeUndefined();
        expect(await store.headPosition()).toBe(1);
      });

      it(`${adapter}: bad batches are refused up front with the entry and argument named`, async () => {
        const { store } = await freshStore();
        const id = '01890a5d-ac96-774b-bcce-b302099a8059';
        const cases: Array<[() => Promise<unknown>, string]> = [
          [() => store.appendMany([]), 'batch'],
          [() => store.appendMany(undefined as never), 'batch'],
          [() => store.appendMany([null as never]), 'batch[0]'],
          [() => store.appendMany([{ streamId: '', events: [event('E')] }]), 'batch[0].streamId'],
          [() => store.appendMany([{ streamId: 'a', events: [event('E')] }, { streamId: 'b\u0000', events: [event('E')] }]), 'batch[1].streamId'],
          [() => store.appendMany([{ streamId: 'a', events: [] }]), 'batch[0].events'],
          [() => store.appendMany([{ streamId: 'a', events: [event('E')] }, { streamId: 'b', events: [{ type: '', data: {} }] }]), 'batch[1].events[0].type'],
          [() => store.appendMany([{ streamId: 'a', events: [event('E', { n: 1n })] }]), 'batch[0].events[0].data'],
          [() => store.appendMany([{ streamId: 'a', events: [event('E')], expectedRevision: -1 }]), 'batch[0].expectedRevision'],
          [() => store.appendMany([{ streamId: 'a', events: [event('E')] }, { streamId: 'a', events: [event('E')] }]), 'batch[1].streamId'],
          [() => store.appendMany([{ streamId: 'a', events: [event('E', {}, id)] }, { streamId: 'b', events: [event('E'), event('E', {}, id)] }]), 'batch[1].events[1].id'],
        ];
        for (const [call, argument] of cases) {
          const error = await Promise.resolve()
            .then(call)
            .catch((e: unknown) => e);
          expect(error, argument).toBeInstanceOf(InvalidEventStoreArgumentError);
          expect((error as InvalidEventStoreArgumentError).argument, argument).toBe(argument);
        }
        expect(await store.headPosition()).toBe(0);
      });

      it(`${adapter}: each stream's hash chain runs on through a batch`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('execution-chain', [event('A', { n: 1 })]);
        await store.appendMany([
          { streamId: 'intent-chain', events: [event('IntentClaimed', { n: 2 })] },
          { streamId: 'execution-chain', events: [event('B', { n: 3 }), { type: 'C', data: { text: 'é ✓' }, metadata: { actor: 'agent:a' } }] },
        ]);
        await store.appendMany([{ streamId: 'execution-chain', events: [event('D')] }, { streamId: 'intent-chain', events: [event('E')] }]);
        for (const streamId of ['execution-chain', 'intent-chain']) {
          const events = await store.readStream(streamId);
          expect(events[0]!.prev).toBe(GENESIS_HASH);
          for (let i = 1; i < events.length; i += 1) expect(events[i]!.prev, `${streamId}@${i}`).toBe(events[i - 1]!.hash);
          for (const e of events) {
            expect(e.hash).toBe(
              eventHash(e.prev, { streamId: e.streamId, revision: e.revision, id: e.id, type: e.type, data: e.data, metadata: e.metadata, recordedAt: e.recordedAt }),
            );
          }
        }
      });

      it(`${adapter}: batches and single appends issued together keep their own checks and fail alone`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('busy', [event('E')]);
        const results = await Promise.allSettled([
          store.appendToStream('quiet-1', [event('Q')], { expectedRevision: 'no_stream' }),
          store.appendMany([
            { streamId: 'many-1', events: [event('M')], expectedRevision: 'no_stream' },
            { streamId: 'busy', events: [event('Wrong')], expectedRevision: 'no_stream' },
          ]),
          store.appendMany([
            { streamId: 'many-2', events: [event('M')], expectedRevision: 'no_stream' },
            { streamId: 'quiet-1', events: [event('Q2')], expectedRevision: 0 },
          ]),
          store.appendToStream('busy', [event('Right')], { expectedRevision: 0 }),
        ]);
        expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
        expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ kind: 'wrong_expected_revision', streamId: 'busy' });
        expect(await store.streamRevision('many-1')).toBeUndefined();
        expect(await store.streamRevision('many-2')).toBe(0);
        expect(await store.streamRevision('quiet-1')).toBe(1);
        expect((await store.readStream('busy')).map((e) => e.type)).toEqual(['E', 'Right']);
      });

      it(`${adapter}: of many concurrent batches claiming one revision exactly one commits, the others write nothing`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('contested', [event('Start')]);
        const attempts = await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) =>
            store.appendMany([
              { streamId: `own-${i}`, events: [event('Own', { i })], expectedRevision: 'no_stream' },
              { streamId: 'contested', events: [event('Claim', { i })], expectedRevision: 0 },
            ]),
          ),
        );
        const won = attempts.flatMap((a, i) => (a.status === 'fulfilled' ? [i] : []));
        expect(won).toHaveLength(1);
        for (let i = 0; i < 20; i += 1) expect(await store.streamRevision(`own-${i}`)).toBe(i === won[0] ? 0 : undefined);
        expect(await store.headPosition()).toBe(3);
      });

      it(`${adapter}: a subscription receives a batch as ordinary events, in order`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('execution-old', [event('Old')]);
        const seen: RecordedEvent[] = [];
        const filtered: RecordedEvent[] = [];
        const subscription = store.subscribeToAll((e) => void seen.push(e));
        const executions = store.subscribeToAll((e) => void filtered.push(e), { filter: { streamPrefixes: ['execution-'] } });
        await Promise.all([subscription.caughtUp, executions.caughtUp]);
        await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            store.appendMany([
              { streamId: `intent-${i}`, events: [event('IntentClaimed')] },
              { streamId: `execution-${i}`, events: [event('ExecutionAccepted'), event('Dispatched')] },
            ]),
          ),
        );
        const head = await store.headPosition();
        await collectUntil(seen, head);
        while (executions.position < head) await new Promise((r) => setTimeout(r, 5));
        await subscription.stop();
        await executions.stop();
        const everything = await store.readAll({ maxCount: 1000 });
        expect(everything.events).toHaveLength(31);
        expect(seen.map((e) => e.id)).toEqual(everything.events.map((e) => e.id));
        expect(filtered.map((e) => e.id)).toEqual(everything.events.filter((e) => e.streamId.startsWith('execution-')).map((e) => e.id));
      });
    });

    describe(`${adapter}: the hash chain`, () => {
      it(`${adapter}: each event links to the previous event of its stream and its hash recomputes`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('execution-chain', [event('A', { n: 1 }), event('B', { n: 2 })]);
        await store.appendToStream('other', [event('X')]);
        await store.appendToStream('execution-chain', [{ type: 'C', data: { text: 'é ✓' }, metadata: { actor: 'agent:a' } }]);
        const events = await store.readStream('execution-chain');
        expect(events[0]!.prev).toBe(GENESIS_HASH);
        for (let i = 1; i < events.length; i += 1) expect(events[i]!.prev).toBe(events[i - 1]!.hash);
        for (const e of events) {
          expect(e.hash).toBe(
            eventHash(e.prev, { streamId: e.streamId, revision: e.revision, id: e.id, type: e.type, data: e.data, metadata: e.metadata, recordedAt: e.recordedAt }),
          );
        }
        const [other] = await store.readStream('other');
        expect(other!.prev).toBe(GENESIS_HASH);
      });
    });

    describe(`${adapter}: reading`, () => {
      it(`${adapter}: a stream reads forwards and backwards from a revision with a limit`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('s', [0, 1, 2, 3, 4].map((n) => event('N', { n }, undefined)));
        await store.appendToStream('other', [event('X')]);
        const numbers = (events: RecordedEvent[]) => events.map((e) => (e.data as { n: number }).n);
        expect(numbers(await store.readStream('s'))).toEqual([0, 1, 2, 3, 4]);
        expect(numbers(await store.readStream('s', { fromRevision: 2, maxCount: 2 }))).toEqual([2, 3]);
        expect(numbers(await store.readStream('s', { direction: 'backwards' }))).toEqual([4, 3, 2, 1, 0]);
        expect(numbers(await store.readStream('s', { direction: 'backwards', fromRevision: 3, maxCount: 2 }))).toEqual([3, 2]);
        expect(await store.readStream('missing')).toEqual([]);
        const [first] = await store.readStream('s', { maxCount: 1 });
        expect(first).toMatchObject({ streamId: 's', revision: 0, type: 'N', data: { n: 0 }, metadata: {} });
        expect(first!.id).toMatch(/^[0-9a-f-]{36}$/);
        expect(Number.isNaN(Date.parse(first!.recordedAt))).toBe(false);
      });

      it(`${adapter}: reads that follow this store's own appends, of every shape, are what another connection reads`, async () => {
        const { store, location } = await freshStore();
        const other = await reopen(location);
        const shapes = [
          {},
          { fromRevision: 0 },
          { fromRevision: 3 },
          { fromRevision: 5, maxCount: 2 },
          { fromRevision: 9 },
          { fromRevision: 99 },
          { direction: 'backwards' as const },
          { direction: 'backwards' as const, maxCount: 1 },
          { direction: 'backwards' as const, fromRevision: 4, maxCount: 3 },
          { direction: 'backwards' as const, fromRevision: 99, maxCount: 2 },
          { direction: 'backwards' as const, fromRevision: 0 },
        ];
        // Commits of one event, of several, and of two streams at once, with reads between them.
        await store.appendToStream('s', [event('N', { n: 0 }, undefined)], { expectedRevision: 'no_stream' });
        for (const options of shapes) expect(await store.readStream('s', options)).toEqual(await other.readStream('s', options));
        await store.appendToStream('s', [1, 2, 3].map((n) => event('N', { n }, undefined)), { expectedRevision: 0 });
        await store.appendMany([
          { streamId: 's', events: [4, 5, 6].map((n) => event('N', { n }, undefined)), expectedRevision: 3 },
          { streamId: 't', events: [event('T')], expectedRevision: 'no_stream' },
        ]);
        await store.appendToStream('s', [7, 8, 9].map((n) => event('N', { n }, undefined)), { expectedRevision: 6 });
        for (const streamId of ['s', 't', 'missing']) {
          for (const options of shapes) expect(await store.readStream(streamId, options)).toEqual(await other.readStream(streamId, options));
          expect(await store.streamRevision(streamId)).toBe(await other.streamRevision(streamId));
        }
      });

      it(`${adapter}: a stream this store appended to shows another connection's append at once`, async () => {
        const { store, location } = await freshStore();
        const other = await reopen(location);
        await store.appendToStream('s', [event('Mine')], { expectedRevision: 'no_stream' });
        expect(await store.readStream('s', { fromRevision: 1 })).toEqual([]);
        expect(await store.streamRevision('s')).toBe(0);
        await other.appendToStream('s', [event('Theirs')], { expectedRevision: 0 });
        // No wait: the read right after the other connection's commit sees it.
        expect((await store.readStream('s', { fromRevision: 1 })).map((e) => e.type)).toEqual(['Theirs']);
        expect((await store.readStream('s', { direction: 'backwards', maxCount: 1 })).map((e) => e.type)).toEqual(['Theirs']);
        expect(await store.streamRevision('s')).toBe(1);
        // An append decided on what this store had read conflicts; the stream then reads whole again.
        await other.appendToStream('s', [event('TheirsAgain')], { expectedRevision: 1 });
        await expect(store.appendToStream('s', [event('Late')], { expectedRevision: 1 })).rejects.toBeInstanceOf(WrongExpectedRevisionError);
        expect((await store.readStream('s')).map((e) => e.type)).toEqual(['Mine', 'Theirs', 'TheirsAgain']);
        await store.appendToStream('s', [event('MineAgain')], { expectedRevision: 2 });
        await other.appendToStream('u', [event('Elsewhere')]);
        expect((await store.readStream('s', { fromRevision: 2 })).map((e) => e.type)).toEqual(['TheirsAgain', 'MineAgain']);
        expect((await store.readStream('u')).map((e) => e.type)).toEqual(['Elsewhere']);
      });

      it(`${adapter}: an append after another connection's to the same stream follows it, in revision and in the chain`, async () => {
        const { store, location } = await freshStore();
        const other = await reopen(location);
        await store.appendToStream('s', [event('A')]);
        await other.appendToStream('s', [event('B')]);
        // This store's last append left the stream at revision 0: what it knew of its tip is behind now.
        await store.appendToStream('s', [event('C')], { expectedRevision: 1 });
        await store.appendToStream('s', [event('D')]);
        await other.appendToStream('t', [event('Elsewhere')]);
        await store.appendToStream('s', [event('E')], { expectedRevision: 3 });
        const stream = await (await reopen(location)).readStream('s');
        expect(stream.map((e) => [e.type, e.revision])).toEqual([['A', 0], ['B', 1], ['C', 2], ['D', 3], ['E', 4]]);
        stream.forEach((e, i) => {
          if (i > 0) expect(e.prev).toBe(stream[i - 1]!.hash);
        });
      });

      it(`${adapter}: a stream another connection created is refused to no_stream, alone and in a batch, and nothing is written`, async () => {
        const { store, location } = await freshStore();
        const other = await reopen(location);
        await other.appendToStream('taken', [event('Theirs')], { expectedRevision: 'no_stream' });
        const alone = await store.appendToStream('taken', [event('Mine')], { expectedRevision: 'no_stream' }).catch((e: unknown) => e);
        expect(alone).toMatchObject({ kind: 'wrong_expected_revision', streamId: 'taken', expected: 'no_stream', actual: 0 });
        const [batch, neighbour] = await Promise.all([
          store
            .appendMany([
              { streamId: 'fresh', events: [event('F')], expectedRevision: 'no_stream' },
              { streamId: 'taken', events: [event('Again')], expectedRevision: 'no_stream' },
            ])
            .catch((e: unknown) => e),
          store.appendToStream('beside', [event('B')], { expectedRevision: 'no_stream' }),
        ]);
        expect(batch).toMatchObject({ kind: 'wrong_expected_revision', streamId: 'taken', expected: 'no_stream', actual: 0 });
        expect(neighbour.nextExpectedRevision).toBe(0);
        const reader = await reopen(location);
        expect((await reader.readStream('taken')).map((e) => e.type)).toEqual(['Theirs']);
        expect(await reader.readStream('fresh')).toEqual([]);
        await store.appendToStream('fresh', [event('F')], { expectedRevision: 'no_stream' });
        expect((await reader.readStream('fresh')).map((e) => e.revision)).toEqual([0]);
      });

      it(`${adapter}: metadata and payloads round-trip as JSON`, async () => {
        const { store } = await freshStore();
        const data = { text: 'naïve ✓ "quoted"\n', nested: { list: [1, 2.5, null, true] } };
        const metadata = { causationId: 'c-1', correlation: { jsonRpcId: 7 }, schemaVersion: 1 };
        await store.appendToStream('s', [{ type: 'E', data, metadata }]);
        const [read] = await store.readStream('s');
        expect(read!.data).toEqual(data);
        expect(read!.metadata).toEqual(metadata);
      });

      it(`${adapter}: read all pages forwards and backwards by global position`, async () => {
        const { store } = await freshStore();
        for (let i = 0; i < 10; i += 1) await store.appendToStream(`s-${i % 3}`, [event('E', { i })]);
        const all = await store.readAll({ maxCount: 100 });
        expect(all.events.map((e) => (e.data as { i: number }).i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        const positions = all.events.map((e) => e.position);
        expect([...positions].sort((a, b) => a - b)).toEqual(positions);
        const page = await store.readAll({ after: positions[3]!, maxCount: 3 });
        expect(page.events.map((e) => e.position)).toEqual(positions.slice(4, 7));
        expect(page.lastPosition).toBe(positions[6]);
        const backwards = await store.readAll({ direction: 'backwards', maxCount: 4 });
        expect(backwards.events.map((e) => e.position)).toEqual(positions.slice(6).reverse());
        const tail = await store.readAll({ after: positions.at(-1)! });
        expect(tail.events).toEqual([]);
      });

      it(`${adapter}: read all filters by stream prefix and event type and still advances`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('execution-1', [event('ExecutionAccepted'), event('Dispatched')]);
        await store.appendToStream('intent-1', [event('IntentClaimed')]);
        await store.appendToStream('execution-2', [event('ExecutionAccepted')]);
        await store.appendToStream('executionless', [event('Dispatched')]);
        const head = await store.headPosition();
        const executions = await store.readAll({ filter: { streamPrefixes: ['execution-'] } });
        expect(executions.events.map((e) => `${e.streamId}:${e.type}`)).toEqual([
          'execution-1:ExecutionAccepted',
          'execution-1:Dispatched',
          'execution-2:ExecutionAccepted',
        ]);
        expect(executions.lastPosition).toBe(head);
        const dispatched = await store.readAll({ filter: { eventTypes: ['Dispatched'] } });
        expect(dispatched.events.map((e) => e.streamId)).toEqual(['execution-1', 'executionless']);
        const both = await store.readAll({ filter: { streamPrefixes: ['intent-', 'execution-2'], eventTypes: ['IntentClaimed', 'ExecutionAccepted'] } });
        expect(both.events.map((e) => e.streamId)).toEqual(['intent-1', 'execution-2']);
      });
    });

    describe(`${adapter}: catch-up subscriptions`, () => {
      it(`${adapter}: catches up on history, turns live, and delivers in order`, async () => {
        const { store } = await freshStore();
        for (let i = 0; i < 5; i += 1) await store.appendToStream('s', [event('Old', { i })]);
        const seen: RecordedEvent[] = [];
        const subscription = store.subscribeToAll((e) => void seen.push(e), { pageSize: 2 });
        await subscription.caughtUp;
        expect(seen.map((e) => e.type)).toEqual(['Old', 'Old', 'Old', 'Old', 'Old']);
        await store.appendToStream('s', [event('New')]);
        await collectUntil(seen, await store.headPosition());
        expect(seen.map((e) => e.type).at(-1)).toBe('New');
        await subscription.stop();
      });

      it(`${adapter}: no gap and no duplicate while concurrent writers append during catch-up`, async () => {
        const { store } = await freshStore();
        for (let i = 0; i < 300; i += 1) await store.appendToStream(`pre-${i % 5}`, [event('Pre')]);
        const seen: RecordedEvent[] = [];
        const subscription = store.subscribeToAll(
          async (e) => {
            seen.push(e);
            if (e.position % 50 === 0) await new Promise((r) => setTimeout(r, 1));
          },
          { pageSize: 64 },
        );
        await Promise.all(
          Array.from({ length: 8 }, async (_, writer) => {
            for (let i = 0; i < 60; i += 1) await store.appendToStream(`w-${writer}`, [event('Live'), event('Live')]);
          }),
        );
        const head = await store.headPosition();
        await collectUntil(seen, head);
        await subscription.stop();
        const everything = await store.readAll({ maxCount: 10_000 });
        expect(everything.events).toHaveLength(300 + 8 * 60 * 2);
        expect(seen.map((e) => e.id)).toEqual(everything.events.map((e) => e.id));
      });

      it(`${adapter}: from 'end' receives only what comes after, with filters applied`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('execution-old', [event('ExecutionAccepted')]);
        const seen: RecordedEvent[] = [];
        const subscription = store.subscribeToAll((e) => void seen.push(e), {
          from: 'end',
          filter: { streamPrefixes: ['execution-'], eventTypes: ['Dispatched'] },
        });
        await subscription.caughtUp;
        await store.appendToStream('intent-x', [event('Dispatched')]);
        await store.appendToStream('execution-new', [event('ExecutionAccepted'), event('Dispatched')]);
        const head = await store.headPosition();
        // Events the filter rejects need not wake the subscription; the matching one does, and its read covers all.
        while (subscription.position < head) await new Promise((r) => setTimeout(r, 5));
        await subscription.stop();
        expect(seen.map((e) => `${e.streamId}:${e.type}`)).toEqual(['execution-new:Dispatched']);
      });

      it(`${adapter}: a durable consumer resumes after its checkpoint`, async () => {
        const { store, location } = await freshStore();
        await store.appendToStream('s', [event('E1'), event('E2'), event('E3')]);
        const first: string[] = [];
        const subscription = store.subscribeToAll((e) => void first.push(e.type), { consumer: 'projector' });
        await subscription.caughtUp;
        await subscription.stop();
        expect(first).toEqual(['E1', 'E2', 'E3']);
        expect(await store.readCheckpoint('projector')).toBe(await store.headPosition());
        await store.appendToStream('s', [event('E4')]);
        const reopened = await reopen(location);
        const second: string[] = [];
        const resumed = reopened.subscribeToAll((e) => void second.push(e.type), { consumer: 'projector' });
        await resumed.caughtUp;
        await resumed.stop();
        expect(second).toEqual(['E4']);
        expect(await reopened.readCheckpoint('unknown-consumer')).toBeUndefined();
      });

      it(`${adapter}: a failing handler stops the subscription and the checkpoint stays before the failure`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('s', [event('Good'), event('Poison'), event('Later')]);
        const subscription = store.subscribeToAll(
          (e) => {
            if (e.type === 'Poison') throw new Error('projection bug');
          },
          { consumer: 'fragile' },
        );
        await expect(subscription.done).rejects.toThrow('projection bug');
        const [good] = await store.readStream('s', { maxCount: 1 });
        expect(await store.readCheckpoint('fragile')).toBe(good!.position);
      });
    });

    describe(`${adapter}: reading links for the seals`, () => {
      it(`${adapter}: links are every event's position and hash after a position, in global order, a page at a time`, async () => {
        const { store } = await freshStore();
        await store.appendToStream('execution-a', [event('A1'), event('A2')]);
        await store.appendMany([
          { streamId: 'execution-b', events: [event('B1')] },
          { streamId: 'execution-a', events: [event('A3')] },
        ]);
        await store.appendToStream('intent-c', [event('C1'), event('C2')]);
        const everything = (await store.readAll()).events.map((e) => ({ position: e.position, hash: e.hash }));
        expect(await readLinks(store)).toEqual(everything);
        expect(await readLinks(store, { after: everything[1]!.position, maxCount: 3 })).toEqual(everything.slice(2, 5));
        expect(await readLinks(store, { after: everything.at(-1)!.position })).toEqual([]);
        await expect(readLinks(store, { after: -1 })).rejects.toMatchObject({ kind: 'invalid_argument', argument: 'after' });
        await expect(readLinks(store, { maxCount: 0 })).rejects.toMatchObject({ kind: 'invalid_argument', argument: 'maxCount' });
      });
    });

    describe(`${adapter}: liveness leases`, () => {
      it(`${adapter}: a renewed lease reads back, a renewal moves it, and holders are kept apart`, async () => {
        const { store } = await freshStore();
        expect(await store.readLease('dispatcher-http@a')).toBeUndefined();
        await store.renewLease('dispatcher-http@a', '2026-11-30T06:00:10.000Z');
        await store.renewLease('dispatcher-http@b', '2026-11-30T06:00:20.000Z');
        await store.renewLease('dispatcher-http@a', '2026-11-30T06:00:15.000Z');
        expect(await store.readLease('dispatcher-http@a')).toEqual({ holder: 'dispatcher-http@a', expiresAt: '2026-11-30T06:00:15.000Z' });
        expect(await store.readLease('dispatcher-http@b')).toEqual({ holder: 'dispatcher-http@b', expiresAt: '2026-11-30T06:00:20.000Z' });
      });

      it(`${adapter}: a released lease is gone, and leases are not events`, async () => {
        const { store } = await freshStore();
        await store.renewLease('dispatcher-http@a', '2026-11-30T06:00:10.000Z');
        await store.releaseLease('dispatcher-http@a');
        await store.releaseLease('never-held');
        expect(await store.readLease('dispatcher-http@a')).toBeUndefined();
        expect(await store.headPosition()).toBe(0);
      });

      it(`${adapter}: another connection sees a lease at once`, async () => {
        const { store, location } = await freshStore();
        const other = await reopen(location);
        await store.renewLease('dispatcher-http@a', '2026-11-30T06:00:10.000Z');
        expect(await other.readLease('dispatcher-http@a')).toEqual({ holder: 'dispatcher-http@a', expiresAt: '2026-11-30T06:00:10.000Z' });
        await store.releaseLease('dispatcher-http@a');
        expect(await other.readLease('dispatcher-http@a')).toBeUndefined();
      });

      it(`${adapter}: bad lease arguments are refused up front with the argument named`, async () => {
        const { store } = await freshStore();
        await expect(store.renewLease('', '2026-11-30T06:00:10.000Z')).rejects.toMatchObject({ kind: 'invalid_argument', argument: 'holder' });
        await expect(store.renewLease('a', 'tomorrow')).rejects.toMatchObject({ kind: 'invalid_argument', argument: 'expiresAt' });
        await expect(store.renewLease('a', '2026-11-30T06:00:10Z')).rejects.toBeInstanceOf(InvalidEventStoreArgumentError);
        await expect(store.readLease('bad\nholder')).rejects.toMatchObject({ kind: 'invalid_argument', argument: 'holder' });
      });
    });

    describe(`${adapter}: leases by prefix and exclusive claims`, () => {
      it(`${adapter}: leases are listed by holder prefix, in holder order, expired or not`, async () => {
        const { store } = await freshStore();
        await store.renewLease('group:authorization:member:b', '2026-11-30T06:00:20.000Z');
        await store.renewLease('group:authorization:member:a', '2026-11-30T06:00:10.000Z');
        await store.renewLease('group:dispatcher-http:member:c', '2026-11-30T06:00:10.000Z');
        await store.renewLease('group:authorization:memberx', '2026-11-30T06:00:10.000Z');
        expect(await store.readLeases('group:authorization:member:')).toEqual([
          { holder: 'group:authorization:member:a', expiresAt: '2026-11-30T06:00:10.000Z' },
          { holder: 'group:authorization:member:b', expiresAt: '2026-11-30T06:00:20.000Z' },
        ]);
        expect(await store.readLeases('nothing-here')).toEqual([]);
        // LIKE patterns mean nothing in a prefix.
        expect(await store.readLeases('group:%')).toEqual([]);
        await expect(store.readLeases('')).rejects.toMatchObject({ kind: 'invalid_argument', argument: 'prefix' });
      });

      it(`${adapter}: a claim is taken when free, kept by its owner, refused to another until it expires`, async () => {
        const { store } = await freshStore();
        const now = '2026-11-30T06:00:00.000Z';
        expect(await store.claim('p/1', 'a', '2026-11-30T06:00:10.000Z', now)).toEqual({ name: 'p/1', owner: 'a', expiresAt: '2026-11-30T06:00:10.000Z' });
        // Another owner, while it is live: refused, told who holds it.
        expect(await store.claim('p/1', 'b', '2026-11-30T06:00:12.000Z', '2026-11-30T06:00:05.000Z')).toEqual({ name: 'p/1', owner: 'a', expiresAt: '2026-11-30T06:00:10.000Z' });
        // The owner renews.
        expect(await store.claim('p/1', 'a', '2026-11-30T06:00:20.000Z', '2026-11-30T06:00:05.000Z')).toMatchObject({ owner: 'a', expiresAt: '2026-11-30T06:00:20.000Z' });
        // Expired: another takes it.
        expect(await store.claim('p/1', 'b', '2026-11-30T06:00:30.000Z', '2026-11-30T06:00:20.000Z')).toMatchObject({ owner: 'b', expiresAt: '2026-11-30T06:00:30.000Z' });
        // The former owner's release does nothing now; the owner's frees it.
        await store.releaseClaim('p/1', 'a');
        expect(await store.readClaims('p/')).toEqual([{ name: 'p/1', owner: 'b', expiresAt: '2026-11-30T06:00:30.000Z' }]);
        await store.releaseClaim('p/1', 'b');
        expect(await store.readClaims('p/')).toEqual([]);
        expect(await store.claim('p/1', 'a', '2026-11-30T06:00:40.000Z', '2026-11-30T06:00:21.000Z')).toMatchObject({ owner: 'a' });
        expect(await store.headPosition()).toBe(0);
      });

      it(`${adapter}: claims are listed by prefix in name order`, async () => {
        const { store } = await freshStore();
        const now = '2026-11-30T06:00:00.000Z';
        await store.claim('g/p02', 'a', '2026-11-30T06:00:10.000Z', now);
        await store.claim('g/p01', 'b', '2026-11-30T06:00:10.000Z', now);
        await store.claim('h/p01', 'b', '2026-11-30T06:00:10.000Z', now);
        expect((await store.readClaims('g/')).map((claim) => `${claim.name}=${claim.owner}`)).toEqual(['g/p01=b', 'g/p02=a']);
      });

      it(`${adapter}: owners racing for one claim from two connections: exactly one holds it`, async () => {
        const { store, location } = await freshStore();
        const other = await reopen(location);
        const now = '2026-11-30T06:00:00.000Z';
        for (let round = 0; round < 20; round += 1) {
          const name = `race/${round}`;
          const [a, b] = await Promise.all([store.claim(name, 'a', '2026-11-30T06:00:10.000Z', now), other.claim(name, 'b', '2026-11-30T06:00:10.000Z', now)]);
          expect(a.owner).toBe(b.owner);
          expect(['a', 'b']).toContain(a.owner);
        }
      });

      it(`${adapter}: bad claim arguments are refused up front with the argument named`, async () => {
        const { store } = await freshStore();
        await expect(store.claim('', 'a', '2026-11-30T06:00:10.000Z', '2026-11-30T06:00:00.000Z')).rejects.toMatchObject({ argument: 'name' });
        await expect(store.claim('p', '', '2026-11-30T06:00:10.000Z', '2026-11-30T06:00:00.000Z')).rejects.toMatchObject({ argument: 'owner' });
        await expect(store.claim('p', 'a', 'soon', '2026-11-30T06:00:00.000Z')).rejects.toMatchObject({ argument: 'expiresAt' });
        await expect(store.claim('p', 'a', '2026-11-30T06:00:10.000Z', 'now')).rejects.toMatchObject({ argument: 'now' });
        await expect(store.readClaims('')).rejects.toMatchObject({ kind: 'invalid_argument', argument: 'prefix' });
      });
    });

    describe(`${adapter}: consumer groups`, () => {
      /** Members of one group, each on its own connection, recording what they handle. */
      const groupOf = async (location: Location, members: readonly string[], leaseMs = 600) => {
        const handled: Array<{ member: string; event: RecordedEvent }> = [];
        const subscriptions = new Map<string, { store: EventStore; subscription: GroupSubscription }>();
        const join = async (member: string) => {
          const store = await reopen(location);
          const subscription = subscribeAsGroupMember(store, (event) => void handled.push({ member, event }), {
            group: 'workers',
            member,
            leaseMs,
            partitions: 8,
            checkpointEveryMs: 0,
            filter: { streamPrefixes: ['execution-'] },
          });
          subscriptions.set(member, { store, subscription });
          return subscription;
        };
        for (const member of members) await join(member);
        return { handled, subscriptions, join };
      };
      const appendStreams = async (store: EventStore, streams: number, perStream: number, tag: string) => {
        for (let i = 0; i < streams; i += 1) {
          await store.appendToStream(`execution-${tag}-${i}`, Array.from({ length: perStream }, (_, n) => event(`Step${n}`)));
        }
      };
      const until = async (check: () => boolean, what: string) => {
        const deadline = Date.now() + 20_000;
        while (!check()) {
          if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };

      it(`${adapter}: members share the partitions, and every event is handled once, in stream order, by its partition's owner`, async () => {
        const { store, location } = await freshStore();
        const group = await groupOf(location, ['m1', 'm2', 'm3']);
        // Every member converges to its share (8 partitions over 3 members: 3, 3, 2).
        await until(() => [...group.subscriptions.values()].map(({ subscription }) => subscription.partitions.length).sort().join() === '2,3,3', 'the shares settle');
        const owners = new Map<number, string>();
        for (const [member, { subscription }] of group.subscriptions) for (const partition of subscription.partitions) owners.set(partition, member);
        expect(owners.size).toBe(8);
        await appendStreams(store, 40, 3, 'a');
        await until(() => group.handled.length >= 120, 'all 120 events are handled');
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(group.handled).toHaveLength(120);
        const byStream = new Map<string, Array<{ member: string; event: RecordedEvent }>>();
        for (const entry of group.handled) byStream.set(entry.event.streamId, [...(byStream.get(entry.event.streamId) ?? []), entry]);
        for (const [streamId, entries] of byStream) {
          expect(entries.map((entry) => entry.event.revision)).toEqual([0, 1, 2]);
          expect(new Set(entries.map((entry) => entry.member))).toEqual(new Set([owners.get(partitionOf(streamId, 8))]));
        }
        expect(new Set(group.handled.map((entry) => entry.member))).toEqual(new Set(['m1', 'm2', 'm3']));
      });

      it(`${adapter}: a member that dies without a word is replaced once its claims expire, from the partitions' checkpoints`, async () => {
        const { store, location } = await freshStore();
        const group = await groupOf(location, ['m1', 'm2']);
        await until(() => [...group.subscriptions.values()].every(({ subscription }) => subscription.partitions.length === 4), 'the shares settle');
        await appendStreams(store, 20, 2, 'b');
        await until(() => group.handled.length >= 40, 'the first events are handled');
        // m2's connection goes away: it can neither renew nor release; its partitions lapse.
        const dying = group.subscriptions.get('m2')!;
        const lost = [...dying.subscription.partitions];
        await dying.store.close();
        await appendStreams(store, 20, 2, 'c');
        await until(() => group.subscriptions.get('m1')!.subscription.partitions.length === 8, 'm1 takes every partition');
        await until(() => group.handled.filter((entry) => entry.event.streamId.startsWith('execution-c-')).length >= 40, 'the later events are handled');
        const late = group.handled.filter((entry) => entry.event.streamId.startsWith('execution-c-'));
        // Every later event of the lost partitions was handled by m1, and none twice.
        expect(late.filter((entry) => lost.includes(partitionOf(entry.event.streamId, 8))).every((entry) => entry.member === 'm1')).toBe(true);
        expect(new Set(late.map((entry) => entry.event.id)).size).toBe(40);
        expect(late.filter((entry) => entry.member === 'm2')).toEqual([]);
      });

      it(`${adapter}: a slow event holds up only its own partition: other partitions' events go on meanwhile, each stream in order`, async () => {
        const { store, location } = await freshStore();
        const handled: string[] = [];
        let unblock!: () => void;
        const blocked = new Promise<void>((resolve) => (unblock = resolve));
        const member = await reopen(location);
        const subscription = subscribeAsGroupMember(
          member,
          async (event) => {
            if (event.streamId === 'execution-slow' && event.revision === 0) await blocked;
            handled.push(`${event.streamId}@${event.revision}`);
          },
          { group: 'slow', member: 'only', leaseMs: 5_000, partitions: 8, filter: { streamPrefixes: ['execution-'] } },
        );
        await subscription.caughtUp;
        await store.appendToStream('execution-slow', [event('First'), event('Second')]);
        const others = Array.from({ length: 20 }, (_, i) => `execution-other-${i}`).filter((id) => partitionOf(id, 8) !== partitionOf('execution-slow', 8));
        for (const id of others) await store.appendToStream(id, [event('Step')]);
        await until(() => others.every((id) => handled.includes(`${id}@0`)), 'the other partitions are handled');
        expect(handled.filter((entry) => entry.startsWith('execution-slow'))).toEqual([]);
        unblock();
        await until(() => handled.includes('execution-slow@1'), 'the slow stream is handled');
        expect(handled.filter((entry) => entry.startsWith('execution-slow'))).toEqual(['execution-slow@0', 'execution-slow@1']);
        await subscription.stop();
      });

      it(`${adapter}: a partition taken behind the running read waits for the read from its checkpoint: what comes meanwhile neither jumps ahead nor leaves events behind`, async () => {
        const { store, location } = await freshStore();
        const stream = Array.from({ length: 64 }, (_, i) => `execution-behind-${i}`).find((id) => partitionOf(id, 8) === 2)!;
        // Partitions 2 and 5 are held by a member gone quiet; their claims lapse in a moment.
        const lapse = new Date(Date.now() + 1_500).toISOString();
        for (const partition of [2, 5]) await store.claim(`group:behind:partition:00${partition}`, 'ghost', lapse, new Date().toISOString());
        await store.appendToStream(stream, [event('First'), event('Second'), event('Third')]);
        const handled: number[] = [];
        const member = await reopen(location);
        // Between taking partition 2 and taking partition 5, an event of partition 2 comes while the member's read,
        // which has passed partition 2's first events, still runs.
        const claimsOf5 = { count: 0 };
        const wrapped = new Proxy(member, {
          get(target, property) {
            if (property === 'claim') {
              return async (...args: Parameters<EventStore['claim']>) => {
                if (args[0] === 'group:behind:partition:005' && (claimsOf5.count += 1) === 1) {
                  await store.appendToStream(stream, [event('Fourth')]);
                  const deadline = Date.now() + 500;
                  while (!handled.includes(3) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
                }
                return target.claim(...args);
              };
            }
            const value = Reflect.get(target, property) as unknown;
            return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
          },
        });
        const subscription = subscribeAsGroupMember(wrapped, (recorded) => void (recorded.streamId === stream && handled.push(recorded.revision)), {
          group: 'behind',
          member: 'only',
          leaseMs: 900,
          partitions: 8,
          checkpointEveryMs: 0,
          filter: { streamPrefixes: ['execution-'] },
        });
        await until(() => subscription.partitions.length === 8, 'the member holds every partition');
        await until(() => handled.length >= 4, "every event of partition 2's stream is handled");
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(claimsOf5.count).toBeGreaterThan(0);
        expect(handled).toEqual([0, 1, 2, 3]);
        await subscription.stop();
      });

      it(`${adapter}: a member that joins takes partitions that others hand over, with nothing handled twice or skipped`, async () => {
        const { store, location } = await freshStore();
        const group = await groupOf(location, ['m1']);
        await until(() => group.subscriptions.get('m1')!.subscription.partitions.length === 8, 'm1 holds all');
        await appendStreams(store, 30, 2, 'd');
        await until(() => group.handled.length >= 60, 'the first events are handled');
        await group.join('m2');
        await until(() => group.subscriptions.get('m2')!.subscription.partitions.length === 4 && group.subscriptions.get('m1')!.subscription.partitions.length === 4, 'the partitions are split');
        await appendStreams(store, 30, 2, 'e');
        await until(() => group.handled.length >= 120, 'every event is handled');
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(group.handled).toHaveLength(120);
        expect(new Set(group.handled.map((entry) => entry.event.id)).size).toBe(120);
        expect(group.handled.some((entry) => entry.member === 'm2' && entry.event.streamId.startsWith('execution-e-'))).toBe(true);
        // A clean stop hands everything back at once.
        await group.subscriptions.get('m2')!.subscription.stop();
        await until(() => group.subscriptions.get('m1')!.subscription.partitions.length === 8, 'm1 holds all again');
      });
    });

    describe(`${adapter}: a group's partition count`, () => {
      /** A member of `group` on its own connection, with `partitions` if given, recording what it handles and logs. */
      const member = async (location: Location, group: string, id: string, partitions?: number) => {
        const store = await reopen(location);
        const handled: RecordedEvent[] = [];
        const warnings: string[] = [];
        const subscription = subscribeAsGroupMember(store, (recorded) => void handled.push(recorded), {
          group,
          member: id,
          leaseMs: 600,
          checkpointEveryMs: 0,
          ...(partitions === undefined ? {} : { partitions }),
          filter: { streamPrefixes: ['execution-'] },
          log: (message, level) => void (level === 'warn' && warnings.push(message)),
        });
        return { store, handled, warnings, subscription };
      };
      const until = async (check: () => boolean, what: string) => {
        const deadline = Date.now() + 20_000;
        while (!check()) {
          if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };
      const layoutOf = async (store: EventStore, group: string) => (await store.readClaims(`group:${group}:layout`)).map((claim) => claim.owner);
      /** Appends ten new streams and checks that the member handles them, and nothing from before. */
      const handlesOnlyWhatFollows = async (store: EventStore, joined: Awaited<ReturnType<typeof member>>, tag: string) => {
        for (let i = 0; i < 10; i += 1) await store.appendToStream(`execution-${tag}-${i}`, [event('Step')]);
        await until(() => joined.handled.length >= 10, 'the later events are handled');
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(joined.handled.map((recorded) => recorded.streamId).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `execution-${tag}-${i}`).sort());
        await joined.subscription.stop();
      };

      it(`${adapter}: a new group's first member fixes 48 partitions in the store; one that joins later follows the group, whatever it was given, and says so`, async () => {
        const { store, location } = await freshStore();
        const first = await member(location, 'fresh', 'm1');
        await until(() => first.subscription.partitions.length === 48, 'm1 holds all 48');
        expect(await layoutOf(store, 'fresh')).toEqual(['48']);
        const second = await member(location, 'fresh', 'm2', 8);
        await until(() => first.subscription.partitions.length === 24 && second.subscription.partitions.length === 24, 'the 48 are split 24 and 24');
        expect(second.warnings.join('\n')).toContain('was given 8 partitions, but the group fresh was formed with 48: it uses 48');
        for (let i = 0; i < 30; i += 1) await store.appendToStream(`execution-fresh-${i}`, [event('Step')]);
        await until(() => first.handled.length + second.handled.length >= 30, 'every event is handled');
        // Each stream by the member holding its partition of 48.
        for (const { handled, subscription } of [first, second]) {
          for (const recorded of handled) expect(subscription.partitions).toContain(partitionOf(recorded.streamId, 48));
        }
        expect(new Set([...first.handled, ...second.handled].map((recorded) => recorded.id)).size).toBe(30);
        await first.subscription.stop();
        await second.subscription.stop();
      });

      it(`${adapter}: a group whose members ran before the count was kept goes on with its 16 partitions, from their checkpoints`, async () => {
        const { store, location } = await freshStore();
        for (let i = 0; i < 10; i += 1) await store.appendToStream(`execution-before-${i}`, [event('Step')]);
        const handledBefore = await store.headPosition();
        // What members of the version before left: a checkpoint per partition of 16, no count.
        for (let partition = 0; partition < 16; partition += 1) await store.storeCheckpoint(`former#${String(partition).padStart(3, '0')}`, handledBefore);
        const joined = await member(location, 'former', 'm1');
        await until(() => joined.subscription.partitions.length === 16, 'm1 holds the 16');
        expect(await layoutOf(store, 'former')).toEqual(['16']);
        await handlesOnlyWhatFollows(store, joined, 'after');
      });

      it(`${adapter}: a group formed where only the embedded gateway's single checkpoint is takes 48 partitions, each from that checkpoint`, async () => {
        const { store, location } = await freshStore();
        for (let i = 0; i < 10; i += 1) await store.appendToStream(`execution-embedded-${i}`, [event('Step')]);
        // The service ran in the embedded gateway: one checkpoint of its own, no partitions.
        await store.storeCheckpoint('grown', await store.headPosition());
        const joined = await member(location, 'grown', 'm1');
        await until(() => joined.subscription.partitions.length === 48, 'm1 holds the 48');
        expect(await layoutOf(store, 'grown')).toEqual(['48']);
        await handlesOnlyWhatFollows(store, joined, 'split');
      });

      it(`${adapter}: members forming a group at once agree on one count; a member that would have chosen another follows the count claimed first`, async () => {
        const { store, location } = await freshStore();
        const racing = await Promise.all(['m1', 'm2', 'm3'].map((id) => member(location, 'together', id)));
        await until(() => racing.every(({ subscription }) => subscription.partitions.length === 16), 'three shares of 16');
        expect(await layoutOf(store, 'together')).toEqual(['48']);
        expect(new Set(racing.flatMap(({ subscription }) => subscription.partitions)).size).toBe(48);
        for (const { subscription } of racing) await subscription.stop();
        // A trace of partitions of 16 would make a member form the group with 16, but the layout claimed an
        // instant before says 12: it uses 12.
        await store.storeCheckpoint('late#000', 0);
        await store.claim('group:late:layout', '12', '9999-12-31T23:59:59.999Z', new Date().toISOString());
        const late = await member(location, 'late', 'm1');
        await until(() => late.subscription.partitions.length === 12, 'm1 holds the 12');
        expect(late.warnings).toEqual([]);
        await late.subscription.stop();
      });

      it(`${adapter}: a layout claim that does not hold a count fails the member with the claim named, and nothing is handled`, async () => {
        const { store, location } = await freshStore();
        await store.claim('group:broken:layout', 'twelve', '9999-12-31T23:59:59.999Z', new Date().toISOString());
        await store.appendToStream('execution-broken', [event('Step')]);
        const broken = await member(location, 'broken', 'm1');
        await expect(broken.subscription.done).rejects.toThrow('the group broken keeps "twelve" as its partition count (claim group:broken:layout), which is not a count');
        expect(broken.handled).toEqual([]);
        expect(broken.subscription.partitions).toEqual([]);
      });
    });

    describe(`${adapter}: between OS processes`, () => {
      it(`${adapter}: two processes contending for one stream never both win the same revision`, async (context) => {
        needsChildProcess(context);
        const { store, location } = await freshStore();
        const startAt = Date.now() + 1500;
        const a = child(location, { mode: 'contend', streamId: 'contested', count: 150, startAt });
        const b = child(location, { mode: 'contend', streamId: 'contested', count: 150, startAt });
        expect(await a.exited).toBe(0);
        expect(await b.exited).toBe(0);
        const wins = [...a.reports, ...b.reports].filter((r) => r.kind === 'won');
        const claimed = wins.map((r) => String(r.expected));
        expect(new Set(claimed).size).toBe(claimed.length);
        const stream = await store.readStream('contested');
        expect(stream).toHaveLength(wins.length);
        expect(new Set(stream.map((e) => e.id))).toEqual(new Set(wins.map((w) => w.id)));
        expect(a.reports.length + b.reports.length).toBe(300);
      });

      it(`${adapter}: a subscriber sees another process's writes with no gap or duplicate`, async (context) => {
        needsChildProcess(context);
        const { store, location } = await freshStore();
        const seen: RecordedEvent[] = [];
        const subscription = store.subscribeToAll((e) => void seen.push(e));
        await subscription.caughtUp;
        const writers = [
          child(location, { mode: 'write', streamId: 'proc-a', count: 200 }),
          child(location, { mode: 'write', streamId: 'proc-b', count: 200 }),
        ];
        const local = (async () => {
          for (let i = 0; i < 100; i += 1) await store.appendToStream('local', [event('Local')]);
        })();
        for (const writer of writers) expect(await writer.exited).toBe(0);
        await local;
        const head = await store.headPosition();
        await collectUntil(seen, head);
        await subscription.stop();
        const everything = await store.readAll({ maxCount: 10_000 });
        expect(everything.events).toHaveLength(500);
        expect(seen.map((e) => e.position)).toEqual(everything.events.map((e) => e.position));
      });

      it(`${adapter}: live subscribers see another process's writes interleaved with this process's bursts, in order with no gap or duplicate`, async (context) => {
        needsChildProcess(context);
        const { store, location } = await freshStore();
        const filters = [undefined, { streamPrefixes: ['local-'] }, { eventTypes: ['Written'] }, { streamPrefixes: ['local-b'], eventTypes: ['Local'] }];
        const seen = filters.map(() => [] as RecordedEvent[]);
        const subscriptions = filters.map((filter, i) => store.subscribeToAll((e) => void seen[i]!.push(e), { filter }));
        await Promise.all(subscriptions.map((subscription) => subscription.caughtUp));
        const writers = [
          child(location, { mode: 'write', streamId: 'proc-a', count: 150 }),
          child(location, { mode: 'write-many', streamId: 'proc-b', count: 50 }),
        ];
        const local = (async () => {
          for (let burst = 0; burst < 60; burst += 1) {
            await Promise.all([
              store.appendToStream(`local-a${burst % 3}`, [event('Local'), event('Local')]),
              store.appendToStream('local-b', [event('Local')]),
              store.appendMany([{ streamId: `local-c${burst}`, events: [event('Other')] }, { streamId: 'local-b2', events: [event('Local')] }]),
            ]);
          }
        })();
        for (const writer of writers) expect(await writer.exited).toBe(0);
        await local;
        const head = await store.headPosition();
        await collectUntil(seen[0]!, head);
        const everything = (await store.readAll({ maxCount: 10_000 })).events;
        expect(everything).toHaveLength(150 + 50 * 6 + 60 * 5);
        const takes = (filter: (typeof filters)[number], e: RecordedEvent) =>
          (filter?.streamPrefixes === undefined || filter.streamPrefixes.some((prefix) => e.streamId.startsWith(prefix))) &&
          (filter?.eventTypes === undefined || filter.eventTypes.includes(e.type));
        await new Promise((r) => setTimeout(r, 50));
        for (const [i, filter] of filters.entries()) {
          expect(seen[i]!.map((e) => e.position)).toEqual(everything.filter((e) => takes(filter, e)).map((e) => e.position));
        }
        expect(seen[0]!.map((e) => e.id)).toEqual(everything.map((e) => e.id));
        await Promise.all(subscriptions.map((subscription) => subscription.stop()));
      });

      it(`${adapter}: two processes claiming one stream in batches: a win writes its companion, a conflict nothing`, async (context) => {
        needsChildProcess(context);
        const { store, location } = await freshStore();
        const startAt = Date.now() + 1500;
        const a = child(location, { mode: 'contend-many', streamId: 'contested', count: 100, startAt });
        const b = child(location, { mode: 'contend-many', streamId: 'contested', count: 100, startAt });
        expect(await a.exited).toBe(0);
        expect(await b.exited).toBe(0);
        const reports = [...a.reports, ...b.reports];
        expect(reports).toHaveLength(200);
        const wins = reports.filter((r) => r.kind === 'won');
        const claimed = wins.map((r) => String(r.expected));
        expect(new Set(claimed).size).toBe(claimed.length);
        expect((await store.readStream('contested')).map((e) => e.id).sort()).toEqual(wins.map((w) => w.id).sort());
        const stored = new Set<string>();
        for (const pid of [a.process.pid, b.process.pid]) for (const e of await store.readStream(`companion-${pid}`)) stored.add(e.id);
        expect([...stored].sort()).toEqual(wins.map((w) => w.companionId).sort());
        for (const conflict of reports.filter((r) => r.kind === 'conflict')) expect(stored.has(conflict.companionId!)).toBe(false);
      });

      it(`${adapter}: kill -9 during batches leaves each batch whole or absent, and every acknowledged batch whole`, async (context) => {
        needsChildProcess(context);
        const { location } = await freshStore();
        const writer = child(location, { mode: 'write-many', streamId: 'batched', count: 100_000 });
        await writer.waitForReports(150);
        writer.process.kill('SIGKILL');
        await writer.exited;
        const reopened = await reopen(location);
        const batches = new Map<number, RecordedEvent[]>();
        let after = 0;
        for (;;) {
          const page = await reopened.readAll({ after, maxCount: 5000 });
          for (const e of page.events) {
            const batch = (e.data as { batch: number }).batch;
            batches.set(batch, [...(batches.get(batch) ?? []), e]);
          }
          if (page.events.length === 0) break;
          after = page.lastPosition;
        }
        for (const [batch, events] of batches) {
          expect(events, `batch ${batch}`).toHaveLength(6);
          expect(events.map((e) => e.position), `batch ${batch}`).toEqual(events.map((_, i) => events[0]!.position + i));
        }
        const acknowledged = writer.reports.filter((r) => r.kind === 'acked-batch');
        expect(acknowledged.length).toBeGreaterThanOrEqual(150);
        for (const ack of acknowledged) {
          const events = batches.get(Number(ack.batch));
          expect(events, `acknowledged batch ${ack.batch}`).toBeDefined();
          expect(events!.map((e) => e.id)).toEqual(ack.ids);
          expect(events!.map((e) => e.position)).toEqual(ack.positions);
        }
      });

      it(`${adapter}: kill -9 with many appends in flight and a large batch handed over: every acknowledged append is stored where it was acknowledged, and no batch in part`, async (context) => {
        needsChildProcess(context);
        const { location } = await freshStore();
        // 48 appends always in flight; after 400 acknowledgements a batch of 2,000 events is handed to the store,
        // and the child is killed as soon as it says so: while that batch is being written (or just before).
        const writer = child(location, { mode: 'write-concurrent', streamId: 'inflight', count: 100_000, writers: 48, bigBatchAfter: 400 });
        await writer.waitFor((report) => report.kind === 'issued-big');
        writer.process.kill('SIGKILL');
        await writer.exited;
        const reopened = await reopen(location);
        const batches = new Map<string, RecordedEvent[]>();
        let after = 0;
        for (;;) {
          const page = await reopened.readAll({ after, maxCount: 5000 });
          for (const e of page.events) {
            const batch = (e.data as { batch: string }).batch;
            batches.set(batch, [...(batches.get(batch) ?? []), e]);
          }
          if (page.events.length === 0) break;
          after = page.lastPosition;
        }
        // Every third append of a loop (i % 3 === 0) is a batch of three events, the large one 2,000: whole, at
        // consecutive positions.
        for (const [batch, events] of batches) {
          const expected = batch === 'big' ? 2000 : Number(batch.split('-')[1]) % 3 === 0 ? 3 : 1;
          expect(events, `append ${batch}`).toHaveLength(expected);
          expect(events.map((e) => e.position), `append ${batch}`).toEqual(events.map((_, i) => events[0]!.position + i));
        }
        const acknowledged = writer.reports.filter((r) => r.kind === 'acked-batch');
        expect(acknowledged.length).toBeGreaterThanOrEqual(400);
        for (const ack of acknowledged) {
          const events = batches.get(String(ack.batch));
          expect(events, `acknowledged append ${ack.batch}`).toBeDefined();
          expect(events!.map((e) => e.id)).toEqual(ack.ids);
          expect(events!.map((e) => e.position)).toEqual(ack.positions);
        }
      });

      it(`${adapter}: every acknowledged append survives kill -9 of the writer`, async (context) => {
        needsChildProcess(context);
        const { location } = await freshStore();
        const writer = child(location, { mode: 'write', streamId: 'durable', count: 100_000 });
        await writer.waitForReports(300);
        writer.process.kill('SIGKILL');
        await writer.exited;
        const acknowledged = writer.reports.filter((r) => r.kind === 'acked');
        expect(acknowledged.length).toBeGreaterThanOrEqual(300);
        const reopened = await reopen(location);
        const stored = new Map<string, RecordedEvent>();
        let after = 0;
        for (;;) {
          const page = await reopened.readAll({ after, maxCount: 5000 });
          for (const e of page.events) stored.set(e.id, e);
          if (page.events.length === 0) break;
          after = page.lastPosition;
        }
        for (const ack of acknowledged) {
          const found = stored.get(ack.id!);
          expect(found, `acknowledged event ${ack.id}`).toBeDefined();
          expect(found).toMatchObject({ position: ack.position, revision: ack.revision, streamId: ack.streamId });
        }
      });
    });
  });
}

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseContractFile, type ToolContract } from '@oncegate/contracts';
import { executionStream, type ExecutionState } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
import { loadExecution, runExecutionCommand, systemClock } from '@oncegate/execution-journal';
import { SqliteSealedStore, type SealedStore } from '@oncegate/sealed-store';
import { givenExecution } from '@oncegate/host-recovery/testing';
import { ChannelDispatcher, textResult, type AttemptRecord } from './channel-dispatcher';
import { PreparedCalls, type PreparedCall } from '@oncegate/service-host';

const TOOL: ToolContract = parseContractFile(
  `version: 1
tools:
  - name: send_payment
    description: Charge a card.
    class: irreversible
    channel: http
    target: test/target
    input_schema: { type: object, properties: {}, additionalProperties: false }
    http: { method: POST, url: "http://127.0.0.1:9/payments" }
    correlation_window: 1m
`,
  'tools.yaml',
).tools[0]!;

/** A channel whose attempt always comes back with the target's 201: what is under test is the recording. */
class AnsweringDispatcher extends ChannelDispatcher {
  constructor(store: EventStore, sealed: SealedStore, prepared?: PreparedCalls) {
    super('http', store, new Map([[TOOL.name, TOOL]]), sealed, 'dispatcher-http@test', systemClock, prepared);
  }

  protected override async attempt(_state: ExecutionState, _call: PreparedCall): Promise<AttemptRecord> {
    return { kind: 'observed', outcome: 'succeeded', targetStatus: 201, exitCode: null, result: { ...textResult('charged'), status: 201 } };
  }
}

/** A channel whose attempts wait until released, counting how many are in flight at once. */
class HeldDispatcher extends ChannelDispatcher {
  sending = 0;
  mostSending = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(store: EventStore, sealed: SqliteSealedStore) {
    super('http', store, new Map([[TOOL.name, TOOL]]), sealed, 'dispatcher-http@test', systemClock);
  }

  /** Attempts started and waiting to be released. */
  get held(): number {
    return this.waiting.length;
  }

  releaseAll(): void {
    for (const release of this.waiting.splice(0)) release();
  }

  protected override async attempt(_state: ExecutionState, _call: PreparedCall): Promise<AttemptRecord> {
    this.sending += 1;
    this.mostSending = Math.max(this.mostSending, this.sending);
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.sending -= 1;
    return { kind: 'observed', outcome: 'succeeded', targetStatus: 201, exitCode: null, result: { ...textResult('charged'), status: 201 } };
  }
}

/** The real store, except that its first `times` appends of an outcome fail as a store held by another process would. */
function busyForOutcomes(store: EventStore, times: number): EventStore {
  let failures = 0;
  const busy = Object.create(store) as EventStore;
  busy.appendToStream = (streamId, events, options) => {
    if (events.some((event) => event.type === 'OutcomeObserved') && failures < times) {
      failures += 1;
      return Promise.reject(Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }));
    }
    return store.appendToStream(streamId, events, options);
  };
  return busy;
}

describe('channel dispatcher: recording the outcome (SQLite store)', () => {
  let dir: string;
  let store: SqliteEventStore;
  let sealed: SqliteSealedStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-channel-dispatcher-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    sealed = new SqliteSealedStore({ file: join(dir, 'events.db'), synchronous: 'NORMAL', current: { id: 'seal-test', key: randomBytes(32) } });
  });

  afterEach(async () => {
    await sealed.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('given the store refuses the outcome a few times, when the attempt comes back, then the outcome is tried again until it is recorded', async () => {
    const args = await sealed.seal('arguments', 'ex_test', Buffer.from('{}'));
    const executionId = await givenExecution(store, systemClock, { through: 'authorized', argumentsRef: args.ref });
    const dispatcher = new AnsweringDispatcher(busyForOutcomes(store, 3), sealed);
    const authorized = (await store.readStream(executionStream(executionId))).find((event) => event.type === 'ExecutionAuthorized')!;

    await dispatcher.onAuthorized(authorized);
    await dispatcher.drain();

    const { state } = await loadExecution(store, executionId);
    expect(state.status).toBe('completed');
    expect(state.outcome).toMatchObject({ outcome: 'succeeded', targetStatus: 201 });
  });

  it('given another instance gave the attempt up for lost while the answer was on its way (leases unrenewed in a store outage), when the answer comes, then it is recorded and settles the execution held for review', async () => {
    const args = await sealed.seal('arguments', 'ex_late', Buffer.from('{}'));
    const executionId = await givenExecution(store, systemClock, { through: 'authorized', argumentsRef: args.ref });
    const dispatcher = new HeldDispatcher(store, sealed);
    const authorized = (await store.readStream(executionStream(executionId))).find((event) => event.type === 'ExecutionAuthorized')!;
    await dispatcher.onAuthorized(authorized);
    while (dispatcher.sending === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    // What a sweeper elsewhere does when the dispatcher's lease looks expired; recovery then holds the payment for review.
    await runExecutionCommand(
      store,
      executionId,
      (s) => ({ type: 'RecordUnknownOutcome', executionId, now: new Date().toISOString() as never, attempt: s.attempts, reason: 'dispatcher_lost' }),
      { actor: 'service:attempt-sweeper' },
      systemClock,
    );
    const lost = (await store.readStream(executionStream(executionId))).find((event) => event.type === 'OutcomeUnknown')!;
    await dispatcher.onOutcomeUnknown(lost);
    expect((await loadExecution(store, executionId)).state.status).toBe('needs_review');

    dispatcher.releaseAll();
    await dispatcher.drain();

    const { state } = await loadExecution(store, executionId);
    expect(state.status).toBe('completed');
    expect(state.outcome).toMatchObject({ attempt: 1, source: 'response', targetStatus: 201 });
    expect((await store.readStream(executionStream(executionId))).map((event) => event.type)).toEqual([
      'ExecutionAccepted',
      'ExecutionAuthorized',
      'Dispatched',
      'OutcomeUnknown',
      'ReviewRequired',
      'OutcomeObserved',
    ]);
  });

  it('given a dispatcher without a preflight whose cached fold is behind the delivered event by more than one (another process wrote meanwhile), when an operator resolves the review as not executed, then nothing is sent until the agent retries, and the retry sends attempt 2', async () => {
    const args = await sealed.seal('arguments', 'ex_behind', Buffer.from('{}'));
    const executionId = await givenExecution(store, systemClock, { through: 'dispatched', argumentsRef: args.ref });
    // This process folded the execution once it was dispatched (as it does when it dispatches)...
    expect((await loadExecution(store, executionId)).state.status).toBe('dispatched');
    // ...and the rest was written by other processes: a sweeper gave the attempt up, recovery, an operator, the agent.
    const elsewhere = openSqliteEventStore({ file: join(dir, 'events.db') });
    const now = () => new Date().toISOString() as never;
    const dispatcher = new AnsweringDispatcher(store, sealed);
    try {
      await runExecutionCommand(elsewhere, executionId, () => ({ type: 'RecordUnknownOutcome', executionId, now: now(), attempt: 1, reason: 'dispatcher_lost' }), { actor: 'service:attempt-sweeper' }, systemClock);
      await runExecutionCommand(elsewhere, executionId, () => ({ type: 'RequireReview', executionId, now: now(), reason: 'irreversible_outcome_unknown' }), { actor: 'service:recovery' }, systemClock);
      await runExecutionCommand(
        elsewhere,
        executionId,
        () => ({ type: 'ResolveReview', executionId, now: now(), resolution: 'not_executed', by: 'user:alice', reason: 'no charge at the processor' }),
        { actor: 'user:alice' },
        systemClock,
      );
      const resolved = (await store.readStream(executionStream(executionId))).find((event) => event.type === 'ReviewResolved')!;
      await dispatcher.onReviewResolved(resolved);
      await dispatcher.drain();
      expect((await loadExecution(store, executionId)).state).toMatchObject({ status: 'not_executed', attempts: 1 });

      await runExecutionCommand(elsewhere, executionId, () => ({ type: 'AttachRetry', executionId, now: now(), correlation: { jsonRpcId: 2 } }), { actor: 'agent:test' }, systemClock);
    } finally {
      await elsewhere.close();
    }
    const retried = (await store.readStream(executionStream(executionId))).find((event) => event.type === 'RetryAttached')!;
    await dispatcher.onRetryAttached(retried);
    await dispatcher.drain();

    const { state } = await loadExecution(store, executionId);
    expect(state.status).toBe('completed');
    expect(state.outcome).toMatchObject({ attempt: 2, source: 'response', targetStatus: 201 });
  });

  /**
   * `target` with the first argument of each call of its `method` noted in `calls`: another object (a store's folds
   * are kept per store object, as another process's would be).
   */
  function counting<T extends object>(target: T, method: keyof T, calls: unknown[]): T {
    return new Proxy(target, {
      get(object, key) {
        const value: unknown = Reflect.get(object, key, object);
        if (typeof value !== 'function') return value;
        const bound = (value as (...args: unknown[]) => unknown).bind(object);
        return key === method ? (...args: unknown[]) => (calls.push(args[0]), bound(...args)) : bound;
      },
    });
  }

  /** An execution written elsewhere, delivered here from its first event to its authorization; the stream reads noted. */
  async function deliveredTo<D extends ChannelDispatcher>(make: (store: EventStore) => D, owner: string) {
    const { executionId, events } = await writtenElsewhere('authorized', owner);
    const reads: string[] = [];
    const dispatcher = make(counting(store, 'readStream', reads));
    dispatcher.onAccepted(events[0]!);
    await dispatcher.onAuthorized(events[1]!);
    return { executionId, dispatcher, reads };
  }

  /** An execution written by another process (another store object), and its events as they are delivered here. */
  async function writtenElsewhere(through: 'authorized' | 'dispatched', owner: string) {
    const args = await sealed.seal('arguments', owner, Buffer.from('{}'));
    const elsewhere = openSqliteEventStore({ file: join(dir, 'events.db') });
    try {
      const executionId = await givenExecution(elsewhere, systemClock, { through, argumentsRef: args.ref });
      return { executionId, events: await store.readStream(executionStream(executionId)) };
    } finally {
      await elsewhere.close();
    }
  }

  it('given an execution delivered from its first event, when it is authorized, then the dispatch is decided and its outcome recorded without reading the stream', async () => {
    const { executionId, dispatcher, reads } = await deliveredTo((counted) => new AnsweringDispatcher(counted, sealed), 'ex_unread');
    await dispatcher.drain();

    expect(reads).toEqual([]);
    expect((await store.readStream(executionStream(executionId))).map((event) => event.type)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeObserved']);
    expect((await loadExecution(store, executionId)).state).toMatchObject({ status: 'completed', outcome: { attempt: 1, targetStatus: 201 } });
  });

  it('given an execution of its channel accepted, when it is authorized, then its call was prepared meanwhile and the dispatch opens no sealed blob; a denied one is forgotten', async () => {
    const opened: unknown[] = [];
    const countingSealed = counting<SealedStore>(sealed, 'open', opened);
    const prepared = new PreparedCalls(countingSealed);
    const dispatcher = new AnsweringDispatcher(counting(store, 'readStream', []), countingSealed, prepared);
    const sent = await writtenElsewhere('authorized', 'ex_prepared');
    dispatcher.onAccepted(sent.events[0]!);
    await vi.waitFor(() => expect(opened).toHaveLength(1));
    expect(prepared.size).toBe(1);
    await dispatcher.onAuthorized(sent.events[1]!);
    await dispatcher.drain();
    // Opened once, before the authorization came; the settled call is forgotten.
    expect(opened).toHaveLength(1);
    expect(prepared.size).toBe(0);
    expect((await loadExecution(store, sent.executionId)).state.status).toBe('completed');

    const denied = await writtenElsewhere('authorized', 'ex_denied');
    dispatcher.onAccepted(denied.events[0]!);
    await vi.waitFor(() => expect(prepared.size).toBe(1));
    dispatcher.onDenied({ ...denied.events[1]!, type: 'ExecutionDenied' });
    expect(prepared.size).toBe(0);
  });

  it('given the stream moved on in another process while the attempt was out, when the answer comes, then the outcome decided on this process\'s fold conflicts, is decided again on what is read, and lands once', async () => {
    const { executionId, dispatcher, reads } = await deliveredTo((counted) => new HeldDispatcher(counted, sealed), 'ex_moved');
    while (dispatcher.sending === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    // A sweeper in another process gives the attempt up for lost; this process hears nothing of it.
    const elsewhere = openSqliteEventStore({ file: join(dir, 'events.db') });
    try {
      await runExecutionCommand(elsewhere, executionId, (s) => ({ type: 'RecordUnknownOutcome', executionId, now: new Date().toISOString() as never, attempt: s.attempts, reason: 'dispatcher_lost' }), { actor: 'service:attempt-sweeper' }, systemClock);
    } finally {
      await elsewhere.close();
    }

    dispatcher.releaseAll();
    await dispatcher.drain();

    // Read once, after the append on the fold was refused.
    expect(reads).toEqual([executionStream(executionId)]);
    expect((await store.readStream(executionStream(executionId))).map((event) => event.type)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeUnknown', 'OutcomeObserved']);
    expect((await loadExecution(store, executionId)).state.outcome).toMatchObject({ attempt: 1, source: 'response', targetStatus: 201 });
  });

  it('given dispatch_in_flight 2 and six authorized executions handled at once, then at most two attempts are in flight, and every one is sent once the others finish', async () => {
    const dispatcher = new HeldDispatcher(store, sealed);
    dispatcher.limitInFlight(2);
    const authorized = [];
    for (let i = 0; i < 6; i += 1) {
      const args = await sealed.seal('arguments', `ex_cap_${i}`, Buffer.from('{}'));
      const executionId = await givenExecution(store, systemClock, { through: 'authorized', argumentsRef: args.ref });
      authorized.push({ executionId, event: (await store.readStream(executionStream(executionId))).find((event) => event.type === 'ExecutionAuthorized')! });
    }
    // Handled concurrently, as a group member handles the events of different partitions.
    const handled = Promise.all(authorized.map(({ event }) => dispatcher.onAuthorized(event)));
    // Each round: two attempts start and wait; none more until they are released.
    for (let round = 0; round < 3; round += 1) {
      await vi.waitFor(() => expect(dispatcher.held).toBe(2), { timeout: 10_000, interval: 5 });
      expect(dispatcher.sending).toBe(2);
      dispatcher.releaseAll();
    }
    await handled;
    await dispatcher.drain();
    expect(dispatcher.mostSending).toBe(2);
    for (const { executionId } of authorized) expect((await loadExecution(store, executionId)).state.status).toBe('completed');
  });
});

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { singleToolContract } from '@oncegate/contracts';
import { executionIdOfStream, type ExecutionCommand, type ExecutionId } from '@oncegate/domain';
import { authorize, dispatch, observe } from '@oncegate/domain/testing';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
import { ExecutionWatcher, isoNow, runExecutionCommand, systemClock } from '@oncegate/execution-journal';
import { keyRingFromConfig } from '@oncegate/fingerprint';
import { SqliteSealedStore, type SealedStore } from '@oncegate/sealed-store';
import { DeliveryTracker, type DeliveryWatch } from '@oncegate/service-result-delivery';
import { ToolCalls } from './tool-calls';

const TOOL = singleToolContract(
  { name: 'set_config', description: 'Sets a configuration value.', channel: 'http', target: 'test/config' },
  `
class: idempotent_write
input_schema: { type: object, properties: { name: { type: string }, value: { type: string } }, required: [name, value] }
http: { method: PUT, url: "http://127.0.0.1:9/config/{{args.name}}", body: { value: "{{args.value}}" } }
`,
);

/**
 * The gateway's tool calls in a process of their own: authorization and dispatch are taken by other processes on
 * the same journal (a second store object on the file), as in the split layout.
 */
describe('tool calls, the steps taken in another process (SQLite store)', () => {
  let dir: string;
  let gatewayStore: SqliteEventStore;
  let services: SqliteEventStore;
  let sealed: SqliteSealedStore;
  let watcher: ExecutionWatcher;
  let toolCalls: ToolCalls;
  /** The gateway's reads of execution streams. */
  let executionReads: string[];
  /** The gateway's appends: the event types of each and whether it may wait for the next append's commit. */
  let appends: Array<{ types: string[]; deferrable: boolean }>;
  /** While set, the gateway's reads of execution streams fail (a store that cannot be read now). */
  let executionReadsFail: boolean;
  /** The gateway's reads of intent claim streams. */
  let claimReads: string[];
  let keyRing: ReturnType<typeof keyRingFromConfig>;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-tool-calls-'));
    gatewayStore = openSqliteEventStore({ file: join(dir, 'events.db') });
    services = openSqliteEventStore({ file: join(dir, 'events.db') });
    executionReads = [];
    appends = [];
    executionReadsFail = false;
    claimReads = [];
    const store = Object.create(gatewayStore) as EventStore;
    store.appendToStream = (streamId, events, options) => {
      const mayWait = options?.deferrable;
      appends.push({ types: events.map((event) => event.type), deferrable: mayWait instanceof AbortSignal ? !mayWait.aborted : mayWait === true });
      // On the same object as the gateway's other appends (`this`), which keep the store's state on it.
      return gatewayStore.appendToStream.call(store, streamId, events, options);
    };
    store.readStream = (streamId, options) => {
      if (executionIdOfStream(streamId) !== undefined) {
        if (executionReadsFail) return Promise.reject(new Error('the store cannot be read now'));
        executionReads.push(streamId);
      }
      if (streamId.startsWith('intent-')) claimReads.push(streamId);
      return gatewayStore.readStream(streamId, options);
    };
    sealed = new SqliteSealedStore({ file: join(dir, 'sealed.db'), current: { id: 's1', key: randomBytes(32) } });
    watcher = new ExecutionWatcher(store);
    await watcher.start();
    keyRing = keyRingFromConfig({
      current: 'k1',
      keys: [{ id: 'k1', secret: randomBytes(32).toString('hex') }],
      argumentKey: { id: 'a1', secret: randomBytes(32).toString('hex') },
    });
    toolCalls = new ToolCalls({ store, watcher, sealed, keyRing, tools: new Map([[TOOL.name, TOOL]]), deliveries: new DeliveryTracker(), clock: systemClock, callWaitMs: 10_000 });
  });

  afterEach(async () => {
    await toolCalls?.answersRecorded();
    await watcher.stop();
    sealed.close();
    await services.close();
    await gatewayStore.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Another process's step on the execution. */
  const step = (executionId: ExecutionId, command: ExecutionCommand) =>
    runExecutionCommand(services, executionId, () => ({ ...command, executionId, now: isoNow(systemClock) }) as ExecutionCommand, { actor: 'service:test' }, systemClock);

  /** A call of `set_config` (by this process's tool calls, or another's), and its execution once accepted. */
  const callOf = (value: string, jsonRpcId: number, delivery: DeliveryWatch | undefined, calls = toolCalls, meta: Record<string, unknown> = {}, signal = new AbortController().signal) =>
    calls.call('set_config', { name: 'mode', value }, {
      actor: 'agent:test',
      declaredRun: undefined,
      meta,
      correlation: { jsonRpcId, transport: 'streamable-http' },
      signal,
      delivery,
    });

  /** The owners of the sealed arguments in the store, read raw. */
  const sealedArguments = () => {
    const db = new DatabaseSync(join(dir, 'sealed.db'), { readOnly: true });
    try {
      return (db.prepare("SELECT owner FROM sealed_blobs WHERE kind = 'arguments'").all() as Array<{ owner: string }>).map((row) => row.owner);
    } finally {
      db.close();
    }
  };

  /**
   * Tool calls of another gateway process on the same journal, with the same keys (and, unless given, the same sealed
   * store); `shownWithinMs`: its callers are shown to the other processes through the store's leases, as `oncegate
   * serve` does, a new execution's caller after a fifth of that.
   */
  const anotherGateway = async (sealedStore: SealedStore = sealed, shownWithinMs?: number) => {
    const store = openSqliteEventStore({ file: join(dir, 'events.db') });
    const otherWatcher = new ExecutionWatcher(store);
    await otherWatcher.start();
    const deliveries =
      shownWithinMs === undefined
        ? new DeliveryTracker()
        : new DeliveryTracker({ store, instance: `host/${randomBytes(4).toString('hex')}`, leaseMs: 60_000, clock: systemClock, showAfterMs: shownWithinMs / 5, shownWithinMs });
    const calls = new ToolCalls({ store, watcher: otherWatcher, sealed: sealedStore, keyRing, tools: new Map([[TOOL.name, TOOL]]), deliveries, clock: systemClock, callWaitMs: 10_000 });
    const stop = async () => {
      await calls.answersRecorded();
      await otherWatcher.stop();
      await store.close();
    };
    return { calls, stop };
  };

  it('given a call whose intent this process has not handled, when it is claimed, then the claim stream is not read first: the claim expects no stream', async () => {
    const answering = callOf('unread', 1, undefined);
    const executionId = await acceptedExecution();
    await completeElsewhere(executionId);
    await answering;
    expect(claimReads).toEqual([]);
    // The same intent again in this process: read first, and attached.
    const again = await callOf('unread', 2, undefined);
    expect(claimReads).toHaveLength(1);
    expect(again.structuredContent).toMatchObject({ execution: { id: executionId, attached: true } });
  });

  it('given an intent another gateway process claimed, when the same call reaches this one, then its claim without a read is refused, nothing of it is written, and it reads the claim and attaches', async () => {
    const other = await anotherGateway();
    try {
      const first = callOf('elsewhere', 1, undefined, other.calls);
      const executionId = await acceptedExecution();
      const retry = callOf('elsewhere', 2, undefined);
      await vi.waitFor(async () => expect((await services.readAll()).events.filter((event) => event.type === 'RetryAttached')).toHaveLength(1), { timeout: 5_000 });
      await completeElsewhere(executionId);
      const answers = await Promise.all([first, retry]);
      expect(answers.map((answer) => answer.structuredContent)).toMatchObject([
        { execution: { id: executionId, attached: false } },
        { execution: { id: executionId, attached: true } },
      ]);
      const types = (await services.readAll()).events.map((event) => event.type);
      expect(types.filter((type) => type === 'ExecutionAccepted' || type === 'IntentClaimed')).toEqual(['IntentClaimed', 'ExecutionAccepted']);
      expect(claimReads).toHaveLength(1);
      // The refused claim's sealed copy of the arguments is discarded: one copy, the execution's.
      await vi.waitFor(() => expect(sealedArguments()).toEqual([executionId]), { timeout: 5_000 });
    } finally {
      await other.stop();
    }
  });

  it('given a refused claim whose sealed copy the store cannot delete now, when the call goes on, then it still attaches and is answered: the copy stays', async () => {
    const first = await anotherGateway();
    const cannotDelete: SealedStore = {
      seal: (...args) => sealed.seal(...args),
      open: (ref) => sealed.open(ref),
      discard: () => Promise.reject(new Error('the store cannot delete now')),
      close: async () => undefined,
    };
    const second = await anotherGateway(cannotDelete);
    try {
      const claimed = callOf('kept copy', 1, undefined, first.calls);
      const executionId = await acceptedExecution();
      const retry = callOf('kept copy', 2, undefined, second.calls);
      await vi.waitFor(async () => expect((await services.readAll()).events.filter((event) => event.type === 'RetryAttached')).toHaveLength(1), { timeout: 5_000 });
      await completeElsewhere(executionId);
      await claimed;
      expect((await retry).structuredContent).toMatchObject({ execution: { id: executionId, attached: true } });
      expect(sealedArguments()).toHaveLength(2);
    } finally {
      await second.stop();
      await first.stop();
    }
  });

  it("given a caller's idempotency key another gateway process claimed for other arguments, when it reaches this one, then the call is refused naming the first execution", async () => {
    const other = await anotherGateway();
    try {
      const key = { 'io.oncegate/idempotency-key': 'deploy-42' };
      const first = callOf('first', 1, undefined, other.calls, key);
      const executionId = await acceptedExecution();
      await expect(callOf('second', 2, undefined, toolCalls, key)).rejects.toThrow(executionId);
      await completeElsewhere(executionId);
      await first;
      expect((await services.readAll()).events.filter((event) => event.type === 'ExecutionAccepted')).toHaveLength(1);
    } finally {
      await other.stop();
    }
  });

  /** The one execution accepted so far, once its ExecutionAccepted is in the journal. */
  const acceptedExecution = () =>
    vi.waitFor(
      async () => {
        const accepted = (await services.readAll()).events.find((event) => event.type === 'ExecutionAccepted');
        expect(accepted).toBeDefined();
        return executionIdOfStream(accepted!.streamId)!;
      },
      { timeout: 5_000 },
    );

  /** The other processes authorize, dispatch and observe the execution. */
  const completeElsewhere = async (executionId: ExecutionId) => {
    for (const command of [authorize(), dispatch(), observe({ resultRef: undefined, resultDigest: undefined } as never)]) await step(executionId, command);
  };

  it('given a new call, when other processes authorize, dispatch and observe it, then the gateway answers and records the delivery without reading the execution stream', async () => {
    const answering = callOf('fast', 1, { settled: Promise.resolve({ kind: 'delivered', evidence: 'the test read it' }) });
    const executionId = await acceptedExecution();
    await completeElsewhere(executionId);
    const answer = await answering;
    expect(answer.structuredContent).toMatchObject({ execution: { id: executionId, state: 'completed' } });
    await toolCalls.answersRecorded();
    const types = (await services.readStream(`execution-${executionId}`)).map((event) => event.type);
    expect(types).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeObserved', 'ResultDelivered']);
    expect(executionReads).toEqual([]);
    // Nothing waits for the record of the delivery: the store may commit it with the next append.
    expect(appends).toEqual([{ types: ['ResultDelivered'], deferrable: true }]);
  });

  it('given a call waiting in one gateway, when a retry attached in another cancels at once, then the first caller is counted: the cancel is recorded and stops nothing', async () => {
    const first = await anotherGateway(sealed, 2_500);
    const second = await anotherGateway(sealed, 2_500);
    try {
      const waiting = callOf('shared', 1, undefined, first.calls);
      const executionId = await acceptedExecution();
      const abort = new AbortController();
      const attached = callOf('shared', 2, undefined, second.calls, {}, abort.signal);
      await vi.waitFor(async () => expect((await services.readStream(`execution-${executionId}`)).map((event) => event.type)).toContain('RetryAttached'), { timeout: 5_000 });
      // Well before the first caller has waited long enough to be shown.
      abort.abort();
      await vi.waitFor(async () => expect((await services.readStream(`execution-${executionId}`)).map((event) => event.type)).toContain('CancellationRequested'), { timeout: 5_000 });
      const types = (await services.readStream(`execution-${executionId}`)).map((event) => event.type);
      expect(types).not.toContain('ExecutionCancelled');
      await completeElsewhere(executionId);
      expect((await waiting).structuredContent).toMatchObject({ execution: { id: executionId, state: 'completed' } });
      await attached;
    } finally {
      await first.stop();
      await second.stop();
    }
  });

  it('given 30 identical calls answered at once, when their deliveries settle, then the answers are recorded together: one append for those that settle at once, one for those that settle while it is written', async () => {
    const settle: Array<() => void> = [];
    const calls = Array.from({ length: 30 }, (_, i) =>
      callOf('burst', i + 1, { settled: new Promise((resolve) => settle.push(() => resolve({ kind: 'delivered', evidence: `caller ${i + 1} read it` }))) }),
    );
    const executionId = await vi.waitFor(
      async () => {
        const events = (await services.readAll()).events;
        expect(events.filter((event) => event.type === 'RetryAttached')).toHaveLength(29);
        return executionIdOfStream(events.find((event) => event.type === 'ExecutionAccepted')!.streamId)!;
      },
      { timeout: 5_000 },
    );
    await completeElsewhere(executionId);
    const answers = await Promise.all(calls);
    expect(new Set(answers.map((answer) => (answer.structuredContent as { execution: { id: string } }).execution.id))).toEqual(new Set([executionId]));
    appends = [];
    // The first caller's delivery settles alone: its record takes its turn at once. The other 29 settle while it is
    // being written, and wait for the next turn together.
    settle[0]!();
    await vi.waitFor(() => expect(appends).toHaveLength(1), { timeout: 5_000 });
    for (const resolve of settle.slice(1)) resolve();
    await toolCalls.answersRecorded();
    expect(appends.map((append) => append.types.length)).toEqual([1, 29]);
    const records = (await services.readStream(`execution-${executionId}`)).filter((event) => ['ResultDelivered', 'AnswerGiven'].includes(event.type));
    // Each record carries its own caller's correlation, in its data and in its metadata.
    expect(records.map((event) => (event.metadata['correlation'] as { jsonRpcId: number }).jsonRpcId).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 30 }, (_, i) => i + 1),
    );
    for (const event of records) expect((event.data as { correlation: unknown }).correlation).toEqual(event.metadata['correlation']);
  });

  it('given a record whose turn failed before deciding (its execution could not be read), when the execution is answered again, then that answer is recorded: it does not join the failed turn', async () => {
    const answering = callOf('again', 1, undefined);
    const executionId = await acceptedExecution();
    await completeElsewhere(executionId);
    await answering;
    await toolCalls.answersRecorded();
    const recorded = async () => (await services.readStream(`execution-${executionId}`)).filter((event) => event.metadata['actor'] === 'service:result-delivery');
    const before = (await recorded()).length;
    let settle: () => void = () => undefined;
    const task = (jsonRpcId: number, settled: Promise<{ kind: 'delivered'; evidence: string }>) =>
      toolCalls.taskAnswer(executionId, 'agent:test', { jsonRpcId, transport: 'streamable-http' }, { settled });
    await task(2, new Promise((resolve) => (settle = () => resolve({ kind: 'delivered', evidence: 'the test read it' }))));
    executionReadsFail = true;
    settle();
    await toolCalls.answersRecorded();
    executionReadsFail = false;
    expect(await recorded()).toHaveLength(before);
    await task(3, Promise.resolve({ kind: 'delivered', evidence: 'the test read it again' }));
    await toolCalls.answersRecorded();
    const after = await recorded();
    expect(after).toHaveLength(before + 1);
    expect(after.at(-1)!.metadata['correlation']).toMatchObject({ jsonRpcId: 3 });
  });
});

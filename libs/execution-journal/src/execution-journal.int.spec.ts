import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executionIdFromUlid, executionStream, type ExecutionCommand, type ExecutionId } from '@oncegate/domain';
import { WrongExpectedRevisionError, type EventStore } from '@oncegate/event-store';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the real SQLite adapter
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
import { isoNow, systemClock } from './clock';
import { loadExecution, runExecutionCommand, runExecutionCommands, type CommandOptions } from './execution-journal';
import { newUlid } from './ulid';

/** The real store, counting the appends it refused for a stale expected revision. */
function countingConflicts(store: EventStore): { store: EventStore; conflicts: () => number } {
  let conflicts = 0;
  const counting = Object.create(store) as EventStore;
  counting.appendToStream = async (...args) => {
    try {
      return await store.appendToStream(...args);
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError) conflicts += 1;
      throw error;
    }
  };
  return { store: counting, conflicts: () => conflicts };
}

/** The real store, counting its stream reads (`reads`, which the test may reset). */
function countingReads(store: EventStore): { store: EventStore; reads: { count: number } } {
  const reads = { count: 0 };
  const counting = Object.create(store) as EventStore;
  counting.readStream = (...args) => {
    reads.count += 1;
    return store.readStream(...args);
  };
  return { store: counting, reads };
}

describe('runExecutionCommand (SQLite store)', () => {
  let dir: string;
  let sqlite: SqliteEventStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-journal-'));
    sqlite = openSqliteEventStore({ file: join(dir, 'events.db') });
  });

  afterEach(async () => {
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** An execution taken through its first `steps` commands: accepted, authorized, dispatched. */
  async function dispatchedExecution(store: EventStore, steps = 3): Promise<ExecutionId> {
    const executionId = executionIdFromUlid(newUlid());
    const now = isoNow(systemClock);
    const commands: ExecutionCommand[] = [
      {
        type: 'AcceptExecution',
        executionId,
        now,
        record: { actor: 'agent:test', tool: 'send_payment', channel: 'http', target: 'test/payments', credential_ref: null, method: 'POST', arguments: {}, intent_scope: 'actor' } as never,
        fingerprint: `hmac-sha256:k1:${'ab'.repeat(32)}`,
        operationClass: 'irreversible',
        intentScope: { kind: 'actor' },
        correlationWindowMs: 60_000,
        redeliveryGraceMs: 60_000,
        attemptPolicy: { maxAttempts: 3, attemptTimeoutMs: 5_000, markerBeforeWork: false },
        correlation: { jsonRpcId: 1, transport: 'streamable-http' },
        argumentsRef: 'sealed_arguments_1',
      },
      { type: 'AuthorizeExecution', executionId, now, basis: 'policy' },
      { type: 'RecordDispatch', executionId, now, dispatcherId: 'dispatcher-http@test' },
    ];
    for (const command of commands.slice(0, steps)) await runExecutionCommand(store, executionId, () => command, { actor: 'agent:test' }, systemClock);
    return executionId;
  }

  const authorizeIfAccepted = (executionId: ExecutionId) => (state: { status: string }) =>
    state.status === 'accepted' ? ({ type: 'AuthorizeExecution', executionId, now: isoNow(systemClock), basis: 'policy' } as const) : undefined;

  /** A caller attaching to the execution, as one command of the loop. */
  const attachOf = (store: EventStore, executionId: ExecutionId, options?: CommandOptions) => (jsonRpcId: number) =>
    runExecutionCommand(
      store,
      executionId,
      () => ({ type: 'AttachRetry', executionId, now: isoNow(systemClock), correlation: { jsonRpcId, transport: 'streamable-http' } }),
      { actor: 'agent:test' },
      systemClock,
      options,
    );

  /** The dispatcher's outcome of the first attempt, once the execution is dispatched. */
  const observeOutcome = (store: EventStore, executionId: ExecutionId) =>
    runExecutionCommand(
      store,
      executionId,
      (state) =>
        state.status === 'dispatched'
          ? { type: 'ObserveOutcome', executionId, now: isoNow(systemClock), attempt: 1, outcome: 'succeeded', source: 'response', targetStatus: 201, exitCode: null, resultRef: null, resultDigest: null }
          : undefined,
      { actor: 'service:dispatcher-http' },
      systemClock,
    );

  it('given a cached fold that is current, when a command decides from the cache, then it appends without reading the stream', async () => {
    const executionId = await dispatchedExecution(sqlite, 1);
    const { store: counting, reads } = countingReads(sqlite);
    // The cache is kept per store object: this one folds the execution once.
    const [accepted] = (await loadExecution(counting, executionId)).events;
    reads.count = 0;
    const outcome = await runExecutionCommand(counting, executionId, authorizeIfAccepted(executionId), { actor: 'service:authorization' }, systemClock, {
      fromCacheAsOf: accepted!,
    });
    expect(outcome.appended.map((event) => event.type)).toEqual(['ExecutionAuthorized']);
    expect(reads.count).toBe(0);
  });

  it('given a cached fold behind the stream (another process decided meanwhile), when a command decides from the cache, then the append conflicts and it is decided again on the stream: one verdict', async () => {
    const executionId = await dispatchedExecution(sqlite, 1);
    const { store, conflicts } = countingConflicts(sqlite);
    const [accepted] = (await loadExecution(store, executionId)).events;
    const other = openSqliteEventStore({ file: join(dir, 'events.db') });
    try {
      await runExecutionCommand(other, executionId, authorizeIfAccepted(executionId), { actor: 'service:authorization' }, systemClock);
    } finally {
      await other.close();
    }
    const outcome = await runExecutionCommand(store, executionId, authorizeIfAccepted(executionId), { actor: 'service:authorization' }, systemClock, {
      fromCacheAsOf: accepted!,
    });
    expect(conflicts()).toBe(1);
    expect(outcome.appended).toEqual([]);
    expect(outcome.state.status).toBe('authorized');
    const { events } = await loadExecution(sqlite, executionId);
    expect(events.map((event) => event.type)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized']);
  });

  it('given a cached fold that does not hold the event the command answers (another process wrote it), when the command decides as of that event, then the stream is read first: on the stale fold it would have found nothing to do', async () => {
    const executionId = await dispatchedExecution(sqlite, 1);
    const { store: counting, reads } = countingReads(sqlite);
    await loadExecution(counting, executionId);
    const other = openSqliteEventStore({ file: join(dir, 'events.db') });
    try {
      await runExecutionCommand(other, executionId, authorizeIfAccepted(executionId), { actor: 'service:authorization' }, systemClock);
    } finally {
      await other.close();
    }
    const authorized = (await sqlite.readStream(executionStream(executionId))).at(-1)!;
    expect(authorized.type).toBe('ExecutionAuthorized');
    reads.count = 0;
    const dispatchIfAuthorized = (state: { status: string }) =>
      state.status === 'authorized' ? ({ type: 'RecordDispatch', executionId, now: isoNow(systemClock), dispatcherId: 'dispatcher-http@test' } as const) : undefined;
    const outcome = await runExecutionCommand(counting, executionId, dispatchIfAuthorized, { actor: 'service:dispatcher-http' }, systemClock, { fromCacheAsOf: authorized });
    expect(reads.count).toBe(1);
    expect(outcome.appended.map((event) => event.type)).toEqual(['Dispatched']);
  });

  it('given 300 retries attaching and the outcome in one process, when all are issued at once, then none is refused for a stale revision and the outcome lands', async () => {
    const { store, conflicts } = countingConflicts(sqlite);
    const executionId = await dispatchedExecution(store);
    const attach = attachOf(store, executionId);
    const outcome = observeOutcome(store, executionId);
    const results = await Promise.allSettled([...Array.from({ length: 150 }, (_, i) => attach(i)), outcome, ...Array.from({ length: 150 }, (_, i) => attach(150 + i))]);

    expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
    expect(conflicts()).toBe(0);
    const { state, events } = await loadExecution(store, executionId);
    expect(state.status).toBe('completed');
    expect(events.filter((event) => event.type === 'RetryAttached')).toHaveLength(300);
  });

  it('given a command whose decision is refused, when later commands are queued behind it on the same execution, then they still run', async () => {
    const executionId = await dispatchedExecution(sqlite);
    const now = isoNow(systemClock);
    const refused = runExecutionCommand(sqlite, executionId, () => ({ type: 'AuthorizeExecution', executionId, now, basis: 'policy' }), { actor: 'service:authorization' }, systemClock);
    const attached = runExecutionCommand(
      sqlite,
      executionId,
      () => ({ type: 'AttachRetry', executionId, now, correlation: { jsonRpcId: 2, transport: 'streamable-http' } }),
      { actor: 'agent:test' },
      systemClock,
    );
    await expect(refused).rejects.toThrow();
    expect((await attached).appended.map((event) => event.type)).toEqual(['RetryAttached']);
  });

  it('given commands that may wait queued on one execution, then each is held only while nothing waits behind it: a burst is not held one after the other, and the last one alone is', async () => {
    // A store that would hold an append that may wait for a minute.
    const patient = openSqliteEventStore({ file: join(dir, 'events.db'), deferredWaitMs: 60_000 });
    try {
      const executionId = await dispatchedExecution(patient);
      const attach = attachOf(patient, executionId, { deferrable: true });
      const burst = Array.from({ length: 20 }, (_, i) => attach(i));
      const last = burst.at(-1)!;
      let lastSettled = false;
      void last.finally(() => (lastSettled = true));
      const held = new Promise<'held'>((resolve) => setTimeout(() => resolve('held'), 5_000));
      // Held one after the other, the first alone would take the minute.
      expect(await Promise.race([Promise.all(burst.slice(0, -1)).then(() => 'written' as const), held])).toBe('written');
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(lastSettled).toBe(false);
      // Nothing behind the last one: it waits for company, and a command that may not wait brings it along.
      const outcome = observeOutcome(patient, executionId);
      await Promise.all([last, outcome]);
      const { events } = await loadExecution(sqlite, executionId);
      expect(events.filter((event) => event.type === 'RetryAttached')).toHaveLength(20);
      expect(events.at(-1)!.type).toBe('OutcomeObserved');
    } finally {
      await patient.close();
    }
  });

  it('given several commands in one turn, then each is decided on the state the ones before it left and all are appended together, each event with its own context; one refused refuses the turn', async () => {
    const executionId = await dispatchedExecution(sqlite, 2);
    const now = isoNow(systemClock);
    const attach = (jsonRpcId: number) => ({
      command: { type: 'AttachRetry', executionId, now, correlation: { jsonRpcId, transport: 'streamable-http' } } as const,
      context: { actor: `agent:caller-${jsonRpcId}`, correlation: { jsonRpcId, transport: 'streamable-http' } as const },
    });
    const dispatchCommand = { command: { type: 'RecordDispatch', executionId, now, dispatcherId: 'dispatcher-http@test' } as const, context: { actor: 'service:dispatcher-http' } };
    const before = (await sqlite.readStream(executionStream(executionId))).length;
    const outcome = await runExecutionCommands(sqlite, executionId, () => [attach(7), dispatchCommand, attach(8)], systemClock);
    expect(outcome.appended.map((event) => event.type)).toEqual(['RetryAttached', 'Dispatched', 'RetryAttached']);
    expect(outcome.state.status).toBe('dispatched');
    const appended = (await sqlite.readStream(executionStream(executionId))).slice(before);
    expect(appended.map((event) => [event.type, event.metadata['actor']])).toEqual([
      ['RetryAttached', 'agent:caller-7'],
      ['Dispatched', 'service:dispatcher-http'],
      ['RetryAttached', 'agent:caller-8'],
    ]);
    // One append: one commit time for the three.
    expect(new Set(appended.map((event) => event.recordedAt)).size).toBe(1);
    // The second dispatch is decided on the state the first left: refused, and the attach before it is not appended.
    await expect(runExecutionCommands(sqlite, executionId, () => [attach(9), dispatchCommand], systemClock)).rejects.toThrow();
    expect(await sqlite.readStream(executionStream(executionId))).toHaveLength(before + 3);
  });
});

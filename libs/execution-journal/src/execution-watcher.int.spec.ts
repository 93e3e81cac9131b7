import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executionIdFromUlid, executionStream, type ExecutionId, type Fingerprint } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the real SQLite adapter
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
import { isoNow, systemClock } from './clock';
import { loadExecution, runExecutionCommand } from './execution-journal';
import { ExecutionWatcher } from './execution-watcher';
import { intentClaimEntry, startClaimedExecution } from './intent-claims';
import { newUlid } from './ulid';

describe('execution watcher (SQLite store)', () => {
  let dir: string;
  let sqlite: SqliteEventStore;
  let reads = 0;
  let store: EventStore;
  let watcher: ExecutionWatcher;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-watcher-'));
    sqlite = openSqliteEventStore({ file: join(dir, 'events.db') });
    reads = 0;
    store = Object.create(sqlite) as EventStore;
    store.readStream = (...args) => {
      reads += 1;
      return sqlite.readStream(...args);
    };
    watcher = new ExecutionWatcher(store);
    await watcher.start();
  });

  const others: SqliteEventStore[] = [];
  /** A second store on the same file, with a cache of its own. */
  const openedAgain = (): SqliteEventStore => {
    const other = openSqliteEventStore({ file: join(dir, 'events.db') });
    others.push(other);
    return other;
  };

  afterEach(async () => {
    for (const other of others.splice(0)) await other.close();
    await watcher.stop();
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The acceptance of a `set_config` call as execution `executionId`. */
  const acceptance = (executionId: ExecutionId, fingerprint: Fingerprint = `hmac-sha256:k1:${'cd'.repeat(32)}`) =>
    ({
      type: 'AcceptExecution',
      executionId,
      now: isoNow(systemClock),
      record: { actor: 'agent:test', tool: 'set_config', channel: 'http', target: 'test/config', credential_ref: null, method: 'PUT', arguments: {}, intent_scope: 'actor' } as never,
      fingerprint,
      operationClass: 'idempotent_write',
      intentScope: { kind: 'actor' },
      correlationWindowMs: 60_000,
      redeliveryGraceMs: 0,
      attemptPolicy: { maxAttempts: 3, attemptTimeoutMs: 5_000, markerBeforeWork: false },
      correlation: { jsonRpcId: 1, transport: 'streamable-http' },
      argumentsRef: 'sealed_arguments_1',
    }) as const;

  async function accepted(): Promise<ExecutionId> {
    const executionId = executionIdFromUlid(newUlid());
    await runExecutionCommand(store, executionId, () => acceptance(executionId), { actor: 'agent:test' }, systemClock);
    return executionId;
  }

  /** `retries` retries attach to the execution, one command each, then it is authorized. */
  async function attachThenAuthorize(executionId: ExecutionId, retries: number): Promise<void> {
    for (let i = 0; i < retries; i += 1) {
      await runExecutionCommand(
        store,
        executionId,
        () => ({ type: 'AttachRetry', executionId, now: isoNow(systemClock), correlation: { jsonRpcId: i + 2, transport: 'streamable-http' } }),
        { actor: 'agent:test' },
        systemClock,
      );
    }
    await runExecutionCommand(store, executionId, () => ({ type: 'AuthorizeExecution', executionId, now: isoNow(systemClock), basis: 'policy' }), { actor: 'agent:test' }, systemClock);
  }

  it('given 200 callers waiting on one execution, when 50 retries attach and then it is authorized, then all wake with the new state and the stream is read per change, not per caller', async () => {
    const executionId = await accepted();
    const waiting = Array.from({ length: 200 }, () => watcher.waitUntil(executionId, (state) => state.status === 'authorized', 20_000));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const before = reads;
    await attachThenAuthorize(executionId, 50);

    const woken = await Promise.all(waiting);
    expect(woken.every((execution) => execution.state.status === 'authorized')).toBe(true);
    // One read per change for the watcher and one per command for its own load: far below one per caller.
    expect(reads - before).toBeLessThan(3 * 51);
  });

  it('given callers waiting on an execution this process changes, when each change commits, then the watcher folds the delivered events into the cached execution and reads nothing', async () => {
    const executionId = await accepted();
    const waiting = Array.from({ length: 20 }, () => watcher.waitUntil(executionId, (state) => state.status === 'authorized', 20_000));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const before = reads;
    await attachThenAuthorize(executionId, 10);
    const woken = await Promise.all(waiting);
    expect(woken.every((execution) => execution.state.status === 'authorized' && execution.revision === 11)).toBe(true);
    // Only each command's own load reads (11 commands); the watcher adds nothing.
    expect(reads - before).toBe(11);
    // The cached fold equals a fresh fold of the stream.
    const fresh = await loadExecution(openedAgain(), executionId);
    expect(woken[0]!.state).toEqual(fresh.state);
    expect(woken[0]!.events.map((event) => event.id)).toEqual(fresh.events.map((event) => event.id));
  });

  it("given the waiter's own append, when it waits, then the first wait reads nothing, and a change committed by another store object wakes it from the subscription's delivery", async () => {
    const executionId = await accepted();
    const appended = { streamId: executionStream(executionId), revision: 0 };
    const before = reads;
    const waiting = watcher.waitUntil(executionId, (state) => state.status === 'authorized', 20_000, undefined, appended);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(reads - before).toBe(0);
    const other = openedAgain();
    await runExecutionCommand(other, executionId, () => ({ type: 'AuthorizeExecution', executionId, now: isoNow(systemClock), basis: 'policy' }), { actor: 'service:authorization' }, systemClock);
    const woken = await waiting;
    expect(woken.state.status).toBe('authorized');
    expect(woken.revision).toBe(1);
    expect(reads - before).toBe(0);
    // Without its own append named, the wait reads the stream first (the fold could be missing what another process wrote).
    await watcher.waitUntil(executionId, (state) => state.status === 'authorized', 1_000);
    expect(reads - before).toBe(1);
  });

  it('given an execution started with its claims, when its caller waits on its own append, then nothing is read: the commit kept the fold', async () => {
    const executionId = executionIdFromUlid(newUlid());
    const fingerprint = `hmac-sha256:k1:${'ef'.repeat(32)}` as Fingerprint;
    const claimedAt = isoNow(systemClock);
    const started = await startClaimedExecution(
      store,
      executionId,
      acceptance(executionId, fingerprint),
      [intentClaimEntry({ executionId, fingerprint, claimedAt }, undefined, 'agent:test', systemClock)],
      { actor: 'agent:test' },
      systemClock,
    );
    const before = reads;
    const latest = await watcher.waitUntil(executionId, (state) => state.status === 'accepted', 1_000, undefined, { streamId: executionStream(executionId), revision: started!.revision! });
    expect(latest.state).toEqual(started!.state);
    expect(latest.events.map((event) => event.type)).toEqual(['ExecutionAccepted']);
    expect(reads - before).toBe(0);
  });

  it('given a caller waiting for a state that never comes, when the wait runs out, then it gets the latest state', async () => {
    const executionId = await accepted();
    const latest = await watcher.waitUntil(executionId, (state) => state.status === 'completed', 100);
    expect(latest.state.status).toBe('accepted');
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ATTEMPT_REPORT_MARGIN_MS, executionStream, type ExecutionId } from '@oncegate/domain';
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
import { isoNow, loadExecution, runExecutionCommand, type Clock } from '@oncegate/execution-journal';
import { givenExecution } from './testing/execution-histories';
import { AttemptSweeper } from './attempt-sweeper';
import { InstanceLeases } from './instance-leases';

/** A clock the test moves by hand. */
class ManualClock implements Clock {
  private ms = Date.parse('2026-11-30T06:00:00.000Z');
  now(): Date {
    return new Date(this.ms);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

const TIMEOUT_MS = 5_000;
const OURS = 'dispatcher-http@here/http/100-aaaa';
const OTHER = 'dispatcher-http@there/http/200-bbbb';

describe('attempt sweeper (SQLite store, injected clock)', () => {
  let dir: string;
  let store: SqliteEventStore;
  let clock: ManualClock;
  let sweeper: AttemptSweeper;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-sweeper-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    clock = new ManualClock();
    sweeper = new AttemptSweeper({ store, clock, ownDispatcherIds: new Set([OURS]), everyMs: 60_000 });
  });

  afterEach(async () => {
    await sweeper.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const lastEvent = async (executionId: ExecutionId) => (await store.readStream(executionStream(executionId), { direction: 'backwards', maxCount: 1 }))[0]!;

  it('given an attempt of this process, when its deadline passes with no report, then it is settled as unknown (attempt_deadline_passed) and nothing before', async () => {
    const executionId = await givenExecution(store, clock, { dispatcherId: OURS, attemptTimeoutMs: TIMEOUT_MS });

    clock.advance(TIMEOUT_MS + ATTEMPT_REPORT_MARGIN_MS - 1);
    expect(await sweeper.sweep()).toEqual([]);
    expect((await loadExecution(store, executionId)).state.status).toBe('dispatched');

    clock.advance(1);
    expect(await sweeper.sweep()).toEqual([{ executionId, attempt: 1, reason: 'attempt_deadline_passed' }]);
    const settled = await lastEvent(executionId);
    expect(settled).toMatchObject({ type: 'OutcomeUnknown', data: { attempt: 1, reason: 'attempt_deadline_passed' } });
    expect(settled.metadata['actor']).toBe('service:attempt-sweeper');
    expect(await sweeper.sweep()).toEqual([]);
  });

  it('given an attempt of another process that renews its lease, when swept inside the deadline, then it is left alone', async () => {
    const other = new InstanceLeases(store, clock, [OTHER], 15_000);
    await other.start();
    const executionId = await givenExecution(store, clock, { dispatcherId: OTHER, attemptTimeoutMs: TIMEOUT_MS });
    clock.advance(TIMEOUT_MS);
    expect(await sweeper.sweep()).toEqual([]);
    expect((await loadExecution(store, executionId)).state.status).toBe('dispatched');
    await other.stop();
  });

  it('given an attempt of another process, when its lease runs out before the deadline, then it is settled as lost (dispatcher_lost)', async () => {
    await store.renewLease(OTHER, new Date(clock.now().getTime() + 2_000).toISOString());
    const executionId = await givenExecution(store, clock, { dispatcherId: OTHER, attemptTimeoutMs: TIMEOUT_MS });
    clock.advance(1_999);
    expect(await sweeper.sweep()).toEqual([]);
    clock.advance(1);
    expect(await sweeper.sweep()).toEqual([{ executionId, attempt: 1, reason: 'dispatcher_lost' }]);
  });

  it('given attempts whose dispatcher never held a lease or released it, when swept, then they are settled as lost at once', async () => {
    const stopped = new InstanceLeases(store, clock, [OTHER], 15_000);
    await stopped.start();
    const fromStopped = await givenExecution(store, clock, { dispatcherId: OTHER });
    await stopped.stop();
    const fromBeforeLeases = await givenExecution(store, clock, { dispatcherId: 'dispatcher-http@old-host/http' });
    const settled = await sweeper.sweep();
    expect(new Set(settled)).toEqual(
      new Set([
        { executionId: fromStopped, attempt: 1, reason: 'dispatcher_lost' },
        { executionId: fromBeforeLeases, attempt: 1, reason: 'dispatcher_lost' },
      ]),
    );
  });

  it('given a sweeper restarted on the same store, when an attempt from before the restart is still in flight, then it is still found', async () => {
    const executionId = await givenExecution(store, clock, { dispatcherId: OURS, attemptTimeoutMs: TIMEOUT_MS });
    await givenExecution(store, clock, { dispatcherId: 'dispatcher-http@old-host/http' });
    await sweeper.sweep();
    const restarted = new AttemptSweeper({ store, clock, ownDispatcherIds: new Set(), everyMs: 60_000 });
    clock.advance(TIMEOUT_MS + ATTEMPT_REPORT_MARGIN_MS);
    expect(await restarted.sweep()).toEqual([{ executionId, attempt: 1, reason: 'dispatcher_lost' }]);
  });

  it('given an execution not yet dispatched, when swept past any deadline, then it is not touched', async () => {
    const executionId = await givenExecution(store, clock, { through: 'authorized' });
    clock.advance(10 * 60_000);
    expect(await sweeper.sweep()).toEqual([]);
    expect((await loadExecution(store, executionId)).state.status).toBe('authorized');
  });

  it('given attempts that reported before the look, when swept, then none of their executions is read, and the one still in flight is', async () => {
    const reported: ExecutionId[] = [];
    for (let i = 0; i < 20; i += 1) {
      const executionId = await givenExecution(store, clock, { dispatcherId: OURS, attemptTimeoutMs: TIMEOUT_MS });
      await runExecutionCommand(
        store,
        executionId,
        (s) => ({ type: 'ObserveOutcome', executionId, now: isoNow(clock), attempt: s.attempts, outcome: 'succeeded', source: 'response', targetStatus: 200, exitCode: null, resultRef: null, resultDigest: null }),
        { actor: 'agent:test' },
        clock,
      );
      reported.push(executionId);
    }
    const inFlight = await givenExecution(store, clock, { dispatcherId: OURS, attemptTimeoutMs: TIMEOUT_MS });
    const read: string[] = [];
    const counted = new Proxy(store, {
      get(target, property, receiver) {
        if (property === 'readStream') return (streamId: string, options?: unknown) => (read.push(streamId), target.readStream(streamId, options as never));
        const value = Reflect.get(target, property, receiver) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    clock.advance(TIMEOUT_MS + ATTEMPT_REPORT_MARGIN_MS);
    const looking = new AttemptSweeper({ store: counted, clock, ownDispatcherIds: new Set([OURS]), everyMs: 60_000 });
    expect(await looking.sweep()).toEqual([{ executionId: inFlight, attempt: 1, reason: 'attempt_deadline_passed' }]);
    expect(read.filter((stream) => reported.some((id) => stream === executionStream(id)))).toEqual([]);
    expect(read).toContain(executionStream(inFlight));
  });
});

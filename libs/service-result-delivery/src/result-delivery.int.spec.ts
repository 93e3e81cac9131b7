import type { INestMicroservice } from '@nestjs/common';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { executionIdFromUlid, type ExecutionCommand, type ExecutionId } from '@oncegate/domain';
import { acceptExecution, answered, authorize, dispatch, observe } from '@oncegate/domain/testing';
import type { PostgresEventStore } from '@oncegate/event-store-postgres';
import type { StorePair } from '@oncegate/event-store/testing';
import { openPostgresStorePair } from '@oncegate/event-store-postgres/testing';
import { isoNow, loadExecution, newUlid, runExecutionCommand, systemClock } from '@oncegate/execution-journal';
import { createEventStoreMicroservice, EventStoreTransport } from '@oncegate/nest-event-store';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-PostgreSQL harness
import { sharedPostgres } from '../../../test/support/shared-servers';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the polling the gateway's tests use
import { eventually } from '../../../test/support/journal';
import { DeliveryTracker } from './callers';
import { ResultDeliveryModule } from './result-delivery.module';

/** How long a new execution's caller waits before it is shown, and by when it is, in these tests. */
const SHOW_AFTER_MS = 100;
const SHOWN_WITHIN_MS = 600;

/**
 * Result delivery in a process of its own, on PostgreSQL, with a front's callers in another store object: the
 * outcomes a caller was answered with cost it no read of the callers, and one nobody waited for is recorded as not
 * delivered once the callers have had the time to show.
 */
describe('result delivery apart from the front (PostgreSQL)', () => {
  let stores: StorePair<PostgresEventStore>;
  let front: PostgresEventStore;
  let delivery: PostgresEventStore;
  let callers: DeliveryTracker;
  let app: INestMicroservice | undefined;
  let transport: EventStoreTransport;
  /** Events the service has handled (only the types it has handlers for). */
  let handled: number;

  const shared = (store: PostgresEventStore, instance: string) =>
    new DeliveryTracker({ store, instance, leaseMs: 60_000, clock: systemClock, showAfterMs: SHOW_AFTER_MS, shownWithinMs: SHOWN_WITHIN_MS });

  beforeEach(async () => {
    stores = await openPostgresStorePair((await sharedPostgres()).url(), 'result_delivery');
    ({ first: front, second: delivery } = stores);
    callers = shared(front, 'host/front-1');
    handled = 0;
    transport = new EventStoreTransport({ store: delivery, consumer: 'result-delivery', took: () => (handled += 1) });
    const deliveries = shared(delivery, 'host/delivery-1');
    app = await createEventStoreMicroservice(ResultDeliveryModule.forRoot({ store: delivery, deliveries, clock: systemClock }), transport, { logger: false });
    await app.listen();
  });

  afterEach(async () => {
    callers.stop();
    await app?.close();
    app = undefined;
    await stores.close();
  });

  /** A step of the execution by another process (the gateway, authorization, a dispatcher). */
  const step = (executionId: ExecutionId, command: ExecutionCommand) =>
    runExecutionCommand(front, executionId, () => ({ ...command, executionId, now: isoNow(systemClock) }) as ExecutionCommand, { actor: 'service:test' }, systemClock);

  const completed = async (): Promise<ExecutionId> => {
    const executionId = executionIdFromUlid(newUlid());
    for (const command of [acceptExecution(), authorize(), dispatch(), observe()]) await step(executionId, command);
    return executionId;
  };

  const eventTypes = async (executionId: ExecutionId) => (await delivery.readStream(`execution-${executionId}`)).map((event) => event.type);

  it('given a caller answered with the outcome at once, then result delivery reads no lease, and the front wrote none', async () => {
    const reads = vi.spyOn(delivery, 'readLeases');
    const writes = vi.spyOn(front, 'renewLeases');
    const executionId = executionIdFromUlid(newUlid());
    const release = callers.register(executionId, 'when_long');
    for (const command of [acceptExecution(), authorize(), dispatch(), observe()]) await step(executionId, command);
    await step(executionId, answered({ state: 'completed' }));
    release();
    // Past the time by which a caller still waiting would have shown, and the check that would follow.
    await new Promise((resolve) => setTimeout(resolve, SHOWN_WITHIN_MS + 400));
    expect(await eventTypes(executionId)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeObserved', 'AnswerGiven']);
    expect(reads).not.toHaveBeenCalled();
    expect(writes).not.toHaveBeenCalled();
  });

  it('given an outcome nobody waits for, then it is recorded as not delivered once the callers had the time to show', async () => {
    const executionId = await completed();
    const observedAt = Date.now();
    const types = await eventually(async () => {
      const recorded = await eventTypes(executionId);
      return recorded.includes('ResultDeliveryFailed') ? recorded : undefined;
    }, 5_000);
    expect(Date.now() - observedAt).toBeGreaterThanOrEqual(SHOWN_WITHIN_MS - 50);
    expect(types.at(-1)).toBe('ResultDeliveryFailed');
    expect((await loadExecution(delivery, executionId)).state.status).toBe('completed_result_not_delivered');
  });

  it('given a caller that still waits after the outcome (its delivery not settled), then it is shown in time and nothing is recorded for it', async () => {
    const executionId = executionIdFromUlid(newUlid());
    const release = callers.register(executionId, 'when_long');
    for (const command of [acceptExecution(), authorize(), dispatch(), observe()]) await step(executionId, command);
    const reads = vi.spyOn(delivery, 'readLeases');
    await eventually(() => (reads.mock.calls.length > 0 ? true : undefined), 5_000, 'result delivery read the callers');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await eventTypes(executionId)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeObserved']);
    release();
  });

  it('given an answer that told a state before the outcome, recorded after it, then the outcome is still checked', async () => {
    const executionId = await completed();
    // A call that gave up waiting was told "dispatched"; its record, deferred, lands after the outcome.
    await step(executionId, answered({ state: 'dispatched' }));
    await eventually(async () => ((await eventTypes(executionId)).includes('ResultDeliveryFailed') ? true : undefined), 5_000);
  });

  it('given outcomes still to be checked when the service stops, then it checks them before it ends', async () => {
    const executionId = await completed();
    // The outcome handled: the service resumes past it, so its check is this process's to make.
    await eventually(() => (handled >= 1 ? true : undefined), 5_000, 'the outcome handled');
    const stopping = Date.now();
    await app!.close();
    app = undefined;
    expect(Date.now() - stopping).toBeLessThan(SHOWN_WITHIN_MS + 2_000);
    expect((await eventTypes(executionId)).at(-1)).toBe('ResultDeliveryFailed');
  });
});

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { executionIdFromUlid, type ExecutionId } from '@oncegate/domain';
import type { PostgresEventStore } from '@oncegate/event-store-postgres';
import type { StorePair } from '@oncegate/event-store/testing';
import { openPostgresStorePair } from '@oncegate/event-store-postgres/testing';
import { newUlid, systemClock } from '@oncegate/execution-journal';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-PostgreSQL harness
import { sharedPostgres } from '../../../test/support/shared-servers';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the polling the gateway's tests use
import { eventually } from '../../../test/support/journal';
import { DeliveryTracker } from './callers';

/** A front's caller tracker on PostgreSQL, read by result delivery through a store object of its own. */
describe('DeliveryTracker (PostgreSQL, result delivery in another store object)', () => {
  let stores: StorePair<PostgresEventStore>;
  let front: PostgresEventStore;
  let delivery: PostgresEventStore;
  let tracker: DeliveryTracker;
  let reader: DeliveryTracker;

  beforeEach(async () => {
    stores = await openPostgresStorePair((await sharedPostgres()).url(), 'callers');
    ({ first: front, second: delivery } = stores);
    tracker = new DeliveryTracker({ store: front, instance: 'host/front-1', leaseMs: 60_000, clock: systemClock });
    reader = new DeliveryTracker({ store: delivery, instance: 'host/delivery-1', leaseMs: 60_000, clock: systemClock });
  });

  afterEach(async () => {
    await stores.close();
  });

  const executions = (count: number): ExecutionId[] => Array.from({ length: count }, () => executionIdFromUlid(newUlid()));

  it('given calls starting together, when their callers register, then one statement shows them all, each visible to result delivery once its own wait ends', async () => {
    const one = vi.spyOn(front, 'renewLease');
    const many = vi.spyOn(front, 'renewLeases');
    const ids = executions(20);
    const releases = ids.map((id) => tracker.register(id));
    await Promise.all(ids.map((id) => tracker.visible(id)));
    expect(one).not.toHaveBeenCalled();
    expect(many).toHaveBeenCalledTimes(1);
    expect(many.mock.calls[0]![0]).toHaveLength(20);
    for (const id of ids) expect(await reader.waiting(id)).toBe(true);

    const dropOne = vi.spyOn(front, 'releaseLease');
    const dropMany = vi.spyOn(front, 'releaseLeases');
    for (const release of releases) release();
    await Promise.all(ids.map((id) => tracker.visible(id)));
    expect(dropOne).not.toHaveBeenCalled();
    expect(dropMany).toHaveBeenCalledTimes(1);
    for (const id of ids) expect(await reader.waiting(id)).toBe(false);
  });

  it('given a caller that leaves and another that comes while a write is on its way, then the last change wins, in order', async () => {
    const [first, second] = executions(2) as [ExecutionId, ExecutionId];
    const leave = tracker.register(first);
    const visible = tracker.visible(first);
    // Queued behind the write on its way: a drop, then a new caller of the same execution.
    leave();
    tracker.register(first);
    const goneSoon = tracker.register(second);
    goneSoon();
    await visible;
    await tracker.visible(first);
    await tracker.visible(second);
    expect(await reader.waiting(first)).toBe(true);
    expect(await reader.waiting(second)).toBe(false);
    // A second caller of one execution adds no write; the execution stays shown until its last caller leaves.
    const renewals = vi.spyOn(front, 'renewLeases');
    const again = tracker.register(first);
    expect(renewals).not.toHaveBeenCalled();
    again();
    expect(tracker.hasCaller(first)).toBe(true);
    expect(await reader.waiting(first)).toBe(true);
  });

  it('given callers of new executions, then only one still waiting after a while writes a lease, and a count that must include it waits until it would show', async () => {
    const options = { leaseMs: 60_000, clock: systemClock, showAfterMs: 100, shownWithinMs: 600 };
    const lazy = new DeliveryTracker({ store: front, instance: 'host/front-2', ...options });
    const lazyReader = new DeliveryTracker({ store: delivery, instance: 'host/delivery-2', ...options });
    const writes = vi.spyOn(front, 'renewLeases');
    const [quick, slow] = executions(2) as [ExecutionId, ExecutionId];
    const since = Date.now();
    const quickGone = lazy.register(quick, 'when_long');
    const slowGone = lazy.register(slow, 'when_long');
    quickGone();
    // Read at once, the caller has not shown yet; read as a first caller to count, the read waits until it would.
    expect(await lazyReader.waiting(slow)).toBe(false);
    expect(await lazyReader.waiting(slow, since)).toBe(true);
    expect(Date.now() - since).toBeGreaterThanOrEqual(590);
    expect(writes).toHaveBeenCalledTimes(1);
    expect(writes.mock.calls[0]![0]).toEqual([`caller:${slow}/host/front-2`]);
    expect(await lazyReader.waiting(quick, since)).toBe(false);

    slowGone();
    await eventually(async () => ((await lazyReader.waiting(slow)) ? undefined : true), 5_000, 'the lease dropped');
    // A caller that attaches is shown at once.
    const attachedGone = lazy.register(quick);
    await lazy.visible(quick);
    expect(await lazyReader.waiting(quick)).toBe(true);
    attachedGone();
    lazy.stop();
  });
});

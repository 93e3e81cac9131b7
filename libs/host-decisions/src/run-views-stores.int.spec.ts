import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { EventStore } from '@oncegate/event-store';
import type { StorePair } from '@oncegate/event-store/testing';
import { openPostgresStorePair } from '@oncegate/event-store-postgres/testing';
import { openSqliteStorePair } from '@oncegate/event-store-sqlite/testing';
import { systemClock } from '@oncegate/execution-journal';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-PostgreSQL harness
import { sharedPostgres } from '../../../test/support/shared-servers';
import { endRun, grantRun, RunViews, startRun } from './run-journal';

/** Authorization's store object (`first`) and another one on the same store, and how the first hears a commit. */
interface Stores extends StorePair<EventStore> {
  /** Until authorization has heard of the commit at `position`, as it has of the event it then handles. */
  hear(position: number): Promise<void>;
}

const STORES: Array<[string, () => Promise<Stores>]> = [
  [
    'PostgreSQL',
    async () => {
      const pair = await openPostgresStorePair((await sharedPostgres()).url(), 'runs');
      // Its notification.
      const hear = (position: number) =>
        vi.waitFor(async () => expect((await pair.first.notifiedSince(0, []))?.through).toBeGreaterThanOrEqual(position), { timeout: 5_000 });
      return { ...pair, hear };
    },
  ],
  [
    'SQLite',
    async () => {
      const pair = openSqliteStorePair();
      // Read, as its subscription reads another process's events.
      const hear = async (position: number) => {
        expect((await pair.first.readAll({ after: position - 1, maxCount: 1 })).events.map((event) => event.position)).toEqual([position]);
      };
      return { ...pair, hear };
    },
  ],
];

/**
 * The runs authorization asks about on every call, as the split services run them: authorization's store object
 * tells which event types were committed since a position; the gateway and the operator commit through store
 * objects of their own.
 */
describe.each(STORES)('RunViews (%s event store, runs changed in another store object)', (_kind, open) => {
  let stores: Stores;
  let authorization: EventStore;
  let elsewhere: EventStore;

  beforeEach(async () => {
    stores = await open();
    ({ first: authorization, second: elsewhere } = stores);
  });

  afterEach(async () => {
    await stores.close();
  });

  /** A call's first event, committed by the gateway, and heard by authorization (as the event it then handles). */
  const callAccepted = async (n: number) => {
    const { position } = await elsewhere.appendToStream(`execution-${n}`, [{ type: 'ExecutionAccepted', data: {} }]);
    await stores.hear(position);
  };

  it('given a run read once, when calls commit and nothing of any run changes, then it is not read again; a grant and an end committed elsewhere before a call are seen at that call', async () => {
    await startRun(elsewhere, { runId: 'session:s1', actor: 'agent:a', source: 'session' }, systemClock);
    const views = new RunViews(authorization);
    const reads = vi.spyOn(authorization, 'readStream');
    await callAccepted(0);
    expect(await views.current('session:s1')).toMatchObject({ actor: 'agent:a', grants: [], ended: null });
    expect(reads).toHaveBeenCalledTimes(1);
    for (let n = 1; n <= 5; n += 1) {
      await callAccepted(n);
      expect(await views.current('session:s1')).toMatchObject({ grants: [], ended: null });
    }
    expect(reads).toHaveBeenCalledTimes(1);

    await grantRun(elsewhere, { runId: 'session:s1', tools: ['deploy_release'], by: 'approver:ops', reason: 'for this run', executionId: 'x' }, systemClock);
    await callAccepted(6);
    expect((await views.current('session:s1'))?.grants.map((grant) => grant.tools)).toEqual([['deploy_release']]);
    expect(reads).toHaveBeenCalledTimes(2);

    await endRun(elsewhere, 'session:s1', 'operator:test', 'the session was closed', systemClock);
    await callAccepted(7);
    expect((await views.current('session:s1'))?.ended).toMatchObject({ by: 'operator:test' });
    expect(reads).toHaveBeenCalledTimes(3);
  });

  it('given a run never started, when it is asked for, then it is undefined and asked of the store again next time', async () => {
    const views = new RunViews(authorization);
    const reads = vi.spyOn(authorization, 'readStream');
    await callAccepted(0);
    expect(await views.current('session:none')).toBeUndefined();
    await callAccepted(1);
    expect(await views.current('session:none')).toBeUndefined();
    expect(reads).toHaveBeenCalledTimes(2);
  });
});

describe('RunViews (SQLite event store, a run ended by another process a moment ago)', () => {
  it('given a run read once, when another store object on the file ends it, then the next ask sees the end at once, with nothing of it heard or read before', async () => {
    const { first: authorization, second: cli, close } = openSqliteStorePair();
    try {
      await startRun(authorization, { runId: 'session:s1', actor: 'agent:a', source: 'session' }, systemClock);
      const views = new RunViews(authorization);
      expect((await views.current('session:s1'))?.ended).toBeNull();
      await endRun(cli, 'session:s1', 'operator:test', 'agent finished', systemClock);
      expect((await views.current('session:s1'))?.ended).toMatchObject({ by: 'operator:test' });
    } finally {
      await close();
    }
  });
});

import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openPostgresEventStore, type PostgresEventStore } from '@oncegate/event-store-postgres';
import { systemClock } from '@oncegate/execution-journal';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-PostgreSQL harness
import { sharedPostgres } from '../../../test/support/shared-servers';
import { endRun, grantRun, RunViews, startRun } from './run-journal';

/**
 * The runs authorization asks about on every call, on PostgreSQL as the split services run it: authorization's store
 * object hears the store's notifications; the gateway and the operator commit through store objects of their own.
 */
describe('RunViews (PostgreSQL event store, runs changed in another store object)', () => {
  let url: string;
  let schema: string;
  let authorization: PostgresEventStore;
  let elsewhere: PostgresEventStore;

  beforeEach(async () => {
    url = (await sharedPostgres()).url();
    schema = `runs_${randomBytes(6).toString('hex')}`;
    authorization = await openPostgresEventStore({ url, schema });
    elsewhere = await openPostgresEventStore({ url, schema });
  });

  afterEach(async () => {
    await authorization.close();
    await elsewhere.close();
    const client = new Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  });

  /** A call's first event, committed by the gateway, and heard by authorization (as the event it then handles). */
  const callAccepted = async (n: number) => {
    const { position } = await elsewhere.appendToStream(`execution-${n}`, [{ type: 'ExecutionAccepted', data: {} }]);
    await vi.waitFor(async () => expect((await authorization.notifiedSince(0, []))?.through).toBeGreaterThanOrEqual(position), { timeout: 5_000 });
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

import { describe, it } from 'vitest';
import { decisionsFromTheBus, relayThroughKills, relayThroughOutage, relayWorldOnOwnBroker } from '../e2e/relay-kafka-world';

const EXECUTIONS = 10_000;
const OUTAGE_MS = 30_000;

describe('soak: the Kafka relay over 10,000 executions and a 30 s broker outage (a broker of its own)', () => {
  const on = relayWorldOnOwnBroker();

  it(`given ${EXECUTIONS.toLocaleString('en')} executions through the gateway, when the relay is killed with kill -9 three times at random moments and restarted, then every event is on the bus at least once, in the store's order per execution, and deduplicated by ce_id they are exactly the journal`, async () => {
    await relayThroughKills(on.world, EXECUTIONS);
  });

  it(`given the broker stopped for ${OUTAGE_MS / 1000} s while calls go on, then the gateway keeps serving, the relay lags without losing anything, and it catches up after the broker is back`, async () => {
    await relayThroughOutage(on.world, on.broker, OUTAGE_MS);
  });

  it('given a call waiting for approval, when an approver decides on the decisions topic, then the call is released exactly once', async () => {
    await decisionsFromTheBus(on.world);
  });
});

import { describe, it } from 'vitest';
import { decisionsFromTheBus, everyEventOnceOnTheBus, relayThroughKills, relayThroughOutage, relayWorldOnOwnBroker } from '../e2e/relay-kafka-world';

/** `ONCEGATE_SOAK_RELAY_EXECUTIONS` sets another count (the acceptance trial of exactly-once publishing ran 3,000). */
const EXECUTIONS = Number(process.env['ONCEGATE_SOAK_RELAY_EXECUTIONS'] ?? 10_000);
const OUTAGE_MS = 30_000;

describe(`soak: the Kafka relay over ${EXECUTIONS.toLocaleString('en')} executions with three kill -9 and a 30 s broker outage (a fresh broker of its own)`, () => {
  const on = relayWorldOnOwnBroker({ decisionsTopicLater: true });

  it('given a decisions topic created only after the relay started, when an approver decides on it, then the call is released exactly once', async () => {
    await decisionsFromTheBus(on.world);
  });

  it(`given ${EXECUTIONS.toLocaleString('en')} executions through the gateway, when the relay is killed with kill -9 three times at random moments and restarted, then a read_committed consumer finds every event on the bus exactly once, in the store's order per execution`, async () => {
    await relayThroughKills(on.world, EXECUTIONS);
  });

  it(`given the broker stopped for ${OUTAGE_MS / 1000} s while calls go on, then the gateway keeps serving, the relay lags without losing anything, and it catches up after the broker is back`, async () => {
    await relayThroughOutage(on.world, on.broker, OUTAGE_MS);
  });

  it('given all of it, then a read_committed consumer finds every event of the journal on the bus exactly once', async () => {
    const { events, messages } = await everyEventOnceOnTheBus(on.world);
    console.log(`relay soak: ${events} events, ${messages} messages on the bus, 0 missing, 0 duplicates`);
  });
});

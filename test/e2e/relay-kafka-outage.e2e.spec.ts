import { describe, it } from 'vitest';
import { decisionsFromTheBus, everyEventOnceOnTheBus, relayThroughOutage, relayWorldOnOwnBroker } from './relay-kafka-world';

/**
 * Longer than the Kafka client's retries of a send (about half a minute, docs/bus.md), so the relay's own retry after
 * a failed send is what carries it through. The file waits more than it works: it runs beside the others.
 */
const OUTAGE_MS = 30_000;

describe('the Kafka relay on a fresh broker of its own, through a broker outage (the test stops and starts the broker)', () => {
  // The decisions topic does not exist when the relay starts: the broker creates it when the first decision comes.
  const on = relayWorldOnOwnBroker({ decisionsTopicLater: true });

  it('given a decisions topic created only after the relay started (a fresh broker that creates topics on first use), when an approver decides on it, then the call is released exactly once and every decision is answered', async () => {
    await decisionsFromTheBus(on.world);
  }, 180_000);

  it(`given the broker stopped for ${OUTAGE_MS / 1000} s while calls go on, then the gateway keeps serving, the relay lags without losing anything, and it catches up after the broker is back`, async () => {
    await relayThroughOutage(on.world, on.broker, OUTAGE_MS);
  }, 240_000);

  it('given all of it, then a read_committed consumer finds every event of the journal on the bus exactly once', async () => {
    const { events, messages } = await everyEventOnceOnTheBus(on.world);
    console.log(`relay: ${events} events, ${messages} messages on the bus`);
  }, 180_000);
});

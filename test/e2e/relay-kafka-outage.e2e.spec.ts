import { describe, it } from 'vitest';
import { relayThroughOutage, relayWorldOnOwnBroker } from './relay-kafka-world';

/**
 * Longer than the Kafka client's retries of a send (about half a minute, docs/bus.md), so the relay's own retry after
 * a failed send is what carries it through. The file waits more than it works: it runs beside the others.
 */
const OUTAGE_MS = 30_000;

describe('the Kafka relay through a broker outage (a broker of its own, which the test stops and starts)', () => {
  const on = relayWorldOnOwnBroker();

  it(`given the broker stopped for ${OUTAGE_MS / 1000} s while calls go on, then the gateway keeps serving, the relay lags without losing anything, and it catches up after the broker is back`, async () => {
    await relayThroughOutage(on.world, on.broker, OUTAGE_MS);
  }, 240_000);
});

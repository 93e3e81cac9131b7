import { afterAll, beforeAll, describe, it } from 'vitest';
import { startKafka, type KafkaHandle } from '../support/kafka';
import { RelayWorld, relayThroughOutage } from './relay-kafka-world';

/**
 * Longer than the Kafka client's retries of a send (about half a minute, docs/bus.md), so the relay's own retry after
 * a failed send is what carries it through. The file waits more than it works: it runs beside the others.
 */
const OUTAGE_MS = 30_000;

describe('the Kafka relay through a broker outage (a broker of its own, which the test stops and starts)', () => {
  let broker: KafkaHandle;
  let world: RelayWorld;

  beforeAll(async () => {
    broker = await startKafka();
    world = await RelayWorld.start(broker.brokers, 'oncegate');
  }, 240_000);

  afterAll(async () => {
    await world?.stop();
    await broker?.stop();
  });

  it(`given the broker stopped for ${OUTAGE_MS / 1000} s while calls go on, then the gateway keeps serving, the relay lags without losing anything, and it catches up after the broker is back`, async () => {
    await relayThroughOutage(world, broker, OUTAGE_MS);
  }, 240_000);
});

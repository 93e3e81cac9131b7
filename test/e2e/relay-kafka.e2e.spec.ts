import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService } from '@oncegate/deploy-local';
import { eventually } from '../support/journal';
import { sharedKafka } from '../support/shared-servers';
import { decisionsFromTheBus, RelayWorld, relayThroughKills } from './relay-kafka-world';

/** A bounded sample: `npm run soak` runs 10,000 executions (test/soak/relay-kafka.soak.spec.ts). */
const EXECUTIONS = 1_000;

describe('the Kafka relay (the run\'s Apache Kafka 4.1.1 broker, KRaft, one node; the gateway and the relay as processes of their own)', () => {
  let world: RelayWorld;

  beforeAll(async () => {
    const broker = await sharedKafka();
    world = await RelayWorld.start(broker.brokers, broker.topicPrefix('oncegate'));
  }, 240_000);

  afterAll(async () => {
    await world?.stop();
  });

  it('given the relay started as a process, when it has relayed the journal so far and listens for decisions, then it has printed no TimeoutNegativeWarning', async () => {
    const { head } = await world.checkpoint();
    const relay = await startService('relay-kafka', { configFile: world.relayConfig, cwd: world.folder.dir });
    try {
      // Its producer and its decisions consumer have both had answers from the broker by then.
      await eventually(async () => ((await world.checkpoint()).relayed >= Math.max(head, 1) ? true : undefined), 60_000, 'the relay to reach the head it started at');
    } finally {
      await relay.stop();
    }
    expect(relay.output()).not.toContain('TimeoutNegativeWarning');
  }, 120_000);

  it(`given ${EXECUTIONS.toLocaleString('en')} executions through the gateway, when the relay is killed with kill -9 three times at random moments and restarted, then a read_committed consumer finds every event on the bus exactly once, in the store's order per execution`, async () => {
    await relayThroughKills(world, EXECUTIONS);
  }, 300_000);

  it('given a call waiting for approval, when an approver decides on the decisions topic, then the call is released exactly once, and a second decision and an unknown approver are refused on the reply topic', async () => {
    await decisionsFromTheBus(world);
  }, 120_000);
});

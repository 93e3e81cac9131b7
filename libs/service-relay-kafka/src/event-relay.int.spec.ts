import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConsoleLogger } from '@nestjs/common';
import { Kafka, logLevel, type KafkaMessage } from 'kafkajs';
import { afterEach, beforeAll, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { systemClock } from '@oncegate/execution-journal';
import type { KafkaConfig } from '@oncegate/host-config';
/* eslint-disable @nx/enforce-module-boundaries -- the broker the tests run, and the polling every suite uses */
import { eventually } from '../../../test/support/journal';
import { startKafka } from '../../../test/support/kafka';
import { sharedKafka, type SharedKafka } from '../../../test/support/shared-servers';
/* eslint-enable @nx/enforce-module-boundaries */
import { BusProducer, busClient } from './bus-client';
import { busPublisher, type BusPublisher } from './bus-publisher';
import { readCloudEvent } from './cloud-events';
import { EventRelay, RELAY_CONSUMER } from './event-relay';

const logger = new ConsoleLogger({ logLevels: ['error', 'warn'] });

describe('the event relay (SQLite event store, a real Kafka broker)', () => {
  let broker: SharedKafka;
  let dir: string;
  let store: EventStore;
  let config: KafkaConfig;
  let topic: string;
  /** Where the test's relays and checks connect: the shared broker, or one the test stops. */
  let brokers: string[];
  const running: Array<{ relay: EventRelay; publisher: BusPublisher; producer: BusProducer }> = [];

  // The run's broker; each test relays to topics of its own.
  beforeAll(async () => {
    broker = await sharedKafka();
  }, 180_000);

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-relay-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    topic = broker.topicPrefix('relay');
    brokers = broker.brokers;
    config = {
      brokers,
      clientId: 'relay-test',
      source: 'oncegate-test',
      routes: [{ topic: `${topic}.vault`, eventTypes: null, streams: ['vault'] }],
      defaultTopic: topic,
      leaseMs: 600,
      decisions: null,
      delivery: 'exactly_once',
      transactionalId: `${topic}.relay`,
      checkpointTopic: `${topic}.checkpoints`,
    };
  });
  afterEach(async () => {
    for (const { relay, publisher, producer } of running.splice(0)) {
      await relay.stop();
      await publisher.close();
      await producer.close();
    }
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const relayOn = (owner: string) => {
    const kafka = busClient(config, logger, 'relay-test');
    const producer = new BusProducer(kafka);
    const publisher = busPublisher(kafka, producer, config);
    const relay = new EventRelay({ store, publisher, config, clock: systemClock, logger, owner });
    relay.start();
    running.push({ relay, publisher, producer });
    return relay;
  };

  /**
   * Reads `topics` from the beginning as a consumer with `isolation.level=read_committed` (kafkajs's default) until it
   * has `count` messages, and goes on reading `settleMs` more (to see a duplicate that would come after).
   */
  const consume = async (topics: string[], count: number, settleMs = 0): Promise<Array<{ topic: string; message: KafkaMessage }>> => {
    const kafka = new Kafka({ clientId: 'relay-check', brokers, logLevel: logLevel.NOTHING });
    // A fetch that finds nothing new waits this long for more (5 s by default), and disconnecting waits for that fetch.
    const consumer = kafka.consumer({ groupId: `check-${randomUUID()}`, readUncommitted: false, maxWaitTimeInMs: 100 });
    const received: Array<{ topic: string; message: KafkaMessage }> = [];
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ topic: from, message }) => void received.push({ topic: from, message }) });
    try {
      await eventually(() => (received.length >= count ? true : undefined), 30_000, `${count} messages on ${topics.join(', ')}`);
      if (settleMs > 0) await new Promise((resolve) => setTimeout(resolve, settleMs));
      return received;
    } finally {
      await consumer.disconnect();
    }
  };

  it.each(['exactly_once', 'at_least_once'] as const)('given events on several streams, when relayed (%s), then each arrives once as a CloudEvent on its topic, in order per stream, and the checkpoint is the head', async (delivery) => {
    config = { ...config, delivery };
    for (let i = 0; i < 30; i += 1) {
      await store.appendToStream(`execution-ex_01JZ8Q4V5W6X7Y8Z9A0B1C2D${String(i % 3).padStart(2, '0')}`, [{ type: 'Dispatched', data: { i }, metadata: { actor: 'service:dispatcher-http', schemaVersion: 1 } }]);
      if (i % 10 === 0) await store.appendToStream('vault-main', [{ type: 'VaultUnlocked', data: { i } }]);
    }
    const relay = relayOn('relay-a');
    const head = await store.headPosition();
    await eventually(() => (relay.progress().relayed === head ? true : undefined), 30_000, 'the relay to reach the head');
    expect(await store.readCheckpoint(RELAY_CONSUMER)).toBe(head);

    const received = await consume([topic, `${topic}.vault`], head);
    const events = received.map(({ topic: from, message }) => ({ from, event: readCloudEvent(message) }));
    expect(events).toHaveLength(33);
    expect(new Set(events.map(({ event }) => event.id)).size).toBe(33);
    expect(events.filter(({ from }) => from === `${topic}.vault`).map(({ event }) => event.type)).toEqual(['VaultUnlocked', 'VaultUnlocked', 'VaultUnlocked']);
    for (const key of new Set(events.map(({ event }) => event.key))) {
      const positions = events.filter(({ event }) => event.key === key).map(({ event }) => event.position);
      expect(positions).toEqual([...positions].sort((a, b) => a - b));
    }
    expect(events.find(({ event }) => event.type === 'Dispatched')!.event).toMatchObject({ key: expect.stringMatching(/^ex_/), subject: expect.stringMatching(/^execution-ex_/), source: 'oncegate-test' });
  });

  it.each(['exactly_once', 'at_least_once'] as const)('given two relays on one store (%s), then one publishes; when it stops, the other takes over from the checkpoint and nothing is lost or sent twice', async (delivery) => {
    config = { ...config, delivery };
    for (let i = 0; i < 20; i += 1) await store.appendToStream(`run-r${i % 4}`, [{ type: 'RunStarted', data: { i } }]);
    const first = relayOn('relay-a');
    await eventually(() => (first.progress().relayed === 20 ? true : undefined), 30_000, 'the first relay to publish');
    const second = relayOn('relay-b');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(second.progress().publishing).toBe(false);

    await first.stop();
    for (let i = 20; i < 40; i += 1) await store.appendToStream(`run-r${i % 4}`, [{ type: 'RunStarted', data: { i } }]);
    await eventually(() => (second.progress().relayed === 40 ? true : undefined), 30_000, 'the second relay to take over');
    expect(second.progress()).toMatchObject({ publishing: true, sent: 20 });
    const received = await consume([topic], 40, 500);
    expect(received.map(({ message }) => readCloudEvent(message).position).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
  });

  it('given the broker away, when events are appended, then the checkpoint stays where the broker last acknowledged, and moves on once it is back', async () => {
    // A broker of its own: this test stops it.
    const own = await startKafka();
    onTestFinished(() => own.stop());
    brokers = own.brokers;
    config = { ...config, brokers };
    await store.appendToStream('run-r1', [{ type: 'RunStarted', data: {} }]);
    const relay = relayOn('relay-a');
    await eventually(() => (relay.progress().relayed === 1 ? true : undefined), 30_000, 'the first event relayed');
    await own.shutdown();
    try {
      for (let i = 0; i < 5; i += 1) await store.appendToStream('run-r1', [{ type: 'RunGranted', data: { i } }]);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(await store.readCheckpoint(RELAY_CONSUMER)).toBe(1);
    } finally {
      await own.start();
    }
    await eventually(() => (relay.progress().relayed === 6 ? true : undefined), 60_000, 'the relay to catch up');
    const positions = (await consume([topic], 6)).map(({ message }) => readCloudEvent(message).position);
    expect(new Set(positions)).toEqual(new Set([1, 2, 3, 4, 5, 6]));
  }, 180_000);
  it('given a relay whose last batch Kafka committed but whose store checkpoint was not written (it died in between), when the next relay starts, then it resumes from what Kafka committed and a read_committed consumer sees each event once', async () => {
    for (let i = 0; i < 12; i += 1) await store.appendToStream(`run-r${i % 3}`, [{ type: 'RunStarted', data: { i } }]);
    const first = relayOn('relay-a');
    await eventually(() => (first.progress().relayed === 12 ? true : undefined), 30_000, 'the first relay to publish');
    const { relay, publisher } = running.shift()!;
    await relay.stop();
    await publisher.close();
    // What a crash between Kafka's commit and the store's checkpoint leaves: the store behind the bus.
    await store.storeCheckpoint(RELAY_CONSUMER, 4);
    for (let i = 12; i < 15; i += 1) await store.appendToStream(`run-r${i % 3}`, [{ type: 'RunStarted', data: { i } }]);
    const second = relayOn('relay-b');
    await eventually(() => (second.progress().relayed === 15 ? true : undefined), 30_000, 'the second relay to publish');
    expect(second.progress().sent).toBe(3);
    const received = await consume([topic], 15, 1_000);
    expect(received.map(({ message }) => readCloudEvent(message).position)).toHaveLength(15);
  });

  it('given a transaction a relay left open when it died, when the next relay starts with the same transactional id, then that transaction is aborted and a read_committed consumer never sees its messages', async () => {
    for (let i = 0; i < 5; i += 1) await store.appendToStream('run-r1', [{ type: 'RunStarted', data: { i } }]);
    // A relay that died in the middle of a batch: its transaction holds messages, uncommitted.
    const dead = new Kafka({ clientId: 'relay-dead', brokers, logLevel: logLevel.NOTHING }).producer({ transactionalId: config.transactionalId, idempotent: true, maxInFlightRequests: 1 });
    await dead.connect();
    const transaction = await dead.transaction();
    await transaction.send({ topic, messages: [{ key: 'run-r1', value: '{"left":"open"}', headers: { ce_id: 'never-committed' } }] });
    const relay = relayOn('relay-a');
    await eventually(() => (relay.progress().relayed === 5 ? true : undefined), 60_000, 'the relay to publish past the open transaction');
    await expect(transaction.commit()).rejects.toThrow();
    await dead.disconnect();
    const received = await consume([topic], 5, 1_000);
    expect(received.map(({ message }) => String(message.headers?.['ce_id']))).not.toContain('never-committed');
    expect(received.map(({ message }) => readCloudEvent(message).position)).toEqual([1, 2, 3, 4, 5]);
  });
});

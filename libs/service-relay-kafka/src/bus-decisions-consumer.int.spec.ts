import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConsoleLogger } from '@nestjs/common';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { executionStream, type ExecutionId } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { approvalTools, ManualClock, paymentAwaitingApproval } from '@oncegate/host-decisions/testing';
import type { KafkaConfig } from '@oncegate/host-config';
import { ApproverDirectory } from '@oncegate/host-principals';
/* eslint-disable @nx/enforce-module-boundaries -- the broker the tests run, and the polling every suite uses */
import { freePort } from '@oncegate/deploy-local';
import { eventually } from '../../../test/support/journal';
import { startKafka } from '../../../test/support/kafka';
import { sharedKafka } from '../../../test/support/shared-servers';
/* eslint-enable @nx/enforce-module-boundaries */
import { BusProducer, busClient } from './bus-client';
import { BusDecisions, type DecisionReply } from './bus-decisions';

const logger = new ConsoleLogger({ logLevels: ['error', 'warn'] });

/**
 * The decisions consumer against a real broker, in the situations that used to leave it dead for good: the decisions
 * topic created only after the relay started (a fresh broker with topic auto-creation), and no broker at all at start.
 */
describe('decisions taken from the bus: a consumer that recovers (SQLite event store, a real Kafka broker)', () => {
  let dir: string;
  let store: EventStore;
  let clock: ManualClock;
  let approvers: ApproverDirectory;
  const running: Array<{ decisions: BusDecisions; producer: BusProducer }> = [];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-bus-decisions-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    clock = new ManualClock();
    approvers = new ApproverDirectory(store);
    await approvers.issue('alice');
  });

  afterEach(async () => {
    for (const { decisions, producer } of running.splice(0)) {
      await decisions.stop();
      await producer.close();
    }
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const topicsUnder = (prefix: string) => ({ topic: `${prefix}.decisions`, replies: `${prefix}.decision-outcomes`, group: `${prefix}.group` });

  const decisionsOn = (brokers: string[], topics: ReturnType<typeof topicsUnder>) => {
    const config: KafkaConfig = {
      brokers,
      clientId: 'decisions-test',
      source: 'oncegate-test',
      routes: [],
      defaultTopic: `${topics.topic}.events`,
      leaseMs: 1_000,
      decisions: topics,
      delivery: 'exactly_once',
      transactionalId: `${topics.topic}.relay`,
      checkpointTopic: `${topics.topic}.checkpoints`,
    };
    const kafka = busClient(config, logger, 'decisions-test');
    const producer = new BusProducer(kafka);
    const decisions = new BusDecisions({ kafka, producer, config: topics, source: 'oncegate-test', store, approvers, tools: approvalTools('http://127.0.0.1:9'), clock, logger });
    decisions.start();
    running.push({ decisions, producer });
    return decisions;
  };

  /** Publishes an approval as an approver's tooling would, to a topic that may not exist yet (the broker creates it). */
  const approve = async (brokers: string[], topic: string, executionId: ExecutionId, id: string) => {
    const producer = new Kafka({ clientId: 'approver-tool', brokers, logLevel: logLevel.NOTHING }).producer({ allowAutoTopicCreation: true });
    await producer.connect();
    try {
      await eventually(
        () =>
          producer
            .send({ topic, messages: [{ key: executionId, value: JSON.stringify({ kind: 'approval', id, execution_id: executionId, decision: 'approve', by: 'approver:alice', reason: 'checked' }) }] })
            .then(() => true)
            .catch(() => undefined),
        30_000,
        `the decision sent to ${topic}`,
      );
    } finally {
      await producer.disconnect();
    }
  };

  const replyTo = async (brokers: string[], topic: string, id: string): Promise<DecisionReply> => {
    // A fetch that finds nothing new waits this long for more (5 s by default), and disconnecting waits for that fetch.
    const consumer = new Kafka({ clientId: 'reply-check', brokers, logLevel: logLevel.NOTHING }).consumer({ groupId: `check-${randomUUID()}`, maxWaitTimeInMs: 100 });
    const replies: DecisionReply[] = [];
    await consumer.connect();
    try {
      await eventually(() => consumer.subscribe({ topics: [topic], fromBeginning: true }).then(() => true).catch(() => undefined), 60_000, `the replies topic ${topic}`);
      await consumer.run({ eachMessage: async ({ message }) => void replies.push(JSON.parse(message.value!.toString()) as DecisionReply) });
      return await eventually(() => replies.find((reply) => reply.in_reply_to === id), 60_000, `the reply to ${id}`);
    } finally {
      await consumer.disconnect();
    }
  };

  const granted = async (id: ExecutionId) => (await store.readStream(executionStream(id))).filter((event) => event.type === 'ApprovalGranted');

  it('given a decisions topic that does not exist when the relay starts, then it says it waits for it, and a decision published once the topic exists is applied and answered', async () => {
    const broker = await sharedKafka();
    const topics = topicsUnder(broker.topicPrefix('late'));
    const id = await paymentAwaitingApproval(store, clock);
    const decisions = decisionsOn(broker.brokers, topics);
    await eventually(() => (decisions.state().notConsuming?.includes(`waiting for the topic ${topics.topic}`) ? true : undefined), 30_000, 'the consumer to wait for its topic');

    await approve(broker.brokers, topics.topic, id, 'late-1');
    expect(await replyTo(broker.brokers, topics.replies, 'late-1')).toMatchObject({ outcome: 'applied', execution_id: id });
    expect(await granted(id)).toHaveLength(1);
    expect(decisions.state().notConsuming).toBeUndefined();
  }, 120_000);

  it('given no broker when the relay starts, then it keeps trying, and once a broker is there it takes the decisions', async () => {
    const port = await freePort();
    const brokers = [`127.0.0.1:${port}`];
    const topics = topicsUnder(`early-${randomUUID().slice(0, 8)}`);
    const id = await paymentAwaitingApproval(store, clock);
    const decisions = decisionsOn(brokers, topics);
    await eventually(() => (decisions.state().restarts >= 2 ? true : undefined), 60_000, 'the consumer to have tried twice');
    expect(decisions.state().notConsuming).toMatch(/the consumer failed \(\d+ in a row; next try in/);

    const broker = await startKafka({ port });
    onTestFinished(() => broker.stop());
    await approve(brokers, topics.topic, id, 'early-1');
    expect(await replyTo(brokers, topics.replies, 'early-1')).toMatchObject({ outcome: 'applied', execution_id: id });
    expect(await granted(id)).toHaveLength(1);
  }, 180_000);
});

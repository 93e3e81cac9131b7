import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Kafka, logLevel, type Consumer, type KafkaMessage } from 'kafkajs';
import { afterAll, beforeAll, expect } from 'vitest';
import { startService, type LocalServer, type ServiceProcess } from '@oncegate/deploy-local';
import type { RecordedEvent } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { startDemoTargetProcess, type DemoTargetProcess } from '../support/demo-target-process';
import { CREDENTIAL_CANARY, gatewayFolder, oncegate, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../support/gateway-process';
import { eventually, readJournal } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { executionOf } from '../support/scenario';
import { startKafka, type KafkaHandle } from '../support/kafka';
import { prefixesOf } from '../support/canaries';

/** A secret argument (`send_payment`'s card_token) that must not reach the bus, nor any prefix of it. */
const CARD_CANARY = 'card-canary-5be07d19c4';
/** The relay's topics, under a prefix of the run's own so that worlds sharing a broker never read each other's messages. */
type Topics = Record<'executions' | 'approvals' | 'all' | 'decisions' | 'replies', string>;
const topicsUnder = (prefix: string): Topics => ({
  executions: `${prefix}.executions`,
  approvals: `${prefix}.approvals`,
  all: `${prefix}.events`,
  decisions: `${prefix}.decisions`,
  replies: `${prefix}.decision-outcomes`,
});
/** What a call that had its effect answers. */
const DONE = ['completed', 'delivered'];
const CONCURRENCY = 24;

const quiet = { logLevel: logLevel.NOTHING };
/** The relay's checkpoint in the store (docs/bus.md). */
const RELAY_CONSUMER = 'relay-kafka';

/** A relayed event as any consumer of the bus reads it: CloudEvents attributes from the ce_ headers, data from the value. */
interface ReceivedCloudEvent {
  readonly id: string;
  readonly type: string;
  readonly subject: string;
  readonly position: number;
  readonly chainHash: string;
  readonly key: string;
  readonly data: unknown;
}

function readCloudEvent(message: KafkaMessage): ReceivedCloudEvent {
  const header = (name: string) => {
    const value = message.headers?.[name];
    if (value === undefined) throw new Error(`no ${name} header`);
    return String(value);
  };
  expect(header('ce_specversion')).toBe('1.0');
  expect(header('content-type')).toBe('application/json');
  return {
    id: header('ce_id'),
    type: header('ce_type'),
    subject: header('ce_subject'),
    position: Number(header('ce_position')),
    chainHash: header('ce_chainhash'),
    key: message.key?.toString() ?? '',
    data: JSON.parse(message.value!.toString()),
  };
}

/**
 * Reads every message of `topics` from the beginning, as a consumer with `isolation.level=read_committed`, until `done`
 * says it has all it needs, and `settleMs` more (to see a duplicate that would come after).
 */
export async function consumeAll(
  kafka: Kafka,
  topics: readonly string[],
  done: (received: ReadonlyArray<{ topic: string; partition: number; message: KafkaMessage }>) => boolean,
  timeoutMs: number,
  settleMs = 0,
) {
  // A fetch that finds nothing new waits this long for more (5 s by default), and disconnecting waits for that fetch.
  const consumer: Consumer = kafka.consumer({ groupId: `check-${randomUUID()}`, readUncommitted: false, maxWaitTimeInMs: 100 });
  const received: Array<{ topic: string; partition: number; message: KafkaMessage }> = [];
  await consumer.connect();
  await consumer.subscribe({ topics: [...topics], fromBeginning: true });
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  await consumer.run({
    eachBatch: async ({ batch }) => {
      for (const message of batch.messages) received.push({ topic: batch.topic, partition: batch.partition, message });
      if (done(received)) finish();
    },
  });
  const timer = setTimeout(finish, timeoutMs);
  await finished;
  clearTimeout(timer);
  if (settleMs > 0) await new Promise((resolve) => setTimeout(resolve, settleMs));
  await consumer.disconnect();
  return received;
}


/**
 * The relay's world: the demo target, a gateway process, and the relay as a process of its own on the gateway's data
 * folder, relaying to a broker's topics under `prefix`. The gateway runs without the kafka section.
 */
export class RelayWorld {
  readonly relays: ServiceProcess[] = [];
  private constructor(
    readonly brokers: string[],
    readonly topics: Topics,
    readonly target: DemoTargetProcess,
    readonly folder: GatewayFolder,
    readonly relayConfig: string,
    readonly gateway: GatewayProcess,
    readonly bus: Kafka,
  ) {}

  /**
   * `decisionsTopicLater`: the decisions topic is not created beforehand; the broker creates it when the first
   * decision is published to it, after the relay started.
   */
  static async start(brokers: string[], prefix: string, options: { decisionsTopicLater?: boolean } = {}): Promise<RelayWorld> {
    const topics = topicsUnder(prefix);
    const target = await startDemoTargetProcess();
    const bus = new Kafka({ clientId: 'e2e-check', brokers, ...quiet });
    // The topics exist before anything is published, as an organisation's bus has them (a consumer of a topic
    // nobody has written to yet would fail).
    const admin = bus.admin();
    await admin.connect();
    const created = Object.values(topics).filter((topic) => !(options.decisionsTopicLater && topic === topics.decisions));
    await admin.createTopics({ waitForLeaders: true, topics: created.map((topic) => ({ topic, numPartitions: 4, replicationFactor: 1 })) });
    await admin.disconnect();
    const folder = await gatewayFolder(target.url, { call_wait: '20s', seal_every: '1s' });
    const relayConfig = join(folder.dir, 'relay.yaml');
    writeFileSync(
      relayConfig,
      readFileSync(folder.configFile, 'utf8') +
        [
          'kafka:',
          `  brokers: [${brokers.join(', ')}]`,
          '  source: //oncegate/e2e',
          '  lease: 1s',
          '  topics:',
          `    - { topic: ${topics.approvals}, events: [ApprovalRequested, ApprovalGranted, ApprovalDenied] }`,
          `    - { topic: ${topics.executions}, streams: [execution] }`,
          `  default_topic: ${topics.all}`,
          `  decisions: { topic: ${topics.decisions}, replies: ${topics.replies} }`,
          // Worlds sharing a broker each have their own relays: a transactional id (and checkpoint) of their own.
          `  transactional_id: ${prefix}.relay`,
          `  checkpoint_topic: ${prefix}.relay-checkpoints`,
          '',
        ].join('\n'),
    );
    const gateway = await startGatewayProcess(folder);
    return new RelayWorld(brokers, topics, target, folder, relayConfig, gateway, bus);
  }

  async startRelay(): Promise<ServiceProcess> {
    const relay = await startService('relay-kafka', { configFile: this.relayConfig, cwd: this.folder.dir });
    this.relays.push(relay);
    return relay;
  }

  /** A relay runs: the last one started, unless every one has ended. */
  async ensureRelay(): Promise<void> {
    if (this.relays.every((relay) => relay.child.exitCode !== null || relay.child.signalCode !== null)) await this.startRelay();
  }

  /** The relay's checkpoint and the store's head. */
  async checkpoint(): Promise<{ relayed: number; head: number }> {
    const store = openSqliteEventStore({ file: join(this.folder.dataDir, 'events.db') });
    try {
      return { relayed: (await store.readCheckpoint(RELAY_CONSUMER)) ?? 0, head: await store.headPosition() };
    } finally {
      await store.close();
    }
  }

  async stop(): Promise<void> {
    for (const relay of this.relays) await relay.stop();
    await this.gateway.stop();
    await this.target.stop();
    this.folder.dispose();
  }
}

/**
 * Registers, around the calling `describe`, a broker of its own (which its tests may stop and start) and a relay world
 * on it; the handle's fields are set once the set-up ran.
 */
export function relayWorldOnOwnBroker(options: { decisionsTopicLater?: boolean } = {}): { broker: KafkaHandle; world: RelayWorld } {
  const handle = {} as { broker: KafkaHandle; world: RelayWorld };
  beforeAll(async () => {
    handle.broker = await startKafka();
    handle.world = await RelayWorld.start(handle.broker.brokers, 'oncegate', options);
  }, 240_000);
  afterAll(async () => {
    await handle.world?.stop();
    await handle.broker?.stop();
  });
  return handle;
}

/**
 * `executions` calls through the gateway at concurrency 24 while the relay is killed with kill -9 three times at
 * random moments and restarted at once: a consumer reading committed messages (kafkajs's default,
 * `isolation.level=read_committed`) finds every event on the bus exactly once, in the store's order per execution,
 * and they are exactly the journal; no secret on the bus.
 */
export async function relayThroughKills(world: RelayWorld, executions: number): Promise<void> {
  const { gateway, relays, bus, folder } = world;
  const TOPICS = world.topics;
  const startRelay = () => world.startRelay();
  const checkpoint = () => world.checkpoint();
  await startRelay();
  const clients: Client[] = [];
  for (let i = 0; i < 4; i += 1) clients.push((await connectClient(gateway.url, gateway.devToken)).client);
  const kills = [0.15 + Math.random() * 0.2, 0.4 + Math.random() * 0.2, 0.65 + Math.random() * 0.25].map((share) => Math.floor(share * executions));
  let next = 0;
  let failed = 0;
  // One kill after another: each kills the relay the previous one started, once it runs.
  let killing = Promise.resolve();
  const call = async (n: number) => {
    const client = clients[n % clients.length]!;
    const result =
      n % 10 === 0
        ? await client.callTool({ name: 'send_payment', arguments: { payment_reference: `relay-pay-${n}`, amount_cents: 100 + n, card_token: CARD_CANARY } })
        : await client.callTool({ name: 'set_config', arguments: { name: `relay.key${n}`, value: `v${n}` } });
    if (result.isError || !DONE.includes(executionOf(result).state)) failed += 1;
  };
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < executions) {
        const n = next++;
        if (kills.includes(n)) {
          // kill -9 and a new relay at once: it takes over when the dead one's claim (kafka.lease: 1s) lapses.
          killing = killing.then(async () => {
            await relays[relays.length - 1]!.kill();
            await startRelay();
          });
        }
        await call(n);
      }
    }),
  );
  await killing;
  for (const client of clients) await client.close();
  expect(failed).toBe(0);
  expect(relays.filter((relay) => relay.child.signalCode === 'SIGKILL')).toHaveLength(3);

  // The relay catches up: its checkpoint reaches the head (the sealer keeps appending seals meanwhile).
  await eventually(async () => {
    const { relayed, head } = await checkpoint();
    return relayed >= head - 2 ? true : undefined;
  }, 120_000, 'the relay to reach the head');
  const { relayed } = await checkpoint();
  // The sealer goes on appending seals, and the relay relaying them: the journal is read after the topics.
  const journal: RecordedEvent[] = (await readJournal(folder.dataDir)).filter((event) => event.position <= relayed);
  const wanted = new Set(journal.map((event) => event.id));
  const received = await consumeAll(bus, [TOPICS.executions, TOPICS.approvals, TOPICS.all], (messages) => {
    const ids = new Set(messages.map(({ message }) => String(message.headers?.['ce_id'])));
    return [...wanted].every((id) => ids.has(id));
  }, 120_000, 2_000);
  const byId = new Map((await readJournal(folder.dataDir)).map((event) => [event.id, event]));
  const events = received.map(({ topic, partition, message }) => ({ topic, partition, event: readCloudEvent(message), raw: message }));

  // Every event at least once, and nothing that is not in the journal.
  const seen = new Map<string, ReceivedCloudEvent>();
  for (const { event } of events) if (!seen.has(event.id)) seen.set(event.id, event);
  const missing = journal.filter((event) => !seen.has(event.id));
  expect(missing.map((event) => `${event.position} ${event.type}`).slice(0, 10)).toEqual([]);
  expect([...seen.keys()].filter((id) => !byId.has(id))).toEqual([]);
  // Deduplicated by ce_id, each message is the journal's event: same type, stream, position, hash and data.
  for (const [id, event] of seen) {
    const stored = byId.get(id)!;
    expect({ type: event.type, subject: event.subject, position: event.position, chainHash: event.chainHash, data: event.data }).toEqual({
      type: stored.type,
      subject: stored.streamId,
      position: stored.position,
      chainHash: stored.hash,
      data: stored.data,
    });
  }
  // Per topic and key (one execution, or one other stream), the first delivery of each event comes in the store's
  // order. Kafka keeps order within a partition only: an execution's approval events, routed to a topic of their
  // own, are read beside its other events in no particular order.
  const firstSeenOrder = new Map<string, number[]>();
  const delivered = new Set<string>();
  for (const { topic, event } of events) {
    if (delivered.has(event.id)) continue;
    delivered.add(event.id);
    const list = firstSeenOrder.get(`${topic} ${event.key}`) ?? [];
    list.push(event.position);
    firstSeenOrder.set(`${topic} ${event.key}`, list);
  }
  const outOfOrder = [...firstSeenOrder].filter(([, positions]) => positions.some((position, i) => i > 0 && position < positions[i - 1]!));
  expect(outOfOrder.slice(0, 3)).toEqual([]);
  const executionKeys = new Set([...firstSeenOrder.keys()].map((key) => key.split(' ')[1]!).filter((key) => key.startsWith('ex_')));
  expect(executionKeys.size).toBeGreaterThanOrEqual(executions);
  // Routing: approvals' events on their topic, an execution's other events on the executions topic, the rest on the default.
  for (const { topic, event } of events) {
    const expected = ['ApprovalRequested', 'ApprovalGranted', 'ApprovalDenied'].includes(event.type)
      ? TOPICS.approvals
      : event.subject.startsWith('execution-')
        ? TOPICS.executions
        : TOPICS.all;
    if (topic !== expected) throw new Error(`${event.type} of ${event.subject} on ${topic}, expected ${expected}`);
  }
  // No secret on the bus: not the credential, not the secret argument, not a prefix of either.
  const everything = events.map(({ raw }) => `${raw.key?.toString()} ${raw.value?.toString()} ${JSON.stringify(Object.fromEntries(Object.entries(raw.headers ?? {}).map(([k, v]) => [k, String(v)])))}`).join('\n');
  for (const secret of [CREDENTIAL_CANARY, CARD_CANARY]) {
    for (const prefix of prefixesOf(secret)) expect(everything.includes(prefix), `${prefix} on the bus`).toBe(false);
  }
  const duplicates = events.length - seen.size;
  // Exactly once (kafka.delivery's default): what a relay killed mid-batch had sent was never committed.
  expect(duplicates).toBe(0);
  console.log(
    `relay: ${executions} executions, ${journal.length} events, ${events.length} messages, ${duplicates} duplicates (${((duplicates / journal.length) * 100).toFixed(2)} %) after 3 kill -9 at calls ${kills.join(', ')}`,
  );
}

/**
 * The broker stops for `outageMs` while calls go on: the gateway keeps serving, the relay lags without losing
 * anything, and it catches up after the broker is back.
 */
export async function relayThroughOutage(world: RelayWorld, broker: LocalServer, outageMs: number): Promise<void> {
  const { gateway, relays, bus, folder } = world;
  const TOPICS = world.topics;
  const checkpoint = () => world.checkpoint();
  await world.ensureRelay();
  const { client } = await connectClient(gateway.url, gateway.devToken);
  const before = (await checkpoint()).relayed;
  let stop = false;
  let n = 0;
  const answered = { before: 0, during: 0, after: 0, failed: 0 };
  let phase: keyof typeof answered = 'before';
  // Four agents calling on, each pausing between its calls: a steady trickle (some thirty calls a second) is what the
  // outage must not stop, and a lag of a thousand-odd events what the relay must carry over it; calling flat out
  // only made the run cost a core for the whole outage.
  const load = Promise.all(
    Array.from({ length: 4 }, async () => {
      while (!stop) {
        const i = n++;
        const result = await client.callTool({ name: 'set_config', arguments: { name: `outage.key${i}`, value: `v${i}` } });
        if (result.isError || !DONE.includes(executionOf(result).state)) answered.failed += 1;
        else answered[phase] += 1;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  await broker.shutdown();
  phase = 'during';
  const down = Date.now();
  await new Promise((resolve) => setTimeout(resolve, outageMs));
  const lagging = await checkpoint();
  await broker.start();
  phase = 'after';
  const up = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  stop = true;
  await load;
  await client.close();
  expect(answered.failed).toBe(0);
  expect(answered.during).toBeGreaterThan(50);
  // While the broker was away the checkpoint stayed behind the head: nothing was counted as relayed that was not.
  expect(lagging.head - lagging.relayed).toBeGreaterThan(answered.during);

  const caughtUp = await eventually(async () => {
    const { relayed, head } = await checkpoint();
    return relayed >= head - 2 ? Date.now() : undefined;
  }, 90_000, 'the relay to catch up after the broker came back').catch((error: unknown) => {
    throw new Error(`${(error as Error).message}; the relay said:\n${relays.at(-1)?.output().slice(-4_000)}`);
  });
  const { relayed } = await checkpoint();
  const journal = (await readJournal(folder.dataDir)).filter((event) => event.position > before && event.position <= relayed);
  const wanted = new Set(journal.map((event) => event.id));
  const received = await consumeAll(bus, [TOPICS.executions, TOPICS.approvals, TOPICS.all], (messages) => {
    const ids = new Set(messages.map(({ message }) => String(message.headers?.['ce_id'])));
    return [...wanted].every((id) => ids.has(id));
  }, 120_000);
  const ids = new Set(received.map(({ message }) => String(message.headers?.['ce_id'])));
  expect(journal.filter((event) => !ids.has(event.id)).map((event) => `${event.position} ${event.type}`).slice(0, 10)).toEqual([]);
  // Exactly once across the outage: the transactions the broker lost were resent, the ones it committed were not.
  const sinceBefore = received.filter(({ message }) => Number(message.headers?.['ce_position']) > before);
  expect(sinceBefore.length - new Set(sinceBefore.map(({ message }) => String(message.headers?.['ce_id']))).size).toBe(0);
  console.log(
    `relay: broker away ${((up - down) / 1000).toFixed(1)} s; calls answered before/during/after: ${answered.before}/${answered.during}/${answered.after}; ` +
      `lag when it came back: ${lagging.head - lagging.relayed} events; caught up ${((caughtUp - up) / 1000).toFixed(1)} s after`,
  );
}

/**
 * A call waits for approval and an approver decides on the decisions topic: the call is released exactly once,
 * and a second decision and an unknown approver are refused on the reply topic.
 */
export async function decisionsFromTheBus(world: RelayWorld): Promise<void> {
  const { gateway, bus, folder, target } = world;
  const TOPICS = world.topics;
  await world.ensureRelay();
  expect((await oncegate(folder, ['approvers', 'add', 'alice'])).code).toBe(0);
  const { client } = await connectClient(gateway.url, gateway.devToken);
  const reference = `bus-payout-${randomUUID().slice(0, 8)}`;
  const call = client.callTool({ name: 'send_payout', arguments: { payment_reference: reference, amount_cents: 4_200 } });
  const requested = await eventually(async () => {
    const events = await readJournal(folder.dataDir, ['execution-']);
    const accepted = events.find((event) => event.type === 'ExecutionAccepted' && JSON.stringify(event.data).includes(reference));
    return accepted && events.some((event) => event.streamId === accepted.streamId && event.type === 'ApprovalRequested') ? accepted.streamId.slice('execution-'.length) : undefined;
  }, 15_000, 'the approval request');

  const producer = bus.producer();
  await producer.connect();
  const decision = (id: string, by: string) => ({ key: requested, value: JSON.stringify({ kind: 'approval', id, execution_id: requested, decision: 'approve', by, reason: 'invoice 4411 checked' }) });
  await producer.send({ topic: TOPICS.decisions, messages: [decision('bus-1', 'approver:eve'), decision('bus-2', 'approver:alice'), decision('bus-3', 'approver:alice')] });
  await producer.disconnect();

  const result = await call;
  await client.close();
  expect(executionOf(result).id).toBe(requested);
  expect(DONE).toContain(executionOf(result).state);
  const replies = (await consumeAll(bus, [TOPICS.replies], (messages) => messages.filter(({ message }) => message.value?.toString().includes('"in_reply_to":"bus-')).length >= 3, 60_000))
    .map(({ message }) => JSON.parse(message.value!.toString()) as { in_reply_to: string; outcome: string; refusal: string | null; message: string })
    .filter((reply) => reply.in_reply_to.startsWith('bus-'));
  expect(replies.map(({ in_reply_to, outcome, refusal }) => [in_reply_to, outcome, refusal])).toEqual([
    ['bus-1', 'refused', 'unknown_approver'],
    ['bus-2', 'applied', null],
    ['bus-3', 'refused', 'not_pending'],
  ]);
  expect(replies[2]!.message).toMatch(/already granted by approver:alice/);
  const events = (await readJournal(folder.dataDir, [`execution-${requested}`])).map((event) => event.type);
  expect(events.filter((type) => type === 'ApprovalGranted')).toHaveLength(1);
  expect(events.filter((type) => type === 'Dispatched')).toHaveLength(1);
  const payments = (await target.effects()).requests.filter((request) => request.endpoint === 'POST /payments' && request.idempotencyKey === requested);
  expect(payments).toHaveLength(1);
}

/**
 * Everything the relay published so far, read as a read_committed consumer reads it: every event of the journal up to
 * the relay's checkpoint exactly once, nothing else. Returns the counts for the log.
 */
export async function everyEventOnceOnTheBus(world: RelayWorld): Promise<{ events: number; messages: number }> {
  const { relayed } = await world.checkpoint();
  const journal = (await readJournal(world.folder.dataDir)).filter((event) => event.position <= relayed);
  const wanted = new Set(journal.map((event) => event.id));
  const received = await consumeAll(world.bus, [world.topics.executions, world.topics.approvals, world.topics.all], (messages) => {
    const ids = new Set(messages.map(({ message }) => String(message.headers?.['ce_id'])));
    return [...wanted].every((id) => ids.has(id));
  }, 120_000, 3_000);
  const counts = new Map<string, number>();
  for (const { message } of received) {
    const id = String(message.headers?.['ce_id']);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  const journalIds = new Set((await readJournal(world.folder.dataDir)).map((event) => event.id));
  expect(journal.filter((event) => !counts.has(event.id)).map((event) => `${event.position} ${event.type}`).slice(0, 10)).toEqual([]);
  expect([...counts].filter(([, count]) => count > 1).slice(0, 10)).toEqual([]);
  expect([...counts.keys()].filter((id) => !journalIds.has(id))).toEqual([]);
  return { events: journal.length, messages: received.length };
}

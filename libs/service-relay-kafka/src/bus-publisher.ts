import type { Admin, Kafka, Message, Producer } from 'kafkajs';
import type { KafkaConfig } from '@oncegate/host-config';
import type { BusProducer } from './bus-client';
import type { BusMessage } from './cloud-events';

/** One message for the bus and its topic. */
export interface TopicMessage {
  readonly topic: string;
  readonly message: BusMessage;
}

/**
 * How the relay hands batches to the bus. The relay resumes from `open()`'s position (or, when the bus keeps none,
 * from the store's checkpoint), publishes batches in the store's order, and after any failure calls `reset()` and
 * `open()` again, so that it resumes from what the bus itself committed.
 */
export interface BusPublisher {
  /** `exactly_once` or `at_least_once`, for the log and the summary. */
  readonly delivery: 'exactly_once' | 'at_least_once';
  /** Connects and says the last journal position the bus holds as published by this relay; `undefined` when it keeps none. */
  open(): Promise<number | undefined>;
  /** Publishes one batch whose last event is at journal position `last`; resolves once the bus holds all of it. */
  publish(messages: readonly TopicMessage[], last: number): Promise<void>;
  /** Lets the connection go after a failure; the next `open` starts a new one. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/** The publisher `kafka.delivery` asks for; at least once through the process's producer. */
export function busPublisher(kafka: Kafka, producer: BusProducer, config: KafkaConfig): BusPublisher {
  return config.delivery === 'exactly_once'
    ? new TransactionalPublisher(kafka, { transactionalId: config.transactionalId, checkpointTopic: config.checkpointTopic })
    : new AtLeastOncePublisher(producer);
}

/** At least once: an idempotent producer; the store's checkpoint, written after the broker's acknowledgement, is where the relay resumes. */
export class AtLeastOncePublisher implements BusPublisher {
  readonly delivery = 'at_least_once';

  constructor(private readonly producer: BusProducer) {}

  async open(): Promise<undefined> {
    return undefined;
  }

  publish(messages: readonly TopicMessage[]): Promise<void> {
    return this.producer.send(messages);
  }

  async reset(): Promise<void> {
    // The producer lets itself go after a failed send.
  }

  async close(): Promise<void> {
    // The producer also answers decisions: the process closes it last.
  }
}

export interface TransactionalOptions {
  /** The producer's `transactional.id`, shared by every relay of one journal: the newest one fences the others. */
  readonly transactionalId: string;
  /** The topic (one partition) under whose offsets the relay's checkpoint is committed, in the group `transactionalId`. */
  readonly checkpointTopic: string;
}

/** Longest a send, a batch's transaction or opening the producer may take before it counts as failed. */
export const BOUND_MS = 60_000;
/** The broker aborts a transaction of a relay that died after this long, if no other relay fenced it sooner. */
const TRANSACTION_TIMEOUT_MS = 60_000;

/**
 * Exactly once for consumers that read committed messages only (`isolation.level=read_committed`): each batch and the
 * relay's checkpoint go in one Kafka transaction. The checkpoint is the offset committed in the transaction for the
 * consumer group `transactionalId` on partition 0 of `checkpointTopic`, whose value is the journal position of the
 * batch's last event (not an offset of that topic: nothing is written to it). So Kafka holds the batch if and only if
 * it holds the checkpoint that covers it.
 *
 * Every relay of a journal uses the same transactional id. Opening a producer with it fences every earlier one (their
 * next commit fails) and aborts a transaction a relay left open when it died; only then is the checkpoint read, so it
 * is the one of the last batch that was committed, and the relay resumes right after it.
 */
export class TransactionalPublisher implements BusPublisher {
  readonly delivery = 'exactly_once';
  private producer: Producer | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly options: TransactionalOptions,
  ) {}

  async open(): Promise<number | undefined> {
    await this.reset();
    return bounded(`opening the transactional producer ${this.options.transactionalId} took longer than ${BOUND_MS / 1000} s`, async () => {
      const admin = this.kafka.admin();
      await admin.connect();
      try {
        await this.ensureCheckpointTopic(admin);
        const producer = this.kafka.producer({
          transactionalId: this.options.transactionalId,
          idempotent: true,
          maxInFlightRequests: 1,
          transactionTimeout: TRANSACTION_TIMEOUT_MS,
          // After a commit the coordinator needs a moment before the next transaction may add partitions
          // (CONCURRENT_TRANSACTIONS); the client's default first pause (300 ms) would be most of each batch's time.
          retry: { retries: 8, initialRetryTime: 20, maxRetryTime: 5_000 },
        });
        this.producer = producer;
        // Connecting initialises the transactional id: this fences older producers and ends their open transactions.
        await producer.connect();
        const [offsets] = await admin.fetchOffsets({ groupId: this.options.transactionalId, topics: [this.options.checkpointTopic] });
        const offset = Number(offsets?.partitions.find((partition) => partition.partition === 0)?.offset ?? -1);
        return offset >= 0 ? offset : undefined;
      } finally {
        await admin.disconnect().catch(() => undefined);
      }
    });
  }

  private async ensureCheckpointTopic(admin: Admin): Promise<void> {
    const topic = this.options.checkpointTopic;
    if ((await admin.listTopics()).includes(topic)) return;
    try {
      await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1 }] });
    } catch (error) {
      throw new Error(
        `the relay's checkpoint topic ${topic} does not exist and could not be created (${(error as Error).message}): ` +
          'create it with one partition, or set kafka.checkpoint_topic to one that exists',
      );
    }
  }

  async publish(messages: readonly TopicMessage[], last: number): Promise<void> {
    const producer = this.producer;
    if (producer === undefined) throw new Error('the transactional producer is not open');
    await bounded(`a transaction of ${messages.length} events took longer than ${BOUND_MS / 1000} s`, async () => {
      const transaction = await producer.transaction();
      try {
        await transaction.sendBatch({ acks: -1, timeout: 30_000, topicMessages: byTopic(messages) });
        await transaction.sendOffsets({
          consumerGroupId: this.options.transactionalId,
          topics: [{ topic: this.options.checkpointTopic, partitions: [{ partition: 0, offset: String(last) }] }],
        });
        await transaction.commit();
      } catch (error) {
        // A fenced producer cannot abort; the broker aborts for it, or the next relay does.
        if (transaction.isActive()) await transaction.abort().catch(() => undefined);
        throw error;
      }
    });
  }

  async reset(): Promise<void> {
    const producer = this.producer;
    this.producer = undefined;
    await producer?.disconnect().catch(() => undefined);
  }

  close(): Promise<void> {
    return this.reset();
  }
}

/** Messages grouped by topic, as kafkajs's `sendBatch` takes them. */
export function byTopic(messages: readonly TopicMessage[]): Array<{ topic: string; messages: Message[] }> {
  const topics = new Map<string, Message[]>();
  for (const { topic, message } of messages) {
    let list = topics.get(topic);
    if (list === undefined) topics.set(topic, (list = []));
    list.push({ key: message.key, value: message.value, headers: { ...message.headers } });
  }
  return [...topics].map(([topic, list]) => ({ topic, messages: list }));
}

/**
 * `work`, failing with `timeoutMessage` if it has not settled within 60 s, whatever the client is waiting for (its
 * own later failure is let go: it is not the process's).
 */
export async function bounded<T>(timeoutMessage: string, work: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const running = work();
  running.catch(() => undefined);
  try {
    return await Promise.race([
      running,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(timeoutMessage)), BOUND_MS);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

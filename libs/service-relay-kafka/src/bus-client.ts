import type { LoggerService } from '@nestjs/common';
import { Kafka, logLevel, type Message, type Producer } from 'kafkajs';
import type { KafkaConfig } from '@oncegate/service-host/config/gateway-config';
import type { BusMessage } from './cloud-events';

/**
 * The Kafka client of one process. kafkajs's own log goes to this process's log at debug level only: while a broker
 * is away it logs every reconnection, and the relay says once (and then less and less often) what failed.
 */
export function busClient(config: KafkaConfig, logger: LoggerService, context: string): Kafka {
  return new Kafka({
    clientId: config.clientId,
    brokers: [...config.brokers],
    logLevel: logLevel.WARN,
    logCreator: () => (entry) => logger.debug?.(`kafka: ${entry.log.message}${entry.log['broker'] ? ` (${String(entry.log['broker'])})` : ''}`, context),
    // A send that cannot reach a broker fails after about half a minute; the relay then tries again from its
    // checkpoint, and a stop never waits longer than one such try.
    retry: { retries: 5, initialRetryTime: 300, maxRetryTime: 5_000 },
    connectionTimeout: 3_000,
  });
}

/**
 * An idempotent producer (`acks=all`, one request in flight, so the broker drops a batch it already has from this
 * producer and keeps the order), connected on first use and again after a failure.
 */
export class BusProducer {
  private readonly producer: Producer;
  private connected: Promise<void> | undefined;

  constructor(kafka: Kafka) {
    this.producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      // The producer gives up on a batch within the client's retry bound; the relay retries it from its checkpoint
      // (duplicates on the topic are recognisable by ce_id).
      retry: { retries: 5, initialRetryTime: 300, maxRetryTime: 5_000 },
    });
  }

  /** Sends messages to their topics and resolves once every broker that leads one of them acknowledged (`acks=all`). */
  async send(messages: ReadonlyArray<{ readonly topic: string; readonly message: BusMessage }>): Promise<void> {
    const byTopic = new Map<string, Message[]>();
    for (const { topic, message } of messages) {
      let list = byTopic.get(topic);
      if (list === undefined) byTopic.set(topic, (list = []));
      list.push({ key: message.key, value: message.value, headers: { ...message.headers } });
    }
    try {
      this.connected ??= this.producer.connect();
      await this.connected;
      await this.producer.sendBatch({ acks: -1, timeout: 30_000, topicMessages: [...byTopic].map(([topic, list]) => ({ topic, messages: list })) });
    } catch (error) {
      // Connect again before the next send: a broker that went away may have closed the producer's connections.
      this.connected = undefined;
      await this.producer.disconnect().catch(() => undefined);
      throw error;
    }
  }

  async close(): Promise<void> {
    this.connected = undefined;
    await this.producer.disconnect().catch(() => undefined);
  }
}

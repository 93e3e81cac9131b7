import type { LoggerService } from '@nestjs/common';
import type { Kafka, Producer } from 'kafkajs';
import type { KafkaConfig } from '@oncegate/host-config';
import { BOUND_MS, bounded, byTopic, type TopicMessage } from './bus-publisher';
import { securityOptions, type BusPassword } from './bus-security';
import { kafkajs } from './kafkajs-module';
import { fixIdleRequestQueueChecks } from './kafkajs-request-queue';

/**
 * The Kafka client of one process. kafkajs's own log goes to this process's log at debug level only: while a broker
 * is away it logs every reconnection, and the relay says once (and then less and less often) what failed. With
 * `kafka.tls` it speaks TLS, with `kafka.sasl` it authenticates with the password `password` gives for each broker.
 */
export function busClient(config: KafkaConfig, logger: LoggerService, context: string, password?: BusPassword): Kafka {
  fixIdleRequestQueueChecks();
  const { Kafka, logLevel } = kafkajs();
  return new Kafka({
    ...securityOptions(config, password),
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
 * producer and keeps the order), connected on first use. After a failed send the producer is let go and the next
 * send starts a new one: a client left waiting on a broker that went away never holds the relay up.
 */
export class BusProducer {
  private producer: Producer;
  private connected: Promise<void> | undefined;

  constructor(private readonly kafka: Kafka) {
    this.producer = this.newProducer();
  }

  private newProducer(): Producer {
    return this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      // The producer gives up on a batch within the client's retry bound; the relay retries it from its checkpoint
      // (duplicates on the topic are recognisable by ce_id).
      retry: { retries: 5, initialRetryTime: 300, maxRetryTime: 5_000 },
    });
  }

  /** Sends messages to their topics and resolves once every broker that leads one of them acknowledged (`acks=all`). */
  async send(messages: readonly TopicMessage[]): Promise<void> {
    const producer = this.producer;
    try {
      this.connected ??= producer.connect();
      const connected = this.connected;
      await bounded(`no acknowledgement within ${BOUND_MS / 1000} s`, () =>
        connected.then(() => producer.sendBatch({ acks: -1, timeout: 30_000, topicMessages: byTopic(messages) })),
      );
    } catch (error) {
      if (this.producer === producer) {
        this.producer = this.newProducer();
        this.connected = undefined;
        void producer.disconnect().catch(() => undefined);
      }
      throw error;
    }
  }

  async close(): Promise<void> {
    this.connected = undefined;
    await this.producer.disconnect().catch(() => undefined);
  }
}

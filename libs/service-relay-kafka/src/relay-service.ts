import { hostname } from 'node:os';
import { GatewayConfigError, type GatewayConfig } from '@oncegate/service-host/config/gateway-config';
import type { Host, ServiceDefinition } from '@oncegate/service-host/host';
import { BusProducer, busClient } from './bus-client';
import { BusDecisions } from './bus-decisions';
import { EventRelay, RELAY_CONSUMER } from './event-relay';

/** The relay and the decisions consumer of one process. */
export interface HostedRelay {
  readonly relay: EventRelay;
  readonly decisions: BusDecisions | undefined;
  close(): Promise<void>;
}

/** The relay (and, with `kafka.decisions`, the decisions consumer) in this process, when `kafka` is configured. */
export async function hostRelay(host: Host): Promise<HostedRelay | undefined> {
  const { config, store, clock, logger } = host;
  const kafkaConfig = config.kafka;
  if (kafkaConfig === null) return undefined;
  const kafka = busClient(kafkaConfig, logger, RELAY_CONSUMER);
  const producer = new BusProducer(kafka);
  const relay = new EventRelay({ store, producer, config: kafkaConfig, clock, logger, owner: `${RELAY_CONSUMER}@${hostname()}/${host.instance}` });
  relay.start();
  host.metrics.gauge('oncegate_relay_lag_events', 'Events committed to the journal that the broker has not acknowledged yet (on the relay that publishes).', async () =>
    relay.progress().publishing ? Math.max(0, (await store.headPosition()) - relay.progress().relayed) : undefined,
  );
  host.metrics.gauge('oncegate_relay_publishing', '1 when this relay holds the claim and publishes, 0 while it stands by.', async () => (relay.progress().publishing ? 1 : 0));
  const decisions =
    kafkaConfig.decisions === null
      ? undefined
      : new BusDecisions({ kafka, producer, config: kafkaConfig.decisions, source: kafkaConfig.source, store, approvers: host.folder.approvers, tools: host.tools, clock, logger });
  // The consumer joins its group in the background: a broker that is not there yet must not stop the process.
  decisions?.start().catch((error: unknown) => logger.error(`decisions consumer: ${(error as Error).message}`, 'relay-decisions'));
  const hosted: HostedRelay = {
    relay,
    decisions,
    async close() {
      // kafkajs can keep a disconnect or a send waiting on a broker that just came back (a group rejoining, a retry's
      // timer, a batch of a long catch-up); the process is stopping, so each part gets a bound and the stop goes on
      // without it. A batch the broker acknowledges after that is sent again by the next relay (at least once).
      await settledWithin(decisions?.stop(), 'the decisions consumer', logger);
      await settledWithin(relay.stop(), 'the relay', logger);
      await settledWithin(producer.close(), 'the producer', logger);
    },
  };
  host.opened.push(hosted);
  return hosted;
}

/** How long a stop waits for a Kafka client to disconnect. */
const DISCONNECT_BOUND_MS = 5_000;

async function settledWithin(stopping: Promise<void> | undefined, what: string, logger: Host['logger']): Promise<void> {
  if (stopping === undefined) return;
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), DISCONNECT_BOUND_MS)));
  const outcome = await Promise.race([stopping.then(() => 'done' as const, () => 'done' as const), bound]);
  clearTimeout(timer);
  if (outcome === 'late') logger.warn(`${what} did not disconnect within ${DISCONNECT_BOUND_MS / 1000} s; stopping without it`, RELAY_CONSUMER);
}

/** `oncegate serve relay-kafka`. */
export const relayKafkaService: ServiceDefinition = {
  name: 'relay-kafka',
  check(config: GatewayConfig) {
    if (config.kafka === null) {
      throw new GatewayConfigError([
        { file: config.source, path: 'kafka.brokers', line: 0, column: 0, reason: 'relay-kafka needs a kafka section (brokers at least), or ONCEGATE_KAFKA_BROKERS' },
      ]);
    }
  },
  async serve(host) {
    const hosted = await hostRelay(host);
    return { summary: relaySummary(host.config), close: async () => hosted?.close() };
  },
};

/** What `oncegate serve relay-kafka` says about where events go and where decisions come from. */
export function relaySummary(config: GatewayConfig): string[] {
  const kafka = config.kafka;
  if (kafka === null) return [];
  const topics = [...new Set([...kafka.routes.map((route) => route.topic), kafka.defaultTopic])];
  return [
    `  kafka:        ${kafka.brokers.join(', ')} (client id ${kafka.clientId}, source ${kafka.source})`,
    `  events to:    ${topics.join(', ')}; one relay publishes at a time (claim ${RELAY_CONSUMER}, lease ${kafka.leaseMs / 1000}s)`,
    ...(kafka.decisions ? [`  decisions:    from ${kafka.decisions.topic} (group ${kafka.decisions.group}), answers to ${kafka.decisions.replies}`] : []),
  ];
}

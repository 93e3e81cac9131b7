import { hostname } from 'node:os';
import { GatewayConfigError, type GatewayConfig } from '@oncegate/host-config';
import { openVault, type Host, type ServiceDefinition } from '@oncegate/service-host';
import { BusProducer, busClient } from './bus-client';
import { busPassword, securitySummary, type BusVault } from './bus-security';
import { BusDecisions } from './bus-decisions';
import { busPublisher } from './bus-publisher';
import { EventRelay, RELAY_CONSUMER } from './event-relay';

/** The relay and the decisions consumer of one process. */
export interface HostedRelay {
  readonly relay: EventRelay;
  readonly decisions: BusDecisions | undefined;
  close(): Promise<void>;
}

/**
 * The relay (and, with `kafka.decisions`, the decisions consumer) in this process, when `kafka` is configured. `vault`
 * is the process's vault when it has one open already; a SASL password kept in the vault opens one otherwise.
 */
export async function hostRelay(host: Host, vault?: BusVault): Promise<HostedRelay | undefined> {
  const { config, store, clock, logger } = host;
  const kafkaConfig = config.kafka;
  if (kafkaConfig === null) return undefined;
  const password = kafkaConfig.sasl?.password;
  const secrets = password === undefined ? undefined : busPassword(password, password.from === 'vault' ? (vault ?? (await openVault(host))) : undefined);
  const kafka = busClient(kafkaConfig, logger, RELAY_CONSUMER, secrets);
  const producer = new BusProducer(kafka);
  const publisher = busPublisher(kafka, producer, kafkaConfig);
  const relay = new EventRelay({ store, publisher, config: kafkaConfig, clock, logger, owner: `${RELAY_CONSUMER}@${hostname()}/${host.instance}` });
  relay.start();
  host.metrics.gauge('oncegate_relay_lag_events', 'Events committed to the journal that the broker has not acknowledged yet (on the relay that publishes).', async () =>
    relay.progress().publishing ? Math.max(0, (await store.headPosition()) - relay.progress().relayed) : undefined,
  );
  host.metrics.gauge('oncegate_relay_publishing', '1 when this relay holds the claim and publishes, 0 while it stands by.', async () => (relay.progress().publishing ? 1 : 0));
  const decisions =
    kafkaConfig.decisions === null
      ? undefined
      : new BusDecisions({ kafka, producer, config: kafkaConfig.decisions, source: kafkaConfig.source, store, approvers: host.folder.approvers, tools: host.tools, clock, logger });
  // The consumer joins its group in the background: a broker or a topic that is not there yet must not stop the process.
  if (decisions !== undefined) {
    decisions.start();
    host.operations?.ready({ name: 'decisions', check: async () => decisions.state().notConsuming });
    host.metrics.gauge('oncegate_relay_decisions_consuming', '1 while the decisions consumer is a member of its group and takes decisions, 0 while it waits for its topic, the broker or the group.', async () =>
      decisions.state().notConsuming === undefined ? 1 : 0,
    );
    host.metrics.gauge('oncegate_relay_decisions_consumer_restarts', 'Times the decisions consumer was started again after it failed, since the process started.', async () => decisions.state().restarts);
  }
  const hosted: HostedRelay = {
    relay,
    decisions,
    async close() {
      await decisions?.stop();
      await relay.stop();
      await publisher.close();
      await producer.close();
    },
  };
  host.opened.push(hosted);
  return hosted;
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
    `  security:     ${securitySummary(kafka)}`,
    `  events to:    ${topics.join(', ')}; one relay publishes at a time (claim ${RELAY_CONSUMER}, lease ${kafka.leaseMs / 1000}s)`,
    kafka.delivery === 'exactly_once'
      ? `  delivery:     exactly once for read_committed consumers (transactional id ${kafka.transactionalId}, checkpoint on ${kafka.checkpointTopic})`
      : '  delivery:     at least once (duplicates carry the same ce_id)',
    ...(kafka.decisions
      ? [
          `  decisions:    from ${kafka.decisions.topic} (group ${kafka.decisions.group}), answers to ${kafka.decisions.replies}; ` +
            (kafka.decisions.requireSignature === true ? "each signed by the approver's own key" : 'signatures checked when present'),
        ]
      : []),
  ];
}

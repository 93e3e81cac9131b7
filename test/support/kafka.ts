// The tests start Apache Kafka as the local deployment does: one implementation, in deploy/local.
export { ensureKafkaJars, startKafka } from '@oncegate/deploy-local';
export type { KafkaHandle, StartKafkaOptions } from '@oncegate/deploy-local';

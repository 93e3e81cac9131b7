// The tests start Apache Kafka as the local deployment does: one implementation, in deploy/local.
export { ensureKafkaJars, makeKafkaCertificates, startKafka } from '@oncegate/deploy-local';
export type { KafkaCertificates, KafkaHandle, KafkaSecureListeners, KafkaSecurityOptions, StartKafkaOptions } from '@oncegate/deploy-local';

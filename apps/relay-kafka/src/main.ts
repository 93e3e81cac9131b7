// The Kafka relay as a process of its own: `node dist/apps/relay-kafka/main.js [--config <file>]`, the same as
// `oncegate serve relay-kafka`. The service itself is the library @oncegate/service-relay-kafka.
import { serviceMain } from '@oncegate/service-host';
import { relayKafkaService } from '@oncegate/service-relay-kafka';

await serviceMain(relayKafkaService);

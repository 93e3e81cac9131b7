import { createRequire } from 'node:module';
import type { KafkaSaslMechanism } from '@oncegate/host-config';

/**
 * kafkajs, loaded when the process first makes a Kafka client instead of when this library is imported. Every oncegate
 * process imports the library (each CLI command, the gateway, every service) and few of them talk to a broker: loading
 * the package and its SASL authenticators at import cost each of them a few tens of milliseconds of CPU. `require`
 * gives the one copy of the package its own modules use (kafkajs-request-queue.ts relies on the same).
 */
const require = createRequire(import.meta.url);

export function kafkajs(): typeof import('kafkajs') {
  return require('kafkajs') as typeof import('kafkajs');
}

/** kafkajs 2.2.4's own SASL authenticators (kafkajs-sasl.d.ts), by mechanism. */
export function kafkajsSaslProvider(mechanism: KafkaSaslMechanism): typeof import('kafkajs/src/broker/saslAuthenticator/plain.js').default {
  switch (mechanism) {
    case 'PLAIN':
      return require('kafkajs/src/broker/saslAuthenticator/plain.js') as typeof import('kafkajs/src/broker/saslAuthenticator/plain.js').default;
    case 'SCRAM-SHA-256':
      return require('kafkajs/src/broker/saslAuthenticator/scram256.js') as typeof import('kafkajs/src/broker/saslAuthenticator/scram256.js').default;
    case 'SCRAM-SHA-512':
      return require('kafkajs/src/broker/saslAuthenticator/scram512.js') as typeof import('kafkajs/src/broker/saslAuthenticator/scram512.js').default;
    default: {
      const never: never = mechanism;
      return never;
    }
  }
}

import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LoggerService } from '@nestjs/common';
import { Kafka, logLevel, type KafkaMessage } from 'kafkajs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { executionStream } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { systemClock } from '@oncegate/execution-journal';
import type { GatewayConfig, KafkaConfig, KafkaSaslConfig, KafkaTlsConfig } from '@oncegate/host-config';
import { approvalTools, ManualClock, paymentAwaitingApproval } from '@oncegate/host-decisions/testing';
import { ApproverDirectory } from '@oncegate/host-principals';
import { VaultService } from '@oncegate/host-vault';
import { initVault, storeCredential } from '@oncegate/vault';
/* eslint-disable @nx/enforce-module-boundaries -- the broker the tests run, and the polling and canary checks every suite uses */
import { prefixesOf } from '../../../test/support/canaries';
import { eventually } from '../../../test/support/journal';
import { makeKafkaCertificates, startKafka, type KafkaHandle, type KafkaSecureListeners } from '../../../test/support/kafka';
/* eslint-enable @nx/enforce-module-boundaries */
import { BusProducer, busClient } from './bus-client';
import { BusDecisions } from './bus-decisions';
import { busPublisher } from './bus-publisher';
import { busPassword } from './bus-security';
import { readCloudEvent } from './cloud-events';
import { EventRelay, RELAY_CONSUMER } from './event-relay';
import { relaySummary } from './relay-service';

const SCRAM_USER = 'scram-relay';
const SCRAM_PASSWORD = `scram-${randomBytes(12).toString('hex')}`;
const PLAIN_USER = 'plain-relay';
const PLAIN_PASSWORD = `plain-${randomBytes(12).toString('hex')}`;
/** A wrong password: neither it nor any prefix of it of six characters or more may appear in anything the relay says. */
const CANARY = `canary-${randomBytes(12).toString('hex')}`;

/** Every line logged, at every level (kafkajs's own lines come at debug), with its level. */
function capturingLogger(): LoggerService & { readonly lines: string[] } {
  const lines: string[] = [];
  const keep = (level: string) => (message: unknown, ...rest: unknown[]) => void lines.push(`${level} ${String(message)} ${rest.map(String).join(' ')}`);
  return { lines, log: keep('log'), error: keep('error'), warn: keep('warn'), debug: keep('debug'), verbose: keep('verbose'), fatal: keep('fatal') };
}

describe('the relay over TLS and SASL (a real Kafka 4.1.1 broker with SASL_SSL and mTLS listeners, certificates made by openssl)', () => {
  let broker: KafkaHandle;
  let secure: KafkaSecureListeners;
  let dir: string;
  let store: EventStore;
  let vault: VaultService;
  let passwordFile: string;
  let wrongPasswordFile: string;
  let topic: string;
  const stops: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    broker = await startKafka({ security: { plainUsers: { [PLAIN_USER]: PLAIN_PASSWORD }, scramUsers: { [SCRAM_USER]: SCRAM_PASSWORD } } });
    secure = broker.secure!;
  }, 180_000);
  afterAll(async () => broker?.stop(), 60_000);

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-bus-security-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    // The SCRAM password in the vault, bound to the SASL_SSL listener only.
    const env = { ONCEGATE_MASTER_KEY: 'a master key for the bus security tests' };
    const context = { store, dataDir: dir, env, by: 'operator:test' };
    await initVault(context);
    await storeCredential(context, { ref: 'kafka-relay', kind: 'password', bindings: [`127.0.0.1:${secure.saslSslPort}`] }, SCRAM_PASSWORD);
    await storeCredential(context, { ref: 'kafka-elsewhere', kind: 'password', bindings: ['kafka.example.com:9093'] }, CANARY);
    vault = new VaultService({ store, dataDir: dir, env });
    await vault.start();
    passwordFile = join(dir, 'plain-password');
    writeFileSync(passwordFile, `${PLAIN_PASSWORD}\n`, { mode: 0o600 });
    wrongPasswordFile = join(dir, 'wrong-password');
    writeFileSync(wrongPasswordFile, `${CANARY}\n`, { mode: 0o600 });
    topic = `secure-${randomBytes(4).toString('hex')}`;
  });
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
    await vault.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const tlsOf = (overrides: Partial<KafkaTlsConfig> = {}): KafkaTlsConfig => ({ caFile: secure.caFile, certFile: null, keyFile: null, serverName: null, ...overrides });
  const configOf = (brokers: string[], tls: KafkaTlsConfig, sasl?: KafkaSaslConfig): KafkaConfig => ({
    brokers,
    clientId: 'relay-secure-test',
    source: 'oncegate-test',
    routes: [],
    defaultTopic: topic,
    leaseMs: 600,
    decisions: null,
    // Exactly once over the secure listeners too: the transactional producer and its checkpoint go the same way.
    delivery: 'exactly_once',
    transactionalId: `${topic}.relay-${randomUUID().slice(0, 8)}`,
    checkpointTopic: `${topic}.checkpoints`,
    tls,
    ...(sasl === undefined ? {} : { sasl }),
  });

  /** A relay on `config`, the SASL password from where the configuration says (the vault of the test). */
  const relayOn = (config: KafkaConfig, logger: LoggerService) => {
    const password = config.sasl === undefined ? undefined : busPassword(config.sasl.password, vault);
    const kafka = busClient(config, logger, RELAY_CONSUMER, password);
    const producer = new BusProducer(kafka);
    const publisher = busPublisher(kafka, producer, config);
    const relay = new EventRelay({ store, publisher, config, clock: systemClock, logger, owner: `relay-${randomUUID().slice(0, 8)}` });
    relay.start();
    stops.push(async () => {
      await relay.stop();
      await publisher.close();
      await producer.close();
    });
    return relay;
  };

  /** Reads `count` messages of `topics` over the broker's PLAINTEXT listener, apart from the relay's own. */
  const consume = async (topics: string[], count: number): Promise<KafkaMessage[]> => {
    const consumer = new Kafka({ clientId: 'secure-check', brokers: broker.brokers, logLevel: logLevel.NOTHING }).consumer({ groupId: `check-${randomUUID()}`, maxWaitTimeInMs: 100 });
    const received: KafkaMessage[] = [];
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void received.push(message) });
    try {
      await eventually(() => (received.length >= count ? true : undefined), 30_000, `${count} messages on ${topics.join(', ')}`);
      return received;
    } finally {
      await consumer.disconnect();
    }
  };

  const appendEvents = async (count: number) => {
    for (let i = 0; i < count; i += 1) await store.appendToStream(`run-r${i % 2}`, [{ type: 'RunStarted', data: { i } }]);
  };

  /** The relay publishes every event of the journal (the vault's among them) over `config`, and a consumer reads each. */
  const publishesAll = async (config: KafkaConfig) => {
    await appendEvents(6);
    const head = await store.headPosition();
    const relay = relayOn(config, capturingLogger());
    await eventually(() => (relay.progress().relayed === head ? true : undefined), 60_000, 'the relay to publish every event');
    const received = await consume([topic], head);
    expect(received.map((message) => readCloudEvent(message).position).sort((a, b) => a - b)).toEqual(Array.from({ length: head }, (_, i) => i + 1));
    expect(received.map((message) => readCloudEvent(message).type)).toContain('RunStarted');
  };

  it('given SASL_SSL with SCRAM-SHA-512 and the password in the vault, when events are appended, then the relay publishes each and a consumer reads them', async () => {
    await publishesAll(configOf(secure.saslSsl, tlsOf(), { mechanism: 'SCRAM-SHA-512', username: SCRAM_USER, password: { from: 'vault', ref: 'kafka-relay' } }));
  }, 90_000);

  it('given SASL_SSL with PLAIN and the password in a file, when events are appended, then the relay publishes each and a consumer reads them', async () => {
    await publishesAll(configOf(secure.saslSsl, tlsOf(), { mechanism: 'PLAIN', username: PLAIN_USER, password: { from: 'file', path: passwordFile } }));
  }, 90_000);

  it('given SASL_SSL with SCRAM-SHA-256 and a server name the certificate carries, when events are appended, then the relay publishes each', async () => {
    await storeCredential({ store, dataDir: dir, env: { ONCEGATE_MASTER_KEY: 'a master key for the bus security tests' }, by: 'operator:test' }, { ref: 'kafka-256', kind: 'password', bindings: [`127.0.0.1:${secure.saslSslPort}`] }, SCRAM_PASSWORD);
    await publishesAll(configOf(secure.saslSsl, tlsOf({ serverName: 'localhost' }), { mechanism: 'SCRAM-SHA-256', username: SCRAM_USER, password: { from: 'vault', ref: 'kafka-256' } }));
  }, 90_000);

  it('given the SSL listener that requires a client certificate, when the relay presents one signed by the CA, then it publishes each event', async () => {
    await publishesAll(configOf(secure.ssl, tlsOf({ certFile: secure.clientCertFile, keyFile: secure.clientKeyFile })));
  }, 90_000);

  it('given decisions on a topic of the SASL_SSL listener, when the relay consumes them with SCRAM-SHA-512, then the approval is recorded and answered on the replies topic', async () => {
    const clock = new ManualClock();
    const approvers = new ApproverDirectory(store);
    await approvers.issue('alice');
    const executionId = await paymentAwaitingApproval(store, clock);
    const decisionsConfig = { topic: `${topic}.decisions`, replies: `${topic}.replies`, group: `decisions-${randomBytes(4).toString('hex')}` };
    // The topics exist before the consumer subscribes, as an organisation's would.
    const admin = new Kafka({ clientId: 'secure-admin', brokers: broker.brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: decisionsConfig.topic }, { topic: decisionsConfig.replies }], waitForLeaders: true });
    await admin.disconnect();
    const config = { ...configOf(secure.saslSsl, tlsOf(), { mechanism: 'SCRAM-SHA-512', username: SCRAM_USER, password: { from: 'vault', ref: 'kafka-relay' } }), decisions: decisionsConfig };
    const logger = capturingLogger();
    const kafka = busClient(config, logger, 'relay-decisions', busPassword(config.sasl!.password, vault));
    const producer = new BusProducer(kafka);
    const decisions = new BusDecisions({ kafka, producer, config: decisionsConfig, source: 'oncegate-test', store, approvers, tools: approvalTools('http://127.0.0.1:9'), clock, logger });
    stops.push(async () => {
      await decisions.stop();
      await producer.close();
    });
    decisions.start();

    const writer = new Kafka({ clientId: 'decider', brokers: broker.brokers, logLevel: logLevel.NOTHING }).producer();
    await writer.connect();
    await writer.send({ topic: decisionsConfig.topic, messages: [{ key: executionId, value: JSON.stringify({ kind: 'approval', id: 'chg-1', execution_id: executionId, decision: 'approve', by: 'approver:alice', reason: 'checked' }) }] });
    await writer.disconnect();

    const [reply] = await consume([decisionsConfig.replies], 1);
    expect(JSON.parse(reply!.value!.toString())).toMatchObject({ in_reply_to: 'chg-1', outcome: 'applied', execution_id: executionId });
    expect((await store.readStream(executionStream(executionId))).map((event) => event.type)).toContain('ApprovalGranted');
  }, 120_000);

  it('given a wrong password (SCRAM-SHA-512 and PLAIN), then publishing fails naming the broker, the mechanism and the user, and nothing the relay says holds the password or a prefix of it', async () => {
    await appendEvents(2);
    const env = { ONCEGATE_MASTER_KEY: 'a master key for the bus security tests' };
    await storeCredential({ store, dataDir: dir, env, by: 'operator:test' }, { ref: 'kafka-wrong', kind: 'password', bindings: [`127.0.0.1:${secure.saslSslPort}`] }, CANARY);
    const scram = configOf(secure.saslSsl, tlsOf(), { mechanism: 'SCRAM-SHA-512', username: SCRAM_USER, password: { from: 'vault', ref: 'kafka-wrong' } });
    const plain = configOf(secure.saslSsl, tlsOf(), { mechanism: 'PLAIN', username: PLAIN_USER, password: { from: 'file', path: wrongPasswordFile } });
    const said: string[] = [];
    for (const [config, refusal] of [
      [scram, /refused SCRAM-SHA-512 for user 'scram-relay': .*invalid credentials/],
      [plain, /refused PLAIN for user 'plain-relay': .*Invalid username or password/],
    ] as const) {
      const logger = capturingLogger();
      relayOn(config, logger);
      const failed = await eventually(() => logger.lines.find((line) => line.startsWith('error publishing failed')), 60_000, 'the first failed send');
      expect(failed).toMatch(new RegExp(`127\\.0\\.0\\.1:${secure.saslSslPort} ${refusal.source}`));
      said.push(...logger.lines, relaySummary({ kafka: config } as GatewayConfig).join('\n'));
      await stops.pop()!();
    }
    expect(await store.readCheckpoint(RELAY_CONSUMER)).toBeUndefined();
    const text = said.join('\n');
    expect(text).toContain('debug kafka:');
    for (const prefix of prefixesOf(CANARY)) expect(text).not.toContain(prefix);
  }, 150_000);

  it('given a CA that did not sign the broker, then publishing fails saying the certificate does not chain to kafka.tls.ca_file', async () => {
    const other = await makeKafkaCertificates(join(dir, 'other-ca'));
    await appendEvents(1);
    const logger = capturingLogger();
    relayOn(configOf(secure.saslSsl, tlsOf({ caFile: other.caFile }), { mechanism: 'SCRAM-SHA-512', username: SCRAM_USER, password: { from: 'vault', ref: 'kafka-relay' } }), logger);
    const failed = await eventually(() => logger.lines.find((line) => line.startsWith('error publishing failed')), 90_000, 'the first failed send');
    expect(failed).toContain(`TLS to 127.0.0.1:${secure.saslSslPort}: the broker's certificate does not chain to a CA of kafka.tls.ca_file (${other.caFile}): self-signed certificate in certificate chain`);
  }, 120_000);

  it('given the SSL listener and no client certificate, then publishing fails saying the broker refused the handshake for the client certificate', async () => {
    await appendEvents(1);
    const logger = capturingLogger();
    relayOn(configOf(secure.ssl, tlsOf()), logger);
    const failed = await eventually(() => logger.lines.find((line) => line.startsWith('error publishing failed')), 90_000, 'the first failed send');
    expect(failed).toMatch(new RegExp(`TLS to 127\\.0\\.0\\.1:${secure.sslPort}: the broker refused the handshake, most likely for the client certificate \\(none is configured: kafka\\.tls\\.cert_file and key_file\\)`));
  }, 120_000);

  it('given a vault credential bound to other brokers, then its password is not sent and publishing fails naming the binding', async () => {
    await appendEvents(1);
    const logger = capturingLogger();
    relayOn(configOf(secure.saslSsl, tlsOf(), { mechanism: 'SCRAM-SHA-512', username: SCRAM_USER, password: { from: 'vault', ref: 'kafka-elsewhere' } }), logger);
    const failed = await eventually(() => logger.lines.find((line) => line.startsWith('error publishing failed')), 90_000, 'the first failed send');
    expect(failed).toMatch(new RegExp(`no SASL password for 127\\.0\\.0\\.1:${secure.saslSslPort}: credential 'kafka-elsewhere' is bound to kafka\\.example\\.com:9093, not 127\\.0\\.0\\.1:${secure.saslSslPort}`));
    for (const prefix of prefixesOf(CANARY)) expect(logger.lines.join('\n')).not.toContain(prefix);
  }, 120_000);
});

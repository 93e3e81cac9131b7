import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel, type IHeaders, type KafkaConfig, type KafkaMessage } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKafka, type KafkaHandle, type KafkaSecureListeners } from './kafka';

const client = (brokers: string[]) =>
  new Kafka({ clientId: 'kafka-int-spec', brokers, logLevel: logLevel.NOTHING, retry: { retries: 8, initialRetryTime: 100 } });

async function send(brokers: string[], topic: string, messages: Array<{ key: string; value: string; headers?: IHeaders }>): Promise<void> {
  const producer = client(brokers).producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    await producer.send({ topic, acks: -1, messages });
  } finally {
    await producer.disconnect();
  }
}

/** Reads `count` messages of `topic` from its beginning as a new consumer group. */
async function read(brokers: string[], topic: string, count: number, timeoutMs = 20_000): Promise<KafkaMessage[]> {
  // A fresh broker may make the first group member crash while it creates __consumer_offsets: it restarts.
  const consumer = client(brokers).consumer({
    groupId: `group-${randomUUID()}`,
    // A fetch that finds too little waits this long for more (5 s by default).
    maxWaitTimeInMs: 100,
    retry: { retries: 8, restartOnFailure: async () => true },
  });
  const received: KafkaMessage[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void received.push(message) });
    const deadline = Date.now() + timeoutMs;
    while (received.length < count) {
      if (Date.now() > deadline) throw new Error(`read ${received.length} of ${count} messages of ${topic} within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    return received;
  } finally {
    await consumer.disconnect();
  }
}

const text = (value: Buffer | string | null | undefined) => (value === null || value === undefined ? value : value.toString());
const values = (messages: KafkaMessage[]) => messages.map((message) => text(message.value)).sort();

// Each broker start costs seconds of CPU (a JVM to format the folder, one to run the broker): one broker in a kept folder
// serves the tests that send to it, stop and start it again, and start a new one there.
describe('kafka: a real Apache Kafka 4.1.1 broker (KRaft, one node) in a kept folder', () => {
  let dir: string;
  let broker: KafkaHandle;

  // The first start may copy the jars from Maven Central.
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-kafka-kept-'));
    broker = await startKafka({ dir });
  }, 180_000);
  afterAll(async () => {
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('given a fresh broker, when an idempotent producer sends messages with headers to a new topic, then a consumer group reads each back once with its headers', async () => {
    const topic = `spec-${randomUUID().slice(0, 8)}`;
    expect(broker.brokers).toEqual([`127.0.0.1:${broker.port}`]);
    const sent = Array.from({ length: 12 }, (_, i) => ({ key: `k-${i % 3}`, value: `message-${String(i).padStart(2, '0')}`, headers: { 'ce-id': `id-${i}`, trace: 'abc' } }));

    await send(broker.brokers, topic, sent);
    const received = await read(broker.brokers, topic, sent.length);

    expect(values(received)).toEqual(sent.map((message) => message.value));
    for (const message of received) {
      const i = Number(text(message.value)!.slice('message-'.length));
      expect(text(message.key)).toBe(`k-${i % 3}`);
      expect(text(message.headers?.['ce-id'] as Buffer)).toBe(`id-${i}`);
      expect(text(message.headers?.['trace'] as Buffer)).toBe('abc');
    }
  }, 60_000);

  it('given messages sent before a shutdown, when the broker is started again, then they are still there, on the same port, and a new send works', async () => {
    const topic = `restart-${randomUUID().slice(0, 8)}`;
    await send(broker.brokers, topic, [{ key: 'a', value: 'before-1' }, { key: 'b', value: 'before-2' }]);

    await broker.shutdown();
    const admin = new Kafka({ clientId: 'kafka-int-spec', brokers: broker.brokers, logLevel: logLevel.NOTHING, retry: { retries: 0 } }).admin();
    await expect(admin.connect()).rejects.toThrow();
    await broker.start();

    expect(values(await read(broker.brokers, topic, 2))).toEqual(['before-1', 'before-2']);
    await send(broker.brokers, topic, [{ key: 'a', value: 'after-1' }]);
    expect(values(await read(broker.brokers, topic, 3))).toEqual(['after-1', 'before-1', 'before-2']);
  }, 90_000);

  it('given the broker in its kept folder, when it is stopped and started anew there (on a new free controller port), then its messages are still there and the folder is kept', async () => {
    const topic = `kept-${randomUUID().slice(0, 8)}`;
    await send(broker.brokers, topic, [{ key: 'a', value: 'kept-1' }]);
    const first = broker;
    await first.stop();

    broker = await startKafka({ dir, port: first.port });
    expect(values(await read(broker.brokers, topic, 1))).toEqual(['kept-1']);
  }, 120_000);
});

describe('kafka: a broker with SASL_SSL and mTLS listeners, in a kept folder', () => {
  let dir: string;
  let broker: KafkaHandle;
  let secure: KafkaSecureListeners;
  const users = { plain: 'plain-password-1', scram: 'scram-password-2' };
  const security = { plainUsers: { alice: users.plain }, scramUsers: { bob: users.scram } };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-kafka-secure-kept-'));
    broker = await startKafka({ dir, security });
    secure = broker.secure!;
  }, 180_000);
  afterAll(async () => {
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  /** Sends one message with a client of these options and reads it back over PLAINTEXT; the error when the client is refused. */
  const roundTrip = async (options: Omit<KafkaConfig, 'clientId'>): Promise<string | undefined> => {
    const topic = `secure-${randomUUID().slice(0, 8)}`;
    // A few retries: the first send to a new topic waits for its creation; a refused login is not retried.
    const producer = new Kafka({ clientId: 'kafka-int-spec', logLevel: logLevel.NOTHING, ...options, retry: { retries: 4, initialRetryTime: 100 } }).producer();
    try {
      await producer.connect();
      await producer.send({ topic, acks: -1, messages: [{ key: 'k', value: 'over-a-secure-listener' }] });
    } catch (error) {
      return (error as Error).message;
    } finally {
      await producer.disconnect().catch(() => undefined);
    }
    expect(values(await read(broker.brokers, topic, 1))).toEqual(['over-a-secure-listener']);
    return undefined;
  };

  it('given the CA made for it, when clients log in over SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, then each sends, and a wrong password is refused', async () => {
    const ssl = { ca: [readFileSync(secure.caFile)] };
    expect(secure.saslSsl).toEqual([`127.0.0.1:${secure.saslSslPort}`]);
    expect(await roundTrip({ brokers: secure.saslSsl, ssl, sasl: { mechanism: 'plain', username: 'alice', password: users.plain } })).toBeUndefined();
    expect(await roundTrip({ brokers: secure.saslSsl, ssl, sasl: { mechanism: 'scram-sha-256', username: 'bob', password: users.scram } })).toBeUndefined();
    expect(await roundTrip({ brokers: secure.saslSsl, ssl, sasl: { mechanism: 'scram-sha-512', username: 'bob', password: users.scram } })).toBeUndefined();
    expect(await roundTrip({ brokers: secure.saslSsl, ssl, sasl: { mechanism: 'scram-sha-512', username: 'bob', password: 'not-the-password' } })).toMatch(/invalid credentials/);
    expect(await roundTrip({ brokers: secure.saslSsl, ssl, sasl: { mechanism: 'plain', username: 'bob', password: users.scram } })).toMatch(/Invalid username or password/);
  }, 90_000);

  it('given the SSL listener, then a client with the certificate made for it sends, and one without is refused', async () => {
    const ca = [readFileSync(secure.caFile)];
    expect(await roundTrip({ brokers: secure.ssl, ssl: { ca, cert: readFileSync(secure.clientCertFile), key: readFileSync(secure.clientKeyFile) } })).toBeUndefined();
    expect(await roundTrip({ brokers: secure.ssl, ssl: { ca } })).toMatch(/certificate/);
    // The PLAINTEXT listener stays, for the broker's own traffic and the tests' checks.
    expect(await roundTrip({ brokers: broker.brokers })).toBeUndefined();
  }, 90_000);

  it('given its kept folder, when the secure broker starts there again, then it keeps its certificates and its SCRAM users', async () => {
    const ca = readFileSync(secure.caFile, 'utf8');
    await broker.stop();
    broker = await startKafka({ dir, security });
    expect(existsSync(join(dir, 'tls', 'ca.key'))).toBe(true);
    expect(readFileSync(broker.secure!.caFile, 'utf8')).toBe(ca);
    const client = new Kafka({ clientId: 'kept', brokers: broker.secure!.saslSsl, ssl: { ca: [ca] }, sasl: { mechanism: 'scram-sha-512', username: 'bob', password: users.scram }, logLevel: logLevel.NOTHING }).admin();
    await client.connect();
    await client.disconnect();
  }, 120_000);

  it('given a user name or password the broker configuration cannot hold, then the start is refused without repeating the password', async () => {
    const password = 'has"a quote';
    const start = startKafka({ security: { plainUsers: { alice: password } } });
    await expect(start).rejects.toThrow(/kafka user 'alice': names and passwords are 1 to 64 of A-Z a-z 0-9/);
    await expect(start).rejects.not.toThrow(password);
  });
});

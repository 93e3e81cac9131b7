import { describe, expect, it } from 'vitest';
import { passwordOf, type GatewayConfig, type KafkaConfig, type KafkaTlsConfig } from '@oncegate/host-config';
import { securityOptions, securitySummary, tlsFailure } from './bus-security';
import { relaySummary } from './relay-service';

const kafka: KafkaConfig = { brokers: ['kafka-1.example.com:9093'], clientId: 'oncegate', source: 'oncegate', routes: [], defaultTopic: 'oncegate.events', leaseMs: 10_000, decisions: null, delivery: 'exactly_once', transactionalId: 'oncegate-relay:oncegate', checkpointTopic: 'oncegate.relay-checkpoints' };
const tls: KafkaTlsConfig = { caFile: '/etc/oncegate/kafka-ca.pem', certFile: null, keyFile: null, serverName: null };
const failure = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('how the relay reaches the brokers, said in the serve summary', () => {
  it('given PLAINTEXT, SSL with a client certificate, or SASL_SSL, then the summary says so with the user and where the password is, never a secret', () => {
    expect(securitySummary(kafka)).toBe('PLAINTEXT (no TLS, no SASL)');
    expect(securitySummary({ ...kafka, tls: { ...tls, caFile: null, certFile: '/etc/oncegate/relay.pem', keyFile: '/etc/oncegate/relay.key', serverName: 'kafka.internal' } })).toBe(
      "SSL; CAs Node trusts, name kafka.internal; client certificate /etc/oncegate/relay.pem",
    );
    const sasl = { ...kafka, tls, sasl: { mechanism: 'SCRAM-SHA-512', username: 'oncegate-relay', password: { from: 'vault', ref: 'kafka-relay' } } } as const;
    expect(securitySummary(sasl)).toBe('SASL_SSL; CA /etc/oncegate/kafka-ca.pem; SCRAM-SHA-512 as oncegate-relay, password from vault credential kafka-relay');
    expect(relaySummary({ kafka: sasl } as unknown as GatewayConfig)).toContain(
      '  security:     SASL_SSL; CA /etc/oncegate/kafka-ca.pem; SCRAM-SHA-512 as oncegate-relay, password from vault credential kafka-relay',
    );
  });
});

describe('TLS failures said in terms of the configuration', () => {
  it("given Node's verification failures and a broker's alerts, then each names the broker and the setting to look at", () => {
    expect(tlsFailure(failure('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'), '10.0.0.5:9093', tls)).toBe(
      "TLS to 10.0.0.5:9093: the broker's certificate does not chain to a CA of kafka.tls.ca_file (/etc/oncegate/kafka-ca.pem): self-signed certificate in certificate chain",
    );
    expect(tlsFailure(failure('UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'unable to verify the first certificate'), 'k:9093', { ...tls, caFile: null })).toMatch(/does not chain to the CAs Node trusts \(kafka\.tls\.ca_file names others\)/);
    expect(tlsFailure(failure('ERR_TLS_CERT_ALTNAME_INVALID', "Hostname/IP does not match certificate's altnames"), 'k:9093', tls)).toMatch(/is not for the name it was reached by; kafka\.tls\.server_name names the one it carries/);
    expect(tlsFailure(failure('CERT_HAS_EXPIRED', 'certificate has expired'), 'k:9093', tls)).toMatch(/out of its validity/);
    expect(tlsFailure(failure('ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE', 'ssl/tls alert bad certificate'), 'k:9093', tls)).toMatch(/refused the handshake, most likely for the client certificate \(none is configured: kafka\.tls\.cert_file and key_file\)/);
    expect(tlsFailure(failure('ECONNREFUSED', 'connect ECONNREFUSED'), 'k:9093', tls)).toBeUndefined();
  });
});

describe('the Kafka client options of kafka.tls and kafka.sasl', () => {
  it('given PLAINTEXT, then there are none; given SASL without a password source, then the client is not made', () => {
    expect(securityOptions(kafka, undefined)).toEqual({});
    expect(() => securityOptions({ ...kafka, tls: { ...tls, caFile: null }, sasl: { mechanism: 'PLAIN', username: 'u', password: { from: 'file', path: '/x' } } }, undefined)).toThrow(/no password source/);
    const options = securityOptions({ ...kafka, tls: { ...tls, caFile: null, serverName: 'kafka.internal' }, sasl: { mechanism: 'SCRAM-SHA-256', username: 'u', password: { from: 'file', path: '/x' } } }, async () => Buffer.from('x'));
    expect(options.ssl).toEqual({ rejectUnauthorized: true, servername: 'kafka.internal' });
    expect(options.sasl?.mechanism).toBe('SCRAM-SHA-256');
  });

  it('given a password file, then one trailing line break is dropped and nothing else', () => {
    expect(passwordOf(Buffer.from('s3cret\n')).toString()).toBe('s3cret');
    expect(passwordOf(Buffer.from('s3cret\r\n')).toString()).toBe('s3cret');
    expect(passwordOf(Buffer.from('s3cret\n\n')).toString()).toBe('s3cret\n');
    expect(passwordOf(Buffer.from(' s3cret ')).toString()).toBe(' s3cret ');
  });
});

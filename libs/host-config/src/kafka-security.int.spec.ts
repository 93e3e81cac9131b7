import { createPrivateKey, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
/* eslint-disable @nx/enforce-module-boundaries -- the certificates the local broker uses, and the canary checks every suite uses */
import { prefixesOf } from '../../../test/support/canaries';
import { makeKafkaCertificates, type KafkaCertificates } from '../../../test/support/kafka';
/* eslint-enable @nx/enforce-module-boundaries */
import { absolutePaths, applyEnvironment, GatewayConfigError, parseGatewayConfig, type GatewayConfig } from './gateway-config';

/** The configuration of `text` with `env` applied, or the lines of the error that refused it. */
function load(text: string, env: NodeJS.ProcessEnv = {}): GatewayConfig | string[] {
  try {
    return applyEnvironment(parseGatewayConfig(text, 'oncegate.yaml', undefined, env), env);
  } catch (error) {
    if (error instanceof GatewayConfigError) return error.message.split('\n').slice(1);
    throw error;
  }
}

function issuesOf(text: string, env: NodeJS.ProcessEnv = {}): string[] {
  const loaded = load(text, env);
  if (!Array.isArray(loaded)) throw new Error('expected the configuration to be refused');
  return loaded;
}

function kafkaOf(text: string, env: NodeJS.ProcessEnv = {}): NonNullable<GatewayConfig['kafka']> {
  const loaded = load(text, env);
  if (Array.isArray(loaded)) throw new Error(`expected the configuration to be taken:\n${loaded.join('\n')}`);
  return loaded.kafka!;
}

/** A canary secret: neither it nor any prefix of it of six characters or more may appear in a message. */
const CANARY = `canary-${randomBytes(12).toString('hex')}`;
const expectNoCanary = (lines: readonly string[]) => {
  const text = lines.join('\n');
  for (const prefix of prefixesOf(CANARY)) expect(text).not.toContain(prefix);
};

describe('kafka.tls and kafka.sasl in the configuration (real PEM files made by openssl)', () => {
  let dir: string;
  let certificates: KafkaCertificates;
  let passwordFile: string;
  let emptyFile: string;
  let encryptedKey: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-kafka-config-'));
    certificates = await makeKafkaCertificates(join(dir, 'tls'));
    passwordFile = join(dir, 'kafka-password');
    writeFileSync(passwordFile, `${CANARY}\n`, { mode: 0o600 });
    emptyFile = join(dir, 'empty');
    writeFileSync(emptyFile, '\n');
    encryptedKey = join(dir, 'encrypted.key');
    const key = createPrivateKey(readFileSync(certificates.clientKeyFile));
    writeFileSync(encryptedKey, key.export({ format: 'pem', type: 'pkcs8', cipher: 'aes-256-cbc', passphrase: 'a passphrase' }));
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const section = (...lines: string[]) => ['kafka:', '  brokers: [kafka-1.example.com:9093]', ...lines.map((line) => `  ${line}`)].join('\n');

  it('given no tls and no sasl, when parsed, then the bus is PLAINTEXT (neither is set)', () => {
    const kafka = kafkaOf(section());
    expect(kafka.tls).toBeUndefined();
    expect(kafka.sasl).toBeUndefined();
    expect(kafkaOf(section('tls: {}')).tls).toEqual({ caFile: null, certFile: null, keyFile: null, serverName: null });
  });

  it('given a CA, a client certificate and key, a server name and SCRAM-SHA-512 with a vault credential, when parsed, then each is read as written', () => {
    const kafka = kafkaOf(
      section(
        `tls: { ca_file: ${certificates.caFile}, cert_file: ${certificates.clientCertFile}, key_file: ${certificates.clientKeyFile}, server_name: kafka.internal }`,
        'sasl: { mechanism: SCRAM-SHA-512, username: oncegate-relay, credential_ref: kafka-relay }',
      ),
    );
    expect(kafka.tls).toEqual({ caFile: certificates.caFile, certFile: certificates.clientCertFile, keyFile: certificates.clientKeyFile, serverName: 'kafka.internal' });
    expect(kafka.sasl).toEqual({ mechanism: 'SCRAM-SHA-512', username: 'oncegate-relay', password: { from: 'vault', ref: 'kafka-relay' } });
    expect(kafkaOf(section('tls: {}', `sasl: { mechanism: PLAIN, username: u, password_file: ${passwordFile} }`)).sasl).toEqual({
      mechanism: 'PLAIN',
      username: 'u',
      password: { from: 'file', path: passwordFile },
    });
  });

  it('given relative paths, when the configuration is made absolute, then they are resolved from the working directory', () => {
    const loaded = load(section(`tls: { ca_file: ${certificates.caFile} }`, 'sasl: { mechanism: PLAIN, username: u, credential_ref: kafka }'));
    const config = absolutePaths({ ...(loaded as GatewayConfig), kafka: { ...(loaded as GatewayConfig).kafka!, tls: { caFile: 'tls/ca.pem', certFile: 'c.pem', keyFile: 'k.pem', serverName: null }, sasl: { mechanism: 'PLAIN', username: 'u', password: { from: 'file', path: 'secrets/kafka' } } } }, '/srv/oncegate');
    expect(config.kafka!.tls).toEqual({ caFile: '/srv/oncegate/tls/ca.pem', certFile: '/srv/oncegate/c.pem', keyFile: '/srv/oncegate/k.pem', serverName: null });
    expect(config.kafka!.sasl!.password).toEqual({ from: 'file', path: '/srv/oncegate/secrets/kafka' });
  });

  it('given mistakes in kafka.tls, when parsed, then each is refused with its line, path and reason', () => {
    const missing = join(dir, 'no-such-ca.pem');
    expect(issuesOf(section(`tls: { ca_file: ${missing} }`))).toEqual([expect.stringMatching(new RegExp(`^oncegate\\.yaml:3:\\d+ kafka\\.tls\\.ca_file: ${missing}: no such file$`))]);
    expect(issuesOf(section(`tls: { ca_file: ${certificates.clientKeyFile} }`))).toEqual([expect.stringMatching(/kafka\.tls\.ca_file: .*client\.key: holds no PEM certificate/)]);
    expect(issuesOf(section(`tls: { ca_file: ${dir} }`))).toEqual([expect.stringMatching(/kafka\.tls\.ca_file: .*: is a folder, not a file/)]);
    expect(issuesOf(section(`tls: { cert_file: ${certificates.clientCertFile} }`))).toEqual([expect.stringMatching(/kafka\.tls\.cert_file: a client certificate needs its private key: add key_file/)]);
    expect(issuesOf(section(`tls: { key_file: ${certificates.clientKeyFile} }`))).toEqual([expect.stringMatching(/kafka\.tls\.key_file: a client key needs its certificate: add cert_file/)]);
    expect(issuesOf(section(`tls: { cert_file: ${certificates.caFile}, key_file: ${certificates.clientKeyFile} }`))).toEqual([
      expect.stringMatching(/kafka\.tls\.key_file: .*client\.key: is not the private key of the certificate in .*ca\.pem/),
    ]);
    expect(issuesOf(section(`tls: { cert_file: ${certificates.clientCertFile}, key_file: ${encryptedKey} }`))).toEqual([
      expect.stringMatching(/kafka\.tls\.key_file: .*encrypted\.key: not an unencrypted PEM private key/),
    ]);
    expect(issuesOf(section('tls: { ca_file: ca.pem, server_nmae: kafka }'))).toEqual(expect.arrayContaining([expect.stringMatching(/kafka\.tls\.server_nmae: unknown field .*did you mean 'server_name'/)]));
  });

  it('given a key or a password written in the file, when parsed, then it is refused without repeating it', () => {
    const issues = issuesOf(section(`tls: { key: ${CANARY} }`, `sasl: { mechanism: PLAIN, username: u, password: ${CANARY} }`));
    expect(issues).toEqual([
      expect.stringMatching(/^oncegate\.yaml:3:\d+ kafka\.tls\.key: a private key is never written in this file: name the file that holds it \(key_file: <path>\)$/),
      expect.stringMatching(/^oncegate\.yaml:4:\d+ kafka\.sasl\.password: a password is never written in this file: name a vault credential \(credential_ref: <ref>.*\) or a file \(password_file: <path>\)$/),
    ]);
    expectNoCanary(issues);
    // A secret given as the credential's name is refused by its look, also without repeating it.
    const token = `ghp_${randomBytes(18).toString('hex')}`;
    const named = issuesOf(section('tls: {}', `sasl: { mechanism: PLAIN, username: u, credential_ref: ${token} }`));
    expect(named).toEqual([expect.stringMatching(/kafka\.sasl\.credential_ref: must name a credential .*never contain one$/)]);
    expect(named.join('\n')).not.toContain(token.slice(0, 10));
  });

  it('given mistakes in kafka.sasl, when parsed, then each is refused with its line, path and reason', () => {
    expect(issuesOf(section('tls: {}', 'sasl: { mechanism: SCRAM-SHA-521, username: u, credential_ref: kafka }'))).toEqual([
      expect.stringMatching(/^oncegate\.yaml:4:\d+ kafka\.sasl\.mechanism: 'SCRAM-SHA-521' is not allowed; expected one of: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 — did you mean 'SCRAM-SHA-512'\?$/),
    ]);
    expect(issuesOf(section('tls: {}', 'sasl: { mechanism: PLAIN, credential_ref: kafka }'))).toEqual([expect.stringMatching(/kafka\.sasl\.username: missing required field 'username'/)]);
    expect(issuesOf(section('tls: {}', 'sasl: { mechanism: PLAIN, username: u }'))).toEqual([expect.stringMatching(/kafka\.sasl\.credential_ref: where is the password\? credential_ref: <ref> .* or password_file: <path>/)]);
    expect(issuesOf(section('tls: {}', `sasl: { mechanism: PLAIN, username: u, credential_ref: kafka, password_file: ${passwordFile} }`))).toEqual([
      expect.stringMatching(/kafka\.sasl: name either credential_ref \(a vault credential\) or password_file, not both/),
    ]);
    expect(issuesOf(section('tls: {}', `sasl: { mechanism: PLAIN, username: u, password_file: ${emptyFile} }`))).toEqual([expect.stringMatching(/kafka\.sasl\.password_file: .*empty: is empty$/)]);
    expect(issuesOf(section('tls: {}', `sasl: { mechanism: PLAIN, username: u, password_file: ${join(dir, 'nope')} }`))).toEqual([expect.stringMatching(/kafka\.sasl\.password_file: .*nope: no such file$/)]);
  });

  it('given SASL without TLS, when parsed, then it is refused: the password and every decision would cross the network in clear', () => {
    const issues = issuesOf(section(`sasl: { mechanism: SCRAM-SHA-512, username: u, password_file: ${passwordFile} }`));
    expect(issues).toEqual([expect.stringMatching(/^oncegate\.yaml:3:\d+ kafka\.sasl: SASL is taken over TLS only: add kafka\.tls \(tls: \{\} trusts the CAs Node trusts\) or ONCEGATE_KAFKA_TLS=on/)]);
    expectNoCanary(issues);
    // TLS from the environment counts.
    expect(kafkaOf(section(`sasl: { mechanism: SCRAM-SHA-512, username: u, password_file: ${passwordFile} }`), { ONCEGATE_KAFKA_TLS: 'on' }).tls).toBeDefined();
  });

  it('given ONCEGATE_KAFKA_TLS_* and ONCEGATE_KAFKA_SASL_*, then they set or override the sections, and a file of the section may leave the password to them', () => {
    const env = {
      ONCEGATE_KAFKA_BROKERS: '127.0.0.1:9093',
      ONCEGATE_KAFKA_TLS_CA_FILE: certificates.caFile,
      ONCEGATE_KAFKA_TLS_CERT_FILE: certificates.clientCertFile,
      ONCEGATE_KAFKA_TLS_KEY_FILE: certificates.clientKeyFile,
      ONCEGATE_KAFKA_TLS_SERVER_NAME: 'localhost',
      ONCEGATE_KAFKA_SASL_MECHANISM: 'scram-sha-256',
      ONCEGATE_KAFKA_SASL_USERNAME: 'relay',
      ONCEGATE_KAFKA_SASL_PASSWORD_FILE: passwordFile,
    };
    expect(kafkaOf('', env)).toMatchObject({
      brokers: ['127.0.0.1:9093'],
      tls: { caFile: certificates.caFile, certFile: certificates.clientCertFile, keyFile: certificates.clientKeyFile, serverName: 'localhost' },
      sasl: { mechanism: 'SCRAM-SHA-256', username: 'relay', password: { from: 'file', path: passwordFile } },
    });
    const fromFile = section(`tls: { ca_file: ${certificates.caFile} }`, 'sasl: { mechanism: PLAIN, username: relay }');
    expect(kafkaOf(fromFile, { ONCEGATE_KAFKA_SASL_CREDENTIAL_REF: 'kafka-relay' }).sasl).toEqual({ mechanism: 'PLAIN', username: 'relay', password: { from: 'vault', ref: 'kafka-relay' } });
    expect(kafkaOf(fromFile, { ONCEGATE_KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512', ONCEGATE_KAFKA_SASL_PASSWORD_FILE: passwordFile }).sasl).toEqual({
      mechanism: 'SCRAM-SHA-512',
      username: 'relay',
      password: { from: 'file', path: passwordFile },
    });
    expect(kafkaOf(section(`tls: { ca_file: ${certificates.caFile} }`), { ONCEGATE_KAFKA_TLS: 'off' }).tls).toBeUndefined();
  });

  it('given bad ONCEGATE_KAFKA_* security values, then each is named without repeating a secret', () => {
    const brokers = { ONCEGATE_KAFKA_BROKERS: '127.0.0.1:9093' };
    const sasl = { ONCEGATE_KAFKA_TLS: 'on', ONCEGATE_KAFKA_SASL_MECHANISM: 'PLAIN', ONCEGATE_KAFKA_SASL_USERNAME: 'u' };
    expect(issuesOf('', { ...brokers, ONCEGATE_KAFKA_TLS_CA_FILE: join(dir, 'nope.pem') })).toEqual([expect.stringMatching(/^environment:0:0 ONCEGATE_KAFKA_TLS_CA_FILE: .*nope\.pem: no such file$/)]);
    expect(issuesOf('', { ...brokers, ONCEGATE_KAFKA_TLS_CERT_FILE: certificates.clientCertFile })).toEqual([expect.stringMatching(/ONCEGATE_KAFKA_TLS_CERT_FILE: a client certificate needs its private key/)]);
    expect(issuesOf('', { ...brokers, ONCEGATE_KAFKA_TLS: 'yes' })).toEqual([expect.stringMatching(/ONCEGATE_KAFKA_TLS: expected on or off/)]);
    expect(issuesOf('', { ...brokers, ...sasl, ONCEGATE_KAFKA_SASL_MECHANISM: 'SCRAM-SHA-521', ONCEGATE_KAFKA_SASL_CREDENTIAL_REF: 'kafka' })).toEqual([
      expect.stringMatching(/ONCEGATE_KAFKA_SASL_MECHANISM: 'SCRAM-SHA-521' is not a SASL mechanism; expected one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512/),
    ]);
    expect(issuesOf('', { ...brokers, ...sasl })).toEqual([expect.stringMatching(/ONCEGATE_KAFKA_SASL_MECHANISM: SASL needs .*the environment leaves out ONCEGATE_KAFKA_SASL_CREDENTIAL_REF or ONCEGATE_KAFKA_SASL_PASSWORD_FILE/)]);
    expect(issuesOf('', { ...brokers, ...sasl, ONCEGATE_KAFKA_TLS: '', ONCEGATE_KAFKA_SASL_PASSWORD_FILE: passwordFile })).toEqual([expect.stringMatching(/ONCEGATE_KAFKA_SASL_MECHANISM: SASL is taken over TLS only/)]);
    const secretAsName = issuesOf('', { ...brokers, ...sasl, ONCEGATE_KAFKA_SASL_CREDENTIAL_REF: `ghp_${CANARY.replaceAll('-', '')}` });
    expect(secretAsName).toEqual([expect.stringMatching(/ONCEGATE_KAFKA_SASL_CREDENTIAL_REF: must name a credential/)]);
    expect(issuesOf('', { ...brokers, ...sasl, ONCEGATE_KAFKA_SASL_PASSWORD_FILE: emptyFile })).toEqual([expect.stringMatching(/ONCEGATE_KAFKA_SASL_PASSWORD_FILE: .*empty: is empty/)]);
    expect(issuesOf('', { ONCEGATE_KAFKA_SASL_USERNAME: 'u' })).toEqual([expect.stringMatching(/ONCEGATE_KAFKA_SASL_USERNAME: applies to the Kafka bus only/)]);
    expectNoCanary([...secretAsName, ...issuesOf('', { ...brokers, ...sasl, ONCEGATE_KAFKA_TLS: '', ONCEGATE_KAFKA_SASL_PASSWORD_FILE: passwordFile })]);
  });
});

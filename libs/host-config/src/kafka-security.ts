import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CREDENTIAL_REF_RULE, isCredentialRef } from '@oncegate/contracts';
import type { KafkaConfig, KafkaSaslConfig, KafkaSaslMechanism, KafkaTlsConfig } from './gateway-config';

/**
 * The checks of `kafka.tls` and `kafka.sasl` that read files, and their environment overrides. Every message names the
 * file and what is wrong with it, never what it holds: a key or a password file must not end up in a log by way of an
 * error about it.
 */

export const KAFKA_SASL_MECHANISMS: readonly KafkaSaslMechanism[] = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'];

/** Why SASL is refused without TLS: said where a configuration asks for it. */
export const SASL_NEEDS_TLS =
  'SASL is taken over TLS only: add kafka.tls (tls: {} trusts the CAs Node trusts) or ONCEGATE_KAFKA_TLS=on; without it PLAIN sends the password in clear, and with any mechanism every event and decision on the wire could be read and forged';

/** The file's text, or why it cannot be read (named by its path, as written). */
function readText(path: string): { text: string } | { problem: string } {
  try {
    return { text: readFileSync(resolve(path), 'utf8') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { problem: `${path}: no such file` };
    if (code === 'EACCES' || code === 'EPERM') return { problem: `${path}: cannot be read (permission denied)` };
    if (code === 'EISDIR') return { problem: `${path}: is a folder, not a file` };
    return { problem: `${path}: cannot be read (${code ?? 'unknown error'})` };
  }
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The certificates of a PEM file, or why it holds none that parse. */
function certificatesOf(path: string): { certificates: X509Certificate[] } | { problem: string } {
  const read = readText(path);
  if ('problem' in read) return read;
  const blocks = read.text.match(CERTIFICATE_BLOCK) ?? [];
  if (blocks.length === 0) return { problem: `${path}: holds no PEM certificate (-----BEGIN CERTIFICATE-----)` };
  try {
    return { certificates: blocks.map((block) => new X509Certificate(block)) };
  } catch {
    return { problem: `${path}: a certificate in it does not parse` };
  }
}

/** Why `path` cannot serve as the CAs the brokers' certificates must chain to, or `undefined`. */
export function caFileProblem(path: string): string | undefined {
  const read = certificatesOf(path);
  return 'problem' in read ? read.problem : undefined;
}

/**
 * Why the client certificate or its key cannot be used, by field, or nothing: each must be readable PEM, the key
 * unencrypted, and the key must be the certificate's. A key's text is never part of a message.
 */
export function clientCertificateProblems(certFile: string, keyFile: string): { cert?: string; key?: string } {
  const certificate = certificatesOf(certFile);
  const keyText = readText(keyFile);
  let key: KeyObject | undefined;
  let keyProblem: string | undefined;
  if ('problem' in keyText) keyProblem = keyText.problem;
  else {
    try {
      key = createPrivateKey({ key: keyText.text, format: 'pem' });
    } catch {
      keyProblem = `${keyFile}: not an unencrypted PEM private key (an encrypted one is not taken: openssl pkey -in <it> -out <new file>)`;
    }
  }
  if ('problem' in certificate) return { cert: certificate.problem, ...(keyProblem ? { key: keyProblem } : {}) };
  if (keyProblem !== undefined) return { key: keyProblem };
  if (!certificate.certificates[0]!.checkPrivateKey(key!)) return { key: `${keyFile}: is not the private key of the certificate in ${certFile}` };
  return {};
}

/** Why `path` cannot hold the SASL password, or `undefined`. What it holds is only measured, never shown. */
export function passwordFileProblem(path: string): string | undefined {
  let bytes: Buffer;
  try {
    bytes = readFileSync(resolve(path));
  } catch {
    const read = readText(path);
    return 'problem' in read ? read.problem : `${path}: cannot be read`;
  }
  const empty = passwordOf(bytes).length === 0;
  bytes.fill(0);
  return empty ? `${path}: is empty` : undefined;
}

/** The password a password file holds: its bytes without one trailing line break (`\n` or `\r\n`). */
export function passwordOf(bytes: Buffer): Buffer {
  let end = bytes.length;
  if (end > 0 && bytes[end - 1] === 0x0a) end -= 1;
  if (end > 0 && bytes[end - 1] === 0x0d && end === bytes.length - 1) end -= 1;
  return bytes.subarray(0, end);
}

/** The environment variables that set `kafka.tls` and `kafka.sasl`. */
const TLS_VARIABLES = ['ONCEGATE_KAFKA_TLS', 'ONCEGATE_KAFKA_TLS_CA_FILE', 'ONCEGATE_KAFKA_TLS_CERT_FILE', 'ONCEGATE_KAFKA_TLS_KEY_FILE', 'ONCEGATE_KAFKA_TLS_SERVER_NAME'] as const;
const SASL_VARIABLES = ['ONCEGATE_KAFKA_SASL_MECHANISM', 'ONCEGATE_KAFKA_SASL_USERNAME', 'ONCEGATE_KAFKA_SASL_CREDENTIAL_REF', 'ONCEGATE_KAFKA_SASL_PASSWORD_FILE'] as const;

/** Whether the environment sets anything of `kafka.tls` (then the file's SASL is checked against TLS after it). */
export function environmentSetsKafkaTls(env: NodeJS.ProcessEnv): boolean {
  return TLS_VARIABLES.some((name) => Boolean(env[name]));
}

/** Whether the environment names where the SASL password is (then a file's `kafka.sasl` may leave it out). */
export function environmentNamesKafkaPassword(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env['ONCEGATE_KAFKA_SASL_CREDENTIAL_REF'] || env['ONCEGATE_KAFKA_SASL_PASSWORD_FILE']);
}

/**
 * `kafka.tls` and `kafka.sasl` with the `ONCEGATE_KAFKA_TLS*` and `ONCEGATE_KAFKA_SASL_*` variables applied, each bad
 * value named by `bad`; `source` is where the file's configuration came from, for messages.
 */
export function applyKafkaSecurityEnvironment(
  kafka: KafkaConfig | null,
  env: NodeJS.ProcessEnv,
  bad: (name: string, reason: string) => void,
  source: string,
): KafkaConfig | null {
  const set = [...TLS_VARIABLES, ...SASL_VARIABLES].filter((name) => Boolean(env[name]));
  if (set.length === 0) return kafka;
  if (kafka === null) {
    for (const name of set) bad(name, 'applies to the Kafka bus only: write a kafka section or set ONCEGATE_KAFKA_BROKERS');
    return kafka;
  }
  const tls = tlsFromEnvironment(kafka.tls, env, bad);
  const sasl = SASL_VARIABLES.some((name) => Boolean(env[name])) ? saslFromEnvironment(kafka.sasl, env, bad, source) : kafka.sasl;
  if (sasl !== undefined && tls === undefined) bad(SASL_VARIABLES.find((name) => Boolean(env[name])) ?? 'ONCEGATE_KAFKA_TLS', SASL_NEEDS_TLS);
  const { tls: _tls, sasl: _sasl, ...rest } = kafka;
  return { ...rest, ...(tls === undefined ? {} : { tls }), ...(sasl === undefined ? {} : { sasl }) };
}

function tlsFromEnvironment(base: KafkaTlsConfig | undefined, env: NodeJS.ProcessEnv, bad: (name: string, reason: string) => void): KafkaTlsConfig | undefined {
  const switched = env['ONCEGATE_KAFKA_TLS'];
  if (switched && switched !== 'on' && switched !== 'off') bad('ONCEGATE_KAFKA_TLS', 'expected on or off');
  const files = TLS_VARIABLES.slice(1).filter((name) => Boolean(env[name]));
  if (switched === 'off') {
    for (const name of files) bad(name, 'ONCEGATE_KAFKA_TLS=off turns TLS off; leave one of the two out');
    return undefined;
  }
  if (switched !== 'on' && files.length === 0) return base;
  const tls: KafkaTlsConfig = {
    caFile: env['ONCEGATE_KAFKA_TLS_CA_FILE'] || (base?.caFile ?? null),
    certFile: env['ONCEGATE_KAFKA_TLS_CERT_FILE'] || (base?.certFile ?? null),
    keyFile: env['ONCEGATE_KAFKA_TLS_KEY_FILE'] || (base?.keyFile ?? null),
    serverName: env['ONCEGATE_KAFKA_TLS_SERVER_NAME'] || (base?.serverName ?? null),
  };
  if (env['ONCEGATE_KAFKA_TLS_CA_FILE']) {
    const problem = caFileProblem(tls.caFile!);
    if (problem !== undefined) bad('ONCEGATE_KAFKA_TLS_CA_FILE', problem);
  }
  if (env['ONCEGATE_KAFKA_TLS_CERT_FILE'] || env['ONCEGATE_KAFKA_TLS_KEY_FILE']) {
    if (tls.certFile === null) bad('ONCEGATE_KAFKA_TLS_KEY_FILE', 'a client key needs its certificate: set ONCEGATE_KAFKA_TLS_CERT_FILE (or kafka.tls.cert_file)');
    else if (tls.keyFile === null) bad('ONCEGATE_KAFKA_TLS_CERT_FILE', 'a client certificate needs its private key: set ONCEGATE_KAFKA_TLS_KEY_FILE (or kafka.tls.key_file)');
    else {
      const problems = clientCertificateProblems(tls.certFile, tls.keyFile);
      if (problems.cert !== undefined) bad('ONCEGATE_KAFKA_TLS_CERT_FILE', problems.cert);
      if (problems.key !== undefined) bad('ONCEGATE_KAFKA_TLS_KEY_FILE', problems.key);
    }
  }
  return tls;
}

function saslFromEnvironment(base: KafkaSaslConfig | undefined, env: NodeJS.ProcessEnv, bad: (name: string, reason: string) => void, source: string): KafkaSaslConfig | undefined {
  const written = env['ONCEGATE_KAFKA_SASL_MECHANISM'];
  let mechanism = base?.mechanism;
  if (written) {
    mechanism = KAFKA_SASL_MECHANISMS.find((known) => known === written.toUpperCase());
    if (mechanism === undefined) bad('ONCEGATE_KAFKA_SASL_MECHANISM', `'${written.slice(0, 32)}' is not a SASL mechanism; expected one of ${KAFKA_SASL_MECHANISMS.join(', ')}`);
  }
  const username = env['ONCEGATE_KAFKA_SASL_USERNAME'] || base?.username;
  const ref = env['ONCEGATE_KAFKA_SASL_CREDENTIAL_REF'];
  const file = env['ONCEGATE_KAFKA_SASL_PASSWORD_FILE'];
  let password = base?.password;
  if (ref && file) bad('ONCEGATE_KAFKA_SASL_CREDENTIAL_REF', 'set either ONCEGATE_KAFKA_SASL_CREDENTIAL_REF or ONCEGATE_KAFKA_SASL_PASSWORD_FILE, not both');
  else if (ref) {
    // The value is not repeated: it may be the password itself, set in the wrong variable.
    if (!isCredentialRef(ref)) bad('ONCEGATE_KAFKA_SASL_CREDENTIAL_REF', CREDENTIAL_REF_RULE);
    password = { from: 'vault', ref };
  } else if (file) {
    const problem = passwordFileProblem(file);
    if (problem !== undefined) bad('ONCEGATE_KAFKA_SASL_PASSWORD_FILE', problem);
    password = { from: 'file', path: file };
  }
  const missing = [
    ...(mechanism === undefined && !written ? ['ONCEGATE_KAFKA_SASL_MECHANISM'] : []),
    ...(username === undefined ? ['ONCEGATE_KAFKA_SASL_USERNAME'] : []),
    ...(password === undefined || (password.from === 'file' && password.path === '') ? ['ONCEGATE_KAFKA_SASL_CREDENTIAL_REF or ONCEGATE_KAFKA_SASL_PASSWORD_FILE'] : []),
  ];
  if (missing.length > 0) {
    const where = base === undefined ? 'the environment leaves out' : `kafka.sasl (${source}) and the environment leave out`;
    bad(SASL_VARIABLES.find((name) => Boolean(env[name]))!, `SASL needs a mechanism, a user and where the password is; ${where} ${missing.join(', ')}`);
    return base;
  }
  if (mechanism === undefined || username === undefined || password === undefined) return base;
  return { mechanism, username, password };
}

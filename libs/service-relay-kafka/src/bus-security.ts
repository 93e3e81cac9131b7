import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isIP, connect as connectTcp } from 'node:net';
import { connect as connectTls, type ConnectionOptions } from 'node:tls';
import type { ISocketFactory, Mechanism } from 'kafkajs';
import { kafkajsSaslProvider } from './kafkajs-module';
import { passwordOf, type KafkaConfig, type KafkaSaslConfig, type KafkaTlsConfig, type SecretSource } from '@oncegate/host-config';

/**
 * TLS and SASL between the relay and the brokers (`kafka.tls`, `kafka.sasl`). The SASL password is fetched for each
 * broker when a connection authenticates, from the vault (which sends a credential only to a broker it is bound to) or
 * from its file (so a rotated file counts at the next connection), and held no longer than the handshake. No message
 * made here holds the password, a key, or anything read from their files.
 */

/** The SASL password for one broker, from where `kafka.sasl` says it is. */
export type BusPassword = (broker: { readonly host: string; readonly port: number }) => Promise<Buffer>;

/** What a vault gives the relay: a `password` credential, for the broker it is about to be sent to. */
export interface BusVault {
  secret(ref: string, host: string, port: number): Promise<Buffer>;
}

/** Reads the password from its file, or from the vault for the broker at hand. */
export function busPassword(source: SecretSource, vault: BusVault | undefined): BusPassword {
  switch (source.from) {
    case 'file':
      return async () => {
        let bytes: Buffer;
        try {
          bytes = await readFile(source.path);
        } catch (error) {
          throw new Error(`the SASL password file ${source.path} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'unknown error'})`);
        }
        const password = Buffer.from(passwordOf(bytes));
        bytes.fill(0);
        return password;
      };
    case 'vault':
      return async ({ host, port }) => {
        if (vault === undefined) throw new Error(`the SASL password is vault credential '${source.ref}', and this process opened no vault`);
        return vault.secret(source.ref, host, port);
      };
    default: {
      const never: never = source;
      return never;
    }
  }
}

/**
 * The SASL mechanism as kafkajs takes a custom one: its own authenticator, given the password fetched for this broker
 * at this connection. A refusal names the broker, the mechanism and the user, never the password.
 */
export function saslMechanism(config: KafkaSaslConfig, password: BusPassword): Mechanism {
  // kafkajs's own authenticator for the mechanism, as Kafka spells its name.
  const authenticator = kafkajsSaslProvider(config.mechanism);
  return {
    mechanism: config.mechanism,
    authenticationProvider: (args) => ({
      async authenticate() {
        const broker = `${args.host}:${args.port}`;
        let secret: Buffer;
        try {
          secret = await password(args);
        } catch (error) {
          // Retried like a broker away: a vault locked now may be unlocked by the next try.
          throw new Error(`no SASL password for ${broker}: ${(error as Error).message}`);
        }
        // kafkajs's authenticators take a string; the bytes are wiped at once, the string lives until it is collected.
        const text = secret.toString('utf8');
        secret.fill(0);
        try {
          await authenticator({ username: config.username, password: text })(args).authenticate();
        } catch (error) {
          if (error instanceof Error) {
            // Said by the broker, which has no reason to repeat a password; hidden all the same, should one ever do.
            const said = error.message.split(text).join('***');
            error.message = `${broker} refused ${config.mechanism} for user '${config.username}': ${said}`;
          }
          throw error;
        }
      },
    }),
  };
}

/** Node's TLS options from `kafka.tls`: the CAs (instead of Node's own when named), the client certificate, the name. */
export function tlsOptions(config: KafkaTlsConfig): ConnectionOptions {
  return {
    rejectUnauthorized: true,
    ...(config.caFile === null ? {} : { ca: readFileSync(config.caFile) }),
    ...(config.certFile === null || config.keyFile === null ? {} : { cert: readFileSync(config.certFile), key: readFileSync(config.keyFile) }),
    ...(config.serverName === null ? {} : { servername: config.serverName }),
  };
}

/** Node's verification failures that mean the broker's certificate does not chain to a trusted CA. */
const UNTRUSTED = new Set(['SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_GET_ISSUER_CERT', 'CERT_UNTRUSTED']);

/** What a TLS failure to `broker` means for this configuration, or `undefined` for one that is not about TLS. */
export function tlsFailure(error: NodeJS.ErrnoException, broker: string, config: KafkaTlsConfig): string | undefined {
  const code = error.code ?? '';
  const trusted = config.caFile === null ? "the CAs Node trusts (kafka.tls.ca_file names others)" : `a CA of kafka.tls.ca_file (${config.caFile})`;
  if (UNTRUSTED.has(code)) return `TLS to ${broker}: the broker's certificate does not chain to ${trusted}: ${error.message}`;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return `TLS to ${broker}: the broker's certificate is not for the name it was reached by${config.serverName === null ? '' : ` (${config.serverName})`}; kafka.tls.server_name names the one it carries: ${error.message}`;
  }
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') return `TLS to ${broker}: the broker's certificate is out of its validity: ${error.message}`;
  if (/alert (bad certificate|certificate required|unknown ca|certificate unknown|handshake failure)/i.test(error.message)) {
    const ours = config.certFile === null ? 'none is configured: kafka.tls.cert_file and key_file' : `kafka.tls.cert_file is ${config.certFile}`;
    return `TLS to ${broker}: the broker refused the handshake, most likely for the client certificate (${ours}): ${error.message}`;
  }
  return undefined;
}

/**
 * kafkajs's socket factory (node_modules/kafkajs/src/network/socketFactory.js: TLS with the host as server name unless
 * it is an address, keep-alive every minute), with TLS failures said in terms of the configuration. Its listener is
 * added before kafkajs's own, which reports the error's message as it then reads.
 */
export function socketFactory(config: KafkaTlsConfig): ISocketFactory {
  return ({ host, port, ssl, onConnect }) => {
    const socket = ssl ? connectTls({ host, port, ...(isIP(host) === 0 ? { servername: host } : {}), ...ssl }, onConnect) : connectTcp({ host, port }, onConnect);
    socket.setKeepAlive(true, 60_000);
    socket.on('error', (error: NodeJS.ErrnoException) => {
      const said = tlsFailure(error, `${host}:${port}`, config);
      if (said !== undefined) error.message = said;
    });
    return socket;
  };
}

/** The kafkajs client options of `kafka.tls` and `kafka.sasl`; none for PLAINTEXT. */
export function securityOptions(config: KafkaConfig, password: BusPassword | undefined): { ssl?: ConnectionOptions; sasl?: Mechanism; socketFactory?: ISocketFactory } {
  if (config.sasl !== undefined && password === undefined) throw new Error('kafka.sasl is configured, and no password source was given to the Kafka client');
  return {
    ...(config.tls === undefined ? {} : { ssl: tlsOptions(config.tls), socketFactory: socketFactory(config.tls) }),
    ...(config.sasl === undefined || password === undefined ? {} : { sasl: saslMechanism(config.sasl, password) }),
  };
}

/** How the relay reaches the brokers, for the `serve` summary: protocol, mechanism, user and where the password is; never a secret. */
export function securitySummary(config: KafkaConfig): string {
  const { tls, sasl } = config;
  if (tls === undefined) return 'PLAINTEXT (no TLS, no SASL)';
  const trust = tls.caFile === null ? "CAs Node trusts" : `CA ${tls.caFile}`;
  const parts = [
    sasl === undefined ? 'SSL' : 'SASL_SSL',
    `${trust}${tls.serverName === null ? '' : `, name ${tls.serverName}`}`,
    ...(tls.certFile === null ? [] : [`client certificate ${tls.certFile}`]),
    ...(sasl === undefined ? [] : [`${sasl.mechanism} as ${sasl.username}, password from ${sasl.password.from === 'vault' ? `vault credential ${sasl.password.ref}` : sasl.password.path}`]),
  ];
  return parts.join('; ');
}

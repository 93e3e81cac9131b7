import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const OPENSSL_MISSING = 'openssl not found: the Kafka broker\'s TLS listeners get certificates made by the openssl command (Debian: apt-get install -y --no-install-recommends openssl; .ci/run installs it)';
const DAYS = '825';

/** PEM files of a test certificate authority, the broker's certificate it signed, and a client certificate it signed. */
export interface KafkaCertificates {
  /** The CA's certificate: what a client (and the broker, for client certificates) trusts. */
  readonly caFile: string;
  /** The broker's private key followed by its certificate and the CA's: Kafka's PEM key store (KIP-651). */
  readonly brokerKeyStoreFile: string;
  /** A client certificate (CN `oncegate-client`) for a listener that requires one, and its private key. */
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
}

/**
 * Makes (or finds, when a kept folder already holds them) a CA, a broker certificate for 127.0.0.1 and localhost,
 * and a client certificate, in `dir`, with the `openssl` command: P-256 keys, unencrypted PKCS#8 (what Kafka's PEM
 * key store and Node both read), valid for 825 days. The keys are written mode 0600.
 *
 * @throws Error naming the Debian package when `openssl` is missing, or openssl's own output when a step fails.
 */
export async function makeKafkaCertificates(dir: string): Promise<KafkaCertificates> {
  const files: KafkaCertificates = {
    caFile: join(dir, 'ca.pem'),
    brokerKeyStoreFile: join(dir, 'broker-keystore.pem'),
    clientCertFile: join(dir, 'client.pem'),
    clientKeyFile: join(dir, 'client.key'),
  };
  if (Object.values(files).every((file) => existsSync(file))) return files;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const caKey = join(dir, 'ca.key');
  await openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', caKey, '-out', files.caFile, '-days', DAYS,
    '-subj', '/CN=Oncegate test CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  await signed(dir, 'broker', '/CN=localhost', ['subjectAltName=IP:127.0.0.1,DNS:localhost', 'extendedKeyUsage=serverAuth'], files.caFile, caKey);
  await signed(dir, 'client', '/CN=oncegate-client', ['extendedKeyUsage=clientAuth'], files.caFile, caKey);
  const keyStore = [await readFile(join(dir, 'broker.key'), 'utf8'), await readFile(join(dir, 'broker.pem'), 'utf8'), await readFile(files.caFile, 'utf8')].join('');
  await writeFile(files.brokerKeyStoreFile, keyStore, { mode: 0o600 });
  return files;
}

/** `<name>.key` and `<name>.pem`: a new key, and its certificate for `subject` signed by the CA with the given extensions. */
async function signed(dir: string, name: string, subject: string, extensions: string[], caFile: string, caKey: string): Promise<void> {
  const key = join(dir, `${name}.key`);
  const request = join(dir, `${name}.csr`);
  const extensionFile = join(dir, `${name}.ext`);
  await openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', request, '-subj', subject]);
  await writeFile(extensionFile, `${extensions.join('\n')}\n`);
  await openssl(['x509', '-req', '-in', request, '-CA', caFile, '-CAkey', caKey, '-CAcreateserial', '-out', join(dir, `${name}.pem`), '-days', DAYS, '-extfile', extensionFile]);
}

async function openssl(args: string[]): Promise<void> {
  try {
    // The keys it writes are readable by their owner only.
    await run('sh', ['-c', 'umask 077 && exec openssl "$@"', 'openssl', ...args], { timeout: 30_000 });
  } catch (error) {
    const { code, stderr = '', message } = error as { code?: string | number; stderr?: string; message: string };
    if (code === 127 || code === 'ENOENT') throw new Error(OPENSSL_MISSING);
    throw new Error(`openssl ${args[0]} failed: ${message}\n${stderr}`);
  }
}

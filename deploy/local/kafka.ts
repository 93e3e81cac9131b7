import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { LocalServer } from './local-server';
import { freePort } from './free-port';
import { makeKafkaCertificates, type KafkaCertificates } from './kafka-tls';

const KAFKA_VERSION = '4.1.1';
/** The Maven project whose dependencies are the broker's classpath: kafka_2.13 and slf4j-simple. */
const POM = fileURLToPath(new URL('./kafka/pom.xml', import.meta.url));
const COPY_TIMEOUT_MS = 10 * 60_000;
const START_TIMEOUT_MS = 60_000;
/** How long a graceful shutdown (SIGTERM) may take before the broker is killed; it takes 1–2 s. */
const SHUTDOWN_TIMEOUT_MS = 20_000;
const PORT_ATTEMPTS = 5;
const READY = 'Kafka Server started';
const LOG_LINES = 60;
/** Written last into a copy of the jars: the hash of the pom it was copied for. */
const MARKER = '.complete';
const JAVA_MISSING =
  'java not found: the Kafka broker needs Java 17 or newer (Debian: apt-get install -y --no-install-recommends openjdk-17-jre-headless; .ci/run installs it)';
const MVN_MISSING =
  "mvn not found: the Kafka broker's jars are copied from Maven Central by Maven (Debian: apt-get install -y --no-install-recommends maven; .ci/run installs it)";

const run = promisify(execFile);

/** A real Apache Kafka 4.1.1 broker on 127.0.0.1: one KRaft node that is both broker and controller, in a folder of its own (temporary unless kept). */
export interface KafkaHandle extends LocalServer {
  /** Bootstrap servers for a client: `['127.0.0.1:PORT']`. */
  readonly brokers: string[];
  /** The PLAINTEXT listener clients connect to. */
  readonly port: number;
  /** The KRaft controller's listener (clients never use it). */
  readonly controllerPort: number;
  /** The SASL_SSL and SSL listeners and the certificates made for them, when started with `security`. */
  readonly secure: KafkaSecureListeners | undefined;
}

/**
 * A broker's listeners for clients that authenticate, beside PLAINTEXT (which the controller and the broker's own
 * traffic keep): SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, and SSL that requires a client certificate.
 * Both present a certificate for 127.0.0.1 and localhost signed by `caFile`.
 */
export interface KafkaSecureListeners extends KafkaCertificates {
  /** Bootstrap servers of the SASL_SSL listener. */
  readonly saslSsl: string[];
  readonly saslSslPort: number;
  /** Bootstrap servers of the SSL listener, which requires a client certificate signed by `caFile`. */
  readonly ssl: string[];
  readonly sslPort: number;
}

/** Users of the secure listeners, and their ports. */
export interface KafkaSecurityOptions {
  /** PLAIN users of the SASL_SSL listener, name → password (the listener's JAAS configuration). */
  readonly plainUsers?: Readonly<Record<string, string>>;
  /**
   * SCRAM users (a SCRAM-SHA-256 and a SCRAM-SHA-512 credential each), name → password. KRaft takes them when the data
   * folder is formatted: a kept folder keeps the users of its first start.
   */
  readonly scramUsers?: Readonly<Record<string, string>>;
  /** The port of the SASL_SSL listener. Default: a free one. */
  readonly saslSslPort?: number;
  /** The port of the SSL listener. Default: a free one. */
  readonly sslPort?: number;
}

export interface StartKafkaOptions {
  /**
   * A folder to keep the broker's configuration and data in, formatted on first use and reused after (`npm run
   * local`). Default: a temporary folder, removed by `stop`. One broker at a time per folder.
   */
  readonly dir?: string;
  /** The port of the PLAINTEXT listener. Default: a free one. */
  readonly port?: number;
  /** The port of the KRaft controller listener. Default: a free one. */
  readonly controllerPort?: number;
  /**
   * Also listen with SASL_SSL and with SSL that requires client certificates, for these users; the certificates are
   * made at start with `openssl` (kept in `<dir>/tls` with a kept folder). Default: PLAINTEXT only.
   */
  readonly security?: KafkaSecurityOptions;
}

/**
 * The folder of the broker's jars (the classpath `<folder>/*`), copied from Maven Central by
 * `mvn dependency:copy-dependencies` of deploy/local/kafka/pom.xml on first use (under a minute with an empty Maven cache)
 * and kept in `$XDG_CACHE_HOME/oncegate/kafka-4.1.1` (default `~/.cache`). A copy counts only once its marker is
 * written, after it is complete, and only for the pom it was made from: an interrupted or outdated copy is made again.
 *
 * @throws Error naming the Debian packages to install when `mvn` or `java` is missing, or Maven's output when it fails.
 */
export function ensureKafkaJars(): Promise<string> {
  jarsCopy ??= copyJars().catch((error: unknown) => {
    jarsCopy = undefined;
    throw error;
  });
  return jarsCopy;
}

let jarsCopy: Promise<string> | undefined;

async function copyJars(): Promise<string> {
  requireCommand('java', JAVA_MISSING);
  const cache = join(process.env['XDG_CACHE_HOME'] || join(homedir(), '.cache'), 'oncegate', `kafka-${KAFKA_VERSION}`);
  const libs = join(cache, 'libs');
  const pom = createHash('sha256').update(readFileSync(POM)).digest('hex');
  if (await completeFor(libs, pom)) return libs;
  requireCommand('mvn', MVN_MISSING);
  await mkdir(cache, { recursive: true });
  // What an interrupted copy left behind: the partial folders of processes that are gone.
  for (const name of await readdir(cache)) {
    const owner = /^libs\.partial-(\d+)-/.exec(name)?.[1];
    if (owner !== undefined && !alive(Number(owner))) await rm(join(cache, name), { recursive: true, force: true });
  }
  // Into a folder of its own, renamed into place once complete: another process copying at the same time never
  // sees half a classpath, and an interrupted copy leaves only a partial folder behind.
  const partial = join(cache, `libs.partial-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    try {
      await run('mvn', ['-B', '-q', '-f', POM, 'dependency:copy-dependencies', `-DoutputDirectory=${partial}`], {
        timeout: COPY_TIMEOUT_MS,
        maxBuffer: 16 * 1024 * 1024,
      });
    } catch (error) {
      const { stdout = '', stderr = '', message } = error as { stdout?: string; stderr?: string; message: string };
      const output = `${stdout}${stderr}`.trim().split('\n').slice(-40).join('\n');
      throw new Error(`copying the Kafka ${KAFKA_VERSION} jars from Maven Central failed (mvn -f ${POM} dependency:copy-dependencies): ${message}\n${output}`);
    }
    await writeFile(join(partial, MARKER), `${pom}\n`);
    if (await completeFor(libs, pom)) return libs; // Another process finished first.
    await rm(libs, { recursive: true, force: true });
    try {
      await rename(partial, libs);
    } catch (error) {
      // Another process renamed its own complete copy into place in between.
      if (!(await completeFor(libs, pom))) throw error;
    }
    return libs;
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function completeFor(libs: string, pom: string): Promise<boolean> {
  return (await readFile(join(libs, MARKER), 'utf8').catch(() => '')).trim() === pom;
}

/** Throws `missing` unless `command` is an executable on the PATH. */
function requireCommand(command: string, missing: string): void {
  const found = (process.env['PATH'] ?? '')
    .split(delimiter)
    .filter((dir) => dir !== '')
    .some((dir) => {
      try {
        accessSync(join(dir, command), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  if (!found) throw new Error(missing);
}

/**
 * Starts Apache Kafka 4.1.1 in KRaft mode on free loopback ports: one node (`node.id=1`) that is both broker and
 * controller, its controller a single-node dynamic quorum (`kafka.tools.StorageTool format --standalone`), then
 * `kafka.Kafka` in the foreground with Java 17, in a process group of its own, ready once it logs "Kafka Server
 * started". Topics are created on first use with 4 partitions, and the internal topics need one replica only.
 * The broker is killed when this process exits, so a test that dies leaves none behind.
 *
 * @throws Error naming the Debian packages to install when `java` or `mvn` is missing; the last lines of the
 *   broker's log when it does not start within 60 s.
 */
export async function startKafka(options: StartKafkaOptions = {}): Promise<KafkaHandle> {
  const jars = await ensureKafkaJars();
  const kept = options.dir !== undefined;
  const root = options.dir ?? join(tmpdir(), `oncegate-kafka-${randomBytes(6).toString('hex')}`);
  const data = join(root, 'data');
  const config = join(root, 'server.properties');
  await mkdir(root, { recursive: true, mode: 0o700 });
  if (!kept) temporaryRoots.add(root);
  try {
    const security = options.security;
    if (security !== undefined) checkUsers(security);
    const certificates = security === undefined ? undefined : await makeKafkaCertificates(join(root, 'tls'));
    let lastError: Error | undefined;
    for (let tries = 0; tries < PORT_ATTEMPTS; tries += 1) {
      // Every listener on a port of its own; a port asked for stays, the others are free ones.
      const asked = [options.port, options.controllerPort, ...(security === undefined ? [] : [security.saslSslPort, security.sslPort])];
      const ports: number[] = [];
      for (const port of asked) {
        let chosen = port ?? (await freePort());
        while (port === undefined && (ports.includes(chosen) || asked.includes(chosen))) chosen = await freePort();
        ports.push(chosen);
      }
      const [port = 0, controllerPort = 0, saslSslPort, sslPort] = ports;
      const secure =
        certificates === undefined || saslSslPort === undefined || sslPort === undefined
          ? undefined
          : { ...certificates, saslSsl: [`127.0.0.1:${saslSslPort}`], saslSslPort, ssl: [`127.0.0.1:${sslPort}`], sslPort };
      await writeFile(config, serverProperties(data, port, controllerPort, secure, security?.plainUsers ?? {}), { mode: 0o600 });
      // The dynamic quorum's voter set keeps the controller's address from here, but the node finds itself again through
      // controller.quorum.bootstrap.servers when a later start (or another try here) gives it a new port.
      if (!existsSync(join(data, 'meta.properties'))) await format(jars, config, root, security?.scramUsers ?? {});
      try {
        const start = () => launch(jars, config, root);
        return handle(await start(), start, kept ? undefined : root, port, controllerPort, secure);
      } catch (error) {
        lastError = error as Error;
        // Another process may have taken a port between probing and binding; try new ones (a port asked for stays).
        const taken = /failed to bind to 127\.0\.0\.1:(\d+)/.exec(lastError.message)?.[1];
        const free = ports.filter((_, i) => asked[i] === undefined);
        if (taken === undefined || !free.includes(Number(taken))) break;
      }
    }
    throw lastError ?? new Error('kafka did not start');
  } catch (error) {
    if (!kept) {
      await rm(root, { recursive: true, force: true });
      temporaryRoots.delete(root);
    }
    throw error;
  }
}

/** What the broker's JAAS configuration and StorageTool's `--add-scram` take without quoting: test users, not real ones. */
const USER_TEXT = /^[A-Za-z0-9._-]{1,64}$/;

function checkUsers(security: KafkaSecurityOptions): void {
  for (const [name, password] of [...Object.entries(security.plainUsers ?? {}), ...Object.entries(security.scramUsers ?? {})]) {
    // The password is not repeated: a test may pass a secret of its own.
    if (!USER_TEXT.test(name) || !USER_TEXT.test(password)) throw new Error(`kafka user '${name.slice(0, 64)}': names and passwords are 1 to 64 of A-Z a-z 0-9 . _ -`);
  }
}

function serverProperties(data: string, port: number, controllerPort: number, secure: KafkaSecureListeners | undefined, plainUsers: Readonly<Record<string, string>>): string {
  const listeners = [`PLAINTEXT://127.0.0.1:${port}`, `CONTROLLER://127.0.0.1:${controllerPort}`, ...(secure ? [`SASL_SSL://127.0.0.1:${secure.saslSslPort}`, `SSL://127.0.0.1:${secure.sslPort}`] : [])];
  return `${[
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.bootstrap.servers=127.0.0.1:${controllerPort}`,
    `listeners=${listeners.join(',')}`,
    `advertised.listeners=${listeners.join(',')}`,
    `listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT${secure ? ',SASL_SSL:SASL_SSL,SSL:SSL' : ''}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    `log.dirs=${data}`,
    'num.partitions=4',
    'auto.create.topics.enable=true',
    'group.initial.rebalance.delay.ms=0',
    // One node: every internal topic has one replica, and a few partitions rather than 50 (created on first use).
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=4',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'transaction.state.log.num.partitions=4',
    'share.coordinator.state.topic.replication.factor=1',
    'share.coordinator.state.topic.min.isr=1',
    ...(secure ? securityProperties(secure, plainUsers) : []),
  ].join('\n')}\n`;
}

const SASL_MECHANISMS = 'PLAIN,SCRAM-SHA-256,SCRAM-SHA-512';

/**
 * The secure listeners: PEM key and trust stores (KIP-651; the key is unencrypted, so no ssl.key.password), client
 * certificates required on SSL, and SASL_SSL's mechanisms: PLAIN users in the listener's JAAS configuration, SCRAM users
 * in the cluster's metadata (StorageTool format).
 */
function securityProperties(secure: KafkaSecureListeners, plainUsers: Readonly<Record<string, string>>): string[] {
  const users = Object.entries(plainUsers).map(([name, password]) => ` user_${name}="${password}"`).join('');
  return [
    'ssl.keystore.type=PEM',
    `ssl.keystore.location=${secure.brokerKeyStoreFile}`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${secure.caFile}`,
    'listener.name.ssl.ssl.client.auth=required',
    `sasl.enabled.mechanisms=${SASL_MECHANISMS}`,
    `listener.name.sasl_ssl.sasl.enabled.mechanisms=${SASL_MECHANISMS}`,
    `listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required${users};`,
    'listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
    'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
  ];
}

/**
 * Formats the data folder once: a new cluster id, this node as the single voter of the controller quorum, and the SCRAM
 * users' credentials (KRaft keeps them in the cluster's metadata, which starts here).
 */
async function format(jars: string, config: string, cwd: string, scramUsers: Readonly<Record<string, string>>): Promise<void> {
  const scram = Object.entries(scramUsers).flatMap(([name, password]) =>
    ['SCRAM-SHA-256', 'SCRAM-SHA-512'].flatMap((mechanism) => ['--add-scram', `${mechanism}=[name=${name},password=${password}]`]),
  );
  try {
    await run('java', [...QUICK_JIT, ...QUIET, '-cp', join(jars, '*'), 'kafka.tools.StorageTool', 'format', '-t', clusterId(), '-c', config, '--standalone', ...scram], {
      cwd,
      timeout: START_TIMEOUT_MS,
    });
  } catch (error) {
    const { stdout = '', stderr = '', message } = error as { stdout?: string; stderr?: string; message: string };
    // The command line (in the message) holds the SCRAM users' passwords.
    const hidden = Object.values(scramUsers).reduce((text, password) => text.replaceAll(password, '***'), `${message}\n${stdout}${stderr}`);
    throw new Error(`kafka-storage format failed: ${hidden}`);
  }
}

/** A Kafka cluster id, as `kafka-storage random-uuid` prints one: 16 random bytes in URL-safe base64, not starting with '-'. */
function clusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/** slf4j-simple at WARN, with the one INFO line that says the broker is ready. */
const QUIET = ['-Dorg.slf4j.simpleLogger.defaultLogLevel=warn', '-Djava.awt.headless=true'];

/**
 * The JIT's first tier only (C1): a local broker lives for a test run or a development session, and C2's compilations
 * were most of what it spent. On 2 cores a start took 4.2–5.0 s of CPU with both tiers and 2.5–3.0 s with C1 alone,
 * and 40,000 messages sent in 400 transactions and read back 12.6–13.4 s of the broker's CPU against 5.9–6.6 s, in
 * less time (61–68 s against 93–99 s on a busy machine). The StorageTool format runs the same way.
 */
const QUICK_JIT = ['-XX:TieredStopAtLevel=1'];

/** Brokers still running, killed when this process exits however the tests end, and the temporary folders then removed. */
const running = new Set<ChildProcess>();
const temporaryRoots = new Set<string>();
let exitHook = false;

function killOnExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.on('exit', () => {
    for (const broker of running) killGroup(broker, 'SIGKILL');
    for (const root of temporaryRoots) rmSync(root, { recursive: true, force: true });
  });
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    // Its own process group (detached): the broker and anything it started.
    process.kill(-child.pid!, signal);
  } catch {
    child.kill(signal);
  }
}

/** The kernel kills the broker when the thread that started it ends, even by SIGKILL (util-linux `setpriv`, where present). */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));

/** Starts `kafka.Kafka` in the foreground and waits for "Kafka Server started". */
async function launch(jars: string, config: string, cwd: string): Promise<ChildProcess> {
  requireCommand('java', JAVA_MISSING);
  const java = [
    'java',
    '-Xms128m',
    '-Xmx512m',
    '-XX:+UseG1GC',
    '-XX:MaxGCPauseMillis=20',
    ...QUICK_JIT,
    ...QUIET,
    '-Dorg.slf4j.simpleLogger.log.kafka.server.KafkaRaftServer=info',
    '-Dorg.slf4j.simpleLogger.showDateTime=true',
    '-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS',
    '-cp',
    join(jars, '*'),
    'kafka.Kafka',
    config,
  ];
  const [command, ...args] = SETPRIV === undefined ? java : [SETPRIV, '--pdeathsig', 'KILL', '--', ...java];
  const child = spawn(command!, args, {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    // A group of its own: a Ctrl-C in the terminal reaches the services, which stop first, and not the broker under them.
    detached: true,
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  killOnExit();
  const log: string[] = [];
  return new Promise<ChildProcess>((resolve, reject) => {
    let settled = false;
    const tail = () => log.join('\n');
    const timer = setTimeout(() => fail(new Error(`kafka did not start within ${START_TIMEOUT_MS} ms; the end of its log:\n${tail()}`)), START_TIMEOUT_MS);
    const fail = (error: Error) => {
      clearTimeout(timer);
      if (settled) return;
      settled = true;
      killGroup(child, 'SIGKILL');
      reject(error);
    };
    child.once('error', fail);
    child.once('exit', (code, signal) => fail(new Error(`kafka exited (${code ?? signal}) before it was ready; the end of its log:\n${tail()}`)));
    // Always drained, so the broker never blocks on a full pipe; the last lines are kept for the errors above.
    let partial = '';
    const read = (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        // Stack traces are long: their frames are left out of the tail.
        if (/^\s+at /.test(line) || /^\s+\.\.\. \d+ more$/.test(line)) continue;
        log.push(line);
        if (log.length > LOG_LINES) log.shift();
        if (!settled && line.includes(READY)) {
          settled = true;
          clearTimeout(timer);
          resolve(child);
        }
      }
    };
    child.stdout?.setEncoding('utf8').on('data', read);
    child.stderr?.setEncoding('utf8').on('data', read);
  });
}

/** `root`: the temporary folder `stop` removes (none for a kept one). */
function handle(
  first: ChildProcess,
  launchAgain: () => Promise<ChildProcess>,
  root: string | undefined,
  port: number,
  controllerPort: number,
  secure: KafkaSecureListeners | undefined,
): KafkaHandle {
  let child: ChildProcess | undefined;
  // A broker that exits on its own counts as shut down: `start` starts it again.
  const watch = (broker: ChildProcess) => {
    child = broker;
    broker.once('exit', () => {
      if (child === broker) child = undefined;
    });
  };
  watch(first);
  const exited = (broker: ChildProcess, timeoutMs: number) =>
    new Promise<boolean>((resolve) => {
      if (broker.exitCode !== null || broker.signalCode !== null) return resolve(true);
      const timer = setTimeout(() => resolve(false), timeoutMs);
      broker.once('exit', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  const kill = async (graceful: boolean) => {
    const broker = child;
    child = undefined;
    if (broker === undefined) return;
    if (graceful) {
      killGroup(broker, 'SIGTERM');
      if (await exited(broker, SHUTDOWN_TIMEOUT_MS)) return;
    }
    killGroup(broker, 'SIGKILL');
    await exited(broker, SHUTDOWN_TIMEOUT_MS);
  };
  return {
    brokers: [`127.0.0.1:${port}`],
    port,
    controllerPort,
    secure,
    shutdown: () => kill(true),
    async start() {
      if (child === undefined) watch(await launchAgain());
    },
    async stop() {
      if (root === undefined) {
        // A kept folder is shut down cleanly, to be started again.
        await kill(true);
        return;
      }
      // Killed at once: the folder is removed next, so nothing needs to be written back.
      await kill(false);
      await rm(root, { recursive: true, force: true });
      temporaryRoots.delete(root);
    },
  };
}

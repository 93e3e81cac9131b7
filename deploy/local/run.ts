import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from 'pg';
import { LOCAL_LAYOUT, startLocalDeployment, type LocalLayout, type LocalService } from './local-deployment';
import { startKafka, type KafkaHandle } from './kafka';
import { startPostgres } from './postgres';

/**
 * `npm run local [-- --dispatcher-http 3 … --kafka]`: PostgreSQL 15 in <tmp>/oncegate-local-postgres (kept between runs),
 * the demo target on 127.0.0.1:8790, and every service of LOCAL_LAYOUT as its own `oncegate serve` process, until
 * Ctrl-C. With `--kafka`, also an Apache Kafka broker (KRaft, one node, in <tmp>/oncegate-local-kafka) and one relay;
 * with `--kafka-secure` as well, the broker (in <tmp>/oncegate-local-kafka-secure) also listens with SASL_SSL and the
 * relay publishes there, as `oncegate-relay` by SCRAM-SHA-512, trusting the CA made for the broker.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CONFIG = fileURLToPath(new URL('./oncegate.yaml', import.meta.url));
const LAUNCHER = fileURLToPath(new URL('../../bin/oncegate.mjs', import.meta.url));
const SERVICES = Object.keys(LOCAL_LAYOUT) as LocalService[];

const { values } = parseArgs({
  options: {
    ...Object.fromEntries(SERVICES.map((service) => [service, { type: 'string' as const }])),
    'postgres-port': { type: 'string', default: '54329' },
    kafka: { type: 'boolean', default: false },
    'kafka-port': { type: 'string', default: '19092' },
    'kafka-secure': { type: 'boolean', default: false },
  },
});
const defaults: LocalLayout = { ...LOCAL_LAYOUT, 'relay-kafka': values.kafka ? 1 : 0 };
const layout: LocalLayout = Object.fromEntries(SERVICES.map((service) => [service, Number((values as unknown as Record<string, string | undefined>)[service] ?? defaults[service])])) as LocalLayout;

// Under the temporary folder (kept until it is cleaned), where the `postgres` user can reach it when this runs as root.
const postgresDir = process.env['ONCEGATE_LOCAL_POSTGRES_DIR'] ?? join(tmpdir(), 'oncegate-local-postgres');
const postgres = await startPostgres({ dir: postgresDir, port: Number(values['postgres-port']), fast: false });
const admin = new Client({ connectionString: postgres.url() });
await admin.connect();
if ((await admin.query("SELECT 1 FROM pg_database WHERE datname = 'oncegate'")).rowCount === 0) await admin.query('CREATE DATABASE oncegate');
await admin.end();
// A secure broker has a folder of its own: SCRAM users are added when a folder is formatted.
const secureKafka = values.kafka && values['kafka-secure'];
const kafkaDir = process.env['ONCEGATE_LOCAL_KAFKA_DIR'] ?? join(tmpdir(), secureKafka ? 'oncegate-local-kafka-secure' : 'oncegate-local-kafka');
const kafkaPort = Number(values['kafka-port']);
/** The relay's SCRAM password, made with the folder and kept in it (mode 0600) for the next runs. */
const relayPasswordFile = join(kafkaDir, 'relay-password');
if (secureKafka && !existsSync(relayPasswordFile)) {
  mkdirSync(kafkaDir, { recursive: true, mode: 0o700 });
  writeFileSync(relayPasswordFile, randomBytes(18).toString('hex'), { mode: 0o600 });
}
const kafka: KafkaHandle | undefined = values.kafka
  ? await startKafka({
      dir: kafkaDir,
      port: kafkaPort,
      controllerPort: kafkaPort + 1,
      ...(secureKafka ? { security: { scramUsers: { 'oncegate-relay': readFileSync(relayPasswordFile, 'utf8') }, saslSslPort: kafkaPort + 2, sslPort: kafkaPort + 3 } } : {}),
    })
  : undefined;
const kafkaEnv =
  kafka?.secure === undefined
    ? { ...(kafka === undefined ? {} : { ONCEGATE_KAFKA_BROKERS: kafka.brokers.join(',') }) }
    : {
        ONCEGATE_KAFKA_BROKERS: kafka.secure.saslSsl.join(','),
        ONCEGATE_KAFKA_TLS_CA_FILE: kafka.secure.caFile,
        ONCEGATE_KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
        ONCEGATE_KAFKA_SASL_USERNAME: 'oncegate-relay',
        ONCEGATE_KAFKA_SASL_PASSWORD_FILE: relayPasswordFile,
      };
const env = {
  ONCEGATE_STORE_URL: postgres.url('oncegate'),
  ONCEGATE_DEMO_CREDENTIAL: process.env['ONCEGATE_DEMO_CREDENTIAL'] ?? 'demo-credential-not-secret',
  ...kafkaEnv,
};

// The demo's vault, as `npm start` makes it (examples/demo-vault.sh), on first use.
const oncegate = (...args: string[]) => spawnSync(process.execPath, [LAUNCHER, ...args, '--config', CONFIG], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8' });
if (oncegate('vault', 'status', '--json').stdout.includes('"initialized": false')) {
  oncegate('vault', 'init', '--dev');
  for (const ref of ['demo-config-writer', 'demo-payments', 'demo-admin']) {
    oncegate('vault', 'set', ref, '--kind', 'bearer', '--bind', '127.0.0.1:8790', '--from-env', 'ONCEGATE_DEMO_CREDENTIAL');
  }
}

const demoMain = `${ROOT}dist/apps/demo-target/main.js`;
if (!existsSync(demoMain)) throw new Error('not built: run npm run build');
const demo = spawn(process.execPath, [demoMain, '--port', '8790'], { stdio: ['ignore', 'pipe', 'inherit'] });
await new Promise<void>((resolve) => createInterface({ input: demo.stdout! }).once('line', () => resolve()));

const gatewayPorts = Array.from({ length: layout.gateway }, (_, i) => 8787 + i);
const deployment = await startLocalDeployment({ configFile: CONFIG, cwd: ROOT, env, layout, gatewayPorts });
for (const process of deployment.processes) {
  // Their logs go on to this terminal, each line marked with the service.
  for (const stream of [process.child.stdout!, process.child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => globalThis.process.stdout.write(`[${process.service} ${process.pid}] ${line}\n`));
  }
}
const gateways = deployment.of('gateway');
globalThis.process.stdout.write(
  [
    '',
    `Oncegate, every service its own process (${Object.entries(layout).map(([service, count]) => `${count} ${service}`).join(', ')})`,
    ...gateways.map((gateway) => `  MCP:          ${gateway.url}`),
    `  store:        ${postgres.url('oncegate')} (PostgreSQL 15, data in ${postgresDir})`,
    `  demo target:  http://127.0.0.1:8790   (GET /effects counts side effects)`,
    ...(kafka === undefined ? [] : [`  kafka:        ${kafka.brokers.join(',')} (Apache Kafka 4.1.1, KRaft; data in ${kafkaDir}); every event on oncegate.events`]),
    ...(kafka?.secure === undefined
      ? []
      : [`  kafka TLS:    the relay on SASL_SSL ${kafka.secure.saslSsl.join(',')} (SCRAM-SHA-512 as oncegate-relay, CA ${kafka.secure.caFile}); mTLS on ${kafka.secure.ssl.join(',')}`]),
    ...(gateways[0]?.devToken ? [`  dev token:    ${gateways[0].devToken}   (agent:dev)`] : []),
    '  Ctrl-C stops every process.',
    '',
  ].join('\n'),
);
await new Promise<void>((resolve) => {
  globalThis.process.once('SIGINT', () => resolve());
  globalThis.process.once('SIGTERM', () => resolve());
});
try {
  await deployment.stop();
} catch (error) {
  // A process that had to be killed is named; the rest is still stopped.
  globalThis.process.stderr.write(`${(error as Error).message}\n`);
  globalThis.process.exitCode = 1;
} finally {
  demo.kill('SIGTERM');
  await kafka?.stop();
  await postgres.stop();
}

import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { NestFactory } from '@nestjs/core';
import type { INestMicroservice, LoggerService, LogLevel } from '@nestjs/common';
import { ConsoleLogger } from '@nestjs/common';
import { parseContractFile, type ToolContract } from '@oncegate/contracts';
import { HttpDispatcher } from '@oncegate/dispatcher-http';
import { SshDispatcher } from '@oncegate/dispatcher-ssh';
import type { EventStore } from '@oncegate/event-store';
import { openPostgresEventStore } from '@oncegate/event-store-postgres';
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
import { ExecutionWatcher, InlineSteps, systemClock, type Clock, type InlineStep } from '@oncegate/execution-journal';
import { keyRingFromConfig } from '@oncegate/fingerprint';
import { EventStoreTransport } from '@oncegate/nest-event-store';
import { BlobCipher, PostgresSealedStore, SqliteSealedStore, type SealedBlobWriter, type SealedStore, type SealingKey } from '@oncegate/sealed-store';
import { GatewayConfigError, logLevelsUpTo, unauthenticatedAgentProblem, type GatewayConfig, type StoreConfig } from './config/gateway-config';
import { redactedStoreUrl, withoutStorePassword } from './config/store-url';
import { DeliveryTracker } from './services/result-delivery/callers';
import { ApprovalsApi } from './front/approvals-api';
import { ConsoleApi } from './front/console-api';
import { hostRulesOf } from './front/host-origin-guard';
import { McpHttpFront } from './front/mcp-http-front';
import { SseResumptionStore } from './front/sse-resumption-store';
import { ToolCalls } from './front/tool-calls';
import { AgentDirectory } from './infrastructure/agent-directory';
import { ApproverDirectory } from './infrastructure/approver-directory';
import { initSealKeys, loadSealPrivateKey, loadSealPublicKey, sealKeyPaths } from './infrastructure/seal-keys';
import { JournalSealer } from './services/sealer/journal-sealer';
import { AttemptSweeper } from './services/recovery/attempt-sweeper';
import { dispatcherInstanceId, InstanceLeases, newInstance } from './services/recovery/instance-leases';
import { loadGatewayKeys, type GatewayKeys } from './infrastructure/key-files';
import { Policy } from './services/authorization/policy';
import { AuthorizationController } from './services/authorization/authorization.controller';
import { AuthorizationModule } from './services/authorization/authorization.module';
import { DispatcherHttpController } from './services/dispatcher-http/dispatcher-http.controller';
import { DispatcherHttpModule } from './services/dispatcher-http/dispatcher-http.module';
import { DispatcherSshController } from './services/dispatcher-ssh/dispatcher-ssh.controller';
import { DispatcherSshModule } from './services/dispatcher-ssh/dispatcher-ssh.module';
import { ResultDeliveryModule } from './services/result-delivery/result-delivery.module';
import { initDevelopmentVault } from './vault/vault-admin';
import { VaultService } from './vault/vault-service';
import { PreparedCalls } from './services/prepared-calls';

/**
 * The built console (`npm run build` writes it to dist/apps/console). Both the compiled gateway
 * (dist/apps/gateway/main.js) and its sources (apps/gateway/src/gateway.ts) sit three folders below the root.
 */
const CONSOLE_ASSETS_DIR = fileURLToPath(new URL('../../../dist/apps/console/', import.meta.url));

/** How one `store.driver` opens the event store and the sealed store; the rest of the gateway only sees the ports. */
interface StoreDriver<S extends StoreConfig> {
  /** Where the journal is, as it may be printed (a URL's password redacted). */
  where(store: S, dataDir: string): string;
  events(store: S, dataDir: string, readOnly: boolean): Promise<EventStore>;
  /** `events` is the event store `events` opened: where the blobs share its file, its writer writes them. */
  sealed(store: S, dataDir: string, current: SealingKey, events: EventStore): Promise<SealedStore>;
}

/** A driver's error with the store URL's password replaced, so it can be printed. */
function scrubbed(url: string, error: unknown): unknown {
  if (error instanceof Error) {
    error.message = withoutStorePassword(error.message, url);
    if (error.stack !== undefined) error.stack = withoutStorePassword(error.stack, url);
  }
  return error;
}

/** Store adapters by configured driver name. */
const STORE_DRIVERS: { readonly [D in StoreConfig['driver']]: StoreDriver<Extract<StoreConfig, { driver: D }>> } = {
  sqlite: {
    where: (_store, dataDir) => join(dataDir, 'events.db'),
    events: async (store, dataDir, readOnly) => openSqliteEventStore({ file: join(dataDir, 'events.db'), synchronous: store.synchronous, readOnly }),
    // Sealed blobs live in the journal's file and are written by the event store's writer thread, in its group
    // commits, in order: a blob lands before (or with) any event that references it, and is durable with it.
    sealed: async (_store, dataDir, current, events) =>
      new SqliteSealedStore({ file: join(dataDir, 'events.db'), writer: events as SqliteEventStore as SealedBlobWriter, current }),
  },
  postgres: {
    where: (store) => redactedStoreUrl(store.url),
    events: (store) => openPostgresEventStore({ url: store.url }).catch((error: unknown) => Promise.reject(scrubbed(store.url, error))),
    // Every process on the server reads the blobs; each seal is committed before the event referencing it is appended.
    sealed: (store, _dataDir, current) => PostgresSealedStore.open({ url: store.url, current }).catch((error: unknown) => Promise.reject(scrubbed(store.url, error))),
  },
};

function storeDriver<S extends StoreConfig>(store: S): StoreDriver<S> {
  return STORE_DRIVERS[store.driver] as unknown as StoreDriver<S>;
}

/** Where the configured journal is, as it may be printed: the SQLite file, or the PostgreSQL URL without its password. */
export function storeLocation(config: GatewayConfig): string {
  return storeDriver(config.store).where(config.store, config.dataDir);
}

export interface StartOptions {
  readonly clock?: Clock;
  /** Nest log levels; default: every level up to the configured `log_level`. */
  readonly logLevels?: LogLevel[];
  /** Write every log line to stderr (stdio mode: stdout carries the protocol). */
  readonly logToStderr?: boolean;
  readonly env?: NodeJS.ProcessEnv;
  /** Which front runs: the Streamable HTTP listener (default) or none (the caller attaches stdio). */
  readonly front?: 'http' | 'none';
}

/** Nest's console logger, with every level sent to stderr. */
class StderrLogger extends ConsoleLogger {
  protected override printMessages(
    messages: unknown[],
    context?: string,
    logLevel?: LogLevel,
    _writeStreamType?: 'stdout' | 'stderr',
  ): void {
    super.printMessages(messages, context, logLevel, 'stderr');
  }
}

export interface RunningGateway {
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  readonly tools: ReadonlyMap<string, ToolContract>;
  /** The development token (only when `dev_token` is on). */
  readonly devToken: string | undefined;
  readonly demoTargetUrl: string | undefined;
  readonly store: EventStore;
  readonly agents: AgentDirectory;
  readonly toolCalls: ToolCalls;
  /** The credential vault as this process sees it (follows `oncegate vault lock/unlock/set/rm`). */
  readonly vault: VaultService;
  /** MCP sessions held in memory by the HTTP front (of one agent, or all). */
  liveSessions(actor?: string): number;
  close(): Promise<void>;
}

/** The stores, keys and directories of one data folder; shared by the gateway and the operator commands. */
export interface DataFolder {
  readonly store: EventStore;
  readonly agents: AgentDirectory;
  /** Tokens of the people who decide approvals over HTTP. */
  readonly approvers: ApproverDirectory;
  close(): Promise<void>;
}

/** The durable consumer (subscription) name of each service: its checkpoint and its parked events go by it. */
export const SERVICE_CONSUMERS = {
  authorization: 'authorization',
  dispatcherHttp: 'dispatcher-http',
  dispatcherSsh: 'dispatcher-ssh',
  resultDelivery: 'result-delivery',
} as const;

/**
 * Opens the configured store beside the data folder; `readOnly` creates and writes nothing in a SQLite folder (a
 * copied or mounted folder may be read-only).
 */
export async function openDataFolder(config: GatewayConfig, options: { readonly readOnly?: boolean } = {}): Promise<DataFolder> {
  const readOnly = options.readOnly ?? false;
  if (!readOnly) mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const store = await storeDriver(config.store).events(config.store, config.dataDir, readOnly);
  return { store, agents: new AgentDirectory(store), approvers: new ApproverDirectory(store), close: () => store.close() };
}

export function loadTools(config: GatewayConfig): Map<string, ToolContract> {
  const contract = parseContractFile(readFileSync(config.contractsFile, 'utf8'), config.contractsFile);
  return new Map(contract.tools.map((tool) => [tool.name, tool]));
}

/** The configured policy; a rule naming a tool the contracts do not declare is a configuration error. */
export function policyOf(config: GatewayConfig, tools: ReadonlyMap<string, ToolContract>): Policy {
  const policy = new Policy(config.policy);
  const unknown = policy.unknownTools(new Set(tools.keys()));
  if (unknown.length > 0) {
    throw new GatewayConfigError(
      unknown.map(({ source, tool, line, column }) => ({
        file: config.source,
        path: source.endsWith(']') ? `${source}.tools` : source,
        line,
        column,
        reason: `no tool named '${tool}' in ${config.contractsFile}`,
      })),
    );
  }
  return policy;
}

/**
 * How to start the demo target: the compiled app beside this one (dist/apps/demo-target/main.js), or, when the
 * gateway itself runs from its TypeScript sources (tests of a single library, development), its sources through tsx.
 */
function demoTargetMain(): string[] {
  const here = import.meta.url;
  if (/\.[cm]?ts$/.test(new URL(here).pathname)) return ['--import', 'tsx', fileURLToPath(new URL('../../demo-target/src/main.ts', here))];
  return [fileURLToPath(new URL('../demo-target/main.js', here))];
}

/**
 * The bundled demo target runs as its own process, as a real target would: the gateway only reaches it over
 * loopback HTTP.
 */
async function startDemoTargetProcess(port: number): Promise<{ url: string; close(): Promise<void> }> {
  const child = spawn(process.execPath, [...demoTargetMain(), '--port', String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) => {
      const match = /listening on (http:\/\/\S+)/.exec(line);
      if (match) resolve(match[1]!);
      else reject(new Error(`the demo target did not start: ${line}`));
    });
    child.once('exit', (code) => reject(new Error(`the demo target exited with code ${code} (is port ${port} free?)`)));
  });
  return {
    url,
    async close() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Reuses the development token kept in the data folder, or issues one for `agent:dev`. */
async function developmentToken(dataDir: string, agents: AgentDirectory): Promise<string> {
  const file = join(dataDir, 'dev-token');
  if (existsSync(file)) {
    const token = readFileSync(file, 'utf8').trim();
    if ((await agents.authenticate(token)) !== undefined) return token;
  }
  const { token } = await agents.issue('dev');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return token;
}

/** Starts every service of the embedded gateway in this process, on one data folder and the configured store. */
export async function startGateway(config: GatewayConfig, options: StartOptions = {}): Promise<RunningGateway> {
  const opened: Array<{ close(): Promise<void> }> = [];
  try {
    return await startGatewayOn(config, options, opened);
  } catch (error) {
    // A start that fails closes the services and stores it opened: a server connection left open would keep the process alive.
    for (const store of opened.reverse()) await store.close().catch(() => undefined);
    throw error;
  }
}

/** The services `oncegate serve` runs, one per process; `oncegate start` runs them all in one. */
export const SERVICES = ['gateway', 'authorization', 'dispatcher-http', 'dispatcher-ssh', 'result-delivery', 'sealer'] as const;
export type ServiceName = (typeof SERVICES)[number];

/** What the services of one process share: the configuration, the logger, the contracts, the stores and keys. */
interface Host {
  readonly config: GatewayConfig;
  readonly options: StartOptions;
  readonly clock: Clock;
  readonly logger: LoggerService;
  readonly tools: Map<string, ToolContract>;
  readonly env: NodeJS.ProcessEnv;
  readonly folder: DataFolder;
  readonly store: EventStore;
  readonly keys: GatewayKeys;
  readonly sealed: SealedStore;
  /** This process's instance id (unique per process: pid and random). */
  readonly instance: string;
  /** Whether each service runs as one member of its consumer group (`oncegate serve`) or alone (`oncegate start`). */
  readonly grouped: boolean;
  /** Closed in reverse when a start fails. */
  readonly opened: Array<{ close(): Promise<void> }>;
}

/** Opens what every service of a process needs. */
async function openHost(config: GatewayConfig, options: StartOptions, opened: Array<{ close(): Promise<void> }>, grouped: boolean): Promise<Host> {
  const clock = options.clock ?? systemClock;
  const logLevels = options.logLevels ?? logLevelsUpTo(config.logLevel);
  const logger: LoggerService = options.logToStderr ? new StderrLogger({ logLevels }) : new ConsoleLogger({ logLevels });
  const tools = loadTools(config);
  const folder = await openDataFolder(config);
  opened.push(folder);
  const env = options.env ?? process.env;
  const { keys, migratedKeyFiles } = await loadGatewayKeys(config.dataDir, env, { dev: config.devToken });
  for (const file of migratedKeyFiles) {
    logger.log(`${file} held its key in plain (an earlier version); it is now wrapped under the master key`, 'keys');
  }
  const sealed = await storeDriver(config.store).sealed(config.store, config.dataDir, keys.sealing, folder.store);
  opened.push(sealed);
  return { config, options, clock, logger, tools, env, folder, store: folder.store, keys, sealed, instance: newInstance(), grouped, opened };
}

/**
 * The credential vault as this process sees it. Development mode makes one under the development master key: in
 * one process at start, and among the services apart by the gateway (the one that starts first, alone).
 */
async function openVault(host: Host): Promise<VaultService> {
  const { config, store, env, tools, logger } = host;
  if (config.devToken && !host.grouped) await initDevelopmentVault({ store, dataDir: config.dataDir, env, by: 'service:gateway' });
  const vault = new VaultService({ store, dataDir: config.dataDir, env });
  await vault.start();
  if (!vault.state().initialized) {
    // Not a reason to stop: tools without a credential work, and the vault can be made while the gateway runs.
    const needing = [...tools.values()].filter((tool) => tool.credentialRef !== null).map((tool) => tool.name);
    const effect = needing.length === 0 ? 'no tool needs a credential' : `calls of the tools that need a credential (${needing.join(', ')}) are denied`;
    logger.warn(`no vault in this data folder: ${effect} until oncegate vault init and oncegate vault set …`, 'vault');
  }
  return vault;
}

/** One service as a Nest microservice fed by the store: alone, or as a member of the service's consumer group. */
async function microservice(
  host: Host,
  module: Parameters<typeof NestFactory.createMicroservice>[0],
  consumer: string,
  streamPrefixes: readonly string[] = ['execution-'],
): Promise<INestMicroservice> {
  const group = host.grouped ? { member: `${consumer}@${hostname()}/${host.instance}`, leaseMs: host.config.instanceLeaseMs } : undefined;
  const failing = host.config.failHandling;
  const fault =
    failing?.service === consumer
      ? () => (existsSync(failing.whileFileExists) ? `testing.fail_handling: ${failing.whileFileExists} exists (a fault made for a test)` : undefined)
      : undefined;
  if (fault !== undefined) host.logger.warn(`TEST ONLY: ${consumer} fails every event while ${failing!.whileFileExists} exists (testing.fail_handling in ${host.config.source})`, consumer);
  const app = await NestFactory.createMicroservice(module, {
    strategy: new EventStoreTransport({ store: host.store, consumer, streamPrefixes, group, fault }),
    logger: host.logger,
  });
  await app.listen();
  host.opened.push(app);
  return app;
}

async function hostAuthorization(host: Host, vault: VaultService, prepared: PreparedCalls): Promise<INestMicroservice> {
  const { store, tools, sealed, clock, config } = host;
  return microservice(
    host,
    AuthorizationModule.forRoot({ store, policy: policyOf(config, tools), vault, tools, sealed, approvalTimeoutMs: config.approvalTimeoutMs, clock, prepared }),
    SERVICE_CONSUMERS.authorization,
    // Runs are granted on their own streams, and a closed MCP session ends its run.
    ['execution-', 'run-', 'session-'],
  );
}

/** The dispatchers of a process, their liveness leases and the sweeper that settles lost attempts. */
interface Dispatchers {
  readonly http: INestMicroservice | undefined;
  readonly ssh: INestMicroservice | undefined;
  /** Their first dispatches, to decide inline in the accepting commit (one process). */
  readonly inlineSteps: InlineStep[];
  /** Stops taking work and lets attempts in flight record their outcome. */
  drain(): Promise<void>;
  /** After the microservices closed: nothing of this process is in flight any more. */
  close(): Promise<void>;
}

async function hostDispatchers(host: Host, vault: VaultService, prepared: PreparedCalls, channels: ReadonlySet<'http' | 'ssh'>): Promise<Dispatchers> {
  const { store, tools, sealed, clock, config, instance } = host;
  // Dispatcher ids are unique per process; their liveness leases are held before anything can be dispatched.
  const role = host.options.front ?? (host.grouped ? 'serve' : 'http');
  const dispatcherIds = { http: dispatcherInstanceId('http', role, instance), ssh: dispatcherInstanceId('ssh', role, instance) };
  const ownIds = [...channels].map((channel) => dispatcherIds[channel]);
  const locksDir = join(config.dataDir, 'instances');
  const leases = new InstanceLeases(store, clock, ownIds, config.instanceLeaseMs, { dir: locksDir, instance });
  await leases.start();
  host.opened.push({ close: () => leases.stop() });
  const http = new HttpDispatcher();
  const ssh = new SshDispatcher();
  const inlineSteps: InlineStep[] = [];
  const httpApp = channels.has('http')
    ? await microservice(host, DispatcherHttpModule.forRoot({ store, tools, sealed, http, vault, dispatcherId: dispatcherIds.http, clock, prepared }), SERVICE_CONSUMERS.dispatcherHttp)
    : undefined;
  const sshApp = channels.has('ssh')
    ? await microservice(host, DispatcherSshModule.forRoot({ store, tools, sealed, ssh, vault, dispatcherId: dispatcherIds.ssh, clock }), SERVICE_CONSUMERS.dispatcherSsh)
    : undefined;
  const controllers = [httpApp?.get(DispatcherHttpController), sshApp?.get(DispatcherSshController)].filter((controller) => controller !== undefined);
  for (const controller of controllers) {
    controller.limitInFlight(config.dispatchInFlight);
    inlineSteps.push(heldBeforeSend(controller.inlineStep(), config.holdBeforeSendMs));
  }
  // Attempts that will never report (their process gone, or past their deadline) settle by class, whoever
  // dispatched them: at start, and as long as this process runs.
  const sweeper = new AttemptSweeper({ store, clock, ownDispatcherIds: new Set(ownIds), locksDir, everyMs: Math.max(100, Math.floor(config.instanceLeaseMs / 3)) });
  await sweeper.start();
  host.opened.push({ close: () => sweeper.stop() });
  return {
    http: httpApp,
    ssh: sshApp,
    inlineSteps,
    async drain() {
      await sweeper.stop();
      for (const controller of controllers) await controller.drain();
    },
    async close() {
      // Only now is nothing of this process in flight: from here on its attempts count as gone.
      await leases.stop();
      await http.close();
      await ssh.close();
    },
  };
}

async function hostResultDelivery(host: Host, deliveries: DeliveryTracker): Promise<INestMicroservice> {
  return microservice(host, ResultDeliveryModule.forRoot({ store: host.store, deliveries, clock: host.clock }), SERVICE_CONSUMERS.resultDelivery);
}

function hostSealer(host: Host): JournalSealer | undefined {
  const { config, env, store, clock } = host;
  if (config.sealEveryMs <= 0) return undefined;
  initSealKeys(config.dataDir, env, { dev: config.devToken });
  const sealer = new JournalSealer(store, loadSealPrivateKey(config.dataDir, env), loadSealPublicKey(sealKeyPaths(config.dataDir).publicKey), clock, config.sealEveryMs);
  sealer.start();
  host.opened.push({ close: () => sealer.stop() });
  return sealer;
}

/**
 * Callers as the services apart see them: a gateway shows the callers waiting on it through the store's leases, and
 * result delivery reads them there. A lease outlives the longest wait of a call.
 */
function sharedCallers(host: Host): DeliveryTracker {
  return new DeliveryTracker({ store: host.store, instance: `${hostname()}/${host.instance}`, leaseMs: host.config.callWaitMs + 30_000, clock: host.clock });
}

/** The MCP front: sessions, tool calls, the approvals API and the console. */
interface Front {
  readonly url: string;
  readonly port: number;
  readonly toolCalls: ToolCalls;
  readonly devToken: string | undefined;
  liveSessions(actor?: string): number;
  close(): Promise<void>;
}

async function hostFront(host: Host, deliveries: DeliveryTracker, inlineSteps: InlineSteps): Promise<Front> {
  const { config, options, store, sealed, tools, clock, keys, logger } = host;
  const { agents, approvers } = host.folder;
  const hostRules = hostRulesOf(config);
  // Resumption messages only need to survive a process restart, not a power cut, and only for the retention:
  // what is older is deleted now, before the front listens, and then periodically.
  const resumption = new SseResumptionStore({
    file: join(config.dataDir, 'mcp-streams.db'),
    cipher: new BlobCipher(keys.sealing),
    clock,
    retentionMs: config.resumptionRetentionMs,
  });
  await resumption.start();
  host.opened.push(resumption);
  const keyRing = keyRingFromConfig({
    current: keys.fingerprint.id,
    keys: [{ id: keys.fingerprint.id, secret: keys.fingerprint.secret }],
    argumentKey: { id: keys.argument.id, secret: keys.argument.secret },
  });
  const watcher = new ExecutionWatcher(store);
  await watcher.start();
  host.opened.push({ close: () => watcher.stop() });
  const toolCalls = new ToolCalls({ store, watcher, sealed, keyRing, tools, deliveries, clock, callWaitMs: config.callWaitMs, inlineSteps });
  const front = new McpHttpFront({
    host: config.host,
    port: config.port,
    path: config.path,
    maxRequestBytes: config.maxRequestBytes,
    store,
    agents,
    tools,
    toolCalls,
    resumption,
    clock,
    hostRules,
    mounted: [new ApprovalsApi({ store, approvers, tools, clock }), new ConsoleApi({ store, approvers, tools, clock, assetsDir: CONSOLE_ASSETS_DIR })],
    sessionLimits: config.sessions,
    sseRetryMs: config.sseRetryMs,
    unauthenticatedActor: config.unauthenticatedAgent ?? undefined,
  });
  const listening = options.front === 'none' ? { url: '', port: 0 } : await front.listen();
  host.opened.push(front);
  if (config.unauthenticatedAgent !== null && options.front !== 'none') {
    logger.warn(
      `TEST ONLY: MCP requests without a token are served as ${config.unauthenticatedAgent} (testing.unauthenticated_agent in ` +
        `${config.source}); anyone on this machine can call tools. Never run a real gateway with this setting`,
      'mcp-http',
    );
  }
  const devToken = config.devToken ? await developmentToken(config.dataDir, agents) : undefined;
  await agents.refresh();
  const agentWatch = agents.watch();
  await approvers.refresh();
  const approverWatch = approvers.watch();
  return {
    url: listening.url,
    port: listening.port,
    toolCalls,
    devToken,
    liveSessions: (actor) => front.liveSessions(actor),
    async close() {
      await front.close();
      await agentWatch.stop();
      await approverWatch.stop();
      await watcher.stop();
      await resumption.close();
    },
  };
}

/** `testing.unauthenticated_agent` is refused outright where the configuration makes it unsafe. */
function refuseUnsafeTesting(config: GatewayConfig): void {
  const unauthenticated = config.unauthenticatedAgent === null ? undefined : unauthenticatedAgentProblem(config);
  if (unauthenticated !== undefined) {
    throw new GatewayConfigError([{ file: config.source, path: 'testing.unauthenticated_agent', line: 0, column: 0, reason: `test only, refused: ${unauthenticated}` }]);
  }
}

async function startGatewayOn(config: GatewayConfig, options: StartOptions, opened: Array<{ close(): Promise<void> }>): Promise<RunningGateway> {
  // The configuration is checked before anything is opened.
  policyOf(config, loadTools(config));
  hostRulesOf(config);
  refuseUnsafeTesting(config);
  const host = await openHost(config, options, opened, false);
  const vault = await openVault(host);
  opened.push({ close: () => vault.stop() });
  const sealer = hostSealer(host);
  // Each execution's arguments opened and request rendered once, for authorization and the HTTP dispatcher alike.
  const prepared = new PreparedCalls(host.sealed);
  // Authorization and the dispatchers of this process decide inline in the commit that accepts an execution.
  const inlineSteps = new InlineSteps();
  const authorization = await hostAuthorization(host, vault, prepared);
  const dispatchers = await hostDispatchers(host, vault, prepared, new Set(['http', 'ssh'] as const));
  inlineSteps.add(authorization.get(AuthorizationController).inlineStep());
  for (const step of dispatchers.inlineSteps) inlineSteps.add(step);
  const deliveries = new DeliveryTracker();
  const resultDelivery = await hostResultDelivery(host, deliveries);
  const front = await hostFront(host, deliveries, inlineSteps);
  if (config.holdBeforeSendMs > 0) {
    host.logger.warn(`TEST ONLY: every attempt dispatched inline is sent ${config.holdBeforeSendMs} ms after its commit (testing.hold_before_send in ${config.source})`, 'dispatch');
  }
  const demo = config.demoTarget.enabled ? await startDemoTargetProcess(config.demoTarget.port) : undefined;

  return {
    url: front.url,
    port: front.port,
    dataDir: config.dataDir,
    tools: host.tools,
    devToken: front.devToken,
    demoTargetUrl: demo?.url,
    store: host.store,
    agents: host.folder.agents,
    toolCalls: front.toolCalls,
    vault,
    liveSessions: (actor) => front.liveSessions(actor),
    async close() {
      await front.close();
      await dispatchers.drain();
      for (const app of [resultDelivery, dispatchers.ssh, dispatchers.http, authorization]) await app?.close();
      await dispatchers.close();
      await vault.stop();
      await sealer?.stop();
      await demo?.close();
      await host.sealed.close();
      await host.folder.close();
    },
  };
}

/** One service of `oncegate serve`, running in this process. */
export interface RunningService {
  readonly service: ServiceName;
  readonly instance: string;
  /** The MCP front's URL (the gateway service only). */
  readonly url: string | undefined;
  readonly devToken: string | undefined;
  readonly store: EventStore;
  close(): Promise<void>;
}

/**
 * Runs one service in this process (`oncegate serve <service>`), as one instance of it among any number on the
 * same store: the gateway (the MCP front, with the approvals API and the console), authorization, a dispatcher,
 * result delivery, or the journal's sealer. They meet only in the store: every consumer of events runs as a member
 * of its service's consumer group, and the front learns outcomes from the execution streams.
 */
export async function serveService(service: ServiceName, config: GatewayConfig, options: StartOptions = {}): Promise<RunningService> {
  const opened: Array<{ close(): Promise<void> }> = [];
  try {
    return await serveServiceOn(service, config, options, opened);
  } catch (error) {
    for (const resource of opened.reverse()) await resource.close().catch(() => undefined);
    throw error;
  }
}

async function serveServiceOn(service: ServiceName, config: GatewayConfig, options: StartOptions, opened: Array<{ close(): Promise<void> }>): Promise<RunningService> {
  if (service === 'authorization') policyOf(config, loadTools(config));
  if (service === 'gateway') {
    hostRulesOf(config);
    refuseUnsafeTesting(config);
  }
  const host = await openHost(config, options, opened, true);
  const running = (url: string | undefined, devToken: string | undefined, stop: () => Promise<void>): RunningService => ({
    service,
    instance: host.instance,
    url,
    devToken,
    store: host.store,
    close: () => closeInOrder(stop, () => host.sealed.close(), () => host.folder.close()),
  });
  switch (service) {
    case 'gateway': {
      // Result delivery runs elsewhere: the callers waiting here are shown to it through the store.
      if (config.devToken) await initDevelopmentVault({ store: host.store, dataDir: config.dataDir, env: host.env, by: 'service:gateway' });
      const deliveries = sharedCallers(host);
      const front = await hostFront(host, deliveries, new InlineSteps());
      return running(front.url, front.devToken, () => front.close());
    }
    case 'authorization': {
      const vault = await openVault(host);
      opened.push({ close: () => vault.stop() });
      const app = await hostAuthorization(host, vault, new PreparedCalls(host.sealed));
      return running(undefined, undefined, () =>
        closeInOrder(
          () => app.close(),
          () => vault.stop(),
        ),
      );
    }
    case 'dispatcher-http':
    case 'dispatcher-ssh': {
      const vault = await openVault(host);
      opened.push({ close: () => vault.stop() });
      const dispatchers = await hostDispatchers(host, vault, new PreparedCalls(host.sealed), new Set([service === 'dispatcher-http' ? 'http' : 'ssh'] as const));
      return running(undefined, undefined, () =>
        closeInOrder(
          () => dispatchers.drain(),
          async () => dispatchers.http?.close(),
          async () => dispatchers.ssh?.close(),
          () => dispatchers.close(),
          () => vault.stop(),
        ),
      );
    }
    case 'result-delivery': {
      const deliveries = sharedCallers(host);
      const app = await hostResultDelivery(host, deliveries);
      return running(undefined, undefined, () => app.close());
    }
    case 'sealer': {
      const sealer = hostSealer(host);
      if (sealer === undefined) host.logger.warn(`seal_every is 0 in ${config.source}: this sealer seals nothing`, 'sealer');
      return running(undefined, undefined, async () => sealer?.stop());
    }
  }
}

/**
 * Runs every step of a stop in order, each even when one before it failed (a store gone first fails a release, and
 * the connections must still be closed); then fails with the first failure.
 */
async function closeInOrder(...steps: ReadonlyArray<() => Promise<unknown>>): Promise<void> {
  let failure: { error: unknown } | undefined;
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      failure ??= { error };
    }
  }
  if (failure !== undefined) throw failure.error;
}

/** `testing.hold_before_send`: the dispatch step's attempt starts that long after its commit (test only). */
function heldBeforeSend(step: InlineStep, holdMs: number): InlineStep {
  if (holdMs === 0) return step;
  return { ...step, committed: (state) => void setTimeout(() => step.committed?.(state), holdMs) };
}

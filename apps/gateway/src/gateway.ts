import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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
import { DeliveryTracker } from './front/delivery-tracker';
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
import { loadGatewayKeys } from './infrastructure/key-files';
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

async function startGatewayOn(config: GatewayConfig, options: StartOptions, opened: Array<{ close(): Promise<void> }>): Promise<RunningGateway> {
  const clock = options.clock ?? systemClock;
  const logLevels = options.logLevels ?? logLevelsUpTo(config.logLevel);
  const logger: LoggerService = options.logToStderr ? new StderrLogger({ logLevels }) : new ConsoleLogger({ logLevels });
  const tools = loadTools(config);
  const policy = policyOf(config, tools);
  const hostRules = hostRulesOf(config);
  const unauthenticated = config.unauthenticatedAgent === null ? undefined : unauthenticatedAgentProblem(config);
  if (unauthenticated !== undefined) {
    throw new GatewayConfigError([{ file: config.source, path: 'testing.unauthenticated_agent', line: 0, column: 0, reason: `test only, refused: ${unauthenticated}` }]);
  }
  const folder = await openDataFolder(config);
  const { store, agents, approvers } = folder;
  opened.push(folder);
  const env = options.env ?? process.env;
  const { keys, migratedKeyFiles } = await loadGatewayKeys(config.dataDir, env, { dev: config.devToken });
  for (const file of migratedKeyFiles) {
    logger.log(`${file} held its key in plain (an earlier version); it is now wrapped under the master key`, 'keys');
  }
  const sealed = await storeDriver(config.store).sealed(config.store, config.dataDir, keys.sealing, store);
  opened.push(sealed);
  // Resumption messages only need to survive a process restart, not a power cut, and only for the retention:
  // what is older is deleted now, before the front listens, and then periodically.
  const resumption = new SseResumptionStore({
    file: join(config.dataDir, 'mcp-streams.db'),
    cipher: new BlobCipher(keys.sealing),
    clock,
    retentionMs: config.resumptionRetentionMs,
  });
  await resumption.start();
  const keyRing = keyRingFromConfig({
    current: keys.fingerprint.id,
    keys: [{ id: keys.fingerprint.id, secret: keys.fingerprint.secret }],
    argumentKey: { id: keys.argument.id, secret: keys.argument.secret },
  });
  // Development mode: a vault under the development master key, so a fresh data folder works as it is.
  if (config.devToken) await initDevelopmentVault({ store, dataDir: config.dataDir, env, by: 'service:gateway' });
  const vault = new VaultService({ store, dataDir: config.dataDir, env });
  await vault.start();
  if (!vault.state().initialized) {
    // Not a reason to stop: tools without a credential work, and the vault can be made while the gateway runs.
    const needing = [...tools.values()].filter((tool) => tool.credentialRef !== null).map((tool) => tool.name);
    const effect = needing.length === 0 ? 'no tool needs a credential' : `calls of the tools that need a credential (${needing.join(', ')}) are denied`;
    logger.warn(`no vault in this data folder: ${effect} until oncegate vault init and oncegate vault set …`, 'vault');
  }
  const deliveries = new DeliveryTracker();
  const http = new HttpDispatcher();
  const ssh = new SshDispatcher();
  const watcher = new ExecutionWatcher(store);
  await watcher.start();
  let sealer: JournalSealer | undefined;
  if (config.sealEveryMs > 0) {
    initSealKeys(config.dataDir, env, { dev: config.devToken });
    sealer = new JournalSealer(
      store,
      loadSealPrivateKey(config.dataDir, env),
      loadSealPublicKey(sealKeyPaths(config.dataDir).publicKey),
      clock,
      config.sealEveryMs,
    );
    sealer.start();
  }

  // Dispatcher ids are unique per process; their liveness leases are held before anything can be dispatched.
  const instance = newInstance();
  const frontName = options.front ?? 'http';
  const dispatcherIds = { http: dispatcherInstanceId('http', frontName, instance), ssh: dispatcherInstanceId('ssh', frontName, instance) };
  const locksDir = join(config.dataDir, 'instances');
  const leases = new InstanceLeases(store, clock, Object.values(dispatcherIds), config.instanceLeaseMs, { dir: locksDir, instance });
  await leases.start();

  // Each execution's arguments opened and request rendered once, for authorization and the HTTP dispatcher alike.
  const prepared = new PreparedCalls(sealed);
  const microservices: INestMicroservice[] = [];
  const service = async (
    module: Parameters<typeof NestFactory.createMicroservice>[0],
    consumer: string,
    streamPrefixes: readonly string[] = ['execution-'],
  ) => {
    const app = await NestFactory.createMicroservice(module, {
      strategy: new EventStoreTransport({ store, consumer, streamPrefixes }),
      logger,
    });
    await app.listen();
    microservices.push(app);
    opened.push(app);
    return app;
  };
  // Authorization and the dispatchers of this process decide inline in the commit that accepts an execution.
  const inlineSteps = new InlineSteps();
  const authorization = await service(
    AuthorizationModule.forRoot({ store, policy, vault, tools, sealed, approvalTimeoutMs: config.approvalTimeoutMs, clock, prepared }),
    SERVICE_CONSUMERS.authorization,
    // Runs are granted on their own streams, and a closed MCP session ends its run.
    ['execution-', 'run-', 'session-'],
  );
  const dispatcher = await service(
    DispatcherHttpModule.forRoot({
      store,
      tools,
      sealed,
      http,
      vault,
      dispatcherId: dispatcherIds.http,
      clock,
      prepared,
    }),
    SERVICE_CONSUMERS.dispatcherHttp,
  );
  const sshDispatcher = await service(
    DispatcherSshModule.forRoot({
      store,
      tools,
      sealed,
      ssh,
      vault,
      dispatcherId: dispatcherIds.ssh,
      clock,
    }),
    SERVICE_CONSUMERS.dispatcherSsh,
  );
  inlineSteps.add(authorization.get(AuthorizationController).inlineStep());
  inlineSteps.add(heldBeforeSend(dispatcher.get(DispatcherHttpController).inlineStep(), config.holdBeforeSendMs));
  inlineSteps.add(heldBeforeSend(sshDispatcher.get(DispatcherSshController).inlineStep(), config.holdBeforeSendMs));
  await service(ResultDeliveryModule.forRoot({ store, deliveries, clock }), SERVICE_CONSUMERS.resultDelivery);
  // Attempts that will never report (their process gone, or past their deadline) settle by class, whoever
  // dispatched them: at start, and as long as this process runs.
  const sweeper = new AttemptSweeper({ store, clock, ownDispatcherIds: new Set(Object.values(dispatcherIds)), locksDir, everyMs: Math.max(100, Math.floor(config.instanceLeaseMs / 3)) });
  await sweeper.start();

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
  if (config.unauthenticatedAgent !== null && options.front !== 'none') {
    logger.warn(
      `TEST ONLY: MCP requests without a token are served as ${config.unauthenticatedAgent} (testing.unauthenticated_agent in ` +
        `${config.source}); anyone on this machine can call tools. Never run a real gateway with this setting`,
      'mcp-http',
    );
  }
  if (config.holdBeforeSendMs > 0) {
    logger.warn(`TEST ONLY: every attempt dispatched inline is sent ${config.holdBeforeSendMs} ms after its commit (testing.hold_before_send in ${config.source})`, 'dispatch');
  }
  const devToken = config.devToken ? await developmentToken(config.dataDir, agents) : undefined;
  await agents.refresh();
  const agentWatch = agents.watch();
  await approvers.refresh();
  const approverWatch = approvers.watch();

  const demo = config.demoTarget.enabled ? await startDemoTargetProcess(config.demoTarget.port) : undefined;

  return {
    url: listening.url,
    port: listening.port,
    dataDir: config.dataDir,
    tools,
    devToken,
    demoTargetUrl: demo?.url,
    store,
    agents,
    toolCalls,
    vault,
    liveSessions: (actor) => front.liveSessions(actor),
    async close() {
      await front.close();
      await agentWatch.stop();
      await approverWatch.stop();
      await sweeper.stop();
      await dispatcher.get(DispatcherHttpController).drain();
      await sshDispatcher.get(DispatcherSshController).drain();
      for (const app of microservices.reverse()) await app.close();
      // Only now is nothing of this process in flight: from here on its attempts count as gone.
      await leases.stop();
      await vault.stop();
      await sealer?.stop();
      await watcher.stop();
      await http.close();
      await ssh.close();
      await demo?.close();
      await sealed.close();
      await resumption.close();
      await folder.close();
    },
  };
}

/** `testing.hold_before_send`: the dispatch step's attempt starts that long after its commit (test only). */
function heldBeforeSend(step: InlineStep, holdMs: number): InlineStep {
  if (holdMs === 0) return step;
  return { ...step, committed: (state) => void setTimeout(() => step.committed?.(state), holdMs) };
}

import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { INestMicroservice, LoggerService, LogLevel } from '@nestjs/common';
import { Logger } from '@nestjs/common';
import { parseContractFile, type PluginSectionCheck, type ToolContract } from '@oncegate/contracts';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { createPostgresDatabase, openPostgresEventStore } from '@oncegate/event-store-postgres';
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
import { InlineSteps, systemClock, traceContextFrom, type Clock, type InlineStep } from '@oncegate/execution-journal';
import { redactedStoreUrl, withoutStorePassword, type GatewayConfig, type StoreConfig } from '@oncegate/host-config';
import { createLogger, inSpan, meteredStore, OperationsServer, processMetrics, SpanKind, startTracing, type ProcessMetrics } from '@oncegate/host-operations';
import { AgentDirectory, ApproverDirectory } from '@oncegate/host-principals';
import { newInstance } from '@oncegate/host-recovery';
import { loadGatewayKeys, VaultService, type GatewayKeys } from '@oncegate/host-vault';
import { PreparedCalls } from './prepared-calls';
import { createEventStoreMicroservice, EventStoreTransport, readParked } from '@oncegate/nest-event-store';
import { PostgresSealedStore, RecentlySealed, SqliteSealedStore, type SealedBlobWriter, type SealedKind, type SealedStore, type SealingKey } from '@oncegate/sealed-store';
import { initDevelopmentVault } from '@oncegate/vault';

/** How one `store.driver` opens the event store and the sealed store; the rest of the gateway only sees the ports. */
interface StoreDriver<S extends StoreConfig> {
  /** Where the journal is, as it may be printed (a URL's password redacted). */
  where(store: S, dataDir: string): string;
  events(store: S, dataDir: string, readOnly: boolean): Promise<EventStore>;
  /** `events` is the event store `events` opened: where the blobs share its file, its writer writes them. */
  sealed(store: S, dataDir: string, current: SealingKey, events: EventStore, hear: readonly SealedKind[]): Promise<SealedStore>;
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
    // A process hears the blobs of the kinds it opens and other processes seal (see `ServiceDefinition.sealedBlobs`).
    sealed: (store, _dataDir, current, _events, hear) =>
      PostgresSealedStore.open({ url: store.url, current, hear }).catch((error: unknown) => Promise.reject(scrubbed(store.url, error))),
  },
};

function storeDriver<S extends StoreConfig>(store: S): StoreDriver<S> {
  return STORE_DRIVERS[store.driver] as unknown as StoreDriver<S>;
}

/**
 * Creates the database the PostgreSQL store's URL names when the server does not have it (`oncegate init
 * --create-database`), as the URL's user; says where and whether it was made. Errors never hold the password.
 */
export async function createStoreDatabase(store: Extract<StoreConfig, { driver: 'postgres' }>): Promise<{ readonly database: string; readonly server: string; readonly created: boolean }> {
  try {
    const { server, created } = await createPostgresDatabase(store.url);
    return { database: server.database, server: `${server.host}:${server.port}`, created };
  } catch (error) {
    throw scrubbed(store.url, error);
  }
}

/** Where the configured journal is, as it may be printed: the SQLite file, or the PostgreSQL URL without its password. */
export function storeLocation(config: GatewayConfig): string {
  return storeDriver(config.store).where(config.store, config.dataDir);
}

export interface StartOptions {
  readonly clock?: Clock;
  /** Nest log levels (everything up to the least severe of them); default: every level up to the configured `log_level`. */
  readonly logLevels?: LogLevel[];
  readonly env?: NodeJS.ProcessEnv;
  /** Which front runs: the Streamable HTTP listener (default) or none (the caller attaches stdio). */
  readonly front?: 'http' | 'none';
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

/**
 * The contracts of the configuration (its contract file and the files that one includes), each plugin channel's section
 * checked by `pluginChannels` when it is given.
 */
export function loadTools(config: GatewayConfig, pluginChannels?: ReadonlyMap<string, PluginSectionCheck>): Map<string, ToolContract> {
  const contract = parseContractFile(readFileSync(config.contractsFile, 'utf8'), config.contractsFile, {
    readIncluded: (file) => readFileSync(file, 'utf8'),
    ...(pluginChannels === undefined ? {} : { pluginChannels }),
  });
  return new Map(contract.tools.map((tool) => [tool.name, tool]));
}

/** What the services of one process share: the configuration, the logger, the contracts, the stores and keys. */
export interface Host {
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
  /** This process's metrics (`/metrics` of the operations listener). */
  readonly metrics: ProcessMetrics;
  /** The operations listener (`operations` in the configuration), to which services add their readiness checks. */
  readonly operations: OperationsServer | undefined;
  /** Where the operations listener listens, for the summary. */
  readonly operationsUrl: string | undefined;
  /** The span exporter when tracing is on: shut down (its last batch flushed) when the host closes. */
  readonly tracing: { close(): Promise<void> } | undefined;
}

/** Opens what every service of a process needs. */
export async function openHost(
  config: GatewayConfig,
  options: StartOptions,
  opened: Array<{ close(): Promise<void> }>,
  grouped: boolean,
  service: string,
  pluginChannels?: ReadonlyMap<string, PluginSectionCheck>,
  hear: readonly SealedKind[] = [],
): Promise<Host> {
  const clock = options.clock ?? systemClock;
  // Every line of the process goes to stderr through this one logger, Nest's own and every `new Logger(context)` too,
  // from now on: the vault and the stores log before the first Nest application would install it.
  const logger = createLogger({ level: config.logLevel, service });
  if (options.logLevels !== undefined) logger.setLogLevels(options.logLevels);
  Logger.overrideLogger(logger);
  const tools = loadTools(config, pluginChannels);
  const folder = await openDataFolder(config);
  opened.push(folder);
  const env = options.env ?? process.env;
  const { keys, migratedKeyFiles } = await loadGatewayKeys(config.dataDir, env, { dev: config.devToken });
  for (const file of migratedKeyFiles) {
    logger.log(`${file} held its key in plain (an earlier version); it is now wrapped under the master key`, 'keys');
  }
  // A service opens again what it sealed moments before (the answer to give, the arguments to send): kept in memory.
  const sealed = new RecentlySealed(await storeDriver(config.store).sealed(config.store, config.dataDir, keys.sealing, folder.store, hear));
  opened.push(sealed);
  const metrics = processMetrics();
  const store = meteredStore(folder.store, metrics);
  const instance = newInstance();
  const tracing = config.tracing === null ? undefined : await startTracing(config.tracing, service, instance);
  if (tracing !== undefined) opened.push(tracing);
  let operations: OperationsServer | undefined;
  let operationsUrl: string | undefined;
  if (config.operations !== null) {
    operations = new OperationsServer(metrics, config.operations.host, config.operations.port);
    operations.ready({
      name: 'store',
      check: async () => {
        await store.headPosition();
        return undefined;
      },
    });
    operationsUrl = await operations.listen();
    opened.push(operations);
  }
  return { config, options, clock, logger, tools, env, folder, store, keys, sealed, instance, grouped, opened, metrics, operations, operationsUrl, tracing };
}

/** Closes what `openHost` opened, after the services: the operations listener, the span exporter, the stores. */
export function closeHost(host: Host): Promise<void> {
  return closeInOrder(
    () => host.operations?.close() ?? Promise.resolve(),
    () => host.tracing?.close() ?? Promise.resolve(),
    () => host.sealed.close(),
    () => host.folder.close(),
  );
}

/**
 * The credential vault as this process sees it. Development mode makes one under the development master key: in
 * one process at start, and among the services apart by the gateway (the one that starts first, alone).
 */
export async function openVault(host: Host): Promise<VaultService> {
  const { config, store, env, tools, logger } = host;
  if (config.devToken && !host.grouped) await initDevelopmentVault({ store, dataDir: config.dataDir, env, by: 'service:gateway' });
  const vault = new VaultService({ store, dataDir: config.dataDir, env });
  await vault.start();
  host.opened.push({ close: () => vault.stop() });
  host.operations?.ready({ name: 'vault', check: async () => (vault.state().locked ? `locked: ${vault.state().reason}` : undefined) });
  if (!vault.state().initialized) {
    // Not a reason to stop: tools without a credential work, and the vault can be made while the gateway runs.
    const needing = [...tools.values()].filter((tool) => tool.credentialRef !== null).map((tool) => tool.name);
    const effect = needing.length === 0 ? 'no tool needs a credential' : `calls of the tools that need a credential (${needing.join(', ')}) are denied`;
    logger.warn(`no vault in this data folder: ${effect} until oncegate vault init and oncegate vault set …`, 'vault');
  }
  return vault;
}

/** One service as a Nest microservice fed by the store: alone, or as a member of the service's consumer group. */
export async function microservice(
  host: Host,
  module: Parameters<typeof createEventStoreMicroservice>[0],
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
  watchParked(host, consumer);
  const taken = { handled: host.metrics.eventsHandled.labels({ consumer, result: 'handled' }), parked: host.metrics.eventsHandled.labels({ consumer, result: 'parked' }) };
  const strategy = new EventStoreTransport({
    store: host.store,
    consumer,
    streamPrefixes,
    group,
    fault,
    took: (result) => taken[result].inc(),
    // Each handling is a span of the trace the event was appended in (its metadata's traceparent).
    around: host.config.tracing === null ? undefined : (event, handle) =>
        inSpan(`${consumer} ${event.type}`, { kind: SpanKind.CONSUMER, parent: traceContextFrom(event.metadata['traceparent']), attributes: spanAttributesOf(event) }, handle),
  });
  watchLag(host, consumer, strategy);
  const app = await createEventStoreMicroservice(module, strategy, { logger: host.logger });
  await app.listen();
  host.opened.push(app);
  return app;
}

/** The consumers of this process whose parked events `/metrics` counts. */
const parkedConsumers = new Map<string, EventStore>();
/** The consumers of this process whose lag `/metrics` shows. */
const readers = new Map<string, { store: EventStore; transport: EventStoreTransport }>();

/** How many committed events each consumer of this process has not read yet (its reader behind the store's head). */
function watchLag(host: Host, consumer: string, transport: EventStoreTransport): void {
  if (host.operations === undefined) return;
  readers.set(consumer, { store: host.store, transport });
  host.operations.ready({
    name: `consumer ${consumer}`,
    check: async () =>
      transport.hasCaughtUp() ? undefined : `catching up: ${Math.max(0, (await host.store.headPosition()) - transport.readPosition())} events behind the head`,
  });
  host.metrics.labelledGauge('oncegate_consumer_lag_events', "Committed events a consumer's reader has not reached yet (the store's head minus its read position).", ['consumer'], async () =>
    Promise.all([...readers].map(async ([name, reader]) => ({ labels: { consumer: name }, value: Math.max(0, (await reader.store.headPosition()) - reader.transport.readPosition()) }))),
  );
}

/** Counts, when scraped, the events each consumer of this process has parked and not yet replayed. */
function watchParked(host: Host, consumer: string): void {
  if (host.operations === undefined) return;
  parkedConsumers.set(consumer, host.store);
  host.metrics.labelledGauge('oncegate_parked_events', 'Events a consumer set aside after its handler kept failing, not yet replayed (oncegate parked list).', ['consumer'], async () =>
    Promise.all([...parkedConsumers].map(async ([name, store]) => ({ labels: { consumer: name }, value: (await readParked(store, name)).open.length }))),
  );
}

/** What a consumer's span says of the event it handles: its type, stream, position and execution; never its data. */
function spanAttributesOf(event: RecordedEvent): Record<string, string | number> {
  const executionId = event.metadata['executionId'];
  return {
    'oncegate.event.type': event.type,
    'oncegate.event.position': event.position,
    ...(typeof executionId === 'string' ? { 'oncegate.execution.id': executionId } : {}),
  };
}

/**
 * Runs every step of a stop in order, each even when one before it failed (a store gone first fails a release, and
 * the connections must still be closed); then fails with the first failure.
 */
export async function closeInOrder(...steps: ReadonlyArray<() => Promise<unknown>>): Promise<void> {
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

/** One service as `oncegate serve` runs it, after the process's host opened. */
export interface ServedService {
  /** The MCP front's URL (the gateway only). */
  readonly url?: string;
  readonly devToken?: string;
  /** Lines the process's summary shows about this service (already indented and labelled). */
  readonly summary?: readonly string[];
  /** Stops the service; the host's stores are closed after it. */
  close(): Promise<void>;
}

/** A service that runs as a process of its own: its name and how it starts on an opened host. */
export interface ServiceDefinition {
  readonly name: string;
  /** Checks of the configuration this service needs, made before anything is opened; throws `GatewayConfigError`. */
  check?(config: GatewayConfig): void;
  /** The plugin channels this service hosts: their tools' sections are checked when the contract file is loaded. */
  readonly pluginChannels?: ReadonlyMap<string, PluginSectionCheck>;
  /**
   * The kinds of sealed blob the service opens and seals. A process whose services open a kind that none of them seals
   * hears that kind's new blobs where the store can tell them (PostgreSQL), and opens them without a read.
   */
  readonly sealedBlobs?: { readonly opens?: readonly SealedKind[]; readonly seals?: readonly SealedKind[] };
  /** Starts the service on the process's host; `together` is what it shares with the other services of the process. */
  serve(host: Host, together: CoHosting): Promise<ServedService>;
}

/** The kinds of blob some of the services open and none of them seals: sealed in other processes. */
export function heardKinds(definitions: readonly ServiceDefinition[]): SealedKind[] {
  const sealedHere = new Set(definitions.flatMap((definition) => definition.sealedBlobs?.seals ?? []));
  return [...new Set(definitions.flatMap((definition) => definition.sealedBlobs?.opens ?? []))].filter((kind) => !sealedHere.has(kind));
}

/**
 * What the services of one process share (`oncegate serve` with several services): the vault, opened once; the
 * executions' prepared calls; and the steps they decide inline in the commit that accepts an execution. The gateway's
 * front takes those steps when it runs in the same process, as the embedded gateway takes all of them: authorization
 * and the dispatch of a call hosted beside the front are then no hop through the store (docs/deploy.md).
 */
export interface CoHosting {
  readonly inlineSteps: InlineSteps;
  readonly prepared: PreparedCalls;
  /** The vault as this process sees it, opened by the first service that asks. */
  vault(): Promise<VaultService>;
  /** Closes what the services shared (the vault), once they are all closed and before the host. */
  close(): Promise<void>;
}

/** What the services of one process share, on its host (`oncegate start` and `oncegate serve` alike). */
export function coHosting(host: Host): CoHosting {
  let vault: Promise<VaultService> | undefined;
  return {
    inlineSteps: new InlineSteps(),
    prepared: new PreparedCalls(host.sealed),
    vault: () => (vault ??= openVault(host)),
    // A vault that failed to open left nothing open.
    close: async () => (await vault?.catch(() => undefined))?.stop(),
  };
}

/**
 * The order services start in one process: the gateway first (it makes the development vault the others open), then
 * authorization before the dispatchers, as the steps they add follow one another in an accepting commit.
 */
function startRank(definition: ServiceDefinition): number {
  if (definition.name === 'gateway') return 0;
  if (definition.name === 'authorization') return 1;
  return definition.name.startsWith('dispatcher-') ? 2 : 3;
}

/** One service of `oncegate serve`, running in this process. */
export interface RunningService {
  readonly service: string;
  readonly instance: string;
  /** The MCP front's URL (the gateway service only). */
  readonly url: string | undefined;
  readonly devToken: string | undefined;
  readonly summary: readonly string[];
  readonly operationsUrl: string | undefined;
  readonly store: EventStore;
  close(): Promise<void>;
}

/**
 * Runs services in this process, each as one instance among any number on the same store. The services meet in the
 * store: every consumer of events runs as a member of its service's consumer group. Services started together also
 * share what `CoHosting` names, so the gateway's front decides their steps inline.
 */
export function serveServices(definitions: readonly ServiceDefinition[], config: GatewayConfig, options: StartOptions = {}): Promise<RunningService> {
  return startOrUndo(async (opened) => {
    for (const definition of definitions) definition.check?.(config);
    const ordered = [...definitions].sort((a, b) => startRank(a) - startRank(b));
    const name = ordered.map((definition) => definition.name).join('+');
    const sections = new Map(ordered.flatMap((definition) => [...(definition.pluginChannels ?? new Map<string, PluginSectionCheck>())]));
    const host = await openHost(config, options, opened, true, name, sections.size === 0 ? undefined : sections, heardKinds(ordered));
    const together = coHosting(host);
    const served: ServedService[] = [];
    for (const definition of ordered) {
      const service = await definition.serve(host, together);
      served.push(service);
      // A later service that fails to start stops the ones before it (`opened` is closed in reverse).
      opened.push({ close: () => service.close() });
    }
    return {
      service: name,
      instance: host.instance,
      url: served.find((service) => service.url !== undefined)?.url,
      devToken: served.find((service) => service.devToken !== undefined)?.devToken,
      summary: served.flatMap((service) => service.summary ?? []),
      operationsUrl: host.operationsUrl,
      store: host.store,
      close: () => closeInOrder(...[...served].reverse().map((service) => () => service.close()), () => together.close(), () => closeHost(host)),
    };
  });
}

/**
 * Runs a start that pushes what it opens onto `opened`; when the start fails, closes those in reverse before failing
 * (a server connection left open would keep the process alive).
 */
export async function startOrUndo<T>(start: (opened: Array<{ close(): Promise<void> }>) => Promise<T>): Promise<T> {
  const opened: Array<{ close(): Promise<void> }> = [];
  try {
    return await start(opened);
  } catch (error) {
    for (const resource of opened.reverse()) await resource.close().catch(() => undefined);
    throw error;
  }
}

/** `testing.hold_before_send`: the dispatch step's attempt starts that long after its commit (test only). */
export function heldBeforeSend(step: InlineStep, holdMs: number): InlineStep {
  if (holdMs === 0) return step;
  return { ...step, committed: (state) => void setTimeout(() => step.committed?.(state), holdMs) };
}

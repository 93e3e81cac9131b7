import { spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ToolContract } from '@oncegate/contracts';
import type { EventStore } from '@oncegate/event-store';
import { ExecutionWatcher, InlineSteps } from '@oncegate/execution-journal';
import { keyRingFromConfig } from '@oncegate/fingerprint';
import { BlobCipher } from '@oncegate/sealed-store';
import { AuthorizationController, authorizationService, hostAuthorization } from '@oncegate/service-authorization';
import { dispatcherHttpService, httpChannel } from '@oncegate/service-dispatcher-http';
import { dispatcherSshService, sshChannel } from '@oncegate/service-dispatcher-ssh';
import { GatewayConfigError, unauthenticatedAgentProblem, type GatewayConfig } from '@oncegate/service-host/config/gateway-config';
import { hostDispatchers, type DispatchChannel } from '@oncegate/dispatcher-kit';
import { closeHost, openHost, openVault, startOrUndo, type Host, type ServiceDefinition, type StartOptions } from '@oncegate/service-host/host';
import { StartupError } from '@oncegate/service-host/service-process';
import type { AgentDirectory } from '@oncegate/service-host/infrastructure/agent-directory';
import { queueGauges } from '@oncegate/service-host/operations/queue-gauges';
import { PreparedCalls } from '@oncegate/service-host/prepared-calls';
import { initDevelopmentVault } from '@oncegate/vault';
import type { VaultService } from '@oncegate/service-host/vault/vault-service';
import { hostRelay, relayKafkaService } from '@oncegate/service-relay-kafka';
import { DeliveryTracker, hostResultDelivery, resultDeliveryService, sharedCallers } from '@oncegate/service-result-delivery';
import { hostSealer, sealerService } from '@oncegate/service-sealer';
import { ApprovalsApi } from './front/approvals-api';
import { ConsoleApi } from './front/console-api';
import { hostRulesOf } from './front/host-origin-guard';
import { OAuthResource } from './front/oauth-resource';
import { McpHttpFront } from './front/mcp-http-front';
import { SseResumptionStore } from './front/sse-resumption-store';
import { ToolCalls } from './front/tool-calls';

/**
 * The built console (`npm run build` writes it to dist/apps/console). Both the compiled gateway
 * (dist/apps/gateway/main.js) and its sources (apps/gateway/src/gateway.ts) sit three folders below the root.
 */
const CONSOLE_ASSETS_DIR = fileURLToPath(new URL('../../../dist/apps/console/', import.meta.url));

export interface RunningGateway {
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  readonly tools: ReadonlyMap<string, ToolContract>;
  /** The development token (only when `dev_token` is on). */
  readonly devToken: string | undefined;
  readonly demoTargetUrl: string | undefined;
  /** The operations listener (`/metrics`, `/healthz`, `/readyz`), when configured. */
  readonly operationsUrl: string | undefined;
  readonly store: EventStore;
  readonly agents: AgentDirectory;
  readonly toolCalls: ToolCalls;
  /** The credential vault as this process sees it (follows `oncegate vault lock/unlock/set/rm`). */
  readonly vault: VaultService;
  /** MCP sessions held in memory by the HTTP front (of one agent, or all). */
  liveSessions(actor?: string): number;
  close(): Promise<void>;
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
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Until it listens, what it says is kept for the reason it did not start; after, it is passed on.
  let said: string | undefined = '';
  child.stderr!.on('data', (chunk) => {
    if (said === undefined) process.stderr.write(chunk);
    else said = (said + String(chunk)).slice(-4096);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const remedy = 'set demo_target.port, or turn the demo target off (demo_target.enabled: false, ONCEGATE_DEMO_TARGET=off)';
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) => {
      const match = /listening on (http:\/\/\S+)/.exec(line);
      if (match) {
        if (said) process.stderr.write(said);
        said = undefined;
        resolve(match[1]!);
      } else reject(new StartupError(`the demo target did not start (${line}): ${remedy}`));
    });
    child.once('exit', (code) => {
      const why = said?.trim().split('\n').at(-1) || `it exited with code ${code}`;
      reject(new StartupError(`the demo target did not start on port ${port} (${why}): ${remedy}`));
    });
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
export function startGateway(config: GatewayConfig, options: StartOptions = {}): Promise<RunningGateway> {
  return startOrUndo((opened) => startGatewayOn(config, options, opened));
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
  queueGauges(host);
  // Resumption messages only need to survive a process restart, not a power cut, and only for the retention:
  // what is older is deleted now, before the front listens, and then periodically.
  const resumption = new SseResumptionStore({
    file: join(config.dataDir, 'mcp-streams.db'),
    cipher: new BlobCipher(keys.sealing),
    clock,
    retentionMs: config.resumptionRetentionMs,
    onWriteFailed: (error) =>
      logger.warn(`resumption messages were sent without being kept for a resume: ${error instanceof Error ? error.message : String(error)}`, 'front'),
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
  // The identity provider's access tokens, beside the agent and approver tokens of the journal (`oauth`).
  const withOAuth = config.oauth === null ? {} : { oauth: new OAuthResource(config.oauth, { clock, metrics: host.metrics }) };
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
    mounted: [new ApprovalsApi({ store, approvers, tools, clock, ...withOAuth }), new ConsoleApi({ store, approvers, tools, clock, assetsDir: CONSOLE_ASSETS_DIR, ...withOAuth })],
    ...withOAuth,
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
  for (const service of [authorizationService, gatewayService]) service.check?.(config);
  // First, so that a demo target that cannot start leaves nothing else started.
  const demo = config.demoTarget.enabled ? await startDemoTargetProcess(config.demoTarget.port) : undefined;
  if (demo !== undefined) opened.push(demo);
  const host = await openHost(config, options, opened, false, 'oncegate');
  const vault = await openVault(host);
  const sealer = hostSealer(host);
  // Each execution's arguments opened and request rendered once, for authorization and the HTTP dispatcher alike.
  const prepared = new PreparedCalls(host.sealed);
  // Authorization and the dispatchers of this process decide inline in the commit that accepts an execution.
  const inlineSteps = new InlineSteps();
  const authorization = await hostAuthorization(host, vault, prepared);
  const dispatchers = await hostDispatchers(host, vault, prepared, CHANNELS);
  inlineSteps.add(authorization.get(AuthorizationController).inlineStep());
  for (const step of dispatchers.inlineSteps) inlineSteps.add(step);
  const deliveries = new DeliveryTracker();
  const resultDelivery = await hostResultDelivery(host, deliveries);
  const front = await hostFront(host, deliveries, inlineSteps);
  // With a kafka section, this process also relays every event to the bus and takes decisions from it.
  const relay = await hostRelay(host);
  if (config.holdBeforeSendMs > 0) {
    host.logger.warn(`TEST ONLY: every attempt dispatched inline is sent ${config.holdBeforeSendMs} ms after its commit (testing.hold_before_send in ${config.source})`, 'dispatch');
  }
  return {
    url: front.url,
    port: front.port,
    dataDir: config.dataDir,
    tools: host.tools,
    devToken: front.devToken,
    demoTargetUrl: demo?.url,
    operationsUrl: host.operationsUrl,
    store: host.store,
    agents: host.folder.agents,
    toolCalls: front.toolCalls,
    vault,
    liveSessions: (actor) => front.liveSessions(actor),
    async close() {
      await front.close();
      await relay?.close();
      await dispatchers.drain();
      await resultDelivery.close();
      await dispatchers.close();
      await authorization.close();
      await vault.stop();
      await sealer?.stop();
      await demo?.close();
      await closeHost(host);
    },
  };
}

/** The channels this gateway dispatches on; each channel's service is a library of its own. */
const CHANNELS: readonly DispatchChannel[] = [httpChannel, sshChannel];

/**
 * `oncegate serve gateway`: the MCP front, with the approvals API and the console. Result delivery runs elsewhere:
 * the callers waiting here are shown to it through the store, and outcomes are learnt from the execution streams.
 */
export const gatewayService: ServiceDefinition = {
  name: 'gateway',
  check(config) {
    hostRulesOf(config);
    refuseUnsafeTesting(config);
  },
  async serve(host) {
    const { config } = host;
    if (config.devToken) await initDevelopmentVault({ store: host.store, dataDir: config.dataDir, env: host.env, by: 'service:gateway' });
    const front = await hostFront(host, sharedCallers(host), new InlineSteps());
    return { url: front.url, devToken: front.devToken, close: () => front.close() };
  },
};

/** The services `oncegate serve` runs, one per process (each also its own app, apps/<service>); `oncegate start` runs them all in one. */
export const SERVICES: ReadonlyMap<string, ServiceDefinition> = new Map(
  [gatewayService, authorizationService, dispatcherHttpService, dispatcherSshService, resultDeliveryService, sealerService, relayKafkaService].map((service) => [service.name, service]),
);

import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ToolContract } from '@oncegate/contracts';
import { hostDispatchers, hostingOf, type DispatchChannel } from '@oncegate/dispatcher-kit/host';
import type { EventStore } from '@oncegate/event-store';
import type { GatewayConfig } from '@oncegate/host-config';
import type { AgentDirectory } from '@oncegate/host-principals';
import type { VaultService } from '@oncegate/host-vault';
import { AuthorizationController, authorizationService, hostAuthorization } from '@oncegate/service-authorization';
import { dispatcherHttpService, httpChannel } from '@oncegate/service-dispatcher-http';
import { mcpKit } from '@oncegate/service-dispatcher-mcp';
import { dispatcherSshService, sshChannel } from '@oncegate/service-dispatcher-ssh';
import { gatewayService, hostFront, type ToolCalls } from '@oncegate/service-gateway';
import { closeHost, coHosting, openHost, startOrUndo, StartupError, type ServiceDefinition, type StartOptions } from '@oncegate/service-host';
import { hostRelay, relayKafkaService } from '@oncegate/service-relay-kafka';
import { DeliveryTracker, hostResultDelivery, resultDeliveryService } from '@oncegate/service-result-delivery';
import { hostSealer, sealerService } from '@oncegate/service-sealer';

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
  // Its stdin is a pipe this process never writes to: it ends when this process does, however it ends, and the target
  // stops then (`--exit-with-stdin`) instead of holding its port for the next start.
  const child = spawn(process.execPath, [...demoTargetMain(), '--port', String(port), '--exit-with-stdin'], {
    stdio: ['pipe', 'pipe', 'pipe'],
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

/** Starts every service of the embedded gateway in this process, on one data folder and the configured store. */
export function startGateway(config: GatewayConfig, options: StartOptions = {}): Promise<RunningGateway> {
  return startOrUndo((opened) => startGatewayOn(config, options, opened));
}

async function startGatewayOn(config: GatewayConfig, options: StartOptions, opened: Array<{ close(): Promise<void> }>): Promise<RunningGateway> {
  const channels = config.dispatchChannels.map((name) => CHANNELS[name]);
  // The configuration is checked before anything is opened, with the options of each channel this process hosts.
  for (const service of [authorizationService, gatewayService, ...channels.map((channel) => channel.service)]) service.check?.(config);
  // First, so that a demo target that cannot start leaves nothing else started.
  const demo = config.demoTarget.enabled ? await startDemoTargetProcess(config.demoTarget.port) : undefined;
  if (demo !== undefined) opened.push(demo);
  // The sections of the plugin channels hosted here are checked with the contract file; the others are left to their process.
  const sections = new Map(channels.flatMap((channel) => [...(channel.service.pluginChannels ?? new Map())]));
  const host = await openHost(config, options, opened, false, 'oncegate', sections);
  // The vault opened once, each execution's arguments opened and request rendered once (for authorization and the
  // HTTP dispatcher alike), and the steps authorization and the dispatchers decide inline in the accepting commit.
  const together = coHosting(host);
  const { prepared, inlineSteps } = together;
  const vault = await together.vault();
  const sealer = hostSealer(host);
  const authorization = await hostAuthorization(host, vault, prepared);
  const dispatchers = await hostDispatchers(host, vault, prepared, channels.map((channel) => channel.dispatch));
  inlineSteps.add(authorization.get(AuthorizationController).inlineStep());
  for (const step of dispatchers.inlineSteps) inlineSteps.add(step);
  const deliveries = new DeliveryTracker();
  const resultDelivery = await hostResultDelivery(host, deliveries);
  const front = await hostFront(host, deliveries, inlineSteps);
  // With a kafka section, this process also relays every event to the bus and takes decisions from it.
  const relay = await hostRelay(host, vault);
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
      await together.close();
      await sealer?.stop();
      await demo?.close();
      await closeHost(host);
    },
  };
}

/** The mcp channel is built on the dispatcher kit's public API; this process hosts it as the kit hosts any channel. */
const mcpHosting = hostingOf(mcpKit);

/**
 * The built-in channels the embedded gateway can dispatch on (`dispatch_channels` picks them), each a library of its
 * own: its dispatcher, and its service as `oncegate serve` runs it apart.
 */
const CHANNELS: Readonly<Record<GatewayConfig['dispatchChannels'][number], { readonly dispatch: DispatchChannel; readonly service: ServiceDefinition }>> = {
  http: { dispatch: httpChannel, service: dispatcherHttpService },
  ssh: { dispatch: sshChannel, service: dispatcherSshService },
  mcp: { dispatch: mcpHosting.channel, service: mcpHosting.service },
};

/** The services `oncegate serve` runs, one per process (each also its own app, apps/<service>); `oncegate start` runs them all in one. */
export const SERVICES: ReadonlyMap<string, ServiceDefinition> = new Map(
  [gatewayService, authorizationService, dispatcherHttpService, dispatcherSshService, mcpHosting.service, resultDeliveryService, sealerService, relayKafkaService].map((service) => [service.name, service]),
);

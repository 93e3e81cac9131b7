import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ExecutionWatcher, InlineSteps } from '@oncegate/execution-journal';
import { ExecutionsIndex, openIndexTables, SQLITE_INDEX_FILE } from '@oncegate/executions-index';
import { keyRingFromConfig } from '@oncegate/fingerprint';
import { GatewayConfigError, redactedStoreUrl, unauthenticatedAgentProblem, type GatewayConfig } from '@oncegate/host-config';
import { queueGauges } from '@oncegate/host-decisions';
import type { AgentDirectory } from '@oncegate/host-principals';
import { BlobCipher } from '@oncegate/sealed-store';
import type { Host, ServiceDefinition } from '@oncegate/service-host';
import { sharedCallers, type DeliveryTracker } from '@oncegate/service-result-delivery';
import { initDevelopmentVault } from '@oncegate/vault';
import { ApprovalsApi } from './front/approvals-api';
import { ConsoleApi } from './front/console-api';
import { ExecutionsApi } from './front/executions-api';
import { hostRulesOf } from './front/host-origin-guard';
import { OAuthResource } from './front/oauth-resource';
import { McpHttpFront } from './front/mcp-http-front';
import { SseResumptionStore } from './front/sse-resumption-store';
import { ToolCalls } from './front/tool-calls';

/**
 * The built console (`npm run build` writes it to dist/apps/console). Both the compiled CLI that bundles this
 * library (dist/apps/oncegate/main.js) and this source file (libs/service-gateway/src/gateway-service.ts) sit three
 * folders below the root.
 */
const CONSOLE_ASSETS_DIR = fileURLToPath(new URL('../../../dist/apps/console/', import.meta.url));

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

/**
 * Opens the executions index of the configured store and keeps it current in the background (its own subscription,
 * batched; nothing on a tool call's path). Every process that hosts the front does, and the store's claim lets one
 * of them fold at a time; the others answer from the same tables (PostgreSQL) or stand by. An index that cannot be
 * opened (a damaged file) does not keep the gateway from serving tool calls: searches answer 503 and say why.
 */
export async function hostExecutionsIndex(host: Host): Promise<{ readonly index: ExecutionsIndex | undefined; close(): Promise<void> }> {
  const { config, store, logger } = host;
  let tables;
  try {
    tables = await openIndexTables(
      config.store.driver === 'sqlite'
        ? { driver: 'sqlite', dataDir: config.dataDir }
        : { driver: 'postgres', url: config.store.url, location: redactedStoreUrl(config.store.url) },
    );
  } catch (error) {
    const remedy = config.store.driver === 'sqlite' ? `; delete ${join(config.dataDir, SQLITE_INDEX_FILE)} and it is folded again from the journal at the next start` : '';
    logger.warn(`the executions index could not be opened, so executions search is unavailable: ${error instanceof Error ? error.message : String(error)}${remedy}`, 'executions-index');
    return { index: undefined, close: async () => undefined };
  }
  let failures = 0;
  const index = new ExecutionsIndex({
    store,
    tables,
    owner: host.instance,
    // A dead holder's claim lapses after two liveness leases (30 s by default): a standby takes the folding over then.
    claimTtlMs: 2 * config.instanceLeaseMs,
    // Failures are retried at the next poll; only the 1st, 2nd, 4th, 8th… in a row are logged.
    onError: (error) => {
      failures += 1;
      if ((failures & (failures - 1)) === 0) logger.warn(`the executions index could not fold (${failures} in a row): ${error instanceof Error ? error.message : String(error)}`, 'executions-index');
    },
  });
  index.start();
  // What an operator alerts on: an index that stops folding falls behind the journal, and searches say so only when asked.
  host.metrics.gauge(
    'oncegate_executions_index_behind_events',
    'Events committed after the last one the executions index folded (0 when the index is current).',
    async () => (await index.lag().catch(() => undefined))?.behind,
  );
  const opened = tables;
  const hosted = {
    index,
    async close() {
      await index.stop();
      await opened.close();
    },
  };
  host.opened.push(hosted);
  return hosted;
}

/** The MCP front: sessions, tool calls, the approvals API and the console. */
export interface Front {
  readonly url: string;
  readonly port: number;
  readonly toolCalls: ToolCalls;
  readonly devToken: string | undefined;
  liveSessions(actor?: string): number;
  close(): Promise<void>;
}

/**
 * Opens the MCP front on a host: in its own process (`oncegate serve gateway`) it learns outcomes through the
 * store; embedded beside the other services (`oncegate start`) it is given their result delivery and inline steps.
 */
export async function hostFront(host: Host, deliveries: DeliveryTracker, inlineSteps: InlineSteps): Promise<Front> {
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
  const { index: executions, close: closeExecutions } = await hostExecutionsIndex(host);
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
    mounted: [
      new ApprovalsApi({ store, approvers, tools, clock, ...withOAuth }),
      new ExecutionsApi({ index: executions, approvers, clock, ...withOAuth }),
      new ConsoleApi({ store, approvers, tools, clock, assetsDir: CONSOLE_ASSETS_DIR, ...(executions === undefined ? {} : { executions }), ...withOAuth }),
    ],
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
      await closeExecutions();
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

/**
 * `oncegate serve gateway`: the MCP front, with the approvals API and the console. Result delivery runs elsewhere:
 * the callers waiting here are shown to it through the store, and outcomes are learnt from the execution streams.
 */
export const gatewayService: ServiceDefinition = {
  // It seals the arguments of the calls it accepts and opens the results the dispatchers seal.
  sealedBlobs: { opens: ['result'], seals: ['arguments'] },
  name: 'gateway',
  check(config) {
    hostRulesOf(config);
    refuseUnsafeTesting(config);
  },
  async serve(host, together) {
    const { config } = host;
    if (config.devToken) await initDevelopmentVault({ store: host.store, dataDir: config.dataDir, env: host.env, by: 'service:gateway' });
    // The steps of the services hosted beside it (none when it runs alone) are decided in the accepting commit.
    const front = await hostFront(host, sharedCallers(host), together.inlineSteps);
    return { url: front.url, devToken: front.devToken, close: () => front.close() };
  },
};

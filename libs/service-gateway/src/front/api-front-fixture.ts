import type { ToolContract } from '@oncegate/contracts';
import type { EventStore } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';
import { AgentDirectory } from '@oncegate/host-principals';
import { LOOPBACK_HOSTS } from './host-origin-guard';
import { McpHttpFront, type MountedApi } from './mcp-http-front';
import type { OAuthResource } from './oauth-resource';
import type { SseResumptionStore } from './sse-resumption-store';
import type { ToolCalls } from './tool-calls';

/**
 * A front on a free loopback port serving only `mounted` (the approvals API, the console API) beside an MCP endpoint
 * no test request reaches: the tests of those APIs, which are not about tool calls or resumption.
 */
export function apiFront(options: {
  readonly store: EventStore;
  readonly tools: ReadonlyMap<string, ToolContract>;
  readonly clock: Clock;
  readonly mounted: readonly MountedApi[];
  readonly oauth?: OAuthResource;
}): McpHttpFront {
  return new McpHttpFront({
    host: '127.0.0.1',
    port: 0,
    path: '/mcp',
    maxRequestBytes: 64 * 1024,
    store: options.store,
    agents: new AgentDirectory(options.store),
    tools: options.tools,
    // No tool call reaches this front, so no answer is left to record when it closes.
    toolCalls: { answersRecorded: async () => undefined } as unknown as ToolCalls,
    resumption: {} as SseResumptionStore,
    clock: options.clock,
    hostRules: { allowedHosts: LOOPBACK_HOSTS, allowedOrigins: [] },
    mounted: options.mounted,
    ...(options.oauth === undefined ? {} : { oauth: options.oauth }),
  });
}

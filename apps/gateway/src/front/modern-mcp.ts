import { createMcpHandler, Server, type AuthInfo, type CallToolResult as ModernCallToolResult, type McpHttpHandler, type Tool as ModernTool } from '@modelcontextprotocol/server';
import type { ToolContract } from '@oncegate/contracts';
import { answerToolCall, GATEWAY_NAME, GATEWAY_VERSION, INSTRUCTIONS, toolsListing, type ConnectionFacts } from './mcp-server';
import type { ToolCalls } from './tool-calls';

/** The revision served here without sessions; 2025-11-25 and earlier keep their sessions (`McpHttpFront`). */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

/** Who a request of the 2026-07-28 revision is served as: the front authenticates it and passes the agent on. */
export function modernAuthInfo(actor: string): AuthInfo {
  return { token: '', clientId: actor, scopes: [], extra: { actor } };
}

function headersOf(request: Request | undefined): Record<string, string> {
  return request === undefined ? {} : Object.fromEntries(request.headers.entries());
}

/**
 * The 2026-07-28 revision, on the official v2 SDK: no session and no handshake; every request stands alone, is
 * served by a server built for it, and names its agent through the front's authentication. A client that lost an
 * answer re-issues the call under a new request id, which the execution layer matches to the first execution by
 * fingerprint (or caller key) as any retry. Closing a response stream cancels the request: before `Dispatched`
 * it cancels the execution when no other caller waits (`response_stream_closed`); after it the execution goes on
 * and a re-issue gets its outcome.
 */
export function modernMcpHandler(
  tools: ReadonlyMap<string, ToolContract>,
  toolCalls: ToolCalls,
  options: { readonly maxRequestBytes: number; readonly onerror: (error: Error) => void },
): McpHttpHandler {
  const listing = toolsListing(tools) as ModernTool[];
  return createMcpHandler(
    (context) => {
      const actor = (context.authInfo?.extra as { actor?: unknown } | undefined)?.actor;
      if (typeof actor !== 'string') throw new Error('a 2026-07-28 request reached the MCP server without an authenticated agent');
      const connection: ConnectionFacts = {
        actor,
        transport: 'streamable-http',
        runHeader: (info) => {
          const value = info?.headers?.['oncegate-run'];
          return typeof value === 'string' && value.length > 0 ? value : undefined;
        },
        // No session and no later request on it: nothing can prove that a response was read.
        deliveryOf: () => undefined,
      };
      const headers = headersOf(context.requestInfo);
      const server = new Server({ name: GATEWAY_NAME, version: GATEWAY_VERSION }, { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS });
      server.setRequestHandler('tools/list', async () => ({ tools: listing }));
      server.setRequestHandler('tools/call', async (request, ctx) => {
        const params = request.params as { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> };
        const result = await answerToolCall(toolCalls, connection, { ...params, _meta: { ...params._meta, ...ctx.mcpReq._meta } }, {
          requestId: ctx.mcpReq.id,
          headers,
          signal: ctx.mcpReq.signal,
          cancelTrigger: 'response_stream_closed',
          notify: (notification) => ctx.mcpReq.notify(notification as never),
        });
        return result as ModernCallToolResult;
      });
      return server;
    },
    { legacy: 'reject', maxRequestBodySize: options.maxRequestBytes, onerror: options.onerror },
  );
}

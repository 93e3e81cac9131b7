import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { annotationsOf, type ToolContract } from '@oncegate/contracts';
import type { DeliveryWatch } from '@oncegate/service-result-delivery';
import { refuseMalformedCall } from './incoming-checks';
import { ONCEGATE_ERROR_CODES } from './mcp-errors';
import { META_RUN, type ToolCalls } from './tool-calls';

export const GATEWAY_NAME = 'oncegate';
export const GATEWAY_VERSION = '0.1.0';

const EXECUTION_STATUS: Tool = {
  name: 'execution_status',
  title: 'Execution status',
  description:
    'State of one of your executions by its id (ex_…): accepted, dispatched, completed, outcome_unknown, needs_review…, ' +
    'with the stored result once it completed. Use it to follow a call that answered "still in progress".',
  inputSchema: {
    type: 'object',
    properties: { execution_id: { type: 'string', description: 'The execution id a tool result reported.' } },
    required: ['execution_id'],
    additionalProperties: false,
  },
  annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false },
};

export function toolListing(tool: ToolContract): Tool {
  return {
    name: tool.name,
    ...(tool.title ? { title: tool.title } : {}),
    description: tool.description,
    inputSchema: tool.inputSchema as Tool['inputSchema'],
    annotations: { ...annotationsOf(tool), openWorldHint: true, ...(tool.title ? { title: tool.title } : {}) },
  };
}

/** What the MCP layer knows about the connection a request came on. */
export interface ConnectionFacts {
  readonly actor: string;
  readonly transport: 'streamable-http' | 'stdio';
  /** The `Oncegate-Run` header of the request, when the transport has headers. */
  runHeader(requestInfo: { headers?: Record<string, string | string[] | undefined> } | undefined): string | undefined;
  /** The transport's view of whether this request's response was written. */
  deliveryOf(sessionId: string | undefined, requestId: string | number): DeliveryWatch | undefined;
  /**
   * Throws when the connection's credentials no longer hold (a revoked token), before any request is served.
   * Absent when the transport authenticates every request itself (HTTP).
   */
  recheckCredentials?(): Promise<void>;
}

/**
 * One MCP server per session, on the official SDK's low-level `Server`: tool schemas are the contracts' JSON
 * Schemas as written, and each call goes to the execution layer. The layer adds no protocol behaviour.
 */
export function createMcpServer(
  tools: ReadonlyMap<string, ToolContract>,
  toolCalls: ToolCalls,
  connection: ConnectionFacts,
): Server {
  const server = new Server(
    { name: GATEWAY_NAME, version: GATEWAY_VERSION },
    {
      capabilities: { tools: { listChanged: false } },
      instructions:
        'Every side-effecting tool call here gets an execution id. Retrying the same call attaches to the earlier ' +
        'execution instead of running it again; an unknown outcome is reported, never silently re-sent.',
    },
  );
  const listing = [...[...tools.values()].map(toolListing), EXECUTION_STATUS];
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    await connection.recheckCredentials?.();
    return { tools: listing };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    await connection.recheckCredentials?.();
    const { name, _meta } = request.params;
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    if (name === 'execution_status') {
      const id = args['execution_id'];
      if (typeof id !== 'string') throw new McpError(ErrorCode.InvalidParams, 'execution_status needs execution_id (a string)');
      const status = await toolCalls.status(id, connection.actor);
      if (status === undefined) {
        throw new McpError(ONCEGATE_ERROR_CODES.notFound, `No execution ${id} of yours is known to this gateway`);
      }
      return status;
    }
    const meta = (_meta ?? {}) as Record<string, unknown>;
    const declaredRun = typeof meta[META_RUN] === 'string' ? (meta[META_RUN] as string) : connection.runHeader(extra.requestInfo);
    return toolCalls.call(name, args, {
      actor: connection.actor,
      declaredRun,
      meta,
      correlation: {
        jsonRpcId: extra.requestId,
        ...(extra.sessionId ? { sessionId: extra.sessionId } : {}),
        transport: connection.transport,
      },
      signal: extra.signal,
      delivery: connection.deliveryOf(extra.sessionId, extra.requestId),
    });
  });
  return server;
}

/**
 * Connects a server to its transport with the wire checks in front: a malformed tools/call is answered with an
 * invalid-params error on the same transport and never reaches the SDK's parsing or the execution layer.
 */
export async function connectMcpServer(server: Server, transport: Transport): Promise<void> {
  await server.connect(transport);
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const refused = refuseMalformedCall(message);
    if (refused === undefined) return deliver?.(message, extra);
    const id = (message as { id: string | number }).id;
    transport
      .send({ jsonrpc: '2.0', id, error: { code: refused.code, message: refused.message, ...(refused.data === undefined ? {} : { data: refused.data }) } })
      .catch((error: unknown) => server.onerror?.(error as Error));
  };
}

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  RELATED_TASK_META_KEY,
  type CallToolResult,
  type JSONRPCMessage,
  type RequestId,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { annotationsOf, type ToolContract } from '@oncegate/contracts';
import type { CancellationTrigger } from '@oncegate/domain';
import type { DeliveryWatch } from '@oncegate/service-result-delivery';
import { cancelledRequestId } from './delivery-evidence';
import { refuseMalformedCall } from './incoming-checks';
import { ONCEGATE_ERROR_CODES } from './mcp-errors';
import { progressReporter } from './call-progress';
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

/** The `Oncegate-Run` header of an HTTP request: the run the call declares, when it has no `_meta` one. */
export function runOfHeaders(info: { headers?: Record<string, string | string[] | undefined> } | undefined): string | undefined {
  const value = info?.headers?.['oncegate-run'];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/** A JSON-RPC error response carrying an `McpError` as it is. */
export function errorResponse(id: string | number, error: McpError) {
  return { jsonrpc: '2.0' as const, id, error: { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) } };
}

export const INSTRUCTIONS =
  'Every side-effecting tool call here gets an execution id. Retrying the same call attaches to the earlier ' +
  'execution instead of running it again; an unknown outcome is reported, never silently re-sent.';

/** Everything MCP lists: the contracts' tools, then `execution_status`. */
export function toolsListing(tools: ReadonlyMap<string, ToolContract>): Tool[] {
  return [...[...tools.values()].map(toolListing), EXECUTION_STATUS];
}

/** What one tools/call request carries besides its params, whichever protocol revision it came on. */
export interface CallRequestFacts {
  readonly requestId: string | number;
  readonly sessionId?: string;
  readonly headers?: Record<string, string | string[] | undefined>;
  /** Aborts when the client gives up on this request. */
  readonly signal: AbortSignal;
  /** What an abort of `signal` means: a `notifications/cancelled`, or (2026-07-28) a closed response stream. */
  readonly cancelTrigger: CancellationTrigger;
  /** How long the call waits for an answer before it answers "in progress" (a task: 0); `call_wait` when not said. */
  readonly waitMs?: number;
  /** The client takes a call still moving back as a task (the tasks extension of 2026-07-28). */
  readonly asTask?: boolean;
  /** Sends a `notifications/progress` for this request, when the client asked for progress. */
  readonly notify?: (notification: { method: 'notifications/progress'; params: Record<string, unknown> }) => Promise<void>;
}

/**
 * One tools/call, the same on every transport and protocol revision: `execution_status` answers from the journal;
 * every other tool goes to the execution layer. The layer adds no protocol behaviour.
 */
export async function answerToolCall(
  toolCalls: ToolCalls,
  connection: ConnectionFacts,
  params: { readonly name: string; readonly arguments?: Record<string, unknown>; readonly _meta?: Record<string, unknown> },
  facts: CallRequestFacts,
): Promise<CallToolResult> {
  await connection.recheckCredentials?.();
  const { name, _meta } = params;
  const args = (params.arguments ?? {}) as Record<string, unknown>;
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
  const declaredRun = typeof meta[META_RUN] === 'string' ? (meta[META_RUN] as string) : connection.runHeader({ headers: facts.headers ?? {} });
  const progressToken = meta['progressToken'];
  return toolCalls.call(name, args, {
    actor: connection.actor,
    declaredRun,
    meta,
    correlation: {
      jsonRpcId: facts.requestId,
      ...(facts.sessionId ? { sessionId: facts.sessionId } : {}),
      transport: connection.transport,
    },
    signal: facts.signal,
    cancelTrigger: facts.cancelTrigger,
    delivery: connection.deliveryOf(facts.sessionId, facts.requestId),
    ...(facts.waitMs === undefined ? {} : { waitMs: facts.waitMs }),
    ...(facts.asTask === true ? { asTask: true } : {}),
    ...((typeof progressToken === 'string' || typeof progressToken === 'number') && facts.notify !== undefined
      ? { progress: progressReporter(progressToken, facts.notify) }
      : {}),
  });
}

/**
 * One MCP server per session (2025-11-25 and earlier), on the official SDK's low-level `Server`: tool schemas are
 * the contracts' JSON Schemas as written, and each call goes to `answerToolCall`.
 */
export function createMcpServer(
  tools: ReadonlyMap<string, ToolContract>,
  toolCalls: ToolCalls,
  connection: ConnectionFacts,
): Server {
  const server = new Server({ name: GATEWAY_NAME, version: GATEWAY_VERSION }, { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS });
  const listing = toolsListing(tools);
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    await connection.recheckCredentials?.();
    return { tools: listing };
  });
  server.setRequestHandler(CallToolRequestSchema, (request, extra): Promise<CallToolResult> =>
    answerToolCall(toolCalls, connection, request.params as ToolCallParams, {
      requestId: extra.requestId,
      ...(extra.sessionId ? { sessionId: extra.sessionId } : {}),
      headers: extra.requestInfo?.headers ?? {},
      signal: extra.signal,
      cancelTrigger: 'client_notification',
      notify: (notification) => extra.sendNotification(notification as never),
    }),
  );
  directAnswers.set(server, (params, facts) => answerToolCall(toolCalls, connection, params, facts));
  return server;
}

type ToolCallParams = Parameters<typeof answerToolCall>[2];

/** How a server made by `createMcpServer` answers a tools/call, for `connectMcpServer` to call without the SDK's layers. */
const directAnswers = new WeakMap<Server, (params: ToolCallParams, facts: CallRequestFacts) => Promise<CallToolResult>>();

/**
 * A tools/call that `connectMcpServer` answers itself: a well-formed request (`refuseMalformedCall` passed it) that
 * neither asks for a task nor belongs to one. Anything else goes through the SDK's server.
 */
export function plainToolCall(message: JSONRPCMessage): (JSONRPCMessage & { id: RequestId; params: ToolCallParams }) | undefined {
  const m = message as { method?: unknown; id?: unknown; params?: { task?: unknown; _meta?: Record<string, unknown> } };
  if (m.method !== 'tools/call' || (typeof m.id !== 'string' && typeof m.id !== 'number')) return undefined;
  if (m.params?.task !== undefined || m.params?._meta?.[RELATED_TASK_META_KEY] !== undefined) return undefined;
  return message as JSONRPCMessage & { id: RequestId; params: ToolCallParams };
}

/** The JSON-RPC error the SDK's protocol layer answers a failed request with. */
function thrownAsError(id: RequestId, error: unknown) {
  const e = (error ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
  return {
    jsonrpc: '2.0' as const,
    id,
    error: {
      code: Number.isSafeInteger(e.code) ? (e.code as number) : ErrorCode.InternalError,
      message: typeof e.message === 'string' ? e.message : 'Internal error',
      ...(e.data === undefined ? {} : { data: e.data }),
    },
  };
}

/**
 * Connects a server to its transport with the wire checks in front: a malformed tools/call is answered with an
 * invalid-params error on the same transport and never reaches the SDK's parsing or the execution layer. A
 * well-formed tools/call of a server made by `createMcpServer` is answered here, as the SDK's protocol layer would
 * answer it — its own abort signal, aborted by the client's `notifications/cancelled` for it or by the
 * connection's close; its result or error sent on the transport for the request, nothing once aborted — without that
 * layer's two more parses of the request and one of the result (the transport has parsed the message already, and
 * the result is the gateway's own). Every other message goes to the SDK's server.
 */
export async function connectMcpServer(server: Server, transport: Transport): Promise<void> {
  // What the transport did with a message before the server took it (a stdio connection's evidence): the SDK's
  // server calls it first, and so does a tools/call answered here.
  const before = transport.onmessage;
  await server.connect(transport);
  const deliver = transport.onmessage;
  const direct = directAnswers.get(server);
  /** The tools/calls answered here and not yet answered, by request id (as the SDK keeps its own). */
  const inProgress = new Map<RequestId, AbortController>();
  const closed = transport.onclose;
  transport.onclose = () => {
    for (const controller of inProgress.values()) controller.abort();
    inProgress.clear();
    closed?.();
  };
  const answer = (call: JSONRPCMessage & { id: RequestId; params: ToolCallParams }, headers: Record<string, string | string[] | undefined>) => {
    const { id } = call;
    const controller = new AbortController();
    inProgress.set(id, controller);
    const sendFor = (message: JSONRPCMessage) => (controller.signal.aborted ? undefined : transport.send(message, { relatedRequestId: id }));
    // Started as the SDK's protocol layer starts a handler, two turns of the microtask queue after the message, so a
    // call's work begins where it began when that layer answered it.
    Promise.resolve()
      .then(() => undefined)
      .then(() =>
        direct!(call.params, {
          requestId: id,
          ...(transport.sessionId ? { sessionId: transport.sessionId } : {}),
          headers,
          signal: controller.signal,
          cancelTrigger: 'client_notification',
          notify: async (notification) => sendFor({ jsonrpc: '2.0', ...notification } as JSONRPCMessage),
        }),
      )
      .then(
        (result) => sendFor({ jsonrpc: '2.0', id, result } as JSONRPCMessage),
        (error: unknown) => sendFor(thrownAsError(id, error)),
      )
      .catch((error: unknown) => server.onerror?.(new Error(`Failed to send response: ${error}`)))
      .finally(() => {
        if (inProgress.get(id) === controller) inProgress.delete(id);
      });
  };
  transport.onmessage = (message, extra) => {
    const refused = refuseMalformedCall(message);
    if (refused !== undefined) {
      transport
        .send(errorResponse((message as { id: string | number }).id, refused))
        .catch((error: unknown) => server.onerror?.(error as Error));
      return;
    }
    const call = direct === undefined ? undefined : plainToolCall(message);
    if (call !== undefined) {
      before?.(message, extra);
      return answer(call, extra?.requestInfo?.headers ?? {});
    }
    const cancelled = cancelledRequestId(message);
    if (cancelled !== undefined) inProgress.get(cancelled)?.abort((message as { params: { reason?: unknown } }).params.reason);
    return deliver?.(message, extra);
  };
}

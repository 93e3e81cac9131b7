import { createMcpHandler, Server, type AuthInfo, type CallToolResult as ModernCallToolResult, type McpHttpHandler, type Tool as ModernTool } from '@modelcontextprotocol/server';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ToolContract } from '@oncegate/contracts';
import { PRE_DISPATCH_STATUSES } from '@oncegate/domain';
import type { DeliveryWatch } from '@oncegate/service-result-delivery';
import { z } from 'zod';
import { clientSupportsTasks, stillMoving, taskOf, TASKS_EXTENSION } from './execution-tasks';
import { answerToolCall, GATEWAY_NAME, GATEWAY_VERSION, INSTRUCTIONS, runOfHeaders, toolsListing, type ConnectionFacts } from './mcp-server';
import type { ToolCalls } from './tool-calls';

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
  options: {
    readonly maxRequestBytes: number;
    readonly onerror: (error: Error) => void;
    /** What the front learns of the response to this HTTP request: written in full, or its stream closed first. */
    readonly deliveryOf?: (request: Request | undefined) => DeliveryWatch | undefined;
  },
): McpHttpHandler {
  const listing = toolsListing(tools) as ModernTool[];
  return createMcpHandler(
    (context) => {
      const actor = (context.authInfo?.extra as { actor?: unknown } | undefined)?.actor;
      if (typeof actor !== 'string') throw new Error('a 2026-07-28 request reached the MCP server without an authenticated agent');
      // No session and no later request on it: nothing can prove that a response was read, only that it was not.
      const delivery = options.deliveryOf?.(context.requestInfo);
      const connection: ConnectionFacts = {
        actor,
        transport: 'streamable-http',
        runHeader: runOfHeaders,
        deliveryOf: () => delivery,
      };
      const headers = headersOf(context.requestInfo);
      const server = new Server(
        { name: GATEWAY_NAME, version: GATEWAY_VERSION },
        { capabilities: { tools: { listChanged: false }, extensions: { [TASKS_EXTENSION]: {} } }, instructions: INSTRUCTIONS },
      );
      server.setRequestHandler('tools/list', async () => ({ tools: listing }));
      server.setRequestHandler('tools/call', async (request, ctx) => {
        const params = request.params as { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> };
        // A client of the tasks extension gets a side-effecting call back as a task once it is accepted (durable):
        // the execution goes on whatever happens to this request, and tasks/get follows it.
        const tool = tools.get(params.name);
        const asTask = tool !== undefined && tool.operationClass !== 'read_only' && clientSupportsTasks(ctx.mcpReq.envelope as Record<string, unknown> | undefined);
        const result = await answerToolCall(toolCalls, connection, { ...params, _meta: { ...params._meta, ...ctx.mcpReq._meta } }, {
          requestId: ctx.mcpReq.id,
          headers,
          signal: ctx.mcpReq.signal,
          cancelTrigger: 'response_stream_closed',
          notify: (notification) => ctx.mcpReq.notify(notification as never),
          ...(asTask ? { waitMs: 0, asTask: true } : {}),
        });
        if (asTask && stillMoving(result)) {
          const id = (result.structuredContent as { execution: { id: string } }).execution.id;
          const execution = await toolCalls.execution(id, actor);
          if (execution !== undefined) return { resultType: 'task', ...taskOf(execution) } as unknown as ModernCallToolResult;
        }
        return result as ModernCallToolResult;
      });
      const taskRequest = { params: z.looseObject({ taskId: z.string() }), result: z.looseObject({}) };
      // The extension reserves invalid params for a task id the server does not know.
      const unknownTask = (taskId: string) => new McpError(ErrorCode.InvalidParams, `No task ${taskId} of yours is known to this gateway`);
      const ownTask = async (taskId: string) => {
        const execution = await toolCalls.execution(taskId, actor);
        if (execution === undefined) throw unknownTask(taskId);
        return execution;
      };
      // A task that hands out its result answers the task's call: recorded like any answer, as the task's result.
      server.setRequestHandler('tasks/get', taskRequest, async ({ taskId }, ctx) => {
        const execution = await toolCalls.taskAnswer(taskId, actor, { jsonRpcId: ctx.mcpReq.id, transport: 'streamable-http' }, delivery);
        if (execution === undefined) throw unknownTask(taskId);
        return { resultType: 'complete', ...taskOf(execution) };
      });
      // Nothing an execution does waits for the client's input: responses to input requests are acknowledged and ignored.
      server.setRequestHandler('tasks/update', taskRequest, async ({ taskId }) => {
        await ownTask(taskId);
        return { resultType: 'complete' };
      });
      server.setRequestHandler('tasks/cancel', taskRequest, async ({ taskId }, ctx) => {
        const state = await toolCalls.cancel(taskId, actor, 'task_cancel', { jsonRpcId: ctx.mcpReq.id, transport: 'streamable-http' });
        if (state === undefined) throw unknownTask(taskId);
        const cancelled = state.status === 'cancelled';
        const why = cancelled
          ? 'cancelled before anything was sent'
          : state.attempts > 0
            ? `not cancelled: already dispatched (attempt ${state.attempts}); the request to the target is never aborted, and the task follows its outcome`
            : `not cancelled: ${(PRE_DISPATCH_STATUSES as readonly string[]).includes(state.status) ? 'another caller still waits for it' : `it is ${state.status}`}`;
        return { resultType: 'complete', _meta: { 'io.oncegate/cancel': { cancelled, reason: why } } };
      });
      return server;
    },
    { legacy: 'reject', maxRequestBodySize: options.maxRequestBytes, onerror: options.onerror },
  );
}

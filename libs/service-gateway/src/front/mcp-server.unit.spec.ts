import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolRequestSchema, CallToolResultSchema, ErrorCode, McpError, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ToolContract } from '@oncegate/contracts';
import type { ExecutionState } from '@oncegate/domain';
import { afterEach, describe, expect, it } from 'vitest';
import { connectMcpServer, createMcpServer, type ConnectionFacts } from './mcp-server';
import type { CallContext, ToolCalls } from './tool-calls';

/** What the execution layer was asked, and the calls still waiting for their signal. */
interface Seen {
  readonly calls: { name: string; args: Record<string, unknown>; options: CallContext }[];
  readonly aborted: { name: string; reason: unknown }[];
}

/** An execution layer whose tools say what the test needs: an echo, a failure, a call that waits for its abort, progress. */
function fakeToolCalls(seen: Seen): ToolCalls {
  const call = async (name: string, args: Record<string, unknown>, options: CallContext) => {
    seen.calls.push({ name, args, options });
    switch (name) {
      case 'echo':
        return { content: [{ type: 'text' as const, text: JSON.stringify(args) }] };
      case 'refused':
        throw new McpError(-32042, 'refused for a reason', { why: 'the test' });
      case 'crashes':
        throw new Error('the execution layer broke');
      case 'progress':
        options.progress?.({ status: 'accepted', executionId: 'ex_progress' } as unknown as ExecutionState);
        return { content: [{ type: 'text' as const, text: 'done' }] };
      case 'waits':
        await new Promise<void>((resolve) =>
          options.signal.addEventListener('abort', () => {
            seen.aborted.push({ name, reason: options.signal.reason });
            resolve();
          }),
        );
        return { content: [{ type: 'text' as const, text: 'answered after the abort' }] };
      default:
        throw new Error(`no tool ${name}`);
    }
  };
  return { call, status: async () => undefined } as unknown as ToolCalls;
}

const FACTS: ConnectionFacts = {
  actor: 'agent:test',
  transport: 'stdio',
  runHeader: () => undefined,
  deliveryOf: () => undefined,
};

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close().catch(() => undefined)));
});

/** A server as the gateway connects one, an official client on the other end, and every message the client received. */
async function connected(options: { beforeConnect?: (message: JSONRPCMessage) => void } = {}) {
  const seen: Seen = { calls: [], aborted: [] };
  const server = createMcpServer(new Map<string, ToolContract>(), fakeToolCalls(seen), FACTS);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const received: JSONRPCMessage[] = [];
  const onClientMessage = (message: JSONRPCMessage) => received.push(message);
  if (options.beforeConnect !== undefined) serverSide.onmessage = options.beforeConnect;
  await connectMcpServer(server, serverSide);
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(clientSide);
  const chained = clientSide.onmessage;
  clientSide.onmessage = (message, extra) => {
    onClientMessage(message);
    chained?.(message, extra);
  };
  open.push(client, server);
  return { seen, server, client, clientSide: clientSide as Transport, received };
}

const until = async (condition: () => boolean) => {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
};

describe('the MCP server of a session: tools/calls answered without the SDK protocol layer', () => {
  it('given the SDK server\'s own tools/call handler replaced by one that fails, when a well-formed call comes, then the execution layer answers it with its request id and headers', async () => {
    const { seen, server, client } = await connected();
    server.setRequestHandler(CallToolRequestSchema, () => {
      throw new Error('the SDK handler was used');
    });
    const result = await client.callTool({ name: 'echo', arguments: { a: 1 } });
    expect(result).toEqual({ content: [{ type: 'text', text: '{"a":1}' }] });
    expect(seen.calls).toHaveLength(1);
    expect(seen.calls[0]!.options.correlation).toEqual({ jsonRpcId: expect.anything(), transport: 'stdio' });
    expect(seen.calls[0]!.options.actor).toBe('agent:test');
  });

  it('given a call the execution layer refuses with an MCP error, then the client gets its code, message and data; an error of another kind is an internal error with its message', async () => {
    const { client } = await connected();
    const refused = await client.callTool({ name: 'refused', arguments: {} }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(McpError);
    expect(refused).toMatchObject({ code: -32042, data: { why: 'the test' } });
    expect((refused as McpError).message).toContain('refused for a reason');
    const crashed = await client.callTool({ name: 'crashes', arguments: {} }).catch((error: unknown) => error);
    expect(crashed).toMatchObject({ code: ErrorCode.InternalError });
    expect((crashed as McpError).message).toContain('the execution layer broke');
  });

  it('given a call that waits, when the client cancels it, then its signal aborts with the reason and no answer is sent for it', async () => {
    const { seen, client, received } = await connected();
    const cancel = new AbortController();
    const call = client.callTool({ name: 'waits', arguments: {} }, CallToolResultSchema, { signal: cancel.signal }).catch((error: unknown) => error);
    await until(() => seen.calls.length === 1);
    cancel.abort('the agent gave up');
    await call;
    await until(() => seen.aborted.length === 1);
    expect(seen.aborted[0]!.reason).toBe('the agent gave up');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const id = seen.calls[0]!.options.correlation.jsonRpcId;
    expect(received.filter((m) => 'id' in m && m.id === id)).toEqual([]);
  });

  it('given a call that waits, when the connection closes, then its signal aborts', async () => {
    const { seen, client } = await connected();
    void client.callTool({ name: 'waits', arguments: {} }).catch(() => undefined);
    await until(() => seen.calls.length === 1);
    await client.close();
    await until(() => seen.aborted.length === 1);
  });

  it('given a call with a progress token, then its progress reaches the client as notifications for it', async () => {
    const { client } = await connected();
    const progress: unknown[] = [];
    await client.callTool({ name: 'progress', arguments: {} }, CallToolResultSchema, { onprogress: (p) => progress.push(p) });
    expect(progress).toEqual([{ progress: 1, message: 'execution ex_progress: accepted, being authorized' }]);
  });

  it('given a transport that looks at each message before the server (a stdio connection\'s evidence), then it sees a tools/call answered here too', async () => {
    const before: JSONRPCMessage[] = [];
    const { client } = await connected({ beforeConnect: (message) => before.push(message) });
    await client.callTool({ name: 'echo', arguments: {} });
    expect(before.some((m) => 'method' in m && m.method === 'tools/call')).toBe(true);
  });

  it('given a tools/call that asks for a task, then it goes to the SDK server, which refuses it as before (this server has no tasks)', async () => {
    const { seen, client } = await connected();
    const asked = await client
      .request({ method: 'tools/call', params: { name: 'echo', arguments: {}, task: { ttl: 1000 } } }, CallToolResultSchema)
      .catch((error: unknown) => error);
    expect(asked).toBeInstanceOf(McpError);
    expect(seen.calls).toEqual([]);
  });
});

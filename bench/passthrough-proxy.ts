import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, isInitializeRequest, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Agent } from 'undici';
import type { EventStore } from '@oncegate/event-store';
import { ACCEPTED_METADATA, ACCEPTED_PAYLOAD } from './fixtures';

/**
 * The baseline the gateway benchmark compares against: a plain pass-through MCP proxy on the same SDK (low-level
 * `Server`, Streamable HTTP with sessions, node:http). Each tools/call becomes one HTTP request to the target,
 * sent with undici; the body comes back as text. No journal, no fingerprint, no dedup, no authentication.
 *
 * With `journal` (a SQLite file) it is the floor of a durable gateway instead: each call is written to the event
 * store in two fsync'd commits, as the gateway's pipeline writes it — the intent's claim and the execution's
 * acceptance, authorization and dispatch in one `appendMany` before the request leaves, its outcome after the
 * answer comes — and its delivery is recorded after the answer is sent. Nothing else of the gateway: no
 * fingerprint, no sealing, no authorization ladder, no resumption store, no reads.
 *
 * Run standalone: `node --import tsx bench/passthrough-proxy.ts --target http://127.0.0.1:8790 [--port 0] [--journal FILE]`.
 */

/** The one benchmarked tool: an idempotent config write, the same request the gateway's `set_config` renders. */
export const BENCH_TOOL = {
  name: 'set_config',
  description: 'Set a named configuration entry to a value; repeating it changes nothing.',
  inputSchema: {
    type: 'object' as const,
    properties: {
      name: { type: 'string', pattern: '^[a-z][a-z0-9_.-]*$' },
      value: { type: 'string', maxLength: 1024 },
    },
    required: ['name', 'value'],
    additionalProperties: false,
  },
};

export interface TargetRequest {
  readonly method: 'PUT';
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** The HTTP request behind one `set_config` call, as the gateway's HTTP dispatcher sends it. */
export function targetRequest(name: string, value: string, idempotencyKey: string): TargetRequest {
  return {
    method: 'PUT',
    path: `/config/${encodeURIComponent(name)}`,
    headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey, 'user-agent': 'oncegate-bench/0.1' },
    body: JSON.stringify({ value }),
  };
}

/** A keep-alive pool configured like the gateway's dispatcher (one request per connection at a time). */
export function targetAgent(): Agent {
  return new Agent({ keepAliveTimeout: 4_000, pipelining: 1, connections: null });
}

export interface PassthroughProxy {
  readonly url: string;
  close(): Promise<void>;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : JSON.parse(text);
}

/** The events of one call, shaped and sized like the gateway's (`ACCEPTED_PAYLOAD`, `ACCEPTED_METADATA`). */
function journalEvents(type: string, data: Record<string, unknown> = ACCEPTED_PAYLOAD) {
  return [{ type, data, metadata: { ...ACCEPTED_METADATA, eventId: randomUUID(), recordedAt: new Date().toISOString() } }];
}

/** Two durable commits around the target's answer (see the module's comment); resolves with the result. */
async function journalled(store: EventStore, send: (executionId: string) => Promise<CallToolResult>): Promise<CallToolResult> {
  const executionId = randomUUID();
  const stream = `execution-${executionId}`;
  await store.appendMany([
    { streamId: `intent-${randomUUID()}`, events: journalEvents('IntentClaimed', { executionId }), expectedRevision: 'no_stream' },
    {
      streamId: stream,
      events: [...journalEvents('ExecutionAccepted'), ...journalEvents('ExecutionAuthorized', { executionId }), ...journalEvents('Dispatched', { executionId })],
      expectedRevision: 'no_stream',
    },
  ]);
  const result = await send(executionId);
  await store.appendToStream(stream, journalEvents('OutcomeObserved', { executionId, result }), { expectedRevision: 2 });
  setImmediate(() => void store.appendToStream(stream, journalEvents('ResultDelivered', { executionId }), { expectedRevision: 3 }).catch(() => undefined));
  return result;
}

export async function startPassthroughProxy(options: { targetUrl: string; port?: number; host?: string; journal?: string }): Promise<PassthroughProxy> {
  const agent = targetAgent();
  const origin = new URL(options.targetUrl).origin;
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  // Loaded only for the floor, so the plain proxy's memory holds nothing of the store.
  const store =
    options.journal === undefined
      ? undefined
      : (await import('@oncegate/event-store-sqlite')).openSqliteEventStore({ file: options.journal, synchronous: 'FULL' });

  const send = async (args: Record<string, unknown>, idempotencyKey: string): Promise<CallToolResult> => {
    const request = targetRequest(String(args['name']), String(args['value']), idempotencyKey);
    const response = await agent.request({ origin, ...request });
    const text = await response.body.text();
    return { content: [{ type: 'text', text }], isError: response.statusCode >= 400 };
  };
  const callTarget = (args: Record<string, unknown>): Promise<CallToolResult> =>
    store === undefined ? send(args, randomUUID()) : journalled(store, (executionId) => send(args, executionId));

  const newSession = async (): Promise<StreamableHTTPServerTransport> => {
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    const server = new Server({ name: 'passthrough-proxy', version: '0.1.0' }, { capabilities: { tools: { listChanged: false } } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [BENCH_TOOL] }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      if (request.params.name !== BENCH_TOOL.name) return { content: [{ type: 'text', text: `unknown tool ${request.params.name}` }], isError: true };
      return callTarget(request.params.arguments ?? {});
    });
    await server.connect(transport);
    return transport;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const sessionId = req.headers['mcp-session-id'];
    const existing = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (req.method === 'POST') {
      const body = await readJson(req);
      if (existing !== undefined) return existing.handleRequest(req, res, body);
      if (sessionId === undefined && isInitializeRequest(body)) return (await newSession()).handleRequest(req, res, body);
    } else if (existing !== undefined) {
      return existing.handleRequest(req, res);
    }
    res.writeHead(sessionId === undefined ? 400 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no such session' } }));
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32603, message: String(error) } }));
    });
  });
  http.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      for (const transport of sessions.values()) await transport.close().catch(() => undefined);
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
      await agent.close();
      await store?.close();
    },
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { target: { type: 'string' }, port: { type: 'string', default: '0' }, journal: { type: 'string' } }, strict: true });
  if (values.target === undefined) {
    process.stderr.write('usage: node --import tsx bench/passthrough-proxy.ts --target <url> [--port 0] [--journal FILE]\n');
    process.exit(2);
  }
  const proxy = await startPassthroughProxy({ targetUrl: values.target, port: Number(values.port), journal: values.journal });
  process.stdout.write(`passthrough proxy listening on ${proxy.url}\n`);
  const stop = () => void proxy.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

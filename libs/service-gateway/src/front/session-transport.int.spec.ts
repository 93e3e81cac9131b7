import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { pipeResponse, SessionTransport } from './session-transport';

/** An event store numbering each stream's messages `<stream>.<n>`, as the gateway's names its own. */
function numberedEventStore(): EventStore {
  const stored: { streamId: string; n: number; message: JSONRPCMessage }[] = [];
  let n = 0;
  return {
    storeEvent: async (streamId, message) => {
      n += 1;
      stored.push({ streamId, n, message });
      return `${streamId}.${n}`;
    },
    getStreamIdForEventId: async (eventId) => eventId.slice(0, eventId.lastIndexOf('.')),
    replayEventsAfter: async (lastEventId, { send }) => {
      const streamId = lastEventId.slice(0, lastEventId.lastIndexOf('.'));
      const after = Number(lastEventId.slice(lastEventId.lastIndexOf('.') + 1));
      for (const event of stored) if (event.streamId === streamId && event.n > after && Object.keys(event.message).length > 0) await send(`${streamId}.${event.n}`, event.message);
      return streamId;
    },
  };
}

interface Served {
  readonly url: string;
  readonly transport: SessionTransport;
  /** What `answerToolCallPost` answered for each POST, in order (`undefined`: left to the SDK). */
  readonly answered: (number | undefined)[];
  /** Gates of the `waits` tool, opened by the test. */
  readonly gates: Map<string, () => void>;
}

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await Promise.resolve(item.close()).catch(() => undefined);
});

/**
 * One session's transport behind a Node HTTP server, as the gateway's front serves it: POSTs go to
 * `answerToolCallPost` first (unless `sdkOnly`), everything else, and what it leaves, to the SDK's `handleRequest`.
 * Tools: `echo` answers its arguments; `waits` answers once the test opens its gate.
 */
async function serve(options: { sdkOnly?: boolean; keepAliveMs?: number } = {}): Promise<Served> {
  const gates = new Map<string, () => void>();
  const answered: (number | undefined)[] = [];
  const transport = new SessionTransport(
    { sessionIdGenerator: () => 'session-1', eventStore: numberedEventStore(), retryInterval: 2000, ...(options.keepAliveMs ? { keepAliveMs: options.keepAliveMs } : {}) },
    () => undefined,
  );
  const server = new Server({ name: 'test', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const args = request.params.arguments ?? {};
    if (request.params.name === 'waits') await new Promise<void>((resolve) => gates.set(String(args['gate']), resolve));
    return { content: [{ type: 'text', text: JSON.stringify(args) }] };
  });
  await server.connect(transport);
  const http: HttpServer = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks).toString('utf8');
      const parsed: unknown = body.length > 0 ? JSON.parse(body) : undefined;
      if (req.method === 'POST' && !options.sdkOnly) {
        const status = await transport.answerToolCallPost(req, res, parsed, '2025-11-25');
        answered.push(status);
        if (status !== undefined) return;
      }
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
      const request = new Request(`http://${req.headers.host}${req.url}`, { method: req.method!, headers });
      await pipeResponse(await transport.handleRequest(request, parsed === undefined ? undefined : { parsedBody: parsed }), res);
    })();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  open.push({ close: () => new Promise((resolve) => http.close(resolve)) }, { close: () => http.closeAllConnections() }, server);
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`, transport, answered, gates };
}

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };

/** Initializes the session with raw requests, as a client does. */
async function initialize(url: string): Promise<void> {
  const init = await fetch(url, {
    method: 'POST',
    headers: HEADERS,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
  });
  await init.text();
  const initialized = await fetch(url, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': 'session-1' }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  await initialized.text();
}

const toolCall = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** A raw POST on the session; its status, head (without `date`) and body. */
async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': 'session-1', ...headers }, body: JSON.stringify(body) });
  const head: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'date' && name !== 'transfer-encoding') head[name] = value;
  });
  return { status: response.status, head, body: await response.text() };
}

/** An SSE body with its stream ids made the same (they are random per stream). */
const sameIds = (body: string) => body.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.\d+/g, '<stream>.<n>');

const until = async (condition: () => boolean) => {
  for (let i = 0; i < 400 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
};

/** Calls `waits` behind `gate` and drops the connection after the priming event; the event's id, once the call waits. */
async function cutAfterPriming(served: Served, id: number, gate: string): Promise<string> {
  const abort = new AbortController();
  const response = await fetch(served.url, {
    method: 'POST',
    headers: { ...HEADERS, 'mcp-session-id': 'session-1' },
    body: JSON.stringify(toolCall(id, 'waits', { gate })),
    signal: abort.signal,
  });
  const priming = new TextDecoder().decode((await response.body!.getReader().read()).value);
  abort.abort();
  await until(() => served.gates.has(gate));
  return /^id: (\S+)/m.exec(priming)![1]!;
}

/** A GET resuming after `lastEventId`. Until the server has seen the first stream close, the SDK refuses a second one for it (409), on either path. */
async function resume(url: string, lastEventId: string): Promise<Response> {
  for (let tries = 0; ; tries++) {
    const resumed = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': 'session-1', 'mcp-protocol-version': '2025-11-25', 'last-event-id': lastEventId } });
    if (resumed.status !== 409 || tries === 50) return resumed;
    await resumed.text();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** What a stream carries until `text` has come. */
async function readUntil(response: Response, text: string): Promise<string> {
  const reader = response.body!.getReader();
  let read = '';
  while (!read.includes(text)) read += new TextDecoder().decode((await reader.read()).value);
  await reader.cancel();
  return read;
}

describe('a POST of one plain tools/call, answered by the session transport without the SDK request and response objects', () => {
  it('given the official client, when it calls a tool, then the answer comes from this path and the SDK POST handling is never asked', async () => {
    const served = await serve();
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(served.url)));
    open.push(client);
    // From here on, the SDK's own POST handling fails: a call it served would fail too.
    (served.transport as unknown as { handlePostRequest: () => never }).handlePostRequest = () => {
      throw new Error('the SDK POST handling was asked');
    };
    const result = await client.callTool({ name: 'echo', arguments: { value: 'one' } });
    expect(result.content).toEqual([{ type: 'text', text: '{"value":"one"}' }]);
    expect(served.answered.at(-1)).toBe(200);
  });

  it('given the same call served by the SDK alone, then status, head and events on the wire are the same', async () => {
    const direct = await serve();
    const sdk = await serve({ sdkOnly: true });
    await initialize(direct.url);
    await initialize(sdk.url);
    const call = toolCall(7, 'echo', { value: 'two' });
    const [fromHere, fromSdk] = [await post(direct.url, call), await post(sdk.url, call)];
    expect(direct.answered).toEqual([undefined, undefined, 200]);
    expect(fromHere.status).toBe(200);
    expect(fromHere.head).toEqual(fromSdk.head);
    expect(sameIds(fromHere.body)).toBe(sameIds(fromSdk.body));
    expect(sameIds(fromHere.body)).toBe(
      'id: <stream>.<n>\nretry: 2000\ndata: \n\nevent: message\nid: <stream>.<n>\ndata: {"result":{"content":[{"type":"text","text":"{\\"value\\":\\"two\\"}"}]},"jsonrpc":"2.0","id":7}\n\n',
    );
  });

  it('given what is not the plain case, then it is left to the SDK untouched, and the SDK answers as it always did', async () => {
    const served = await serve();
    await initialize(served.url);
    const cases: Array<{ body: unknown; headers?: Record<string, string>; status: number }> = [
      { body: [toolCall(1, 'echo', {})], status: 200 }, // a batch
      { body: { ...toolCall(2, 'echo', {}), extra: true }, status: 400 }, // a member the schema refuses
      { body: { ...toolCall(3, 'echo', {}), params: { name: 'echo', _meta: { progressToken: 1.5 } } }, status: 400 }, // not an integer token
      { body: { jsonrpc: '2.0', id: 4, method: 'tools/call' }, status: 200 }, // no params
      { body: toolCall(5, 'echo', {}), headers: { 'mcp-protocol-version': '1999-01-01' }, status: 400 },
      { body: toolCall(6, 'echo', {}), headers: { accept: 'application/json' }, status: 406 },
      { body: toolCall(7, 'echo', {}), headers: { 'content-type': 'text/plain' }, status: 415 },
      { body: toolCall(8, 'echo', {}), headers: { 'mcp-session-id': 'another' }, status: 404 },
      { body: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99 } }, status: 202 },
    ];
    for (const { body, headers, status } of cases) {
      const before = served.answered.length;
      expect((await post(served.url, body, headers)).status).toBe(status);
      expect(served.answered.slice(before)).toEqual([undefined]);
    }
  });

  it('given the client lost the stream after its priming event, when it resumes with Last-Event-ID before the answer, then the answer comes on the resumed stream', async () => {
    const served = await serve();
    await initialize(served.url);
    const lastEventId = await cutAfterPriming(served, 11, 'a');
    const resumed = await resume(served.url, lastEventId);
    expect(resumed.status).toBe(200);
    served.gates.get('a')!();
    expect(await readUntil(resumed, '"id":11')).toContain('{\\"gate\\":\\"a\\"}');
  });

  it('given the client lost the stream and the answer came meanwhile, when it resumes, then the stored answer is replayed', async () => {
    const served = await serve();
    await initialize(served.url);
    const lastEventId = await cutAfterPriming(served, 12, 'b');
    // The response is gone: the answer is stored, not written, and nothing throws.
    await new Promise((resolve) => setTimeout(resolve, 20));
    served.gates.get('b')!();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await readUntil(await resume(served.url, lastEventId), '"id":12')).toContain('{\\"gate\\":\\"b\\"}');
  });

  it('given a call that takes longer than the keep-alive interval, then keep-alive comments come before the answer, as on the SDK stream', async () => {
    const served = await serve({ keepAliveMs: 20 });
    await initialize(served.url);
    const answer = post(served.url, toolCall(13, 'waits', { gate: 'c' }));
    await until(() => served.gates.has('c'));
    await new Promise((resolve) => setTimeout(resolve, 90));
    served.gates.get('c')!();
    const { body } = await answer;
    expect(served.answered.at(-1)).toBe(200);
    expect(body.indexOf(': keepalive\n\n')).toBeGreaterThan(body.indexOf('retry: 2000'));
    expect(body.indexOf(': keepalive\n\n')).toBeLessThan(body.indexOf('"id":13'));
  });

  it('given the server refuses the message as it is handed over, then the POST is answered 400 with the reason and its id is free again', async () => {
    const served = await serve();
    await initialize(served.url);
    const handOver = served.transport.onmessage!;
    served.transport.onmessage = (message, extra) => {
      if ((message as { params?: { name?: string } }).params?.name === 'refused') throw new Error('not this one');
      handOver(message, extra);
    };
    const refused = await post(served.url, toolCall(14, 'refused', {}));
    expect(served.answered.at(-1)).toBe(400);
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body)).toEqual({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error', data: 'Error: not this one' }, id: null });
    const again = await post(served.url, toolCall(14, 'echo', { value: 'three' }));
    expect(again.body).toContain('{\\"value\\":\\"three\\"}');
  });

  it('given the transport closes with a call in flight, then its stream ends', async () => {
    const served = await serve();
    await initialize(served.url);
    const answer = post(served.url, toolCall(15, 'waits', { gate: 'd' }));
    await until(() => served.gates.has('d'));
    await served.transport.close();
    const { status, body } = await answer;
    expect(status).toBe(200);
    expect(body).toMatch(/^id: \S+\nretry: 2000\ndata: \n\n$/);
  });
});

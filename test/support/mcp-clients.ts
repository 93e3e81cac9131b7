import { fileURLToPath } from 'node:url';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernStreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport as ModernStdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export { ModernClient };

export interface DroppableFetch {
  readonly fetch: typeof fetch;
  /** Method, `Last-Event-ID` and time (`Date.now()`) of every request made through it. */
  readonly requests: Array<{ method: string; lastEventId: string | null; at: number }>;
  /** Cuts every connection opened so far, as a network drop would: no MCP cancel is sent. */
  dropAll(): void;
  /** Cuts only the open connections whose request body holds `text` (one call's POST), the others going on. */
  dropMatching(text: string): void;
  /** Holds every request made from now on until `reconnect` (a network that is down and comes back). */
  disconnect(): void;
  /** Sends the held requests, and those made from now on. */
  reconnect(): void;
}

/** What fetch itself throws when the socket goes mid-answer (undici: `terminated`, the socket error as cause). */
const dropped = () => new TypeError('terminated', { cause: Object.assign(new Error('connection dropped'), { code: 'UND_ERR_SOCKET' }) });

export function droppableFetch(): DroppableFetch {
  const open = new Map<AbortController, string>();
  const requests: Array<{ method: string; lastEventId: string | null; at: number }> = [];
  let network: { readonly back: Promise<void>; readonly resolve: () => void } | undefined;
  return {
    requests,
    fetch: async (input, init) => {
      requests.push({ method: init?.method ?? 'GET', lastEventId: new Headers(init?.headers).get('last-event-id'), at: Date.now() });
      await network?.back;
      const controller = new AbortController();
      open.set(controller, typeof init?.body === 'string' ? init.body : '');
      const signal = init?.signal ? AbortSignal.any([init.signal, controller.signal]) : controller.signal;
      return fetch(input, { ...init, signal });
    },
    dropAll() {
      for (const controller of open.keys()) controller.abort(dropped());
      open.clear();
    },
    dropMatching(text) {
      for (const [controller, body] of open) {
        if (!body.includes(text)) continue;
        controller.abort(dropped());
        open.delete(controller);
      }
    },
    disconnect() {
      let resolve!: () => void;
      network ??= { back: new Promise<void>((done) => (resolve = done)), resolve: () => resolve() };
    },
    reconnect() {
      network?.resolve();
      network = undefined;
    },
  };
}

/** One server-sent event as a client parses it (`retry` when the event set it). */
export interface SseEvent {
  readonly id?: string;
  readonly retry?: number;
  readonly data: string;
}

/**
 * Reads server-sent events off a response body until it ends, or until `until` says enough (then the
 * connection is closed); comments (keep-alives) are skipped.
 */
export async function readSse(response: Response, until: (events: readonly SseEvent[]) => boolean = () => false): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const fields = block.split('\n').filter((line) => !line.startsWith(':') && line.length > 0);
        if (fields.length === 0) continue;
        const field = (name: string) => fields.filter((line) => line.startsWith(`${name}:`)).map((line) => line.slice(name.length + 1).replace(/^ /, ''));
        const [id] = field('id');
        const [retry] = field('retry');
        events.push({ ...(id === undefined ? {} : { id }), ...(retry === undefined ? {} : { retry: Number(retry) }), data: field('data').join('\n') });
      }
      if (until(events)) break;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return events;
}

/** How a client runs `oncegate stdio` on the folder's configuration with `token`. */
function stdioCommand(folder: { readonly dir: string; readonly configFile: string }, token: string) {
  return {
    command: process.execPath,
    args: [fileURLToPath(new URL('../../bin/oncegate.mjs', import.meta.url)), 'stdio', '--config', folder.configFile],
    cwd: folder.dir,
    env: { ...(process.env as Record<string, string>), ONCEGATE_TOKEN: token },
    stderr: 'pipe' as const,
  };
}

/** The official MCP client over stdio: it runs `oncegate stdio` on the folder's configuration with `token`. */
export async function connectStdioClient(folder: { readonly dir: string; readonly configFile: string }, token: string): Promise<Client> {
  const client = new Client({ name: 'oncegate-e2e-stdio', version: '1.0.0' });
  await client.connect(new StdioClientTransport(stdioCommand(folder, token)));
  return client;
}

/** The official v2 client over stdio with version negotiation on (`auto`). */
export async function connectModernStdioClient(folder: { readonly dir: string; readonly configFile: string }, token: string): Promise<ModernClient> {
  const client = new ModernClient({ name: 'oncegate-e2e-stdio-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new ModernStdioClientTransport(stdioCommand(folder, token)));
  return client;
}

export interface ClientOptions {
  readonly fetch?: typeof fetch;
  /** Default: no reconnection, so a drop stays a drop. */
  readonly reconnect?: { readonly initialDelayMs: number; readonly maxRetries: number };
  readonly headers?: Record<string, string>;
  readonly sessionId?: string;
}

/** The official MCP client over Streamable HTTP, authenticated with a bearer token. */
export async function connectClient(url: string, token: string, options: ClientOptions = {}): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}`, ...options.headers } },
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.sessionId ? { sessionId: options.sessionId } : {}),
    reconnectionOptions: {
      initialReconnectionDelay: options.reconnect?.initialDelayMs ?? 1000,
      maxReconnectionDelay: options.reconnect?.initialDelayMs ?? 1000,
      reconnectionDelayGrowFactor: 1,
      maxRetries: options.reconnect?.maxRetries ?? 0,
    },
  });
  const client = new Client({ name: 'oncegate-e2e', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

/** One tool call on a session of its own, closed after: what an agent that reconnects for each call sends. */
export async function callOnce(gateway: { readonly url: string; readonly devToken: string }, name: string, args: Record<string, unknown>) {
  const { client } = await connectClient(gateway.url, gateway.devToken);
  try {
    return await client.callTool({ name, arguments: args });
  } finally {
    await client.close();
  }
}

/**
 * The official v2 client (`@modelcontextprotocol/client`) over Streamable HTTP with version negotiation on
 * (`auto`): it probes with `server/discover` and speaks the 2026-07-28 revision when the server offers it.
 */
export async function connectModernClient(
  url: string,
  token: string,
  options: { readonly fetch?: typeof fetch; readonly headers?: Record<string, string> } = {},
): Promise<ModernClient> {
  const transport = new ModernStreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}`, ...options.headers } },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const client = new ModernClient({ name: 'oncegate-e2e-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(transport);
  return client;
}

/**
 * A raw JSON-RPC request over Streamable HTTP at the 2026-07-28 revision, as the tasks extension's client needs
 * it (`rawDispatch`: the SDK client's codecs refuse task results): the routing headers, the token, and the
 * answer read from a JSON body or from the SSE stream.
 */
export function rawModernDispatch(url: string, token: string) {
  let nextId = 1;
  return async (unframed: unknown, options?: { signal?: AbortSignal }): Promise<{ kind: 'result'; result: never } | { kind: 'error'; error: never }> => {
    // The dispatcher owns the JSON-RPC framing: the version and a request id of its own when the caller gave none.
    const request = { jsonrpc: '2.0', id: `raw-${nextId++}`, ...(unframed as object) };
    const message = request as unknown as { id?: unknown; method: string; params?: { name?: string; taskId?: string } };
    const name = message.params?.taskId ?? message.params?.name;
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': message.method,
        ...(name === undefined ? {} : { 'mcp-name': name }),
      },
      body: JSON.stringify(request),
      ...(options?.signal ? { signal: options.signal } : {}),
    });
    const text = await response.text();
    const bodies = (response.headers.get('content-type') ?? '').includes('text/event-stream')
      ? text.split('\n').filter((line) => line.startsWith('data:')).map((line) => JSON.parse(line.slice(5)) as Record<string, unknown>)
      : [JSON.parse(text) as Record<string, unknown>];
    const answer = bodies.find((body) => body['id'] === message.id);
    if (answer === undefined) throw new Error(`no answer to ${message.method} (HTTP ${response.status}): ${text.slice(0, 300)} for ${JSON.stringify(request).slice(0, 600)}`);
    return 'error' in answer ? { kind: 'error', error: answer['error'] as never } : { kind: 'result', result: answer['result'] as never };
  };
}

export type Revision = '2026-07-28' | '2025-11-25';

/** One agent's connection on a given revision, whichever official client speaks it. */
export interface RevisionClient {
  callTool(params: { name: string; arguments: Record<string, unknown> }, options?: { onprogress?: (progress: { progress: number; message?: string }) => void; timeout?: number }): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * An agent on `revision`, on a connection of its own: the official v2 client (checked to have negotiated
 * 2026-07-28) or the v1 client with its 2025-11-25 session.
 */
export async function connectRevisionClient(revision: Revision, url: string, token: string, options: { readonly fetch?: typeof fetch } = {}): Promise<RevisionClient> {
  if (revision === '2026-07-28') {
    const client = await connectModernClient(url, token, options);
    if (client.getNegotiatedProtocolVersion() !== revision) throw new Error(`the v2 client negotiated ${client.getNegotiatedProtocolVersion()}`);
    return { callTool: (params, callOptions) => client.callTool(params, callOptions), close: () => client.close() };
  }
  const { client } = await connectClient(url, token, options);
  return { callTool: (params, callOptions) => client.callTool(params, undefined, callOptions), close: () => client.close() };
}

import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { createMcpHandler, Server, WebStandardStreamableHTTPServerTransport, type CallToolResult, type Tool } from '@modelcontextprotocol/server';

/*
 * An upstream MCP server for the mcp channel's tests, on the official SDK's server: a careful one and a careless one in
 * one. It speaks 2026-07-28 and 2025-11-25 (or 2025-11-25 alone), over Streamable HTTP (in the test's process or its
 * own) and over stdio (a child the channel starts). Every effect is a line of a file in its folder with the execution
 * id the call carried in `_meta`, so that processes apart (the test, each stdio child) count the same effects; the
 * faults the tests need are files of that folder too, taken by the first call that matches.
 */

/** The `_meta` key the channel sends the execution id under (the channel's EXECUTION_ID_META). */
const EXECUTION_ID = 'io.oncegate/execution-id';
const ATTEMPT = 'io.oncegate/attempt';

/** What a test can have the upstream do to the answer of the next call of a tool, after its effect. */
export type UpstreamFault = 'lose' | 'withhold';

/** One line of the effect log. */
export interface UpstreamEffect {
  readonly tool: string;
  readonly executionId: string | null;
  readonly attempt: number | null;
  readonly args: Record<string, unknown>;
  /** Whether the call took effect (a re-sent set_limit recognised by its execution id did not). */
  readonly effect: boolean;
  readonly pid: number;
}

/** Which definitions the upstream lists: the ones the tests' contracts were written against, or changed ones. */
export type UpstreamVariant = 'original' | 'changed';

const ACCOUNT = { type: 'string', pattern: '^[a-z0-9-]+$' };
const CENTS = { type: 'integer', minimum: 0 };

/**
 * The upstream's tools: a read (read_balance), a write it recognises when sent again (set_limit, deduplicated by the
 * execution id), a payment it makes every time it is asked (send_payment), and a read that echoes the Authorization
 * header it got (echo_credential). The `changed` variant gives set_limit another argument and drops read_balance.
 */
export function upstreamTools(variant: UpstreamVariant = 'original'): Tool[] {
  const tools: Tool[] = [
    {
      name: 'read_balance',
      description: "Read an account's balance.",
      inputSchema: { type: 'object', properties: { account: ACCOUNT }, required: ['account'], additionalProperties: false },
      outputSchema: { type: 'object', properties: { account: { type: 'string' }, cents: { type: 'integer' } }, required: ['account', 'cents'] },
      annotations: { readOnlyHint: true },
    },
    {
      name: 'set_limit',
      description: "Set an account's spending limit.",
      inputSchema:
        variant === 'original'
          ? { type: 'object', properties: { account: ACCOUNT, cents: CENTS }, required: ['account', 'cents'], additionalProperties: false }
          : { type: 'object', properties: { account: ACCOUNT, cents: CENTS, currency: { type: 'string' } }, required: ['account', 'cents', 'currency'], additionalProperties: false },
      annotations: { idempotentHint: true, destructiveHint: false },
    },
    {
      name: 'send_payment',
      description: 'Send a payment.',
      inputSchema: { type: 'object', properties: { to: ACCOUNT, cents: { type: 'integer' } }, required: ['to', 'cents'], additionalProperties: false },
      annotations: { destructiveHint: true },
    },
    {
      name: 'echo_credential',
      description: 'Say which Authorization header reached the upstream.',
      inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, additionalProperties: false },
      annotations: { readOnlyHint: true },
    },
  ];
  return variant === 'original' ? tools : tools.filter((tool) => tool.name !== 'read_balance');
}

/** The upstream's folder: its effect log and the files a test controls it with. */
export class UpstreamFolder {
  constructor(readonly dir: string) {
    mkdirSync(join(dir, 'pids'), { recursive: true });
    mkdirSync(join(dir, 'seen'), { recursive: true });
  }

  private get log(): string {
    return join(this.dir, 'effects.jsonl');
  }

  /** Every line of the effect log. */
  entries(): UpstreamEffect[] {
    if (!existsSync(this.log)) return [];
    return readFileSync(this.log, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as UpstreamEffect);
  }

  /** How many times calls carrying `executionId` took effect. */
  effects(executionId: string): number {
    return this.entries().filter((entry) => entry.executionId === executionId && entry.effect).length;
  }

  /** Every effect of `tool`, whatever execution it came from. */
  effectsOf(tool: string): UpstreamEffect[] {
    return this.entries().filter((entry) => entry.tool === tool && entry.effect);
  }

  record(entry: UpstreamEffect): void {
    appendFileSync(this.log, `${JSON.stringify(entry)}\n`);
    // Looked up by the careful tool on every call: a file per execution, not a scan of the whole log.
    if (entry.effect && entry.executionId !== null) writeFileSync(this.seenFile(entry.tool, entry.executionId), JSON.stringify(entry));
  }

  /** The effect `tool` took under `executionId` before, when it did (whichever process of the folder recorded it). */
  seen(tool: string, executionId: string): UpstreamEffect | undefined {
    const file = this.seenFile(tool, executionId);
    return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as UpstreamEffect) : undefined;
  }

  private seenFile(tool: string, executionId: string): string {
    return join(this.dir, 'seen', `${tool}.${executionId.replace(/[^\w-]/g, '_')}.json`);
  }

  /** The next call of `tool` (any tool when not given) takes effect, then its answer is lost or withheld. */
  arm(fault: UpstreamFault, tool?: string): void {
    rmSync(join(this.dir, 'struck'), { force: true });
    writeFileSync(join(this.dir, 'fault.json'), JSON.stringify({ fault, tool: tool ?? null }));
  }

  /** Takes the armed fault if it is for `tool` (one process wins it: the file is moved away). */
  take(tool: string): UpstreamFault | undefined {
    const file = join(this.dir, 'fault.json');
    if (!existsSync(file)) return undefined;
    let armed: { fault: UpstreamFault; tool: string | null };
    try {
      armed = JSON.parse(readFileSync(file, 'utf8')) as typeof armed;
    } catch {
      return undefined;
    }
    if (armed.tool !== null && armed.tool !== tool) return undefined;
    try {
      renameSync(file, join(this.dir, `fault.taken.${process.pid}.${randomUUID()}`));
    } catch {
      return undefined;
    }
    writeFileSync(join(this.dir, 'struck'), armed.fault);
    return armed.fault;
  }

  /** Resolves once the fault armed last has struck. */
  async struck(timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!existsSync(join(this.dir, 'struck'))) {
      if (Date.now() > deadline) throw new Error(`the upstream's armed fault did not strike within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** While on, a stdio upstream started in this folder exits at once, before it answers anything. */
  down(on: boolean): void {
    const file = join(this.dir, 'down');
    if (on) writeFileSync(file, 'down');
    else rmSync(file, { force: true });
  }

  isDown(): boolean {
    return existsSync(join(this.dir, 'down'));
  }

  /** From now on every call waits `ms` before it takes effect (0: none), so that calls overlap at the upstream. */
  set delayMs(ms: number) {
    writeFileSync(join(this.dir, 'delay'), String(ms));
  }

  get delayMs(): number {
    const file = join(this.dir, 'delay');
    return existsSync(file) ? Number(readFileSync(file, 'utf8')) || 0 : 0;
  }

  /** Which definitions the upstream lists from now on (read at every tools/list). */
  set variant(variant: UpstreamVariant) {
    writeFileSync(join(this.dir, 'variant'), variant);
  }

  get variant(): UpstreamVariant {
    const file = join(this.dir, 'variant');
    return existsSync(file) && readFileSync(file, 'utf8').trim() === 'changed' ? 'changed' : 'original';
  }

  /** The stdio upstreams running in this folder, by pid (each writes its own file and removes it when it exits). */
  pids(): number[] {
    return readdirPids(join(this.dir, 'pids'));
  }

  /** Marks this process as a running upstream of the folder until it exits. */
  register(): void {
    const file = join(this.dir, 'pids', String(process.pid));
    writeFileSync(file, String(process.pid));
    process.on('exit', () => rmSync(file, { force: true }));
  }
}

/** The pids of the folder's pid files whose process still runs (a file left by a child killed -9 is not one). */
function readdirPids(dir: string): number[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).map(Number).filter((pid) => Number.isInteger(pid) && alive(pid));
}

/** Whether a process runs (signal 0 asks without sending anything). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** What a call of the upstream is served with: its folder, and what lets a `lose` fault cut the connection. */
export interface UpstreamContext {
  readonly folder: UpstreamFolder;
  /** Loses the answer after the effect: an HTTP upstream destroys the connection, a stdio one exits. */
  readonly lose: () => void;
  /** The Authorization header the request came with (HTTP). */
  readonly authorization?: () => string | undefined;
  /** Whether the upstream declares `tools.listChanged` (default: it does). */
  readonly notifies?: boolean;
}

/** How many progress notifications a delayed call sends a caller that asked for them. */
const PROGRESS_STEPS = 4;

/** The low-level SDK server of the upstream: one per connection (stdio) or per request (HTTP, createMcpHandler). */
export function upstreamServer(context: UpstreamContext): Server {
  const server = new Server({ name: 'oncegate-test-upstream', version: '1.0.0' }, { capabilities: { tools: { listChanged: context.notifies ?? true } } });
  server.setRequestHandler('tools/list', async () => ({ tools: upstreamTools(context.folder.variant) }));
  server.setRequestHandler('tools/call', async (request, ctx) => {
    const { name } = request.params;
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    const meta = (request.params._meta ?? {}) as Record<string, unknown>;
    const executionId = typeof meta[EXECUTION_ID] === 'string' ? (meta[EXECUTION_ID] as string) : null;
    const attempt = typeof meta[ATTEMPT] === 'number' ? (meta[ATTEMPT] as number) : null;
    const delay = context.folder.delayMs;
    const progressToken = meta['progressToken'];
    if (delay > 0 && (typeof progressToken === 'string' || typeof progressToken === 'number')) {
      // A caller that asked for progress hears of each quarter of the wait; the message quotes the Authorization
      // header the upstream got, as a careless upstream might, so a test sees the kit hide it.
      for (let step = 1; step <= PROGRESS_STEPS; step += 1) {
        await new Promise((resolve) => setTimeout(resolve, delay / PROGRESS_STEPS));
        const message = `${name}: step ${step} of ${PROGRESS_STEPS} (as ${context.authorization?.() ?? 'anyone'})`;
        await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress: step, total: PROGRESS_STEPS, message } }).catch(() => undefined);
      }
    } else if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    const result = callTool(context, name, args, executionId, attempt);
    const fault = context.folder.take(name);
    if (fault === 'lose') context.lose();
    if (fault !== undefined) return new Promise<never>(() => undefined);
    return result;
  });
  return server;
}

function text(value: string): CallToolResult {
  return { content: [{ type: 'text', text: value }] };
}

/** One call's effect and answer. */
function callTool(context: UpstreamContext, name: string, args: Record<string, unknown>, executionId: string | null, attempt: number | null): CallToolResult {
  const { folder } = context;
  const record = (effect: boolean) => folder.record({ tool: name, executionId, attempt, args, effect, pid: process.pid });
  switch (name) {
    case 'read_balance': {
      const balance = { account: String(args['account']), cents: 10_000 };
      return { content: [{ type: 'text', text: JSON.stringify(balance) }], structuredContent: balance };
    }
    case 'set_limit': {
      // A careful upstream: a call it has seen under this execution id is answered again, not applied again.
      const earlier = executionId === null ? undefined : folder.seen(name, executionId);
      if (earlier !== undefined) {
        record(false);
        return text(`the limit of ${String(args['account'])} was already set to ${String(earlier.args['cents'])} by attempt ${earlier.attempt ?? '?'} of ${executionId}`);
      }
      record(true);
      return text(`the limit of ${String(args['account'])} is now ${String(args['cents'])} cents`);
    }
    case 'send_payment': {
      const cents = Number(args['cents']);
      if (!(cents > 0)) return { ...text(`a payment of ${cents} cents is refused: the amount must be positive`), isError: true };
      // A careless upstream: every call is a payment.
      record(true);
      return text(`paid ${cents} cents to ${String(args['to'])}`);
    }
    case 'echo_credential':
      return text(`the upstream was given: ${context.authorization?.() ?? 'no Authorization header'}`);
    default:
      return { ...text(`no tool ${name}`), isError: true };
  }
}

export interface HttpUpstreamOptions {
  /** The upstream's folder (effect log, faults, variant). */
  readonly dir: string;
  /** The bearer token every request must carry; none: any request is served. */
  readonly token?: string;
  /** `both`: 2026-07-28 and 2025-11-25, negotiated; `legacy`: 2025-11-25 alone, with sessions and a GET stream. */
  readonly era?: 'both' | 'legacy';
  /** The port to listen on (0: any free one). */
  readonly port?: number;
  /** Whether it declares `tools.listChanged` (default true): without it, a client learns of a change only by asking. */
  readonly notifies?: boolean;
}

/** An upstream served over Streamable HTTP on 127.0.0.1. */
export interface HttpUpstream {
  readonly url: string;
  readonly port: number;
  readonly folder: UpstreamFolder;
  /** While on, nothing listens on its port: a connection is refused and nothing reaches it. */
  refuse(on: boolean): Promise<void>;
  /** The bearer token it takes from now on (a credential rotated at the upstream). */
  setToken(token: string): void;
  /** Lists the `variant` definitions from now on, and says so to the clients that listen. */
  change(variant: UpstreamVariant): Promise<void>;
  close(): Promise<void>;
}

/** Starts the upstream over Streamable HTTP. */
export async function startHttpUpstream(options: HttpUpstreamOptions): Promise<HttpUpstream> {
  const folder = new UpstreamFolder(options.dir);
  const current = new AsyncLocalStorage<{ readonly socket: Socket; readonly authorization: string | undefined }>();
  const context: UpstreamContext = {
    folder,
    lose: () => current.getStore()?.socket.destroy(),
    authorization: () => current.getStore()?.authorization,
    notifies: options.notifies ?? true,
  };
  const handler = options.era === 'legacy' ? legacyHandler(context) : modernHandler(context);
  let token = options.token;
  const sockets = new Set<Socket>();
  const serve = async (req: IncomingMessage, res: ServerResponse) => {
    if (token !== undefined && req.headers.authorization !== `Bearer ${token}`) {
      // A careless upstream: its refusal quotes what it was sent (the channel must not pass that on anywhere).
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end(JSON.stringify({ error: 'unauthorized', got: req.headers.authorization ?? null }));
      return;
    }
    const request = await webRequest(req, res);
    const response = await current.run({ socket: req.socket, authorization: req.headers.authorization }, () => handler.fetch(request));
    await writeResponse(response, res);
  };
  let server: HttpServer | undefined;
  let port = options.port ?? 0;
  const listen = async () => {
    const opened = createServer((req, res) => void serve(req, res).catch(() => res.destroy()));
    opened.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      opened.once('error', reject);
      opened.listen(port, '127.0.0.1', () => resolve());
    });
    port = (opened.address() as { port: number }).port;
    server = opened;
  };
  const stop = async () => {
    const closing = server;
    server = undefined;
    if (closing === undefined) return;
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => closing.close(() => resolve()));
  };
  await listen();
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    folder,
    refuse: async (on) => (on ? stop() : server === undefined ? listen() : undefined),
    setToken: (next) => void (token = next),
    async change(variant) {
      folder.variant = variant;
      await handler.changed();
    },
    async close() {
      await stop();
      await handler.close();
    },
  };
}

interface UpstreamHandler {
  fetch(request: Request): Promise<Response>;
  /** Tells the clients that listen that the tools changed. */
  changed(): Promise<void>;
  close(): Promise<void>;
}

/** Both revisions from one factory (the SDK's createMcpHandler): 2026-07-28 per request, 2025-11-25 stateless. */
function modernHandler(context: UpstreamContext): UpstreamHandler {
  const handler = createMcpHandler(() => upstreamServer(context), {});
  return {
    fetch: (request) => handler.fetch(request),
    changed: async () => handler.notify.toolsChanged(),
    close: () => handler.close(),
  };
}

/** 2025-11-25 alone, with sessions: each session's server sends list_changed on its GET stream. */
function legacyHandler(context: UpstreamContext): UpstreamHandler {
  const sessions = new Map<string, { transport: WebStandardStreamableHTTPServerTransport; server: Server }>();
  return {
    async fetch(request) {
      const id = request.headers.get('mcp-session-id');
      const known = id === null ? undefined : sessions.get(id);
      if (known !== undefined) return known.transport.handleRequest(request);
      if (id !== null) return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }), { status: 404 });
      const server = upstreamServer(context);
      const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => void sessions.set(sessionId, { transport, server }),
        onsessionclosed: (sessionId) => void sessions.delete(sessionId),
      });
      await server.connect(transport);
      return transport.handleRequest(request);
    },
    async changed() {
      await Promise.all([...sessions.values()].map(({ server }) => server.sendToolListChanged().catch(() => undefined)));
    },
    async close() {
      await Promise.all([...sessions.values()].map(({ server }) => server.close().catch(() => undefined)));
      sessions.clear();
    },
  };
}

async function webRequest(req: IncomingMessage, res: ServerResponse): Promise<Request> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) for (const each of value) headers.append(name, each);
  }
  // The SDK ends a request's work when its client goes away (a stream closed, a connection cut).
  const closed = new AbortController();
  res.once('close', () => closed.abort());
  return new Request(`http://127.0.0.1${req.url ?? '/'}`, { method: req.method ?? 'GET', headers, signal: closed.signal, ...(body.length > 0 ? { body } : {}) });
}

async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
  res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
  if (response.body === null) {
    res.end();
    return;
  }
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    if (res.destroyed) return;
    res.write(chunk);
  }
  res.end();
}

/**
 * Serves the upstream on this process's stdin and stdout, as a child the channel starts: both revisions (the SDK's
 * serveStdio) or 2025-11-25 alone. It exits when its stdin closes, as the MCP stdio transport asks of a server — so
 * that a channel killed with kill -9 leaves no upstream behind.
 */
export async function serveStdioUpstream(options: { readonly dir: string; readonly era?: 'both' | 'legacy' }): Promise<void> {
  const folder = new UpstreamFolder(options.dir);
  if (folder.isDown()) {
    process.stderr.write('the test upstream is down (a test wrote its down file)\n');
    process.exit(3);
  }
  folder.register();
  // A lost answer over stdio: the child dies after the effect, before it answers.
  const context: UpstreamContext = { folder, lose: () => process.exit(1) };
  process.stdin.once('end', () => process.exit(0));
  process.stdin.once('close', () => process.exit(0));
  if (options.era === 'legacy') {
    const { StdioServerTransport } = await import('@modelcontextprotocol/server/stdio');
    await upstreamServer(context).connect(new StdioServerTransport());
    return;
  }
  const { serveStdio } = await import('@modelcontextprotocol/server/stdio');
  serveStdio(() => upstreamServer(context));
}

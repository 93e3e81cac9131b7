import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  WebStandardStreamableHTTPServerTransport,
  type WebStandardStreamableHTTPServerTransportOptions,
} from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import {
  DEFAULT_NEGOTIATED_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { answeredId } from './delivery-evidence';
import { plainToolCall } from './mcp-server';

/** The first revision whose clients read a priming event (an SSE event with empty data). */
export const PRIMING_VERSION = '2025-11-25';

/**
 * The protocol version a request of a session is served at: its `Mcp-Protocol-Version` header, or the session's
 * own version (`negotiated`) when the header is missing or names an older version the SDK still supports. The SDK
 * decides from the header whether a response stream starts with a priming event, and a client that said at
 * initialize that it reads them would otherwise get a stream it cannot resume. An unsupported header is kept, for
 * the SDK to refuse.
 */
export function servedProtocolVersion(declared: string | undefined, negotiated: string | undefined): string | undefined {
  if (
    negotiated !== undefined &&
    negotiated >= PRIMING_VERSION &&
    (declared === undefined || (declared < PRIMING_VERSION && SUPPORTED_PROTOCOL_VERSIONS.includes(declared)))
  ) {
    return negotiated;
  }
  return declared;
}

/**
 * Holds what is written to `res` until the end of this turn of the event loop, then sends it in one write: a
 * stream's head with the priming event the stream starts with, an answer with the stream's end.
 */
function writeTogetherThisTurn(res: ServerResponse): void {
  res.cork();
  process.nextTick(() => res.uncork());
}

/** Writes a web `Response` (the SDK's answer) to a Node response; resolves once it is written or the client has gone. */
export async function pipeResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => (headers[name] = value));
  res.writeHead(response.status, headers);
  if (response.body === null) {
    res.end();
    return;
  }
  // The head goes out in this turn whatever the stream holds: a client learns at once that its stream is open.
  writeTogetherThisTurn(res);
  res.flushHeaders();
  const reader = response.body.getReader();
  res.on('close', () => void reader.cancel().catch(() => undefined));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (res.destroyed) break;
      writeTogetherThisTurn(res);
      res.write(value);
    }
  } catch {
    // The client went away while the stream was open; the close handler cancelled the reader.
  }
  if (!res.destroyed) res.end();
}

/** How the SDK's transport writes to a response stream: `enqueue(encoder.encode(text))`, `close()`. */
interface StreamWriter {
  enqueue(chunk: string): void;
  close(): void;
}

/** An encoder that leaves the text as it is: the stream below writes text, which Node encodes on the socket. */
const TEXT = { encode: (text: string) => text };

/**
 * What of the SDK transport's own state (SDK 1.32) a tools/call POST answered by `answerToolCallPost` shares with
 * it: the request's stream is registered where the SDK's `send`, `closeSSEStream`, `close` and a resumed stream's
 * replay look for it, as its own `handlePostRequest` registers one.
 */
interface SdkTransportState {
  readonly _streamMapping: Map<string, { controller?: StreamWriter; encoder?: typeof TEXT; cleanup: () => void }>;
  readonly _requestToStreamMapping: Map<RequestId, string>;
  readonly _resumableStreams: Set<string>;
  readonly _eventStore?: unknown;
  readonly _enableJsonResponse: boolean;
  readonly _enableDnsRebindingProtection: boolean;
  readonly _initialized: boolean;
  readonly _closed: boolean;
  writePrimingEvent(controller: StreamWriter, encoder: typeof TEXT, streamId: string, protocolVersion: string): Promise<void>;
  startKeepAlive(controller: StreamWriter, encoder: typeof TEXT): ReturnType<typeof setInterval> | undefined;
  createJsonErrorResponse(status: number, code: number, message: string, options?: { data?: string }): Response;
}

/** Whether the transport keeps its state as `SdkTransportState` says (an SDK that keeps it otherwise serves every POST itself). */
function sharesSdkState(state: SdkTransportState): boolean {
  return (
    state._streamMapping instanceof Map &&
    state._requestToStreamMapping instanceof Map &&
    state._resumableStreams instanceof Set &&
    typeof state.writePrimingEvent === 'function' &&
    typeof state.startKeepAlive === 'function' &&
    typeof state.createJsonErrorResponse === 'function'
  );
}

/** The head of a POST's SSE response, as the SDK's transport sets it (names in the order a `Headers` lists them). */
function sseHead(sessionId: string): Record<string, string> {
  return {
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'content-type': 'text/event-stream',
    'mcp-session-id': sessionId,
    'x-accel-buffering': 'no',
  };
}

/**
 * A POST's response stream written straight to Node's response. Until `open` it keeps what is written (the priming
 * event), as the SDK's stream holds it until its `Response` is handed out; once the response has closed, a write
 * throws, as a cancelled stream's controller does (the SDK then counts the message as not written).
 */
class ResponseStream implements StreamWriter {
  private held: string[] | undefined = [];
  private ended = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly head: Record<string, string>,
  ) {}

  enqueue(chunk: string): void {
    if (this.ended || this.res.destroyed || this.res.writableEnded) throw new TypeError('the response stream is closed');
    if (this.held !== undefined) {
      this.held.push(chunk);
      return;
    }
    writeTogetherThisTurn(this.res);
    this.res.write(chunk);
  }

  close(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.held === undefined && !this.res.destroyed) this.res.end();
  }

  /** Writes the head (in this turn, whatever else comes) and what was held; nothing once the client has gone. */
  open(): void {
    const held = this.held ?? [];
    this.held = undefined;
    if (this.res.destroyed) return;
    this.res.writeHead(200, this.head);
    writeTogetherThisTurn(this.res);
    this.res.flushHeaders();
    for (const chunk of held) this.res.write(chunk);
    if (this.ended) this.res.end();
  }
}

/**
 * The tools/call a POST carries when it is the plain case `answerToolCallPost` serves: one JSON-RPC request the SDK's
 * message schema accepts as it is (no other member; an integer or string id; params an object whose `_meta`, if any,
 * is an object with a valid progress token or none) and that `connectMcpServer` answers itself (`plainToolCall`: no
 * task asked for, none it belongs to).
 */
function plainToolCallRequest(message: unknown): (JSONRPCMessage & { id: RequestId }) | undefined {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return undefined;
  const m = message as Record<string, unknown>;
  for (const key in m) if (key !== 'jsonrpc' && key !== 'id' && key !== 'method' && key !== 'params') return undefined;
  if (m['jsonrpc'] !== '2.0' || !(typeof m['id'] === 'string' || Number.isSafeInteger(m['id']))) return undefined;
  const params = m['params'];
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return undefined;
  const meta = (params as { _meta?: unknown })._meta;
  if (meta !== undefined) {
    if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return undefined;
    const { progressToken } = meta as { progressToken?: unknown };
    if (progressToken !== undefined && typeof progressToken !== 'string' && !Number.isSafeInteger(progressToken)) return undefined;
  }
  return plainToolCall(message as JSONRPCMessage);
}

/**
 * The SDK's Streamable HTTP transport, reporting when the response to a request has been sent: until then the
 * request's id is taken on its session (the SDK maps responses to streams by id alone).
 */
export class SessionTransport extends WebStandardStreamableHTTPServerTransport {
  constructor(
    options: WebStandardStreamableHTTPServerTransportOptions,
    private readonly responseSent: (requestId: RequestId) => void,
  ) {
    super(options);
  }

  override async send(message: JSONRPCMessage, options?: { relatedRequestId?: RequestId }): Promise<void> {
    try {
      await super.send(message, options);
    } finally {
      const answered = answeredId(message);
      if (answered !== undefined) this.responseSent(answered);
    }
  }

  /**
   * Serves a POST of this session that carries one plain tools/call as `handleRequest` serves it — the same checks,
   * the same stream registered in the transport's state, the same priming event, the message handed to the server,
   * the same head and events on the wire — writing the stream to `res` itself: no web `Request`, no `ReadableStream`
   * and `Response` to copy into Node's, and none of the message schema's four parses of a request whose shape is
   * checked here. Answers the HTTP status written; `undefined` when the request is not that case (a header the SDK
   * would refuse or has to read closely, a message that is not a plain tools/call), and then nothing was done:
   * `handleRequest` serves it.
   */
  async answerToolCallPost(req: IncomingMessage, res: ServerResponse, message: unknown, negotiated: string | undefined): Promise<number | undefined> {
    const state = this as unknown as SdkTransportState;
    if (!sharesSdkState(state)) return undefined;
    const call = plainToolCallRequest(message);
    if (call === undefined || state._closed || !state._initialized || state._enableJsonResponse || state._enableDnsRebindingProtection) return undefined;
    const sessionId = this.sessionId;
    if (sessionId === undefined || req.headers['mcp-session-id'] !== sessionId) return undefined;
    const accept = req.headers.accept;
    if (accept === undefined || !accept.includes('application/json') || !accept.includes('text/event-stream')) return undefined;
    if (!isJsonContentType(req.headers['content-type'])) return undefined;
    const declared = req.headers['mcp-protocol-version'];
    if (Array.isArray(declared)) return undefined;
    const version = servedProtocolVersion(declared, negotiated);
    if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return undefined;
    const protocolVersion = version ?? DEFAULT_NEGOTIATED_PROTOCOL_VERSION;

    const streamId = randomUUID();
    const stream = new ResponseStream(res, sseHead(sessionId));
    let keepAlive: ReturnType<typeof setInterval> | undefined;
    state._streamMapping.set(streamId, {
      controller: stream,
      encoder: TEXT,
      cleanup: () => {
        if (keepAlive !== undefined) clearInterval(keepAlive);
        state._streamMapping.delete(streamId);
        stream.close();
      },
    });
    state._requestToStreamMapping.set(call.id, streamId);
    // The client went away: as the SDK's stream cancelled, the registration goes unless a resume replaced it.
    res.once('close', () => {
      if (keepAlive !== undefined) clearInterval(keepAlive);
      if (state._streamMapping.get(streamId)?.controller === stream) state._streamMapping.delete(streamId);
    });
    try {
      // The call starts once its priming event is stored. The resumption file stores the messages of a turn in one
      // transaction after it, so the calls whose requests came in one turn start together, in one run of the
      // microtask queue; a build that started each at once spent a fifth more a call at concurrency 32
      // (docs/benchmarks.md, "The priming event is a meeting point too").
      await state.writePrimingEvent(stream, TEXT, streamId, protocolVersion);
      const resumable = state._eventStore !== undefined && protocolVersion >= PRIMING_VERSION;
      this.onmessage?.(call, {
        requestInfo: { headers: req.headers },
        ...(resumable ? { closeSSEStream: () => this.closeSSEStream(call.id), closeStandaloneSSEStream: () => this.closeStandaloneSSEStream() } : {}),
      });
    } catch (error) {
      // As the SDK's: nothing can use the stream, which is released with its request, and the POST is refused.
      if (state._streamMapping.get(streamId)?.controller === stream) state._streamMapping.delete(streamId);
      state._resumableStreams.delete(streamId);
      state._requestToStreamMapping.delete(call.id);
      this.onerror?.(error as Error);
      await pipeResponse(state.createJsonErrorResponse(400, -32700, 'Parse error', { data: String(error) }), res);
      return 400;
    }
    if (state._streamMapping.get(streamId)?.controller === stream) keepAlive = state.startKeepAlive(stream, TEXT);
    stream.open();
    return 200;
  }
}

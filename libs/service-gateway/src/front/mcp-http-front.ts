import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Logger } from '@nestjs/common';
import { isLegacyRequest, type McpHttpHandler } from '@modelcontextprotocol/server';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  isInitializeRequest,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import type { ToolContract } from '@oncegate/contracts';
import { sessionStream } from '@oncegate/domain';
import { EventStoreUnavailableError, newEventId, type EventStore } from '@oncegate/event-store';
import { isoNow, type Clock } from '@oncegate/execution-journal';
import { listenFor, tokenRefusals } from '@oncegate/host-operations';
import type { AgentDirectory } from '@oncegate/host-principals';
import type { DeliverySettlement, DeliveryWatch } from '@oncegate/service-result-delivery';
import { answeredId, cancelledRequestId, requestKey, SessionDeliveries } from './delivery-evidence';
import { checkHostAndOrigin, type HostOriginRules } from './host-origin-guard';
import { initializeProblem, refuseMalformedCall } from './incoming-checks';
import { LiveSessions, type LiveSessionLimits } from './live-sessions';
import { ONCEGATE_ERROR_CODES, STORAGE_UNAVAILABLE_MESSAGE } from './mcp-errors';
import { connectMcpServer, createMcpServer, errorResponse, runOfHeaders, type ConnectionFacts } from './mcp-server';
import { modernAuthInfo, modernMcpHandler } from './modern-mcp';
import { looksLikeJwt, type OAuthResource } from './oauth-resource';
import { ResumedCalls } from './resumed-calls';
import { pipeResponse, servedProtocolVersion, SessionTransport } from './session-transport';
import { readBodyWithin } from './request-body';
import { parseEventId, STANDALONE_STREAM_ID } from './sse-event-id';
import type { SseResumptionStore, StreamCalls } from './sse-resumption-store';
import type { ToolCalls } from './tool-calls';

/** Another API on the same listener under its own path prefix (e.g. `/approvals`); it authenticates and answers itself. */
export interface MountedApi {
  readonly prefix: string;
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

export interface McpHttpFrontOptions {
  readonly host: string;
  readonly port: number;
  readonly path: string;
  readonly maxRequestBytes: number;
  readonly store: EventStore;
  readonly agents: AgentDirectory;
  readonly tools: ReadonlyMap<string, ToolContract>;
  readonly toolCalls: ToolCalls;
  readonly resumption: SseResumptionStore;
  readonly clock: Clock;
  /** Which `Host` and `Origin` headers every endpoint but `/healthz` accepts. */
  readonly hostRules: HostOriginRules;
  /** APIs served beside the MCP endpoint; none by default. */
  readonly mounted?: readonly MountedApi[];
  /** How many sessions stay in memory and for how long; default `DEFAULT_SESSION_LIMITS`. */
  readonly sessionLimits?: LiveSessionLimits;
  /** The `retry` field of every priming event (`listen.sse_retry`); default `DEFAULT_SSE_RETRY_MS`. */
  readonly sseRetryMs?: number;
  /**
   * Test only (`testing.unauthenticated_agent`): the actor a request without an `Authorization` header is served
   * as. Absent (the default): such a request gets 401. A request that names a token is always checked.
   */
  readonly unauthenticatedActor?: string;
  /** Access tokens of the organisation's identity provider (`oauth`), beside the agent tokens; none by default. */
  readonly oauth?: OAuthResource;
}

export const DEFAULT_SESSION_LIMITS: LiveSessionLimits = { idleMs: 30 * 60_000, perActor: 100 };
export const DEFAULT_SSE_RETRY_MS = 2_000;

interface Session {
  readonly id: string;
  readonly actor: string;
  readonly transport: SessionTransport;
  readonly server: Server;
  /** What the session proves about the responses written on it. */
  readonly deliveries: SessionDeliveries;
  /** Request ids (`requestKey`) whose response has not been sent yet: another request may not take one. */
  readonly inFlight: Set<string>;
  /** Response streams this process opened (their priming events), within the resumption retention. */
  readonly streams: OpenedStreams;
  /** The protocol version negotiated by the session's initialize, once known. */
  protocolVersion: string | undefined;
}

/** Data of a `SessionStarted` event: how an MCP session was initialised, so a restart can restore it. */
export interface SessionStartedData {
  readonly sessionId: string;
  readonly actor: string;
  /** The client's `initialize` request, as it arrived. */
  readonly initialize: JSONRPCMessage;
  /** The protocol version the client asked for; `null` when it named none. */
  readonly protocolVersion: string | null;
}

/** Data of a `SessionClosed` event: the client ended the session (HTTP DELETE); it is never restored. */
export interface SessionClosedData {
  readonly sessionId: string;
  readonly closedAt: string;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly headers: Record<string, string> = {},
    /** The JSON-RPC id of the request refused, when known. */
    readonly id: string | number | null = null,
  ) {
    super(message);
  }
}

function jsonRpcError(res: ServerResponse, error: HttpError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(error.status, { 'content-type': 'application/json', ...error.headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: error.id, error: { code: error.code, message: error.message } }));
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return readBodyWithin(req, limit, (declared) =>
    new HttpError(
      413,
      -32600,
      declared === undefined
        ? `Request body exceeds the limit of ${limit} bytes; nothing was accepted`
        : `Request body of ${declared} bytes exceeds the limit of ${limit} bytes; nothing was accepted`,
      { connection: 'close' },
    ),
  );
}

/** The version the server answers an initialize with: the one asked for when supported, else the latest. */
function negotiatedVersion(requested: unknown): string {
  return typeof requested === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION;
}

/**
 * `negotiated` is the version of the request's session (see `servedProtocolVersion`): the SDK reads the version a
 * request is served at from its `Mcp-Protocol-Version` header, which is set to it here.
 */
function toWebRequest(req: IncomingMessage, body: Buffer | undefined, negotiated?: string, signal?: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else if (value !== undefined) headers.set(name, value);
  }
  // `*/*` accepts both forms the transport may answer with; the SDK only looks for the two types by name.
  if (/(^|,)\s*\*\/\*/.test(headers.get('accept') ?? '')) headers.set('accept', 'application/json, text/event-stream');
  const declared = headers.get('mcp-protocol-version') ?? undefined;
  const served = servedProtocolVersion(declared, negotiated);
  if (served !== undefined && served !== declared) headers.set('mcp-protocol-version', served);
  const url = `http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`;
  return new Request(url, { method: req.method, headers, ...(body && body.length > 0 ? { body } : {}), ...(signal ? { signal } : {}) });
}

/**
 * What a 2026-07-28 response stream shows of its answers once it closes. There is no session, so no later request can
 * prove one was read: written in full, the answer stays unproven; closed before that, it was not delivered.
 */
function responseStreamWatch(res: ServerResponse): DeliveryWatch {
  const settled = new Promise<DeliverySettlement>((resolve) =>
    res.once('close', () =>
      resolve(
        res.writableFinished
          ? { kind: 'unproven', reason: 'written in full; on the 2026-07-28 revision no later request can show that it was read' }
          : { kind: 'not_delivered', reason: 'the response stream closed before the answer was written' },
      ),
    ),
  );
  return { settled };
}

/**
 * The Streamable HTTP front: bearer-token authentication (401 and nothing recorded without a valid token),
 * size and JSON checks before the SDK sees a byte, one SDK transport and server per session, sessions recorded
 * in the sessions journal and restored after a restart, and a delivery watch per tools/call response.
 */
export class McpHttpFront {
  private readonly log = new Logger('mcp-http');
  private readonly sessions: LiveSessions<Session>;
  /** Restores under way, so concurrent requests on one let-go session share one transport. */
  private readonly restoring = new Map<string, Promise<Session | undefined>>();
  /** The tools/calls of the POST being handled, for its response stream's priming event. */
  private readonly postCalls = new AsyncLocalStorage<StreamCalls | undefined>();
  private readonly resumed: ResumedCalls;
  /** The 2026-07-28 revision: no sessions; requests without a session that carry its envelope go here. */
  private readonly modern: McpHttpHandler;
  /** Per 2026-07-28 request: what its response stream showed of the answer (written in full, or closed first). */
  private readonly modernDeliveries = new WeakMap<Request, DeliveryWatch>();
  private http: HttpServer | undefined;
  private storageLoggedAt = 0;

  constructor(private readonly options: McpHttpFrontOptions) {
    this.sessions = new LiveSessions(this.sessionLimits(), () => options.clock.now().getTime(), (session) => session.transport.close());
    this.resumed = new ResumedCalls(options.store, options.resumption, options.toolCalls);
    this.modern = modernMcpHandler(options.tools, options.toolCalls, {
      maxRequestBytes: options.maxRequestBytes,
      onerror: (error) => this.log.warn(`2026-07-28 request: ${error.message}`),
      deliveryOf: (request) => (request === undefined ? undefined : this.modernDeliveries.get(request)),
    });
  }

  /** Sessions held in memory (of one agent, or all); the rest of the journal's sessions are restored on demand. */
  liveSessions(actor?: string): number {
    return this.sessions.count(actor);
  }

  async listen(): Promise<{ url: string; port: number }> {
    this.http = createServer((req, res) => {
      this.route(req, res).catch((error: unknown) => {
        if (error instanceof HttpError) return jsonRpcError(res, error);
        if (error instanceof EventStoreUnavailableError) return this.storageUnavailable(res, error);
        this.log.error(`request failed: ${(error as Error)?.message ?? error}`);
        jsonRpcError(res, new HttpError(500, -32603, 'Internal error'));
      });
    });
    this.http.keepAliveTimeout = 65_000;
    await listenFor('mcp', this.http, this.options.host, this.options.port);
    this.sessions.start();
    const port = (this.http.address() as AddressInfo).port;
    const host = this.options.host.includes(':') ? `[${this.options.host}]` : this.options.host;
    return { url: `http://${host}:${port}${this.options.path}`, port };
  }

  async close(): Promise<void> {
    await this.modern.close().catch(() => undefined);
    this.sessions.stop();
    for (const session of this.sessions.values()) {
      // The sessions survive a restart, but the evidence this process kept for them does not.
      session.deliveries.end('the gateway stopped before anything proved receipt');
      await session.transport.close().catch(() => undefined);
    }
    this.sessions.clear();
    if (this.http) {
      this.http.closeAllConnections();
      await new Promise<void>((resolve) => this.http!.close(() => resolve()));
    }
    await this.options.toolCalls.answersRecorded();
  }

  /** 503 for a request that needed a write the journal cannot make now; the cause goes to the log at most every 10 s. */
  private storageUnavailable(res: ServerResponse, error: EventStoreUnavailableError): void {
    const now = this.options.clock.now().getTime();
    if (now - this.storageLoggedAt >= 10_000) {
      this.storageLoggedAt = now;
      this.log.warn(error.message);
    }
    jsonRpcError(res, new HttpError(503, ONCEGATE_ERROR_CODES.storageUnavailable, STORAGE_UNAVAILABLE_MESSAGE, { 'retry-after': '5' }));
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz' && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"ok"}');
      return;
    }
    const guard = checkHostAndOrigin(req.headers, this.options.hostRules);
    const oauth = this.options.oauth;
    if (guard.allowed && oauth !== undefined && req.method === 'GET' && oauth.metadataPaths.includes(path ?? '')) {
      // RFC 9728: where an MCP client finds the authorization server; public, like the challenge that points here.
      res.writeHead(200, { 'content-type': 'application/json', 'access-control-allow-origin': '*', 'cache-control': 'max-age=300' });
      res.end(JSON.stringify(oauth.metadata()));
      return;
    }
    if (!guard.allowed) {
      // Refused before the body is read or the token looked at: nothing is parsed or recorded.
      req.resume();
      throw new HttpError(403, -32000, guard.reason, { connection: 'close' });
    }
    const mounted = this.options.mounted?.find((api) => path === api.prefix || path?.startsWith(`${api.prefix}/`));
    if (mounted !== undefined) return mounted.handle(req, res);
    if (path !== this.options.path) throw new HttpError(404, -32601, `No MCP endpoint at ${path}; use ${this.options.path}`);
    const actor = await this.authenticate(req);
    if (req.method === 'POST') return this.post(req, res, actor);
    if (req.method === 'GET' || req.method === 'DELETE') return this.sessionRequest(req, res, actor);
    throw new HttpError(405, -32600, `Method ${req.method} not allowed`, { allow: 'GET, POST, DELETE' });
  }

  private async authenticate(req: IncomingMessage): Promise<string> {
    const header = req.headers.authorization;
    if (header === undefined && this.options.unauthenticatedActor !== undefined) return this.options.unauthenticatedActor;
    // Authentication schemes are case-insensitive (RFC 9110 section 11.1): `bearer` is `Bearer`.
    const token = /^bearer +(.+)$/i.exec(header ?? '')?.[1]?.trim();
    const oauth = this.options.oauth;
    if (oauth !== undefined && token !== undefined && looksLikeJwt(token)) {
      const verified = await oauth.agentOf(`Bearer ${token}`);
      if ('actor' in verified) return verified.actor;
      req.resume();
      if (verified.refused.status < 500) tokenRefusals().refused('mcp', 'access_token');
      if (verified.refused.status >= 500) throw new HttpError(503, -32001, `Unavailable: ${verified.refused.description}`, { 'retry-after': '5' });
      throw new HttpError(verified.refused.status, -32001, `Unauthorized: ${verified.refused.description}`, { 'www-authenticate': verified.refused.challenge });
    }
    const verdict = await this.options.agents.verify(token);
    if (!('actor' in verdict)) {
      tokenRefusals().refused('mcp', verdict.refused, verdict.principal === undefined ? undefined : `agent:${verdict.principal}`);
      // Drain the body so the client reads the 401 instead of a reset; nothing is parsed or recorded.
      req.resume();
      throw new HttpError(401, -32001, token === undefined ? 'Unauthorized: a bearer token is required' : 'Unauthorized: unknown or revoked token', {
        // With an identity provider, the challenge tells an MCP client where to get an access token.
        'www-authenticate': oauth === undefined ? 'Bearer realm="oncegate"' : `${oauth.challengeWithoutToken()}, realm="oncegate"`,
      });
    }
    return verdict.actor;
  }

  private async post(req: IncomingMessage, res: ServerResponse, actor: string): Promise<void> {
    const body = await readBody(req, this.options.maxRequestBytes);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      throw new HttpError(400, -32700, 'Parse error: the body is not valid JSON; nothing was accepted');
    }
    const messages = Array.isArray(parsed) ? parsed : [parsed];
    const sessionHeader = req.headers['mcp-session-id'];
    if (sessionHeader === undefined && !messages.some((m) => isInitializeRequest(m))) {
      // Without a session: a request of the 2026-07-28 revision (it carries the revision's envelope), else a
      // 2025-era request that forgot its initialize. The SDK's own classification decides.
      // Its signal aborts when the client closes the response stream before the answer was written: on 2026-07-28,
      // the revision's cancellation.
      const closed = new AbortController();
      const request = toWebRequest(req, body, undefined, closed.signal);
      if (!(await isLegacyRequest(request, parsed, { maxRequestBodySize: this.options.maxRequestBytes }))) {
        res.once('close', () => {
          if (!res.writableFinished) closed.abort();
        });
        return this.postModern(res, request, actor, parsed, messages);
      }
    }
    let session: Session;
    if (sessionHeader === undefined) {
      if (!messages.some((m) => isInitializeRequest(m))) {
        const problem = messages.map(initializeProblem).find((p) => p !== undefined);
        if (problem !== undefined) throw new HttpError(400, -32602, `Invalid params: ${problem}; nothing was accepted`);
        throw new HttpError(400, -32000, 'Bad Request: no session id; start with an initialize request');
      }
      session = await this.newSession(actor);
      session.protocolVersion = negotiatedVersion((messages.find((m) => isInitializeRequest(m)) as { params?: { protocolVersion?: unknown } }).params?.protocolVersion);
    } else {
      session = await this.existingSession(String(sessionHeader), actor);
    }
    res.once('close', this.sessions.use(session.id));
    const requestIds = this.admit(session, messages);
    for (const message of messages) this.received(session, message);
    const callIds = this.watchResponses(session, messages, res);
    let response: Response;
    try {
      // Where a resumed stream's calls are searched from after a restart: any position already committed will do, so
      // the one the store knows without a round trip on the call's path, where it has one.
      const calls = callIds.length === 0 ? undefined : { requestIds: callIds, journalPosition: this.options.store.seenPosition?.() ?? (await this.options.store.headPosition()) };
      // One plain tools/call on a session: the transport writes its stream to `res` itself.
      const status =
        sessionHeader === undefined || callIds.length !== 1
          ? undefined
          : await this.postCalls.run(calls, () => session.transport.answerToolCallPost(req, res, parsed, session.protocolVersion));
      if (status !== undefined) {
        if (status !== 200) requestIds.forEach((id) => session.inFlight.delete(id));
        return;
      }
      // The transport takes the body parsed and never reads the request's: a request without one spares a stream.
      response = await this.postCalls.run(calls, () => this.handleOrDiscard(session, sessionHeader === undefined, toWebRequest(req, undefined, session.protocolVersion), parsed));
    } catch (error) {
      requestIds.forEach((id) => session.inFlight.delete(id));
      throw error;
    }
    // Refused by the SDK before any handler ran: no response will be sent for these ids.
    if (!response.ok) requestIds.forEach((id) => session.inFlight.delete(id));
    if (sessionHeader === undefined && session.transport.sessionId !== undefined) {
      // Recorded first: a session the journal does not know could not be restored, so it is not kept either.
      await this.recordSession(session, messages.find((m) => isInitializeRequest(m)) as unknown as JSONRPCMessage).catch(
        async (error: unknown) => {
          await response.body?.cancel();
          await session.transport.close();
          throw error;
        },
      );
      this.sessions.set(session);
      res.once('close', this.sessions.use(session.id));
    }
    await pipeResponse(response, res);
  }

  /**
   * A request of the 2026-07-28 revision: served by the v2 SDK's per-request handler, as the authenticated agent.
   * A malformed tools/call is refused before the SDK parses it, as on a session.
   */
  private async postModern(res: ServerResponse, request: Request, actor: string, parsed: unknown, messages: unknown[]): Promise<void> {
    for (const message of messages) {
      const refused = refuseMalformedCall(message);
      if (refused === undefined) continue;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(errorResponse((message as { id: string | number }).id, refused)));
      return;
    }
    this.modernDeliveries.set(request, responseStreamWatch(res));
    const response = await this.modern.fetch(request, { parsedBody: parsed, authInfo: modernAuthInfo(actor) });
    await pipeResponse(response, res);
  }

  /**
   * Takes the request ids of a POST on its session. The SDK maps a response to its stream by request id alone,
   * so a second request with the id of one still awaiting its response would cross the two answers: it is
   * refused before the SDK sees it, and nothing is accepted for it.
   */
  private admit(session: Session, messages: unknown[]): string[] {
    const ids = messages.flatMap((message) => {
      const m = message as { method?: unknown; id?: unknown } | null;
      return typeof m?.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number') ? [requestKey(m.id)] : [];
    });
    const taken = ids.find((id, index) => session.inFlight.has(id) || ids.indexOf(id) !== index);
    if (taken !== undefined) {
      throw new HttpError(
        409,
        -32600,
        `Invalid Request: request id ${taken} is already in flight on this session; wait for its answer or use another id. Nothing was accepted`,
        {},
        JSON.parse(taken) as string | number,
      );
    }
    ids.forEach((id) => session.inFlight.add(id));
    return ids;
  }

  /** A message from the client: evidence for earlier responses; a cancel frees its request id. */
  private received(session: Session, message: unknown): void {
    session.deliveries.received(message);
    const cancelled = cancelledRequestId(message);
    if (cancelled !== undefined) session.inFlight.delete(requestKey(cancelled));
  }

  /** Hands the request to the session's transport; a new session the SDK refused is closed, never kept. */
  private async handleOrDiscard(session: Session, isNew: boolean, request: Request, parsed: unknown): Promise<Response> {
    try {
      const response = await session.transport.handleRequest(request, { parsedBody: parsed });
      if (isNew && session.transport.sessionId === undefined) await session.transport.close();
      return response;
    } catch (error) {
      if (isNew) await session.transport.close().catch(() => undefined);
      throw error;
    }
  }

  /** One watch per tools/call of this POST, settled by evidence; the stream's end says whether it was written. */
  private watchResponses(session: Session, messages: unknown[], res: ServerResponse): (string | number)[] {
    const ids: (string | number)[] = [];
    for (const message of messages) {
      const m = message as { method?: unknown; id?: unknown; params?: { name?: unknown; arguments?: unknown } } | null;
      if (m?.method === 'tools/call' && (typeof m.id === 'string' || typeof m.id === 'number')) {
        session.deliveries.expect(m.id, m.params);
        ids.push(m.id);
      }
    }
    if (ids.length > 0) res.once('close', () => ids.forEach((id) => session.deliveries.streamEnded(id, res.writableFinished)));
    return ids;
  }

  private async sessionRequest(req: IncomingMessage, res: ServerResponse, actor: string): Promise<void> {
    const header = req.headers['mcp-session-id'];
    if (header === undefined) throw new HttpError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    const session = await this.existingSession(String(header), actor);
    // An open GET stream does not pin the session: letting it go ends the stream, and the next request restores it.
    if (req.method === 'GET') this.sessions.touch(session.id);
    else res.once('close', this.sessions.use(session.id));
    const lastEventId = req.headers['last-event-id'];
    if (req.method === 'GET' && typeof lastEventId === 'string') {
      session.deliveries.resumedAfter(lastEventId);
      if (await this.resumed.handle(session, lastEventId, res)) return;
      await this.refuseLostStream(session, lastEventId);
    }
    const response = await session.transport.handleRequest(toWebRequest(req, undefined));
    if (req.method === 'DELETE' && response.ok) {
      this.sessions.delete(session.id);
      const closed: SessionClosedData = { sessionId: session.id, closedAt: isoNow(this.options.clock) };
      await this.appendSessionEvent(session.id, 'SessionClosed', closed, actor);
    }
    await pipeResponse(response, res);
  }

  /**
   * A resume of a response stream this process never opened and of which nothing is stored (its messages were
   * past `listen.resumption_retention`, or it never existed) would be held open with nothing ever to send: it is
   * refused, as the SDK refuses an event id it cannot read. The session's standalone stream is always reopened.
   */
  private async refuseLostStream(session: Session, lastEventId: string): Promise<void> {
    const last = parseEventId(lastEventId);
    if (last === undefined || last.streamId === STANDALONE_STREAM_ID || session.streams.has(last.streamId)) return;
    if (await this.options.resumption.holds(session.id, last.streamId)) return;
    throw new HttpError(
      400,
      -32000,
      `Bad Request: nothing is stored to resume stream ${last.streamId} of this session (messages are kept for ` +
        'listen.resumption_retention); call again: a repeated call is matched to its execution and gets its answer',
    );
  }

  private connectionFacts(actor: string): ConnectionFacts {
    return {
      actor,
      transport: 'streamable-http',
      runHeader: runOfHeaders,
      deliveryOf: (sessionId, requestId) => (sessionId === undefined ? undefined : this.sessions.get(sessionId)?.deliveries.watchOf(requestId)),
    };
  }

  private async openSession(id: string, actor: string, protocolVersion?: string): Promise<Session> {
    const deliveries = new SessionDeliveries('MCP session');
    const inFlight = new Set<string>();
    const streams = new OpenedStreams(this.options.resumption.retentionMs, () => this.options.clock.now().getTime());
    const events = this.options.resumption.forSession(id, () => this.postCalls.getStore());
    const transport = new SessionTransport(
      {
        sessionIdGenerator: () => id,
        eventStore: {
          ...events,
          storeEvent: async (streamId, message) => {
            const eventId = await events.storeEvent(streamId, message);
            if (Object.keys(message).length === 0) streams.add(streamId);
            else {
              const answered = answeredId(message);
              if (answered !== undefined) deliveries.stored(answered, eventId);
            }
            return eventId;
          },
        },
        maxRequestBodySize: this.options.maxRequestBytes,
        retryInterval: this.options.sseRetryMs ?? DEFAULT_SSE_RETRY_MS,
      },
      (requestId) => inFlight.delete(requestKey(requestId)),
    );
    const server = createMcpServer(this.options.tools, this.options.toolCalls, this.connectionFacts(actor));
    // Chained by the SDK after its own close handling: what is still unproven stays so.
    server.onclose = () => deliveries.end();
    await connectMcpServer(server, transport);
    return { id, actor, transport, server, deliveries, inFlight, streams, protocolVersion };
  }

  /** A session for an initialize; it is kept (and counted) only once the SDK accepted the initialize. */
  private async newSession(actor: string): Promise<Session> {
    if (!(await this.sessions.makeRoom(actor))) {
      throw new HttpError(
        429,
        -32000,
        `Too many sessions: every one of the ${this.sessionLimits().perActor} sessions of ${actor} has a request in flight; ` +
          'reuse one of them or retry when one is answered (listen.sessions_per_agent)',
      );
    }
    return this.openSession(randomUUID(), actor);
  }

  private sessionLimits(): LiveSessionLimits {
    return this.options.sessionLimits ?? DEFAULT_SESSION_LIMITS;
  }

  /** A live session, or one the sessions journal knows (restored after a restart); another actor's is not found. */
  private async existingSession(id: string, actor: string): Promise<Session> {
    const live = this.sessions.get(id);
    if (live !== undefined) {
      if (live.actor !== actor) throw new HttpError(404, -32001, 'Session not found');
      return live;
    }
    let restoring = this.restoring.get(id);
    if (restoring === undefined) {
      restoring = this.restore(id, actor).finally(() => this.restoring.delete(id));
      this.restoring.set(id, restoring);
    }
    const restored = await restoring;
    if (restored === undefined || restored.actor !== actor) throw new HttpError(404, -32001, 'Session not found');
    return restored;
  }

  private async restore(id: string, actor: string): Promise<Session | undefined> {
    if (!/^[0-9a-f-]{36}$/.test(id)) return undefined;
    const events = await this.options.store.readStream(sessionStream(id));
    const started = events.find((e) => e.type === 'SessionStarted')?.data as SessionStartedData | undefined;
    if (started === undefined || started.actor !== actor || events.some((e) => e.type === 'SessionClosed')) return undefined;
    const session = await this.openSession(id, actor, started.protocolVersion === null ? undefined : negotiatedVersion(started.protocolVersion));
    // Prime the fresh transport by replaying the recorded handshake through its public entry point.
    const post = (message: unknown, withSession: boolean) =>
      session.transport.handleRequest(
        new Request('http://localhost/restore', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...(withSession ? { 'mcp-session-id': id, 'mcp-protocol-version': started.protocolVersion ?? '2025-03-26' } : {}),
          },
          body: JSON.stringify(message),
        }),
      );
    const init = await post({ ...(started.initialize as object), id: `restore-${randomUUID()}` }, false);
    await init.body?.cancel();
    const initialized = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, true);
    await initialized.body?.cancel();
    // A restored session counts towards its agent's cap like a new one, but is never refused.
    await this.sessions.makeRoom(actor);
    this.sessions.set(session);
    this.log.log(`restored session ${id} of ${actor} from the sessions journal`);
    return session;
  }

  private async recordSession(session: Session, initialize: JSONRPCMessage): Promise<void> {
    const params = (initialize as { params?: { protocolVersion?: string } }).params;
    const data: SessionStartedData = {
      sessionId: session.id,
      actor: session.actor,
      initialize,
      protocolVersion: params?.protocolVersion ?? null,
    };
    await this.appendSessionEvent(session.id, 'SessionStarted', data, session.actor);
  }

  private async appendSessionEvent(sessionId: string, type: string, data: object, actor: string): Promise<void> {
    const eventId = newEventId();
    await this.options.store.appendToStream(sessionStream(sessionId), [
      { id: eventId, type, data, metadata: { eventId, actor, recordedAt: isoNow(this.options.clock), schemaVersion: 1 } },
    ]);
  }
}

/**
 * The response streams a session opened in this process, each for the resumption retention only: past it nothing of
 * the stream is kept, so a resume of it is refused as after a restart, and a session that lives long holds the ids of
 * its recent streams, not of every POST it ever made.
 */
export class OpenedStreams {
  /** Stream id → when it was opened (ms), oldest first. */
  private readonly opened = new Map<string, number>();

  constructor(
    private readonly retentionMs: number,
    private readonly nowMs: () => number,
  ) {}

  add(streamId: string): void {
    const now = this.nowMs();
    for (const [id, at] of this.opened) {
      if (at >= now - this.retentionMs) break;
      this.opened.delete(id);
    }
    this.opened.delete(streamId);
    this.opened.set(streamId, now);
  }

  has(streamId: string): boolean {
    const at = this.opened.get(streamId);
    return at !== undefined && at >= this.nowMs() - this.retentionMs;
  }

  get size(): number {
    return this.opened.size;
  }
}

import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DemoEndpoints, EFFECT_ENDPOINTS } from './demo-endpoints';
import type { DemoAnswer } from './demo-endpoints';
import { DemoControlError, FaultRules, matches, parseFaultRule } from './fault-rules';
import type { FaultAction, FaultRule } from './fault-rules';
import { DESK_EFFECT_ENDPOINTS, TicketDesk, type Ticket } from './ticket-desk';

export interface DemoTargetOptions {
  /** Default `127.0.0.1`: the demo target is for loopback. */
  readonly host?: string;
  /** Default 8790, the port examples/tools.yaml points at; 0 picks a free one. */
  readonly port?: number;
  /** Clock for the `at` of recorded requests. Default the system clock. */
  readonly now?: () => Date;
}

/**
 * One request the demo target received (control and `/effects` requests are not recorded), or one tool call of the
 * ticket desk at `/mcp`: method `MCP`, the tool as its path, `MCP <tool>` as its endpoint.
 */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  /** `METHOD /pattern`, e.g. `PUT /config/:name`, or `MCP close_ticket`; `null` for an unknown path. */
  readonly endpoint: string | null;
  readonly idempotencyKey: string | null;
  /**
   * SHA-256 (hex) of the `Authorization` header, `null` when there was none: proof of which credential arrived
   * without the log holding it.
   */
  readonly authorizationSha256: string | null;
  /** The W3C `traceparent` header, when the request carried one (a traced gateway sends its attempt's span). */
  readonly traceparent?: string;
  /** ISO 8601. */
  readonly at: string;
  /** True when the request changed state: a payment, a rotation, a config or stock write. */
  readonly effect: boolean;
  /** The status answered; `null` while held, or when the answer never came (hang, reset). */
  readonly status: number | null;
  readonly fault: FaultAction | null;
}

/** What `GET /effects` returns: how many side effects happened, next to how many requests arrived. */
export interface EffectLog {
  readonly total: number;
  readonly requestsTotal: number;
  /** Side effects per endpoint; every endpoint that can have one is listed, from 0. */
  readonly byEndpoint: Record<string, number>;
  readonly requests: readonly RecordedRequest[];
}

export interface DemoTarget {
  /** `http://host:port`, no trailing slash. */
  readonly url: string;
  readonly port: number;
  effects(): EffectLog;
  /** The tickets of the desk at `/mcp`, as they are now. */
  tickets(): Ticket[];
  /** Matching requests are read and applied, but their answers are withheld until `release`. */
  hold(match: string, options?: { readonly times?: number }): void;
  /** Sends the withheld answers matching `match` (all when absent) and drops those hold rules; returns how many. */
  release(match?: string): number;
  /** Adds a fault rule (see FaultRule). */
  behave(rule: FaultRule): void;
  /** Clears state (the desk's tickets too), effects, fault rules and withheld answers (withheld connections are closed). */
  reset(): void;
  close(): Promise<void>;
}

const DEFAULT_PORT = 8790;
const MAX_BODY_BYTES = 1_048_576;

interface HeldAnswer {
  readonly method: string;
  readonly path: string;
  readonly endpoint: string;
  readonly send: () => void;
  readonly drop: () => void;
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): void {
  if (response.destroyed || response.writableEnded) return;
  const isText = typeof body === 'string';
  response.writeHead(status, { 'content-type': isText ? 'text/plain; charset=utf-8' : 'application/json', ...headers });
  response.end(isText ? body : JSON.stringify(body));
}

async function readBody(request: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Starts the bundled demo HTTP target (README.md): the endpoints examples/tools.yaml calls, the ticket desk's MCP server
 * at `/mcp` (examples/upstream-desk.yaml), an effect log at `GET /effects`, and fault controls under `POST /_control/*`.
 */
export async function startDemoTarget(options: DemoTargetOptions = {}): Promise<DemoTarget> {
  const host = options.host ?? '127.0.0.1';
  const now = options.now ?? (() => new Date());
  const endpoints = new DemoEndpoints();
  const rules = new FaultRules();
  let requests: RecordedRequest[] = [];
  let held: HeldAnswer[] = [];
  // The desk's calls join the log as requests of their own: one entry per tool call, whatever HTTP carried it.
  const desk = new TicketDesk((call) =>
    requests.push({
      method: 'MCP',
      path: call.tool,
      endpoint: `MCP ${call.tool}`,
      idempotencyKey: null,
      authorizationSha256: call.authorizationSha256,
      at: now().toISOString(),
      effect: call.effect,
      status: 200,
      fault: null,
    }),
  );

  const effects = (): EffectLog => {
    const byEndpoint: Record<string, number> = Object.fromEntries([...EFFECT_ENDPOINTS, ...DESK_EFFECT_ENDPOINTS].map((endpoint) => [endpoint, 0]));
    for (const request of requests) {
      if (request.effect && request.endpoint !== null) byEndpoint[request.endpoint] = (byEndpoint[request.endpoint] ?? 0) + 1;
    }
    return {
      total: requests.filter((request) => request.effect).length,
      requestsTotal: requests.length,
      byEndpoint,
      requests: requests.map((request) => ({ ...request })),
    };
  };

  const release = (match?: string): number => {
    const releasing = held.filter((answer) => match === undefined || matches(match, answer.method, answer.path, answer.endpoint));
    held = held.filter((answer) => !releasing.includes(answer));
    rules.removeHolds(match);
    for (const answer of releasing) answer.send();
    return releasing.length;
  };

  const reset = (): void => {
    for (const answer of held) answer.drop();
    held = [];
    rules.clear();
    endpoints.reset();
    desk.reset();
    requests = [];
  };

  const control = (action: string, input: Record<string, unknown>): unknown => {
    const times = input['times'];
    switch (action) {
      case 'hold':
      case 'hang':
      case 'reset':
        rules.add(parseFaultRule({ match: input['match'], action, ...(times === undefined ? {} : { times }) }));
        return { ok: true, rules: rules.list() };
      case 'behave':
        rules.add(parseFaultRule(input));
        return { ok: true, rules: rules.list() };
      case 'release': {
        const match = input['match'];
        if (match !== undefined && typeof match !== 'string') throw new DemoControlError('"match" must be a string when given');
        return { released: release(match) };
      }
      case 'reset-state':
        reset();
        return { ok: true };
      default:
        throw new DemoControlError(`unknown control '${action}'; use hold, release, hang, reset, behave or reset-state`);
    }
  };

  /** An MCP request for the desk: handed to the SDK's handler as a web request, its answer (JSON or SSE) streamed back. */
  const serveDesk = async (request: IncomingMessage, body: string, response: ServerResponse): Promise<void> => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(request.headers)) if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    const method = request.method ?? 'GET';
    const withBody = body !== '' && method !== 'GET' && method !== 'HEAD';
    const answer = await desk.handler.fetch(new Request(`http://${request.headers.host ?? 'localhost'}${request.url ?? '/mcp'}`, { method, headers, ...(withBody ? { body } : {}) }));
    response.writeHead(answer.status, Object.fromEntries(answer.headers.entries()));
    if (answer.body !== null) for await (const chunk of answer.body) response.write(chunk);
    response.end();
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const method = request.method ?? 'GET';
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    const body = await readBody(request);
    if (body === undefined) return sendJson(response, 413, { error: 'too_large', reason: `bodies are at most ${MAX_BODY_BYTES} bytes` });

    if (path === '/effects' && method === 'GET') return sendJson(response, 200, effects());
    if (path === '/_control/state' && method === 'GET') {
      return sendJson(response, 200, { rules: rules.list(), held: held.map(({ method: m, path: p }) => ({ method: m, path: p })) });
    }
    if (path.startsWith('/_control/')) {
      if (method !== 'POST') return sendJson(response, 405, { error: 'method_not_allowed', reason: 'control requests are POST with a JSON body' });
      try {
        const input: unknown = body === '' ? {} : JSON.parse(body);
        if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new DemoControlError('the body must be a JSON object');
        return sendJson(response, 200, control(path.slice('/_control/'.length), input as Record<string, unknown>));
      } catch (error) {
        const reason = error instanceof DemoControlError || error instanceof SyntaxError ? error.message : String(error);
        return sendJson(response, 400, { error: 'bad_control_request', reason });
      }
    }

    if (path === '/mcp') return serveDesk(request, body, response);

    const header = request.headers['idempotency-key'];
    const idempotencyKey = typeof header === 'string' ? header : null;
    const authorization = request.headers.authorization;
    const authorizationSha256 = authorization === undefined ? null : createHash('sha256').update(authorization).digest('hex');
    const traceHeader = request.headers.traceparent;
    const traced = typeof traceHeader === 'string' ? { traceparent: traceHeader } : {};
    const at = now();
    const route = endpoints.route(method, path);
    if (route === undefined) {
      requests.push({ method, path, endpoint: null, idempotencyKey, authorizationSha256, at: at.toISOString(), effect: false, status: 404, fault: null });
      return sendJson(response, 404, { error: 'not_found', reason: `no endpoint for ${method} ${path}` });
    }

    const rule = rules.take(method, path, route.endpoint);
    const skipEndpoint = rule?.action === 'status' && rule.applyEffect !== true;
    const decided: DemoAnswer = skipEndpoint ? { status: 0, body: null, effect: false } : route.answer({ method, path, idempotencyKey, body, at });
    const recorded = { method, path, endpoint: route.endpoint, idempotencyKey, authorizationSha256, ...traced, at: at.toISOString(), effect: decided.effect, status: null, fault: rule?.action ?? null };
    const index = requests.push(recorded) - 1;
    const answer = (status: number, answerBody: unknown, headers?: Readonly<Record<string, string>>): void => {
      const entry = requests[index];
      if (entry === recorded) requests[index] = { ...recorded, status };
      sendJson(response, status, answerBody, headers);
    };
    const sendDecided = () => answer(decided.status, decided.body, decided.headers);

    switch (rule?.action) {
      case undefined:
        return sendDecided();
      case 'hold':
        held.push({ method, path, endpoint: route.endpoint, send: sendDecided, drop: () => request.socket.destroy() });
        return;
      case 'hang':
        return;
      case 'reset':
        request.socket.resetAndDestroy();
        return;
      case 'delay':
        setTimeout(sendDecided, rule.ms);
        return;
      case 'status':
        return answer(rule.status, { error: 'injected_fault', status: rule.status, effect_applied: decided.effect });
    }
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) sendJson(response, 500, { error: 'internal', reason: String(error) });
    });
  });
  // A hung or held request must not be cut off by Node's own timeouts: the fault is the point.
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DEFAULT_PORT, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `http://${urlHost}:${port}`,
    port,
    effects,
    tickets: () => desk.list(),
    hold: (match, holdOptions) => rules.add(parseFaultRule({ match, action: 'hold', ...(holdOptions?.times === undefined ? {} : { times: holdOptions.times }) })),
    release,
    behave: (rule) => rules.add(parseFaultRule(rule)),
    reset,
    close: async () => {
      held = [];
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await desk.handler.close();
    },
  };
}

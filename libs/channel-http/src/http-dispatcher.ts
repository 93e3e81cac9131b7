import { createRequire } from 'node:module';
import type { Agent, Dispatcher } from 'undici';
import type { ToolLimits } from '@oncegate/contracts';
import { classifyStatus } from './classify-status';
import { CredentialRedaction } from './credential-redaction';
import type { HttpAttempt, HttpAttemptResult } from './http-attempt';
import { renderHttpRequest, setHeader } from './render-http-request';

const require = createRequire(import.meta.url);

/**
 * undici, loaded when the first attempt is sent instead of when this library is imported: every oncegate process
 * imports it (each CLI command, every service), and loading the package cost each of them tens of milliseconds of CPU.
 */
function undici(): typeof import('undici') {
  return require('undici') as typeof import('undici');
}

export interface HttpDispatcherOptions {
  /** `user-agent` sent when the contract sets none. Default `oncegate-dispatcher-http/0.1`. */
  readonly userAgent?: string;
  /** How long an idle keep-alive connection is kept for reuse, unless the target's `Keep-Alive` hint says less. Default 4000 ms. */
  readonly keepAliveTimeoutMs?: number;
  /** Most connections per origin; `null` for no limit. Default `null`. */
  readonly connectionsPerOrigin?: number | null;
}

export const DEFAULT_USER_AGENT = 'oncegate-dispatcher-http/0.1';
const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 4_000;
/** Response headers that hand out session state; a tool result has no use for them. */
const DROPPED_RESPONSE_HEADERS: ReadonlySet<string> = new Set(['set-cookie', 'set-cookie2']);

/**
 * Sends one HTTP attempt and says honestly what is known afterwards (README.md): a response, `not_sent` when no
 * byte of the request reached the socket, or `unknown` when bytes may have reached the target.
 *
 * Connections are kept alive and reused per origin. The dispatcher owns its timeouts; callers pass no abort
 * signal, because abandoning a written request turns a knowable outcome into an unknown one.
 */
export class HttpDispatcher {
  private readonly userAgent: string;
  private readonly keepAliveTimeoutMs: number;
  private readonly connectionsPerOrigin: number | null;
  /** One agent (a keep-alive pool per origin) per connect timeout, since undici sets that timeout per pool. */
  private readonly agents = new Map<number, Agent>();
  private closed = false;

  constructor(options: HttpDispatcherOptions = {}) {
    this.userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
    this.keepAliveTimeoutMs = options.keepAliveTimeoutMs ?? DEFAULT_KEEP_ALIVE_TIMEOUT_MS;
    this.connectionsPerOrigin = options.connectionsPerOrigin ?? null;
  }

  /**
   * Sends `attempt.rendered` (or renders it). A credential given as bytes (`HttpCredentialBuffer`) becomes a header
   * string only here, at the last moment, and its `value` is zero-filled as soon as undici has the request.
   */
  async send(attempt: HttpAttempt): Promise<HttpAttemptResult> {
    const credential = attempt.credential;
    const redaction = new CredentialRedaction(credential);
    const wipeValue = (): void => {
      if (credential !== undefined && 'value' in credential) credential.value.fill(0);
    };
    if (this.closed) {
      wipeValue();
      redaction.wipe();
      return { kind: 'not_sent', reason: 'the HTTP dispatcher is closed' };
    }
    let rendered;
    try {
      rendered = attempt.rendered ?? renderHttpRequest(attempt.tool, attempt.arguments, attempt.executionId);
    } catch (error) {
      wipeValue();
      const reason = redaction.redact(`could not render the request: ${messageOf(error)}`);
      redaction.wipe();
      return { kind: 'not_sent', reason };
    }
    const headers = { ...rendered.headers };
    if (!Object.keys(headers).some((name) => name.toLowerCase() === 'user-agent')) headers['user-agent'] = this.userAgent;
    if (attempt.traceparent !== undefined && !Object.keys(headers).some((name) => name.toLowerCase() === 'traceparent')) headers['traceparent'] = attempt.traceparent;
    // Last, so a contract header can never replace the credential, and only here, so it is in no rendered value.
    if (credential !== undefined && 'value' in credential) {
      // The one string the secret must become: undici takes header values as strings.
      setHeader(headers, credential.header, credential.value.toString('utf8'));
    } else {
      for (const [name, value] of Object.entries(credential?.headers ?? {})) setHeader(headers, name, value);
    }

    const url = new URL(rendered.url);
    const path = rendered.url.slice(url.origin.length);
    const limits = attempt.tool.limits;
    return new Promise<HttpAttemptResult>((resolve) => {
      const handler = new AttemptHandler(limits, redaction, resolve);
      const options: Dispatcher.DispatchOptions = {
        origin: url.origin,
        path,
        method: rendered.method,
        headers,
        body: rendered.body ?? null,
        // The attempt's own timer bounds the wait for the response; undici's would race it.
        headersTimeout: 0,
        bodyTimeout: 0,
      };
      try {
        this.agentFor(limits.connectTimeoutMs).dispatch(options, handler);
      } catch (error) {
        handler.onResponseError(undefined, error instanceof Error ? error : new Error(String(error)));
      } finally {
        // undici holds the header as the string in `options` (or its own copy of it): the bytes are no longer needed.
        wipeValue();
      }
    });
  }

  /** Stops taking attempts and closes the connections once the attempts in flight have settled. */
  async close(): Promise<void> {
    this.closed = true;
    const agents = [...this.agents.values()];
    this.agents.clear();
    await Promise.all(agents.map((agent) => agent.close()));
  }

  private agentFor(connectTimeoutMs: number): Agent {
    let agent = this.agents.get(connectTimeoutMs);
    if (agent === undefined) {
      agent = new (undici().Agent)({
        connect: { timeout: connectTimeoutMs },
        keepAliveTimeout: this.keepAliveTimeoutMs,
        connections: this.connectionsPerOrigin,
        // One request per connection at a time: undici writes pipelined requests again after a connection drops,
        // which would be a second send nobody decided on.
        pipelining: 1,
      });
      this.agents.set(connectTimeoutMs, agent);
    }
    return agent;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function codeOf(error: Error): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/** Why a connection was never made, in words an operator can act on. */
function notSentReason(error: Error): string {
  const code = codeOf(error);
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return `connect timeout: ${error.message}`;
    case 'ECONNREFUSED':
      return `connection refused: ${error.message}`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `DNS lookup failed: ${error.message}`;
    default:
      return `request not sent: ${code === undefined ? '' : `${code}: `}${error.message}`;
  }
}

class ResponseTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no complete response within ${timeoutMs} ms after the request was written`);
    this.name = 'ResponseTimeoutError';
  }
}

class RequestWrittenTwiceError extends Error {
  constructor() {
    super('undici tried to write the request a second time; refused before any byte of it was written');
    this.name = 'RequestWrittenTwiceError';
  }
}

/**
 * Follows one request through undici. `onRequestStart` is the line between definite and unknown: undici calls
 * it on a connected socket immediately before it writes the request, in the same synchronous step
 * (client-h1 `writeH1`: `request.onConnect(abort)` then `socket.write(...)`). Every failure before it — DNS,
 * connect refused or timed out, an invalid header, a closed dispatcher — left no byte of this request in the
 * socket; every failure after it may have reached the target.
 */
class AttemptHandler implements Dispatcher.DispatchHandler {
  private started = false;
  private settled = false;
  private timedOut = false;
  private timer: NodeJS.Timeout | undefined;
  private status: number | undefined;
  private headers: Record<string, string> = {};
  private readonly chunks: Buffer[] = [];
  private received = 0;

  constructor(
    private readonly limits: ToolLimits,
    private readonly redaction: CredentialRedaction,
    private readonly resolve: (result: HttpAttemptResult) => void,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.started) {
      // Aborting here stops undici before it writes: the request goes out at most once.
      controller.abort(new RequestWrittenTwiceError());
      return;
    }
    this.started = true;
    this.timer = setTimeout(() => {
      this.timedOut = true;
      controller.abort(new ResponseTimeoutError(this.limits.responseTimeoutMs));
    }, this.limits.responseTimeoutMs);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (this.settled || statusCode < 200) return;
    this.status = statusCode;
    this.headers = this.responseHeaders(headers);
    if (classifyStatus(statusCode) === 'unknown') {
      this.settle({
        kind: 'unknown',
        reason: 'timeout_after_send',
        detail: `gateway status ${statusCode} from an intermediary: the origin may have received and acted on the request`,
      });
      controller.abort(new Error('gateway status; body not needed'));
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    // Read past the cap by the longest credential value less one byte, so one that straddles the cut is hidden whole.
    const room = this.limits.responseBytes + this.redaction.lookahead - this.received;
    if (chunk.length <= room) {
      this.chunks.push(chunk);
      this.received += chunk.length;
      return;
    }
    // Over the cap: keep what was read, stop reading. Still a definite answer: the status line arrived.
    this.chunks.push(chunk.subarray(0, room));
    this.received += room;
    this.settleResponse(false);
    controller.abort(new Error('response body cap reached'));
  }

  onResponseEnd(): void {
    this.settleResponse(true);
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    if (this.settled) return;
    if (!this.started) {
      this.settle({ kind: 'not_sent', reason: this.redaction.redact(notSentReason(error)) });
    } else if (this.status !== undefined) {
      // The target already gave its status; only the rest of the body is missing.
      this.settleResponse(false);
    } else if (this.timedOut) {
      this.settle({ kind: 'unknown', reason: 'timeout_after_send', detail: this.redaction.redact(error.message) });
    } else {
      const code = codeOf(error);
      const detail = `connection failed after the request was written: ${code === undefined ? '' : `${code}: `}${error.message}`;
      this.settle({ kind: 'unknown', reason: 'connection_reset', detail: this.redaction.redact(detail) });
    }
  }

  /** `ended`: the body arrived whole; otherwise reading stopped at the cap or the connection was lost mid-body. */
  private settleResponse(ended: boolean): void {
    if (this.status === undefined) return;
    const read = new Uint8Array(this.received);
    let offset = 0;
    for (const chunk of this.chunks) {
      read.set(chunk, offset);
      offset += chunk.length;
    }
    // Hidden first, cut after: a cut inside a credential value would hand out its first characters.
    const redacted = this.redaction.redactBytes(read, ended);
    const body = redacted.length > this.limits.responseBytes ? redacted.subarray(0, this.limits.responseBytes) : redacted;
    const outcome = classifyStatus(this.status) === 'succeeded' ? 'succeeded' : 'failed';
    this.settle({
      kind: 'response',
      outcome,
      status: this.status,
      headers: this.headers,
      body,
      truncated: !ended || redacted.length > this.limits.responseBytes,
      contentType: this.headers['content-type'] ?? null,
    });
  }

  private settle(result: HttpAttemptResult): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    // Everything returned is hidden by now; nothing of this attempt is read after it settles.
    this.redaction.wipe();
    this.resolve(result);
  }

  private responseHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(raw)) {
      const lower = name.toLowerCase();
      if (value === undefined || DROPPED_RESPONSE_HEADERS.has(lower)) continue;
      headers[lower] = this.redaction.redact(Array.isArray(value) ? value.join(', ') : value);
    }
    return headers;
  }
}

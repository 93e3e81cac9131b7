import type { ToolContract } from '@oncegate/contracts';
import type { RenderedHttpRequest } from './render-http-request';

/**
 * The credential the gateway applies to one attempt, e.g. `{ Authorization: 'Bearer …' }`. It is added to the
 * request last, at send time, and never appears in a result, an error or a log line.
 */
export interface HttpCredential {
  readonly headers: Readonly<Record<string, string>>;
  /**
   * The raw secret values behind the headers (a basic password, say), hidden wherever the dispatcher returns
   * text or a body, besides the header values themselves.
   */
  readonly secrets?: readonly string[];
}

/**
 * A credential held in bytes until the request's header is built: one header, its whole value in `value`, and the
 * raw secrets behind it (hidden wherever the dispatcher returns text or a body). The dispatcher zero-fills `value`
 * once it has handed the request to undici (which by then holds the header as a string of its own), and its own
 * copies of the secrets once the attempt has settled; `secrets` stay the caller's to zero-fill.
 */
export interface HttpCredentialBuffer {
  readonly header: string;
  readonly value: Buffer;
  readonly secrets: readonly Buffer[];
}

/** One HTTP attempt of one execution. */
export interface HttpAttempt {
  /** The execution id; also the value of the contract's `idempotency_header` when it names one. */
  readonly executionId: string;
  /** A tool on channel `http`. */
  readonly tool: ToolContract;
  /** Validated arguments as the agent sent them; input-schema defaults are filled in by the dispatcher. */
  readonly arguments: Readonly<Record<string, unknown>>;
  /**
   * The request already rendered from `tool`, `arguments` and `executionId` (`renderHttpRequest`), so that what is
   * sent is exactly what the credential binding was checked against; rendered here when absent.
   */
  readonly rendered?: RenderedHttpRequest;
  readonly credential?: HttpCredential | HttpCredentialBuffer;
  /** The W3C trace context of the attempt's span, sent as `traceparent` unless the contract sets that header itself. */
  readonly traceparent?: string;
}

/** The target answered. `succeeded` for 2xx; `failed` for 3xx (never followed), 4xx and 5xx other than 502/504. */
export interface HttpResponseResult {
  readonly kind: 'response';
  readonly outcome: 'succeeded' | 'failed';
  readonly status: number;
  /** Response headers, names lower-cased, repeated values joined with `, `; `set-cookie` removed. */
  readonly headers: Record<string, string>;
  /** The body with every credential value hidden, then cut to at most `limits.responseBytes` bytes. */
  readonly body: Uint8Array;
  /** True when the body was cut at the cap, or ended early after the status line arrived. */
  readonly truncated: boolean;
  readonly contentType: string | null;
}

/** Definite: no byte of the request left this process, so sending it again is safe. */
export interface HttpNotSentResult {
  readonly kind: 'not_sent';
  readonly reason: string;
}

/** Bytes may have reached the target and no definite answer came back. */
export interface HttpUnknownResult {
  readonly kind: 'unknown';
  readonly reason: 'timeout_after_send' | 'connection_reset';
  readonly detail: string;
}

export type HttpAttemptResult = HttpResponseResult | HttpNotSentResult | HttpUnknownResult;

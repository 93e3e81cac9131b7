import type { ToolContract } from '@oncegate/contracts';

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

/** One HTTP attempt of one execution. */
export interface HttpAttempt {
  /** The execution id; also the value of the contract's `idempotency_header` when it names one. */
  readonly executionId: string;
  /** A tool on channel `http`. */
  readonly tool: ToolContract;
  /** Validated arguments as the agent sent them; input-schema defaults are filled in by the dispatcher. */
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly credential?: HttpCredential;
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

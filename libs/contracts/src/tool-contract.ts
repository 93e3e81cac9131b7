import { DEFAULT_REDELIVERY_GRACE_MS } from '@oncegate/domain';
import type { OperationClass } from '@oncegate/domain';

/** docs/design.md section 5; owned by the domain, re-exported here for contract readers. */
export { DEFAULT_REDELIVERY_GRACE_MS };

/**
 * The parsed, normalised tool contract (docs/design.md section 7): durations in milliseconds, defaults filled in,
 * every cross-reference checked. Instances are deeply frozen.
 */
export interface ToolContract {
  /** MCP tool name, unique in its file: `^[a-zA-Z0-9_-]{1,64}$`. */
  readonly name: string;
  /** Optional human-friendly title for tool listings; `null` when absent. */
  readonly title: string | null;
  readonly description: string;
  /** JSON Schema (2020-12) of the arguments, as written; `type` is always `object`. */
  readonly inputSchema: JsonSchemaObject;
  /** Decides recovery after an unknown outcome (docs/design.md section 6); the HTTP method never does. */
  readonly operationClass: OperationClass;
  /** `http`, `ssh` or a plugin channel name (`[a-z][a-z0-9-]*`). */
  readonly channel: string;
  /** Logical target name recorded in the canonical operation record. */
  readonly target: string;
  /** Name of the credential the gateway applies at dispatch; never the credential itself. `null` when none. */
  readonly credentialRef: string | null;
  readonly request: RequestTemplate;
  readonly fingerprint: { readonly exclude: readonly string[] };
  /** Arguments (top-level names or dotted paths) replaced by an HMAC before fingerprinting. */
  readonly secretArguments: readonly string[];
  /** Top-level argument whose value is the durable idempotency key (intent scope `key:<value>`); `null` when none. */
  readonly durableKeyArgument: string | null;
  readonly correlationWindow: CorrelationWindow;
  /**
   * How long after a proven delivery a matching call still gets the stored result (`replayed`); 0 disables.
   * Default by class: read_only 0, idempotent_write 60 s. `null` for conditional_write, irreversible and
   * remote_command: the whole correlation window, which a contract cannot shorten.
   */
  readonly redeliveryGraceMs: number | null;
  /** Default `none`. */
  readonly approval: ApprovalMode;
  /** Present exactly when `operationClass` is `conditional_write`. */
  readonly statusQuery: StatusQuery | null;
  /** Present exactly when `operationClass` is `remote_command`. */
  readonly marker: MarkerProtocol | null;
  readonly limits: ToolLimits;
  /** Where the tool is declared, for later diagnostics. */
  readonly source: ContractSource;
}

export type JsonSchemaObject = Readonly<Record<string, unknown>>;

export interface ContractSource {
  readonly file: string;
  readonly path: string;
  readonly line: number;
  readonly column: number;
}

/** A parsed contract file, with the tools of the files it includes (each tool's `source` names its file). */
export interface ContractFile {
  readonly file: string;
  readonly version: 1;
  readonly tools: readonly ToolContract[];
  /** The files included, directly or through another, in the order they were read; their paths as resolved. */
  readonly included: readonly string[];
}

export type CorrelationWindow =
  | { readonly kind: 'duration'; readonly ms: number }
  /** The execution keeps matching until an operator confirms it (credential rotation and the like). */
  | { readonly kind: 'until_confirmed' };

export const APPROVAL_MODES = ['none', 'per_use'] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];

export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

export type RequestTemplate = HttpRequestTemplate | SshCommandTemplate | PluginRequestTemplate;

/**
 * Strings may hold `{{args.<name>}}` and `{{execution.id}}`. In `url` a substituted value is
 * percent-encoded; in `body` a string that is exactly one template takes the argument's JSON value
 * (a number stays a number), any other string is interpolated as text.
 */
export interface HttpRequestTemplate {
  readonly kind: 'http';
  readonly method: HttpMethod;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** JSON value sent as the body; `undefined` when the request has none. */
  readonly body: unknown;
  /** Header that carries the execution id for targets that honour one (e.g. `Idempotency-Key`); `null` when none. */
  readonly idempotencyHeader: string | null;
}

/** An SSH command: `argv` is passed as separate arguments, each template a whole element, never a shell string. */
export interface SshCommandTemplate {
  readonly kind: 'ssh';
  readonly host: string;
  /** Default 22. */
  readonly port: number;
  readonly user: string;
  /** Pinned public host key, OpenSSH form: `ssh-ed25519 AAAA...`. */
  readonly hostKey: string;
  /** Absolute working directory; `null` for the login directory. */
  readonly cwd: string | null;
  readonly argv: readonly string[];
}

/** A request for a plugin channel: the `plugin:` block, passed through as written. */
export interface PluginRequestTemplate {
  readonly kind: 'plugin';
  readonly channel: string;
  readonly config: Readonly<Record<string, unknown>>;
}

/**
 * The server a plugin channel's tool goes to, when its section names one — `host` and `port`, or an http(s) `url`
 * (its port, or the scheme's): where a credential of the tool must be bound (checked at authorization and again
 * before the channel sends). `undefined` otherwise.
 */
export function pluginServerOf(request: PluginRequestTemplate): { readonly host: string; readonly port: number } | undefined {
  const { host, port, url } = request.config;
  if (typeof host === 'string' && host !== '' && Number.isInteger(port)) return { host, port: port as number };
  if (typeof url !== 'string' || !URL.canParse(url)) return undefined;
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined;
  // A bracketed IPv6 literal is bound by its address, as the vault's bindings write it.
  const hostname = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  return { host: hostname, port: parsed.port === '' ? (parsed.protocol === 'https:' ? 443 : 80) : Number(parsed.port) };
}

/** How a conditional write finds out whether an attempt with an unknown outcome took effect. */
export interface StatusQuery {
  readonly http: {
    readonly method: 'GET';
    readonly url: string;
    readonly headers: Readonly<Record<string, string>>;
  };
  /** The write may be sent again only while the value at `pointer` still equals `equals`. */
  readonly precondition: {
    /** JSON pointer into the JSON response body. */
    readonly pointer: string;
    readonly equals: PreconditionValue;
  };
}

export type PreconditionValue =
  | { readonly kind: 'literal'; readonly value: unknown }
  | { readonly kind: 'argument'; readonly argument: string };

/** The durable marker a remote command leaves on its host, probed after an unknown outcome. */
export interface MarkerProtocol {
  /** Absolute directory on the host where the marker named after the execution id is written. */
  readonly directory: string;
  /** True when the marker is written before the work starts, so an absent marker proves the work never began. */
  readonly writtenBeforeWork: boolean;
  /** How long a probe waits for a marker to appear before concluding it is absent. Default 5 s. */
  readonly startedWaitMs: number;
}

export interface ToolLimits {
  /** Largest response body kept; default 1 MiB. */
  readonly responseBytes: number;
  /** Default 5 s. */
  readonly connectTimeoutMs: number;
  /** Default 30 s. */
  readonly responseTimeoutMs: number;
}

export const DEFAULT_LIMITS: ToolLimits = Object.freeze({
  responseBytes: 1_048_576,
  connectTimeoutMs: 5_000,
  responseTimeoutMs: 30_000,
});

/** Largest accepted `limits.response_bytes`: 64 MiB. */
export const MAX_RESPONSE_BYTES = 64 * 1_048_576;

export const DEFAULT_MARKER_STARTED_WAIT_MS = 5_000;
export const DEFAULT_SSH_PORT = 22;

export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
export const PLUGIN_CHANNEL_PATTERN = /^[a-z][a-z0-9-]*$/;

/** Tool names the gateway provides itself. */
export const RESERVED_TOOL_NAMES = ['execution_status'] as const;

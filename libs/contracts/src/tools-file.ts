import type { OperationClass } from '@oncegate/domain';
import type { ApprovalMode } from './tool-contract';
import type { Duration, NonEmptyString } from './yaml-values';

/**
 * The tool contract file (`tools.yaml`) as it is written: the source of schemas/tools.schema.json
 * (tools/config-schemas). `checkContractFile` validates a file against that schema, then checks what a schema
 * cannot say (templates, credentials, cross-field rules) and builds the `ContractFile`.
 *
 * @title Oncegate tool contract file
 */
export interface ToolsFile {
  /** The format's version; this gateway reads version 1. */
  version: 1;
  /**
   * Other contract files whose tools the gateway offers as well (an upstream's file that `oncegate upstream add`
   * wrote, for one): each path relative to this file's folder, or absolute. An included file may include others; no
   * file is included twice, and tool names are unique across all of them.
   * @minItems 1
   * @errorMessage Names no file; remove 'include:' or list contract files
   */
  include?: IncludedFile[];
  /**
   * The tools the gateway offers over MCP, each with the request it sends and how its replay behaves.
   * @minItems 1
   * @errorMessage Declares no tools
   */
  tools: ToolEntry[];
}

/**
 * A contract file, by its path relative to the including file's folder (or absolute).
 * @pattern \S
 * @patternErrorMessage Must name a file
 */
export type IncludedFile = string;

/**
 * An MCP tool name: 1 to 64 letters, digits, `_` or `-`, unique in the file.
 * @pattern ^[a-zA-Z0-9_-]{1,64}$
 * @patternErrorMessage Not a valid MCP tool name: 1 to 64 letters, digits, '_' or '-'
 */
export type ToolName = string;

/**
 * `http`, `ssh`, or the name of a plugin channel (a dispatcher built on the kit, such as `sql`).
 * @pattern ^[a-z][a-z0-9-]*$
 * @patternErrorMessage Not a channel; expected http, ssh, or a plugin channel name ([a-z][a-z0-9-]*)
 * @examples ["http", "ssh"]
 */
export type ChannelName = string;

/**
 * A logical target name, literal: no spaces, no templates.
 * @pattern ^(?!.*\{\{)\S+$
 * @patternErrorMessage Must be a literal name without spaces or templates
 */
export type TargetName = string;

/**
 * The name of a credential in the vault, never the credential itself.
 * @pattern ^[A-Za-z0-9][A-Za-z0-9_.:/-]*$
 * @patternErrorMessage Must name a credential (letters, digits, '_', '.', ':', '/', '-'), never contain one
 */
export type CredentialRefName = string;

/**
 * An argument of `input_schema.properties`: a top-level name, or a dotted path into an object argument.
 * @pattern \S
 * @patternErrorMessage Must not be empty
 */
export type ArgumentName = string;

/**
 * How long a retry can still match an execution: a duration, or `until_confirmed` (until an operator confirms it).
 * @errorMessage Not a duration; write 500ms, 90s, 5m, 2h, 1d, 1h30m, or 0
 * @examples ["5m", "until_confirmed"]
 */
export type CorrelationWindowText = Duration | 'until_confirmed';

/** One tool of the file. */
export interface ToolEntry {
  /** The MCP tool name, unique in the file. `execution_status` is reserved for the gateway's own tool. */
  name: ToolName;
  /** A human-friendly title for tool listings. */
  title?: NonEmptyString;
  /** What the tool does, shown to the agent. */
  description: NonEmptyString;
  /**
   * JSON Schema (2020-12) of the arguments, `type: object`. `default` values are fingerprint defaults; argument names
   * contain no `.` (fingerprint paths are dotted).
   */
  input_schema: InputSchema;
  /**
   * The operation class: decides recovery after an unknown outcome and the MCP annotations (the HTTP method never
   * does).
   */
  class: OperationClass;
  /** `http`, `ssh`, or a plugin channel name; the request block (`http:`, `ssh:` or `plugin:`) must match it. */
  channel: ChannelName;
  /** Logical target name recorded with every execution, e.g. `deploy-api/releases`. */
  target: TargetName;
  /** The credential the gateway applies at dispatch, by name (`oncegate vault set <ref>`). Part of the fingerprint. */
  credential_ref?: CredentialRefName;
  /** The HTTP request template, for `channel: http`. */
  http?: HttpRequest;
  /** The SSH command template, for `channel: ssh`. */
  ssh?: SshCommand;
  /**
   * The settings of a plugin channel, for a tool on one: its templates must name declared arguments; the process
   * hosting the channel checks the rest.
   */
  plugin?: PluginSection;
  /** What enters the intent fingerprint. */
  fingerprint?: FingerprintSection;
  /** Arguments replaced by an HMAC before fingerprinting; never in a URL or in argv. */
  secret_arguments?: ArgumentName[];
  /** A top-level string argument whose value is the caller's durable idempotency key (intent scope `key:<value>`); not secret. */
  durable_key_argument?: ArgumentName;
  /** How long a retry can still match this execution: a duration, or `until_confirmed`. */
  correlation_window: CorrelationWindowText;
  /**
   * How long after a proven delivery a matching retry still gets the stored result; `0` disables. Default `0` for
   * read_only, `60s` for idempotent_write; refused for the other classes.
   */
  redelivery_grace?: Duration;
  /**
   * `per_use`: every call waits for an approver's decision.
   * @default "none"
   */
  approval?: ApprovalMode;
  /** How to tell whether an unknown outcome took effect: required for a conditional_write (HTTP), refused otherwise. */
  status_query?: StatusQuerySection;
  /** The durable marker probed after an unknown outcome: required for a remote_command, refused otherwise. */
  marker?: MarkerSection;
  /** Limits of one attempt. */
  limits?: LimitsSection;
}

/** A JSON Schema (2020-12) with `type: object`. */
export interface InputSchema {
  /**
   * An MCP input schema describes an object.
   * @errorMessage An MCP input schema must have 'type: object'
   */
  type: 'object';
  [keyword: string]: unknown;
}

/**
 * An HTTP method: GET, HEAD, POST, PUT, PATCH or DELETE (upper or lower case).
 * @pattern ^(GET|HEAD|POST|PUT|PATCH|DELETE|get|head|post|put|patch|delete)$
 * @patternErrorMessage Not allowed; expected one of: GET, HEAD, POST, PUT, PATCH, DELETE
 * @examples ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
 */
export type HttpMethodText = string;

/**
 * An HTTP header name.
 * @pattern ^[A-Za-z0-9-]+$
 * @patternErrorMessage Not a header name
 */
export type HeaderName = string;

/**
 * Header name → value; values may hold templates. Credential headers (`Authorization`, `Cookie`, `X-Api-Key`…) are
 * refused: credentials come by reference (`credential_ref`). Hop-by-hop, framing and routing headers are the gateway's.
 */
export type HeaderTemplates = Record<string, string | number | boolean>;

/** An HTTP request template. Strings may hold `{{args.<name>}}` and `{{execution.id}}`. */
export interface HttpRequest {
  /** The method. */
  method: HttpMethodText;
  /** An absolute `http://` or `https://` URL; the scheme, host and port are literal, the path and query may hold templates. */
  url: NonEmptyString;
  /** Headers sent with the request. */
  headers?: HeaderTemplates;
  /**
   * The JSON body; a string that is exactly one template takes the argument's JSON value. Not with GET or HEAD.
   */
  body?: unknown;
  /** A header that carries the execution id, for targets that honour one (e.g. `Idempotency-Key`). */
  idempotency_header?: HeaderName;
}

/**
 * A login name: letters, digits, `_`, `.`, `-`, starting with a letter or `_`.
 * @pattern ^[A-Za-z_][A-Za-z0-9_.-]{0,31}$
 * @patternErrorMessage Not a valid login name (literal, letters, digits, '_', '.', '-')
 */
export type LoginName = string;

/** An SSH command template: `argv` is passed as separate arguments, never as a shell string. */
export interface SshCommand {
  /** The host name or IP address, literal: an argument never chooses where a command runs. */
  host: NonEmptyString;
  /**
   * The SSH port.
   * @minimum 1
   * @maximum 65535
   * @asType integer
   * @default 22
   */
  port?: number;
  /** The login name. */
  user: LoginName;
  /** The pinned public host key, `ssh-ed25519 AAAA...` as printed by ssh-keyscan (not its fingerprint). */
  host_key: NonEmptyString;
  /** An absolute, literal working directory; the login directory when absent. */
  cwd?: NonEmptyString;
  /**
   * The command: a literal program, then its arguments; each template a whole element.
   * @minItems 1
   * @errorMessage Must name at least the program to run
   */
  argv: (string | number | boolean)[];
}

/** The `plugin:` section of a tool on a plugin channel: the channel's own settings. */
export type PluginSection = Record<string, unknown>;

/** What enters the intent fingerprint. */
export interface FingerprintSection {
  /** Arguments (names or dotted paths) left out of the canonical record, e.g. a free-text note. */
  exclude?: ArgumentName[];
}

/**
 * `GET` (the only method of a status query).
 * @pattern ^(GET|get)$
 * @patternErrorMessage Not allowed; expected one of: GET
 */
export type GetMethod = string;

/** The GET request that reads the current state. */
export interface StatusQueryRequest {
  /**
   * Always GET.
   * @default "GET"
   */
  method?: GetMethod;
  /** An absolute `http://` or `https://` URL; the path and query may hold templates. */
  url: NonEmptyString;
  /** Headers sent with the request. */
  headers?: HeaderTemplates;
}

/**
 * A JSON pointer into the response body, e.g. `/version` or `/data/0/etag`.
 * @pattern ^(/([^~/]|~[01])*)*$
 * @patternErrorMessage Not a JSON pointer; write it like '/version' or '/data/0/etag'
 */
export type JsonPointerText = string;

/** A conditional write's status query: the write may be sent again only while the precondition holds. */
export interface StatusQuerySection {
  /** The GET request that reads the current state. */
  http: StatusQueryRequest;
  /** The pointer and value that show the write has not happened. */
  precondition: {
    /** A JSON pointer into the response body. */
    pointer: JsonPointerText;
    /** The value that shows the write has not happened: a literal, or exactly one `{{args.<name>}}`. */
    equals: unknown;
  };
}

/** The durable marker a remote command leaves on its host. */
export interface MarkerSection {
  /** The absolute directory on the host that holds markers (named after the execution id). */
  directory: NonEmptyString;
  /** True when the marker is written before the work starts, so an absent marker proves the work never began. */
  written_before_work: boolean;
  /**
   * How long a probe waits for a marker to appear before concluding it is absent.
   * @default "5s"
   */
  started_wait?: Duration;
}

/**
 * A size as text: bytes with a unit (`B`, `KB`, `KiB`, `MB`, `MiB`), e.g. `512KiB`.
 * @pattern ^\d+\s*(B|KB|KiB|MB|MiB)$
 * @patternErrorMessage Not a size; write bytes with a unit (B, KB, KiB, MB, MiB), e.g. 512KiB
 */
export type SizeText = string;

/**
 * A response size between 1 byte and 64MiB: a number of bytes, or with a unit (`B`, `KB`, `KiB`, `MB`, `MiB`).
 * @errorMessage Must be a size between 1 and 64MiB, as bytes or with a unit (B, KB, KiB, MB, MiB)
 */
export type ResponseSize = ResponseByteCount | SizeText;

/**
 * @minimum 1
 * @maximum 67108864
 * @asType integer
 */
export type ResponseByteCount = number;

/** Limits of one attempt. */
export interface LimitsSection {
  /**
   * The largest response body kept.
   * @default "1MiB"
   */
  response_bytes?: ResponseSize;
  /**
   * How long connecting may take.
   * @default "5s"
   */
  connect_timeout?: Duration;
  /**
   * How long the response may take.
   * @default "30s"
   */
  response_timeout?: Duration;
}

import { createHash } from 'node:crypto';
import { canonicalJson } from '@oncegate/fingerprint';
import type { OperationClass } from '@oncegate/domain';

/*
 * A tool of an upstream MCP server as Oncegate fronts it: the `mcp` channel's section of a contract, how the
 * tool's class is read from its annotations, and the digest of the definition a contract was written against.
 */

/** What an upstream's `tools/list` says of one tool, as far as a contract depends on it. */
export interface UpstreamToolDefinition {
  readonly name: string;
  readonly description?: string;
  readonly inputSchema: Readonly<Record<string, unknown>>;
  readonly outputSchema?: Readonly<Record<string, unknown>>;
  readonly annotations?: UpstreamToolAnnotations;
}

/** MCP's tool annotations (hints from the upstream, not guarantees). */
export interface UpstreamToolAnnotations {
  readonly title?: string;
  readonly readOnlyHint?: boolean;
  readonly destructiveHint?: boolean;
  readonly idempotentHint?: boolean;
  readonly openWorldHint?: boolean;
}

/**
 * The `plugin:` section of a tool on the `mcp` channel. `upstream` names the server (its tools share one connection
 * or one child process per dispatcher); `url` (Streamable HTTP) or `command` (stdio, started and supervised by the
 * channel) says how it is reached; `tool` is the upstream's own tool name; `definition` the digest of the tool's
 * definition when the contract was written (`oncegate upstream diff|accept`).
 */
export interface UpstreamSection {
  readonly upstream: string;
  readonly url?: string;
  readonly command?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  readonly tool: string;
  readonly definition: string;
}

/** The JSON Schema of `UpstreamSection`, as the `mcp` channel publishes it. */
export const UPSTREAM_SECTION_SCHEMA = {
  type: 'object',
  properties: {
    upstream: { type: 'string', pattern: '^[a-z][a-z0-9-]*$', description: 'The upstream server: its tools share one connection (or process) per dispatcher.' },
    url: { type: 'string', pattern: '^https?://', description: 'The Streamable HTTP endpoint of the upstream.' },
    command: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1, description: 'The stdio upstream: the command the channel starts, and its arguments.' },
    env: { type: 'object', additionalProperties: { type: 'string' }, description: 'A stdio upstream\'s environment, added to a minimal one.' },
    cwd: { type: 'string', minLength: 1, description: 'A stdio upstream\'s working directory.' },
    tool: { type: 'string', minLength: 1, description: 'The upstream\'s own name of the tool.' },
    definition: { type: 'string', pattern: '^sha256:[0-9a-f]{64}$', description: 'The digest of the tool\'s definition the contract was written against.' },
  },
  required: ['upstream', 'tool', 'definition'],
  oneOf: [{ required: ['url'] }, { required: ['command'] }],
  additionalProperties: false,
} as const;

/**
 * The digest of what a contract depends on in an upstream tool's definition: its name, input and output schemas and
 * annotations (canonical JSON, SHA-256). The description is left out: rewording it changes no call.
 */
export function definitionDigest(tool: UpstreamToolDefinition): string {
  const relevant = { name: tool.name, inputSchema: tool.inputSchema, outputSchema: tool.outputSchema ?? null, annotations: tool.annotations ?? {} };
  return `sha256:${createHash('sha256').update(canonicalJson(relevant)).digest('hex')}`;
}

/**
 * The operation class of an upstream tool from its annotations: `readOnlyHint` → read_only; `idempotentHint` (and not
 * destructive-only) → idempotent_write; `destructiveHint`, or no hint at all → irreversible, the class that never
 * sends a call twice. MCP's defaults read a tool without annotations as destructive and not idempotent.
 */
export function classFromAnnotations(annotations: UpstreamToolAnnotations | undefined): OperationClass {
  if (annotations?.readOnlyHint === true) return 'read_only';
  if (annotations?.idempotentHint === true) return 'idempotent_write';
  return 'irreversible';
}

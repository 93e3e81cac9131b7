/**
 * The one place stream names and execution ids are built and parsed: no other code builds a stream name inline, so
 * every name the store holds parses back to its parts (CONTRIBUTING.md, "Conventions").
 *
 * Categories (the part before the first `-`):
 * - `execution-<execution id>`: one stream per execution (docs/design.md section 4).
 * - `intent-<fingerprint digest>`: the atomic per-fingerprint claim (docs/design.md section 5).
 * - `idempotency-<actor>/<tool>/<key digest>`: a caller's idempotency key, claimed per actor and tool.
 * - `run-<run id>`: the sessions journal of one agent run (docs/design.md section 3).
 * - `vault-<name>`: the credential vault's state changes (never a credential value).
 * - `approver-<name>`: API tokens of people who decide approvals over HTTP.
 *
 * Free-form parts (actor, tool, run id) are percent-encoded with `encodeURIComponent`, which always encodes `/`,
 * so every name parses back to exactly the parts it was built from.
 */
import { fingerprintDigest, type Fingerprint } from '@oncegate/fingerprint';
import { InvalidIdentifierError } from './errors';

export const EXECUTION_ID_PREFIX = 'ex_';

/** `ex_` + a 26-character Crockford base32 ULID, canonical upper case. */
export type ExecutionId = `ex_${string}`;

// The first character is at most 7: a ULID's 48-bit timestamp fills 10 base32 characters minus 2 bits.
const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
const HEX_DIGEST = /^[0-9a-f]{16,128}$/;
/** What `fingerprintDigest` makes of `hmac-sha256:<key-id>:<hex>`: `<key-id>-<hex>`. */
const FINGERPRINT_DIGEST = /^[a-z0-9-]{1,32}-[0-9a-f]{64}$/;
const MAX_PART_LENGTH = 256;

export function isUlid(value: unknown): value is string {
  return typeof value === 'string' && ULID.test(value);
}

export function isExecutionId(value: unknown): value is ExecutionId {
  return (
    typeof value === 'string' && value.startsWith(EXECUTION_ID_PREFIX) && isUlid(value.slice(EXECUTION_ID_PREFIX.length))
  );
}

/**
 * The execution id for a freshly generated ULID (the generator lives outside the domain). ULIDs decode
 * case-insensitively, so lower case is accepted and normalised to the canonical upper case.
 */
export function executionIdFromUlid(ulid: string): ExecutionId {
  const canonical = ulid.toUpperCase();
  if (!isUlid(canonical)) {
    throw new InvalidIdentifierError('ulid', 'expected 26 Crockford base32 characters starting with 0-7');
  }
  return `${EXECUTION_ID_PREFIX}${canonical}`;
}

/** Validates a string that claims to be an execution id (e.g. from a wire request). */
export function parseExecutionId(value: string): ExecutionId {
  if (!isExecutionId(value)) {
    throw new InvalidIdentifierError('execution_id', 'expected ex_ followed by a canonical upper-case ULID');
  }
  return value;
}

export function ulidOfExecutionId(executionId: ExecutionId): string {
  return executionId.slice(EXECUTION_ID_PREFIX.length);
}

export const STREAM_CATEGORIES = {
  execution: 'execution',
  intent: 'intent',
  idempotencyKey: 'idempotency',
  run: 'run',
  session: 'session',
  agent: 'agent',
  vault: 'vault',
  approver: 'approver',
  parked: 'parked',
  channel: 'channel',
} as const;

export type StreamCategory = (typeof STREAM_CATEGORIES)[keyof typeof STREAM_CATEGORIES];

export function executionStream(executionId: ExecutionId): string {
  return `${STREAM_CATEGORIES.execution}-${parseExecutionId(executionId)}`;
}

/**
 * The claim stream of one intent: `intent-<key-id>-<hex>`. The key id is part of the name, so during a key
 * rotation a look-up tries the claim stream of every candidate fingerprint.
 */
export function intentStream(fingerprint: Fingerprint): string {
  let digest: string;
  try {
    digest = fingerprintDigest(fingerprint);
  } catch {
    throw new InvalidIdentifierError('fingerprint_digest', 'expected hmac-sha256:<key-id>:<64 hex>');
  }
  return `${STREAM_CATEGORIES.intent}-${digest}`;
}

/**
 * The claim stream of a caller idempotency key, per actor and tool. The key itself never appears: the caller
 * passes a hex digest of it, computed outside the domain (which has no crypto).
 */
export function idempotencyKeyStream(actor: string, tool: string, keyDigest: string): string {
  requirePart('actor', actor);
  requirePart('tool', tool);
  requireDigest('idempotency_key_digest', keyDigest);
  return `${STREAM_CATEGORIES.idempotencyKey}-${encodeURIComponent(actor)}/${encodeURIComponent(tool)}/${keyDigest}`;
}

export function runStream(runId: string): string {
  requirePart('run_id', runId);
  return `${STREAM_CATEGORIES.run}-${encodeURIComponent(runId)}`;
}

/** The sessions journal of one MCP session: how it was initialised, so a restart can restore it. */
export function sessionStream(sessionId: string): string {
  requirePart('session_id', sessionId);
  return `${STREAM_CATEGORIES.session}-${encodeURIComponent(sessionId)}`;
}

/** Events a service's consumer could not handle and set aside, with why, and their replays. */
export function parkedStream(consumer: string): string {
  requirePart('consumer', consumer);
  return `${STREAM_CATEGORIES.parked}-${encodeURIComponent(consumer)}`;
}

/** API tokens of one agent, stored hashed (docs/design.md section 3). */
export function agentStream(agentName: string): string {
  requirePart('agent_name', agentName);
  return `${STREAM_CATEGORIES.agent}-${encodeURIComponent(agentName)}`;
}

/** The vault's stream: initialised, locked, unlocked, credentials stored and removed (names, never values). */
export function vaultStream(name = 'main'): string {
  requirePart('vault_name', name);
  return `${STREAM_CATEGORIES.vault}-${encodeURIComponent(name)}`;
}

/** API tokens of one approver (a person deciding approvals through the HTTP API). */
export function approverStream(approverName: string): string {
  requirePart('agent_name', approverName);
  return `${STREAM_CATEGORIES.approver}-${encodeURIComponent(approverName)}`;
}

export type ParsedStreamName =
  | { readonly category: 'execution'; readonly executionId: ExecutionId }
  | { readonly category: 'intent'; readonly fingerprintDigest: string }
  | { readonly category: 'idempotency'; readonly actor: string; readonly tool: string; readonly keyDigest: string }
  | { readonly category: 'run'; readonly runId: string }
  | { readonly category: 'session'; readonly sessionId: string }
  | { readonly category: 'agent'; readonly agentName: string }
  | { readonly category: 'vault'; readonly vaultName: string }
  | { readonly category: 'approver'; readonly approverName: string };

/** The parts of a stream name built by this module; `undefined` for any other string. */
export function parseStreamName(name: string): ParsedStreamName | undefined {
  const dash = name.indexOf('-');
  if (dash <= 0) return undefined;
  const category = name.slice(0, dash);
  const rest = name.slice(dash + 1);
  switch (category) {
    case STREAM_CATEGORIES.execution:
      return isExecutionId(rest) ? { category: 'execution', executionId: rest } : undefined;
    case STREAM_CATEGORIES.intent:
      return FINGERPRINT_DIGEST.test(rest) ? { category: 'intent', fingerprintDigest: rest } : undefined;
    case STREAM_CATEGORIES.idempotencyKey: {
      const parts = rest.split('/');
      if (parts.length !== 3) return undefined;
      const [encodedActor = '', encodedTool = '', keyDigest = ''] = parts;
      const actor = decodePart(encodedActor);
      const tool = decodePart(encodedTool);
      if (actor === undefined || tool === undefined || !HEX_DIGEST.test(keyDigest)) return undefined;
      return { category: 'idempotency', actor, tool, keyDigest };
    }
    case STREAM_CATEGORIES.run: {
      const runId = decodePart(rest);
      return runId === undefined ? undefined : { category: 'run', runId };
    }
    case STREAM_CATEGORIES.session: {
      const sessionId = decodePart(rest);
      return sessionId === undefined ? undefined : { category: 'session', sessionId };
    }
    case STREAM_CATEGORIES.agent: {
      const agentName = decodePart(rest);
      return agentName === undefined ? undefined : { category: 'agent', agentName };
    }
    case STREAM_CATEGORIES.vault: {
      const vaultName = decodePart(rest);
      return vaultName === undefined ? undefined : { category: 'vault', vaultName };
    }
    case STREAM_CATEGORIES.approver: {
      const approverName = decodePart(rest);
      return approverName === undefined ? undefined : { category: 'approver', approverName };
    }
    default:
      return undefined;
  }
}

export function executionIdOfStream(name: string): ExecutionId | undefined {
  const parsed = parseStreamName(name);
  return parsed?.category === 'execution' ? parsed.executionId : undefined;
}

function requireDigest(identifier: 'fingerprint_digest' | 'idempotency_key_digest', value: string): void {
  if (!HEX_DIGEST.test(value)) {
    throw new InvalidIdentifierError(identifier, 'expected 16 to 128 lower-case hex characters');
  }
}

function requirePart(identifier: 'actor' | 'tool' | 'run_id' | 'session_id' | 'agent_name' | 'vault_name' | 'consumer', value: string): void {
  if (value.length === 0 || value.length > MAX_PART_LENGTH) {
    throw new InvalidIdentifierError(identifier, `expected 1 to ${MAX_PART_LENGTH} characters`);
  }
}

/** Decodes a percent-encoded part, accepting only the exact encoding this module produces. */
function decodePart(encoded: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
  if (decoded.length === 0 || decoded.length > MAX_PART_LENGTH || encodeURIComponent(decoded) !== encoded) {
    return undefined;
  }
  return decoded;
}

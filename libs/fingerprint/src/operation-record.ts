import { canonicalJson, toJsonValue, type JsonObject, type JsonValue } from './canonical-json';
import { InvalidOperationRecordError } from './errors';
import { applyFingerprintPolicy, type FingerprintPolicy } from './fingerprint-policy';
import { hmacUnderArgumentKey, type KeyRing } from './key-ring';

/**
 * The canonical operation record (docs/design.md section 2): what a call does, who does it, through which
 * credential and within which intent scope. Keys are snake_case because the record is hashed and shown
 * to analysts as is. Built from the tool contract, never from raw request bytes: JSON-RPC id, session
 * id, timestamps and `_meta` are not part of it.
 */
export interface OperationRecord {
  /** The authenticated principal, e.g. `agent:deploy-bot`. */
  readonly actor: string;
  readonly tool: string;
  /** `http`, `ssh` or a plugin channel. */
  readonly channel: string;
  /** Where the effect lands, e.g. `deploy-api.internal.example/releases`. */
  readonly target: string;
  /** The contract's credential reference; null when the tool uses none (the key is always present). */
  readonly credential_ref: string | null;
  /** HTTP method, uppercase; present for `http`, absent for `ssh`. */
  readonly method?: string;
  /** The effect arguments after the contract's defaults, exclusions and secret hiding. */
  readonly arguments: JsonObject;
  /** `key:<value>`, `run:<id>` or `actor` (docs/design.md section 3). */
  readonly intent_scope: string;
}

/** The only inputs of a record; anything else a caller holds (JSON-RPC id, session id, clock) stays out. */
export interface OperationRecordInput {
  readonly actor: string;
  readonly tool: string;
  readonly channel: string;
  readonly target: string;
  readonly credentialRef: string | null;
  /** Required for `http` (any case; stored uppercase), refused for `ssh`, optional for plugin channels. */
  readonly method?: string | undefined;
  /** The tool call's raw `arguments` object. Not changed. A top-level `_meta` key is dropped. */
  readonly arguments: unknown;
  readonly intentScope: string;
}

// RFC 9110 token characters.
const HTTP_METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Builds the canonical operation record of a call: copies and checks the arguments (plain JSON only),
 * drops the top-level `_meta`, then applies the contract's policy — defaults filled in, excluded
 * arguments removed, `secret` arguments replaced by `hmac-sha256:<argument-key-id>:<hex>` (HMAC-SHA256
 * under the ring's argument key over the value's canonical JSON). The result is frozen and safe to store.
 *
 * Only a top-level `_meta` is dropped: that is where MCP puts it. Deeper objects are the tool's own
 * data, and silently dropping part of them could merge two different intents into one.
 *
 * @throws InvalidOperationRecordError for a missing or malformed field
 * @throws NonJsonValueError for an argument that is not plain JSON (path `arguments.…`)
 * @throws FingerprintPolicyError for a malformed policy or one that does not fit the arguments
 */
export function buildOperationRecord(
  input: OperationRecordInput,
  policy: FingerprintPolicy,
  keys: KeyRing,
): OperationRecord {
  const actor = requireText(input.actor, 'actor');
  const tool = requireText(input.tool, 'tool');
  const channel = requireText(input.channel, 'channel');
  const target = requireText(input.target, 'target');
  const credentialRef = input.credentialRef;
  if (credentialRef !== null && (typeof credentialRef !== 'string' || credentialRef === '')) {
    throw new InvalidOperationRecordError('credential_ref', 'not_a_string_or_null');
  }
  const method = normaliseMethod(input.method, channel);
  const intentScope = requireText(input.intentScope, 'intent_scope');

  const raw = input.arguments;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new InvalidOperationRecordError('arguments', 'arguments_not_an_object');
  }
  // The copy is a fresh object owned here, so the policy may change it in place.
  const args = toJsonValue(raw, 'arguments') as Record<string, JsonValue>;
  delete args['_meta'];
  applyFingerprintPolicy(args, policy, (value) => hideSecretArgument(value, keys));

  return deepFreeze({
    actor,
    tool,
    channel,
    target,
    credential_ref: credentialRef,
    ...(method === undefined ? {} : { method }),
    arguments: args,
    intent_scope: intentScope,
  });
}

/**
 * The record as stored in `ExecutionAccepted` and shown to analysts: a detached, frozen, checked copy.
 * Nothing needs hiding here, because `buildOperationRecord` replaced secret arguments by their HMAC
 * before the record existed; this is the one place that says so, so a store never serialises a record
 * that did not pass through these checks.
 *
 * @throws NonJsonValueError when the record holds a value that is not plain JSON
 */
export function redactRecord(record: OperationRecord): OperationRecord {
  return deepFreeze(toJsonValue(record, 'record') as unknown as OperationRecord);
}

function hideSecretArgument(value: JsonValue, keys: KeyRing): string {
  return `hmac-sha256:${keys.argumentKeyId}:${hmacUnderArgumentKey(keys, canonicalJson(value))}`;
}

function requireText(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new InvalidOperationRecordError(field, 'not_a_non_empty_string');
  }
  return value;
}

function normaliseMethod(method: unknown, channel: string): string | undefined {
  if (method === undefined) {
    if (channel === 'http') throw new InvalidOperationRecordError('method', 'method_required_for_http');
    return undefined;
  }
  if (channel === 'ssh') throw new InvalidOperationRecordError('method', 'method_not_allowed_for_ssh');
  if (typeof method !== 'string' || !HTTP_METHOD.test(method)) {
    throw new InvalidOperationRecordError('method', 'invalid_http_method');
  }
  return method.toUpperCase();
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

import { sign, verify, type KeyObject } from 'node:crypto';
import { Ajv, type ValidateFunction } from 'ajv';
import { canonicalJson } from '@oncegate/fingerprint';
import type { BusDecision } from './bus-decisions';
import DECISION_SCHEMA from './decision.schema.json' with { type: 'json' };

/**
 * Signatures of decisions taken from the bus (docs/bus.md, "Who may decide"): Ed25519 over the RFC 8785 canonical
 * JSON of the decision without its `signature` field, so any tooling that canonicalises JSON signs the same bytes
 * whatever order or spacing it wrote the message with. The canonical form is the one fingerprints and event hashes
 * use.
 */

/** An Ed25519 signature is 64 bytes: 88 characters of base64 with its padding. */
const SIGNATURE_BYTES = 64;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The bytes a decision's signature is made over: the canonical JSON (UTF-8) of the decision without `signature`. */
export function decisionSigningBytes(decision: Readonly<Record<string, unknown>>): Buffer {
  const { signature: _signature, ...unsigned } = decision;
  return Buffer.from(canonicalJson(unsigned), 'utf8');
}

/** `decision` with `signature` by `privateKey` (Ed25519); a signature it carried already is replaced. */
export function signDecision(decision: Readonly<Record<string, unknown>>, privateKey: KeyObject): Record<string, unknown> {
  if (privateKey.type !== 'private' || privateKey.asymmetricKeyType !== 'ed25519') {
    throw new TypeError(`decisions are signed with an Ed25519 private key, not ${privateKey.type === 'private' ? `a key of type ${privateKey.asymmetricKeyType}` : `a ${privateKey.type} key`}`);
  }
  const { signature: _signature, ...unsigned } = decision;
  return { ...unsigned, signature: sign(null, decisionSigningBytes(unsigned), privateKey).toString('base64') };
}

/** The 64 bytes of a base64 Ed25519 signature, or `undefined` when the text is not one. */
export function signatureBytes(signature: string): Buffer | undefined {
  if (signature.length % 4 !== 0 || !BASE64.test(signature)) return undefined;
  const bytes = Buffer.from(signature, 'base64');
  return bytes.length === SIGNATURE_BYTES ? bytes : undefined;
}

/** The id of the first of `keys` the signature verifies with over `decision`, or `undefined` when none does. */
export function verifyingKey(
  decision: Readonly<Record<string, unknown>>,
  signature: Buffer,
  keys: readonly { readonly keyId: string; readonly key: KeyObject }[],
): string | undefined {
  const bytes = decisionSigningBytes(decision);
  return keys.find(({ key }) => verify(null, bytes, key, signature))?.keyId;
}

let decisionSchema: ValidateFunction<BusDecision> | undefined;

/**
 * The validator of docs/events/bus-decision.schema.json, compiled on first use rather than at import: every oncegate
 * process loads this library, and compiling it there (ajv compiles its meta-schema first) cost each CLI command and
 * each service's start about a tenth of a second of CPU for a schema only the decisions consumer and
 * `sign-decision` use.
 */
export function decisionValidator(): ValidateFunction<BusDecision> {
  return (decisionSchema ??= new Ajv({ allErrors: false }).compile<BusDecision>(DECISION_SCHEMA));
}

/**
 * The decision in `text` (JSON) ready to be signed, or an Error saying why the relay would refuse it as malformed:
 * signing a message the relay refuses unread helps no one.
 */
export function decisionToSign(text: string): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new Error(`not JSON: ${(error as Error).message}`);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new Error('not a decision: a decision is a JSON object');
  const { signature: _signature, ...unsigned } = body as Record<string, unknown>;
  const validate = decisionValidator();
  if (!validate(unsigned)) {
    const [first] = validate.errors ?? [];
    throw new Error(`not a decision (docs/events/bus-decision.schema.json): ${first?.instancePath || '/'} ${first?.message ?? 'is invalid'}`);
  }
  return unsigned;
}

import { canonicalJson } from './canonical-json';
import { InvalidFingerprintError } from './errors';
import { hmacUnderFingerprintKey, type KeyRing } from './key-ring';
import type { OperationRecord } from './operation-record';

/** `hmac-sha256:<key-id>:<64 lowercase hex>` — docs/design.md section 1, the intent fingerprint. */
export type Fingerprint = `hmac-sha256:${string}:${string}`;

export interface ParsedFingerprint {
  readonly algorithm: 'hmac-sha256';
  readonly keyId: string;
  /** 64 lowercase hex digits. */
  readonly hex: string;
}

const FINGERPRINT = /^hmac-sha256:([a-z0-9-]{1,32}):([0-9a-f]{64})$/;

/**
 * The intent fingerprint of `record` under the ring's current key: HMAC-SHA256 over the UTF-8 bytes of
 * the record's RFC 8785 canonical JSON. A keyed MAC, not a plain hash, so the journal cannot be used to
 * guess low-entropy argument values.
 */
export function fingerprint(record: OperationRecord, ring: KeyRing): Fingerprint {
  return fingerprintUnder(canonicalJson(record), ring, ring.current);
}

/**
 * The fingerprints a look-up tries for `record`: one under every key the ring still holds (`active` and
 * `verify_only`), the current key first. During rotation an execution claimed under the previous key
 * is still found; a key removed from the ring is no longer tried.
 */
export function candidateFingerprints(record: OperationRecord, ring: KeyRing): readonly Fingerprint[] {
  const canonical = canonicalJson(record);
  return ring.lookupOrder.map((keyId) => fingerprintUnder(canonical, ring, keyId));
}

/**
 * Splits a fingerprint into its parts.
 *
 * @throws InvalidFingerprintError when `value` is not a string of the form
 *   `hmac-sha256:<key-id>:<64 lowercase hex>` with a key id matching `[a-z0-9-]{1,32}`
 */
export function parseFingerprint(value: unknown): ParsedFingerprint {
  if (typeof value !== 'string') throw new InvalidFingerprintError(`<${typeof value}>`, 'not_a_string');
  const match = FINGERPRINT.exec(value);
  if (match === null) throw new InvalidFingerprintError(value.slice(0, 100), 'malformed');
  return { algorithm: 'hmac-sha256', keyId: match[1]!, hex: match[2]! };
}

/**
 * `<key-id>-<hex>`: the fingerprint as a name part made only of `[a-z0-9-]`, safe in a stream name
 * (`intent-<digest>`), a Kafka key or a file name. Stable, unambiguous (the hex part has a fixed
 * length) and never shortened: the claim stream relies on it being collision-free.
 *
 * @throws InvalidFingerprintError for a malformed fingerprint
 */
export function fingerprintDigest(value: string): string {
  const { keyId, hex } = parseFingerprint(value);
  return `${keyId}-${hex}`;
}

function fingerprintUnder(canonical: string, ring: KeyRing, keyId: string): Fingerprint {
  return `hmac-sha256:${keyId}:${hmacUnderFingerprintKey(ring, keyId, canonical)}`;
}

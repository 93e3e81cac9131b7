export { canonicalJson, toJsonValue } from './canonical-json';
export { canonicalEventJson, canonicalJsonOfPlain, canonicalJsonUnchecked } from './canonical-json-writer';
export type { JsonObject, JsonPrimitive, JsonValue } from './canonical-json';
export {
  FingerprintPolicyError,
  InvalidFingerprintError,
  InvalidKeyIdError,
  InvalidKeyRingError,
  InvalidKeySecretError,
  InvalidOperationRecordError,
  NonJsonValueError,
} from './errors';
export type {
  FingerprintError,
  FingerprintPolicyReason,
  InvalidFingerprintReason,
  KeyRingReason,
  KeySecretReason,
  NonJsonReason,
  RecordFieldReason,
} from './errors';
export { candidateFingerprints, fingerprint, fingerprintDigest, parseFingerprint } from './fingerprint';
export type { Fingerprint, ParsedFingerprint } from './fingerprint';
export { checkFingerprintPolicy, EMPTY_FINGERPRINT_POLICY } from './fingerprint-policy';
export type { FingerprintPolicy } from './fingerprint-policy';
export { KEY_ID_PATTERN, KeyRing, keyRingFromConfig, MINIMUM_SECRET_BYTES } from './key-ring';
export type { FingerprintKeyConfig, KeyDescription, KeyRingConfig, KeySecretInput, KeyState } from './key-ring';
export { buildOperationRecord, redactRecord } from './operation-record';
export type { OperationRecord, OperationRecordInput } from './operation-record';

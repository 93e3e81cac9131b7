/*
 * Errors of the fingerprint library. Each carries the facts needed to act and never a value that
 * could be secret (an argument value, a key secret): these errors may reach logs and clients
 * (docs/design.md section 11, invariant 5).
 */

/** Why a value is not JSON that canonicalisation accepts. */
export type NonJsonReason =
  | 'function'
  | 'symbol'
  | 'bigint'
  /** `undefined` as an array element, an array hole, or the whole value. */
  | 'undefined'
  | 'non_finite_number'
  | 'non_plain_object'
  | 'cycle'
  | 'lone_surrogate';

/** A value in a record, argument or default is not plain JSON. */
export class NonJsonValueError extends Error {
  readonly kind = 'non_json_value' as const;
  constructor(
    /** Where the value sits, e.g. `arguments.options.tags[2]`. The value itself is never included. */
    readonly path: string,
    readonly reason: NonJsonReason,
  ) {
    super(`${path}: not a JSON value (${reason})`);
    this.name = 'NonJsonValueError';
  }
}

/** Why a record field was refused. */
export type RecordFieldReason =
  | 'not_a_non_empty_string'
  | 'not_a_string_or_null'
  | 'arguments_not_an_object'
  | 'invalid_http_method'
  | 'method_required_for_http'
  | 'method_not_allowed_for_ssh';

/** A field given to `buildOperationRecord` cannot form a canonical operation record. */
export class InvalidOperationRecordError extends Error {
  readonly kind = 'invalid_operation_record' as const;
  constructor(
    /** The record field (snake_case, as in the record), e.g. `credential_ref`. */
    readonly field: string,
    readonly reason: RecordFieldReason,
  ) {
    super(`operation record field ${field}: ${reason}`);
    this.name = 'InvalidOperationRecordError';
  }
}

/** Why a fingerprint policy, or its application to a call's arguments, was refused. */
export type FingerprintPolicyReason =
  /** A path is empty or has an empty segment (`a..b`, `.a`). */
  | 'invalid_path'
  /** The same path is both excluded and secret; the contract must say which. */
  | 'excluded_and_secret'
  /** A default or secret path runs through an argument that is present but not an object. */
  | 'path_through_non_object';

export class FingerprintPolicyError extends Error {
  readonly kind = 'fingerprint_policy' as const;
  constructor(
    /** The policy path, e.g. `options.dry_run`. */
    readonly path: string,
    readonly reason: FingerprintPolicyReason,
  ) {
    super(`fingerprint policy path ${JSON.stringify(path)}: ${reason}`);
    this.name = 'FingerprintPolicyError';
  }
}

/** Why a string is not a fingerprint. */
export type InvalidFingerprintReason = 'not_a_string' | 'malformed';

/** A value is not `hmac-sha256:<key-id>:<64 lowercase hex>`. */
export class InvalidFingerprintError extends Error {
  readonly kind = 'invalid_fingerprint' as const;
  constructor(
    /** The offending value, cut to 100 characters (a fingerprint is not secret). */
    readonly value: string,
    readonly reason: InvalidFingerprintReason,
  ) {
    super(`not a fingerprint (${reason}): ${JSON.stringify(value)}`);
    this.name = 'InvalidFingerprintError';
  }
}

/** A key id does not match `[a-z0-9-]{1,32}`. */
export class InvalidKeyIdError extends Error {
  readonly kind = 'invalid_key_id' as const;
  /**
   * The offending id; `<N characters>` when longer than 32 (a value that long may be a secret pasted
   * into the wrong field, and a secret appears in no error); `<type>` when not a string.
   */
  readonly keyId: string;
  constructor(
    /** Where the id was given, e.g. `keys[1].id`, `argumentKey.id`, `current`. */
    readonly field: string,
    given: unknown,
  ) {
    const keyId =
      typeof given !== 'string' ? `<${typeof given}>` : given.length > 32 ? `<${given.length} characters>` : given;
    super(`${field}: key id ${JSON.stringify(keyId)} does not match [a-z0-9-]{1,32}`);
    this.name = 'InvalidKeyIdError';
    this.keyId = keyId;
  }
}

/** Why a key secret was refused. The secret itself is never included. */
export type KeySecretReason = 'too_short' | 'not_hex' | 'not_bytes';

export class InvalidKeySecretError extends Error {
  readonly kind = 'invalid_key_secret' as const;
  constructor(
    readonly keyId: string,
    readonly reason: KeySecretReason,
    /** Length in bytes of the secret given (0 when it could not be decoded). */
    readonly length: number,
    readonly minimumLength: number,
  ) {
    super(`key ${keyId}: secret refused (${reason}; ${length} bytes, at least ${minimumLength} required)`);
    this.name = 'InvalidKeySecretError';
  }
}

/** Why a key ring as a whole is inconsistent. */
export type KeyRingReason =
  | 'no_keys'
  | 'duplicate_key_id'
  | 'unknown_current_key'
  | 'current_key_not_active'
  | 'invalid_key_state'
  /** The argument key shares an id or a secret with a fingerprint key; they must be separate. */
  | 'argument_key_not_separate';

export class InvalidKeyRingError extends Error {
  readonly kind = 'invalid_key_ring' as const;
  constructor(
    readonly reason: KeyRingReason,
    /** The key concerned, when there is one. */
    readonly keyId: string | undefined,
  ) {
    super(`key ring refused: ${reason}${keyId === undefined ? '' : ` (key ${keyId})`}`);
    this.name = 'InvalidKeyRingError';
  }
}

export type FingerprintError =
  | NonJsonValueError
  | InvalidOperationRecordError
  | FingerprintPolicyError
  | InvalidFingerprintError
  | InvalidKeyIdError
  | InvalidKeySecretError
  | InvalidKeyRingError;

/**
 * Typed errors of the vault. None of them carries a credential value, in its message or in a property: they name
 * the credential, the target and the reason only.
 */

/** The vault is locked (or not initialised, or this process cannot open it): no credential is handed out. */
export class VaultLockedError extends Error {
  readonly kind = 'vault_locked' as const;
  constructor(readonly reason: string) {
    super(`the vault is locked: ${reason}`);
    this.name = 'VaultLockedError';
  }
}

/** No usable credential under this reference: unknown, for another channel, or its stored entry does not authenticate. */
export class CredentialUnavailableError extends Error {
  readonly kind = 'credential_unavailable' as const;
  constructor(
    readonly ref: string,
    readonly reason: string,
  ) {
    super(`credential '${ref}' is unavailable: ${reason}`);
    this.name = 'CredentialUnavailableError';
  }
}

/** The credential exists but is not bound to where it was about to be sent. */
export class CredentialBindingError extends Error {
  readonly kind = 'credential_binding' as const;
  constructor(
    readonly ref: string,
    /** `host:port/path` (HTTP) or `host:port` (SSH). */
    readonly target: string,
    readonly bindings: readonly string[],
  ) {
    super(bindingRefusal(ref, target, bindings));
    this.name = 'CredentialBindingError';
  }
}

export function bindingRefusal(ref: string, target: string, bindings: readonly string[]): string {
  return `credential '${ref}' is bound to ${bindings.join(', ')}, not ${target}`;
}

/** An error whose message is its reason, named after its class; each subclass adds its `kind`. */
export abstract class VaultReasonError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = new.target.name;
  }
}

/** The master key is missing, or it does not open the vault's data key. */
export class VaultKeyError extends VaultReasonError {
  readonly kind = 'vault_key' as const;
}

/** An operator command that the vault's state does not allow (no vault yet, one already, no such credential). */
export class VaultStateError extends VaultReasonError {
  readonly kind = 'vault_state' as const;
}

export const NO_MASTER_KEY = 'no master key in this process: set ONCEGATE_MASTER_KEY or ONCEGATE_MASTER_KEY_FILE';
export const WRONG_MASTER_KEY = 'the master key does not open this vault';
export const NOT_INITIALISED = 'there is no vault in this data folder: run oncegate vault init';

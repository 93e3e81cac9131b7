import { EventStoreUnavailableError } from '@oncegate/event-store';
import { CredentialBindingError, CredentialUnavailableError, VaultLockedError } from '@oncegate/vault';
import type { DispatchRefusal } from './channel-definition';

/**
 * A failure to obtain a credential from the vault, as a dispatcher records it: a locked vault is `vault_locked`;
 * anything else (unknown, not bound to this target, an entry that does not authenticate, a vault file that
 * cannot be read) is `credential_unresolved`. The vault's errors never hold a value, so their message is the reason;
 * of any other error only what it was is said (the vault's journal unreachable with its store, or its kind).
 */
export function vaultRefusal(error: unknown): DispatchRefusal {
  if (error instanceof VaultLockedError) return { basis: 'vault_locked', reason: error.message };
  if (isVaultError(error)) return { basis: 'credential_unresolved', reason: error.message };
  if (error instanceof EventStoreUnavailableError) return { basis: 'credential_unresolved', reason: 'the vault could not be read: its store cannot be reached' };
  return { basis: 'credential_unresolved', reason: `the vault could not be read: ${(error as Error).name}` };
}

/** Whether the error is the vault's own refusal (locked, unknown or unbound credential). */
export function isVaultError(error: unknown): error is VaultLockedError | CredentialUnavailableError | CredentialBindingError {
  return error instanceof VaultLockedError || error instanceof CredentialUnavailableError || error instanceof CredentialBindingError;
}

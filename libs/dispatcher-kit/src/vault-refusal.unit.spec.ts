import { describe, expect, it } from 'vitest';
import { EventStoreUnavailableError } from '@oncegate/event-store';
import { VaultLockedError } from '@oncegate/vault';
import { vaultRefusal } from './vault-refusal';

describe('vaultRefusal', () => {
  it('given the vault journal unreachable with its store, then the reason says so in words, naming no class and no location', () => {
    const refusal = vaultRefusal(new EventStoreUnavailableError('postgres://oncegate@db.internal:5432/oncegate', 'connect ECONNREFUSED 10.0.0.7:5432'));
    expect(refusal).toEqual({ basis: 'credential_unresolved', reason: 'the vault could not be read: its store cannot be reached' });
  });

  it('given a locked vault, then it is vault_locked with the vault’s own message', () => {
    const error = new VaultLockedError('locked by user:alice');
    expect(vaultRefusal(error)).toEqual({ basis: 'vault_locked', reason: error.message });
  });

  it('given an error of another kind, then only its kind is said', () => {
    expect(vaultRefusal(new RangeError('offset 4096 out of range in /var/lib/oncegate/vault.key'))).toEqual({
      basis: 'credential_unresolved',
      reason: 'the vault could not be read: RangeError',
    });
  });
});

import { vaultStream } from '@oncegate/domain';
import type { EventStore, ExpectedRevision, RecordedEvent } from '@oncegate/event-store';
import type { CredentialApproval, CredentialKind } from './vault-entry';
import { newEventId } from '@oncegate/event-store';

/**
 * The vault's state changes, on `vaultStream()`: initialised, unlocked, locked, a credential stored or removed.
 * A credential event names the credential and where it may go, never its value nor anything derived from it.
 */
export interface VaultInitializedData {
  readonly by: string;
  readonly at: string;
}

export interface VaultUnlockedData {
  readonly by: string;
  readonly at: string;
}

export interface VaultLockedData {
  readonly by: string;
  readonly reason: string;
  readonly at: string;
}

export interface CredentialStoredData {
  readonly ref: string;
  readonly kind: CredentialKind;
  /** `header` kind: the header the value is sent in; `null` otherwise. */
  readonly header: string | null;
  readonly scheme: string | null;
  readonly bindings: readonly string[];
  readonly approval: CredentialApproval;
  readonly version: number;
  readonly by: string;
  readonly at: string;
}

export interface CredentialRemovedData {
  readonly ref: string;
  /** The version that was current. */
  readonly version: number;
  readonly by: string;
  readonly at: string;
}

export type VaultEvent =
  | { readonly type: 'VaultInitialized'; readonly data: VaultInitializedData }
  | { readonly type: 'VaultUnlocked'; readonly data: VaultUnlockedData }
  | { readonly type: 'VaultLocked'; readonly data: VaultLockedData }
  | { readonly type: 'CredentialStored'; readonly data: CredentialStoredData }
  | { readonly type: 'CredentialRemoved'; readonly data: CredentialRemovedData };

/** A credential as the journal knows it: everything but the value (and the basic username, kept in the file). */
export type StoredCredential = Omit<CredentialStoredData, 'at'> & { readonly storedAt: string };

/** The vault as its journal tells it. */
export interface VaultHistory {
  /** `null` until `VaultInitialized`. */
  readonly initialized: { readonly at: string; readonly by: string } | null;
  /** What the last of VaultInitialized / VaultUnlocked / VaultLocked says; initialising unlocks. */
  readonly lock: { readonly locked: boolean; readonly at: string; readonly by: string; readonly reason: string | null } | null;
  readonly credentials: ReadonlyMap<string, StoredCredential>;
  /** The highest version ever stored per reference, removed ones included, so a version is never reused. */
  readonly lastVersions: ReadonlyMap<string, number>;
  /** Revision of the vault stream, for the next append; `undefined` when it has no event. */
  readonly revision: number | undefined;
}

export const EMPTY_VAULT_HISTORY: VaultHistory = {
  initialized: null,
  lock: null,
  credentials: new Map(),
  lastVersions: new Map(),
  revision: undefined,
};

/** Every type `evolveVault` folds: a gateway that has seen none of them appended since knows the vault as it is. */
export const VAULT_EVENT_TYPES: readonly string[] = Object.freeze(['VaultInitialized', 'VaultUnlocked', 'VaultLocked', 'CredentialStored', 'CredentialRemoved']);
const FOLDED_TYPES: ReadonlySet<string> = new Set(VAULT_EVENT_TYPES);

/** Folds one event of the vault stream (events of other streams or types leave it as it is). */
export function evolveVault(history: VaultHistory, event: RecordedEvent): VaultHistory {
  if (event.streamId !== vaultStream() || !FOLDED_TYPES.has(event.type)) return history;
  const next = { ...history, revision: event.revision };
  const vault = { type: event.type, data: event.data } as VaultEvent;
  switch (vault.type) {
    case 'VaultInitialized':
      return { ...next, initialized: { at: vault.data.at, by: vault.data.by }, lock: { locked: false, at: vault.data.at, by: vault.data.by, reason: null } };
    case 'VaultUnlocked':
      return { ...next, lock: { locked: false, at: vault.data.at, by: vault.data.by, reason: null } };
    case 'VaultLocked':
      return { ...next, lock: { locked: true, at: vault.data.at, by: vault.data.by, reason: vault.data.reason } };
    case 'CredentialStored': {
      const { ref, kind, header, scheme, bindings, approval, version, by, at } = vault.data;
      const credentials = new Map(history.credentials).set(ref, { ref, kind, header, scheme, bindings, approval, version, storedAt: at, by });
      const lastVersions = new Map(history.lastVersions).set(ref, Math.max(version, history.lastVersions.get(ref) ?? 0));
      return { ...next, credentials, lastVersions };
    }
    case 'CredentialRemoved': {
      const credentials = new Map(history.credentials);
      credentials.delete(vault.data.ref);
      return { ...next, credentials };
    }
    default:
      return vault satisfies never;
  }
}

export async function readVaultHistory(store: EventStore): Promise<VaultHistory> {
  const events = await store.readStream(vaultStream());
  return events.reduce(evolveVault, EMPTY_VAULT_HISTORY);
}

/**
 * Appends one vault event with the revision the caller decided on, so two operators changing the vault at once
 * cannot both act on the same view of it (the second gets `WrongExpectedRevisionError`).
 */
export async function appendVaultEvent(store: EventStore, event: VaultEvent, expected: number | undefined): Promise<void> {
  const eventId = newEventId();
  const expectedRevision: ExpectedRevision = expected === undefined ? 'no_stream' : expected;
  await store.appendToStream(
    vaultStream(),
    [
      {
        id: eventId,
        type: event.type,
        data: event.data,
        metadata: { eventId, actor: event.data.by, recordedAt: event.data.at, schemaVersion: 1 },
      },
    ],
    { expectedRevision },
  );
}

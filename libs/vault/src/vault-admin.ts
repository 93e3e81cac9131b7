import { WrongExpectedRevisionError, type EventStore } from '@oncegate/event-store';
import { developmentMasterKey, masterKey, SealKeyError, usesDevelopmentMasterKey } from './seal-keys';
import { DEFAULT_KDF, DEVELOPMENT_KDF, newDataKey, seal, unwrapKey, wrapKey } from './vault-crypto';
import { credentialMetadata, credentialValue, metadataAad, type CredentialInput } from './vault-entry';
import { NO_MASTER_KEY, NOT_INITIALISED, VaultKeyError, VaultStateError, WRONG_MASTER_KEY } from './vault-errors';
import { VAULT_DATA_KEY_PURPOSE, VaultFile, vaultFilePath } from './vault-file';
import { appendVaultEvent, readVaultHistory, type StoredCredential, type VaultHistory } from './vault-journal';

/**
 * What operators do to the vault (the `oncegate vault` commands, and the development default of the gateway):
 * each one checks the journal's view of the vault, changes `vault.db` where it must, and appends its event with
 * the revision it read.
 */
export interface VaultContext {
  readonly store: EventStore;
  readonly dataDir: string;
  readonly env: NodeJS.ProcessEnv;
  /** Who does it (`operator:cli`, `operator:alice`); recorded on the event. */
  readonly by: string;
  /** ISO-8601 instant; default now. */
  readonly at?: string;
}

function instant(context: VaultContext): string {
  return context.at ?? new Date().toISOString();
}

/** The master key of this process, or a `VaultKeyError` saying why there is none. */
export function masterKeyOf(dataDir: string, env: NodeJS.ProcessEnv): string {
  let key: string | undefined;
  try {
    key = masterKey(dataDir, env);
  } catch (error) {
    if (error instanceof SealKeyError) throw new VaultKeyError(error.message);
    throw error;
  }
  if (key === undefined || key === '') throw new VaultKeyError(NO_MASTER_KEY);
  return key;
}

/** Opens the data key of `file` with the master key; the caller zero-fills it when done. */
export async function unwrapDataKey(file: VaultFile, master: string): Promise<Buffer> {
  const record = file.keyRecord();
  if (record === undefined) throw new VaultKeyError(`${file.file} holds no data key`);
  const key = await unwrapKey(master, record, VAULT_DATA_KEY_PURPOSE);
  if (key === undefined) throw new VaultKeyError(WRONG_MASTER_KEY);
  return key;
}

/** Runs `work` with the data key, opened with this process's master key, and zero-fills the key after. */
async function withDataKey<T>(dataDir: string, env: NodeJS.ProcessEnv, work: (file: VaultFile, key: Buffer) => T | Promise<T>): Promise<T> {
  if (!VaultFile.exists(dataDir)) throw new VaultStateError(`the journal has a vault but ${vaultFilePath(dataDir)} is missing`);
  const master = masterKeyOf(dataDir, env);
  const file = VaultFile.open(dataDir);
  try {
    const key = await unwrapDataKey(file, master);
    try {
      return await work(file, key);
    } finally {
      key.fill(0);
    }
  } finally {
    file.close();
  }
}

async function initialisedHistory(store: EventStore): Promise<VaultHistory> {
  const history = await readVaultHistory(store);
  if (history.initialized === null) throw new VaultStateError(NOT_INITIALISED);
  return history;
}

export interface InitVaultResult {
  /** Set when a development master key file was written for this vault. */
  readonly devMasterKeyFile: string | undefined;
  /** True when `vault.db` was already there (made by an init that stopped before its event) and is now recorded. */
  readonly recorded: boolean;
}

/**
 * Makes the vault: a random data key wrapped under the master key in a new `vault.db`, then `VaultInitialized`.
 * With `dev` and no master key in the environment, the development master key file is used (made if missing).
 */
export async function initVault(context: VaultContext, options: { dev?: boolean } = {}): Promise<InitVaultResult> {
  const history = await readVaultHistory(context.store);
  if (history.initialized !== null) {
    throw new VaultStateError(`a vault already exists in ${context.dataDir} (initialised ${history.initialized.at} by ${history.initialized.by})`);
  }
  let devMasterKeyFile: string | undefined;
  let master: string;
  try {
    master = masterKeyOf(context.dataDir, context.env);
  } catch (error) {
    if (!(error instanceof VaultKeyError) || error.reason !== NO_MASTER_KEY || !options.dev) throw error;
    const dev = developmentMasterKey(context.dataDir);
    master = dev.key;
    devMasterKeyFile = dev.file;
  }
  const recorded = VaultFile.exists(context.dataDir);
  if (recorded) {
    // A vault file without its event: an earlier init stopped in between. Record it if this master key opens it.
    const file = VaultFile.open(context.dataDir);
    try {
      (await unwrapDataKey(file, master)).fill(0);
    } finally {
      file.close();
    }
  } else {
    const dataKey = newDataKey();
    try {
      const kdf = usesDevelopmentMasterKey(context.dataDir, context.env) ? DEVELOPMENT_KDF : DEFAULT_KDF;
      const wrapped = await wrapKey(master, dataKey, VAULT_DATA_KEY_PURPOSE, kdf);
      VaultFile.create(context.dataDir, { ...wrapped, createdAt: instant(context) }).close();
    } finally {
      dataKey.fill(0);
    }
  }
  await appendVaultEvent(context.store, { type: 'VaultInitialized', data: { by: context.by, at: instant(context) } }, history.revision);
  return { devMasterKeyFile, recorded };
}

/** Proves the master key opens the data key, then records `VaultUnlocked` (unless the vault is unlocked). */
export async function unlockVault(context: VaultContext): Promise<'unlocked' | 'already_unlocked'> {
  const history = await initialisedHistory(context.store);
  await withDataKey(context.dataDir, context.env, () => undefined);
  if (history.lock?.locked === false) return 'already_unlocked';
  await appendVaultEvent(context.store, { type: 'VaultUnlocked', data: { by: context.by, at: instant(context) } }, history.revision);
  return 'unlocked';
}

/** Records `VaultLocked`: every gateway following the journal drops its data key. Needs no master key. */
export async function lockVault(context: VaultContext, reason: string): Promise<'locked' | 'already_locked'> {
  const history = await initialisedHistory(context.store);
  if (history.lock?.locked === true) return 'already_locked';
  await appendVaultEvent(context.store, { type: 'VaultLocked', data: { by: context.by, reason, at: instant(context) } }, history.revision);
  return 'locked';
}

/**
 * Stores a new version of a credential: the value sealed under the data key with the metadata as AAD in
 * `vault.db`, then `CredentialStored` (metadata only). Older versions are removed from the file once the new one
 * is recorded. Needs the master key, not the unlocked state.
 *
 * @throws CredentialInputError for bad input (checked before anything is opened or written)
 */
export async function storeCredential(context: VaultContext, input: CredentialInput, rawValue: string): Promise<StoredCredential> {
  const checked = credentialMetadata(input, 1);
  const value = Buffer.from(credentialValue(checked.kind, rawValue), 'utf8');
  const at = instant(context);
  try {
    const history = await initialisedHistory(context.store);
    const version = (history.lastVersions.get(input.ref) ?? 0) + 1;
    const metadata = { ...checked, version };
    await withDataKey(context.dataDir, context.env, async (file, key) => {
      file.putCredential({ metadata, sealed: seal(key, value, metadataAad(metadata)), storedAt: at });
      try {
        await appendVaultEvent(
          context.store,
          {
            type: 'CredentialStored',
            data: {
              ref: metadata.ref,
              kind: metadata.kind,
              header: metadata.header,
              scheme: metadata.scheme,
              bindings: metadata.bindings,
              approval: metadata.approval,
              version,
              by: context.by,
              at,
            },
          },
          history.revision,
        );
      } catch (error) {
        file.removeVersion(metadata.ref, version);
        if (error instanceof WrongExpectedRevisionError) throw new VaultStateError('the vault changed while this credential was being stored; nothing was stored, run the command again');
        throw error;
      }
      file.removeCredential(metadata.ref, version);
    });
    const { ref, kind, header, scheme, bindings, approval } = metadata;
    return { ref, kind, header, scheme, bindings, approval, version, storedAt: at, by: context.by };
  } finally {
    value.fill(0);
  }
}

/** Records `CredentialRemoved`, then deletes the credential's rows from `vault.db`. */
export async function removeCredential(context: VaultContext, ref: string): Promise<number> {
  const history = await initialisedHistory(context.store);
  const current = history.credentials.get(ref);
  if (current === undefined) throw new VaultStateError(`there is no credential '${ref}' in the vault`);
  await appendVaultEvent(context.store, { type: 'CredentialRemoved', data: { ref, version: current.version, by: context.by, at: instant(context) } }, history.revision);
  if (VaultFile.exists(context.dataDir)) {
    const file = VaultFile.open(context.dataDir);
    try {
      file.removeCredential(ref);
    } finally {
      file.close();
    }
  }
  return current.version;
}

/** What `vault status` shows: the journal's view; no value, no key. */
export interface VaultStatus {
  readonly initialized: boolean;
  readonly locked: boolean;
  readonly since: string | null;
  readonly by: string | null;
  readonly reason: string | null;
  readonly file: string;
  readonly credentials: readonly StoredCredential[];
}

export async function vaultStatus(store: EventStore, dataDir: string): Promise<VaultStatus> {
  const history = await readVaultHistory(store);
  return {
    initialized: history.initialized !== null,
    locked: history.lock?.locked ?? true,
    since: history.lock?.at ?? null,
    by: history.lock?.by ?? null,
    reason: history.initialized === null ? NOT_INITIALISED : (history.lock?.reason ?? null),
    file: vaultFilePath(dataDir),
    credentials: [...history.credentials.values()].sort((a, b) => a.ref.localeCompare(b.ref)),
  };
}

/**
 * Development mode (`dev_token: true`): a data folder without a vault gets one under the development master key
 * (or the master key the environment sets), so a fresh folder works as it is. True when one was made.
 */
export async function initDevelopmentVault(context: VaultContext): Promise<boolean> {
  if ((await readVaultHistory(context.store)).initialized !== null) return false;
  await initVault(context, { dev: true });
  return true;
}

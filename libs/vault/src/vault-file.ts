import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { pathToFileURL } from 'node:url';
import { asBuffer } from '@oncegate/event-store';
import type { CredentialMetadata } from './vault-entry';
import { kdfParams, type KdfParams, type Sealed, type WrappedKey } from './vault-crypto';

/**
 * `<data dir>/vault.db` (mode 0600): the wrapped data key and the encrypted credential values. It holds no
 * plaintext value and no key that opens one without the master key. Which version of a credential is current
 * is the journal's word (`CredentialStored`), so a row is only ever read by the version the journal names.
 */
export const VAULT_FILE = 'vault.db';

export function vaultFilePath(dataDir: string): string {
  return join(dataDir, VAULT_FILE);
}

/** The data key, wrapped under the master key for `VAULT_DATA_KEY_PURPOSE`. */
export interface VaultKeyRecord extends WrappedKey {
  readonly createdAt: string;
}

export interface CredentialRow {
  readonly metadata: CredentialMetadata;
  /** The value, sealed under the data key with the metadata's canonical JSON as AAD. */
  readonly sealed: Sealed;
  readonly storedAt: string;
}

/** What the vault's data key is wrapped for (`wrapAad`). */
export const VAULT_DATA_KEY_PURPOSE = 'oncegate-vault-data-key';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS vault_key (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  format INTEGER NOT NULL,
  kdf TEXT NOT NULL,
  salt BLOB NOT NULL,
  nonce BLOB NOT NULL,
  wrapped_key BLOB NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS credentials (
  ref TEXT NOT NULL,
  version INTEGER NOT NULL,
  kind TEXT NOT NULL,
  header TEXT,
  scheme TEXT,
  username TEXT,
  bindings TEXT NOT NULL,
  approval TEXT NOT NULL,
  nonce BLOB NOT NULL,
  ciphertext BLOB NOT NULL,
  stored_at TEXT NOT NULL,
  PRIMARY KEY (ref, version)
);
`;

interface KeyRow {
  kdf: string;
  salt: Uint8Array;
  nonce: Uint8Array;
  wrapped_key: Uint8Array;
  created_at: string;
}

interface ValueRow {
  ref: string;
  version: number;
  kind: string;
  header: string | null;
  scheme: string | null;
  username: string | null;
  bindings: string;
  approval: string;
  nonce: Uint8Array;
  ciphertext: Uint8Array;
  stored_at: string;
}

export class VaultFileError extends Error {
  readonly kind = 'vault_file' as const;
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(`${file}: ${reason}`);
    this.name = 'VaultFileError';
  }
}

export class VaultFile {
  /** The read of a credential's row, made for every use of a credential: prepared once. */
  private credentialRead: StatementSync | undefined;

  private constructor(
    readonly file: string,
    private readonly db: DatabaseSync,
  ) {}

  static exists(dataDir: string): boolean {
    return existsSync(vaultFilePath(dataDir));
  }

  /** Creates `vault.db` (0600) holding the wrapped data key; refuses when the file exists. */
  static create(dataDir: string, key: VaultKeyRecord): VaultFile {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const file = vaultFilePath(dataDir);
    try {
      // Made empty with owner-only permissions before SQLite opens it, so no moment exists where others can read it.
      closeSync(openSync(file, 'wx', 0o600));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new VaultFileError(file, 'a vault file already exists');
      throw error;
    }
    const vault = VaultFile.connect(file);
    vault.db
      .prepare('INSERT INTO vault_key (id, format, kdf, salt, nonce, wrapped_key, created_at) VALUES (1, 1, ?, ?, ?, ?, ?)')
      .run(JSON.stringify(key.kdf), key.salt, key.wrapped.nonce, key.wrapped.ciphertext, key.createdAt);
    return vault;
  }

  static open(dataDir: string): VaultFile {
    const file = vaultFilePath(dataDir);
    if (!existsSync(file)) throw new VaultFileError(file, 'there is no vault file');
    return VaultFile.connect(file);
  }

  private static connect(file: string): VaultFile {
    // As a URI with mode=rw, SQLite opens the file only when it exists.
    const uri = pathToFileURL(file);
    uri.searchParams.set('mode', 'rw');
    const db = new DatabaseSync(uri, { timeout: 5000 });
    // Rollback journal: one file, its transient journal made with the same permissions.
    db.exec('PRAGMA journal_mode = DELETE');
    db.exec('PRAGMA synchronous = FULL');
    db.exec(SCHEMA);
    chmodSync(file, 0o600);
    return new VaultFile(file, db);
  }

  keyRecord(): VaultKeyRecord | undefined {
    const row = this.db.prepare('SELECT kdf, salt, nonce, wrapped_key, created_at FROM vault_key WHERE id = 1').get() as KeyRow | undefined;
    if (row === undefined) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(row.kdf);
    } catch {
      throw new VaultFileError(this.file, 'the key derivation parameters are not readable');
    }
    const kdf: KdfParams | undefined = kdfParams(parsed);
    if (kdf === undefined) throw new VaultFileError(this.file, 'the key derivation parameters are not valid');
    return { kdf, salt: asBuffer(row.salt), wrapped: { nonce: asBuffer(row.nonce), ciphertext: asBuffer(row.wrapped_key) }, createdAt: row.created_at };
  }

  putCredential(row: CredentialRow): void {
    const m = row.metadata;
    this.db
      .prepare(
        `INSERT INTO credentials (ref, version, kind, header, scheme, username, bindings, approval, nonce, ciphertext, stored_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(m.ref, m.version, m.kind, m.header, m.scheme, m.username, JSON.stringify(m.bindings), m.approval, row.sealed.nonce, row.sealed.ciphertext, row.storedAt);
  }

  /**
   * The stored row of `ref` at `version`, read as it is in the file: its metadata is whatever the columns say,
   * and only opening the value (which authenticates it) shows whether anyone changed them.
   */
  credential(ref: string, version: number): CredentialRow | undefined {
    this.credentialRead ??= this.db.prepare('SELECT * FROM credentials WHERE ref = ? AND version = ?');
    const row = this.credentialRead.get(ref, version) as ValueRow | undefined;
    if (row === undefined) return undefined;
    let bindings: unknown;
    try {
      bindings = JSON.parse(row.bindings);
    } catch {
      bindings = [];
    }
    const metadata = {
      ref: row.ref,
      version: row.version,
      kind: row.kind as CredentialMetadata['kind'],
      header: row.header,
      scheme: row.scheme,
      username: row.username,
      bindings: Array.isArray(bindings) ? bindings.map(String) : [],
      approval: row.approval as CredentialMetadata['approval'],
    };
    // Columns are taken as read, unchecked: a changed column makes the value fail to authenticate.
    return { metadata, sealed: { nonce: asBuffer(row.nonce), ciphertext: asBuffer(row.ciphertext) }, storedAt: row.stored_at };
  }

  /** Removes every version of `ref` but `keep` (`undefined`: every version). */
  removeCredential(ref: string, keep?: number): void {
    if (keep === undefined) this.db.prepare('DELETE FROM credentials WHERE ref = ?').run(ref);
    else this.db.prepare('DELETE FROM credentials WHERE ref = ? AND version <> ?').run(ref, keep);
  }

  removeVersion(ref: string, version: number): void {
    this.db.prepare('DELETE FROM credentials WHERE ref = ? AND version = ?').run(ref, version);
  }

  close(): void {
    this.db.close();
  }
}

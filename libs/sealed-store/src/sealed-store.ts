import { hash } from 'node:crypto';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { asBuffer, newTimeOrderedId } from '@oncegate/event-store';
import { BlobCipher, SealedValueError, type SealingKey } from './blob-cipher';

/** What a sealed blob holds: a call's raw arguments or a target's response. */
export type SealedKind = 'arguments' | 'result';

export interface SealedRef {
  /** `sealed_<uuid>`: what events reference (`argumentsRef`, `resultRef`). */
  readonly ref: string;
  /** `sha256:<hex>` of the plaintext, recorded beside the ref as evidence of what was stored. */
  readonly digest: string;
}

export interface OpenedBlob {
  readonly kind: SealedKind;
  /** The execution the blob belongs to. */
  readonly owner: string;
  readonly plaintext: Buffer;
  readonly digest: string;
}

/**
 * Result bodies and raw arguments never enter the journal (docs/design.md section 8): they are encrypted with
 * AES-256-GCM and only their reference and digest are recorded in events.
 */
export interface SealedStore {
  seal(kind: SealedKind, owner: string, plaintext: Uint8Array): Promise<SealedRef>;
  /** `undefined` when the ref is unknown; throws when the blob fails authentication (tampered or wrong key). */
  open(ref: string): Promise<OpenedBlob | undefined>;
  /**
   * The call of `owner` (an execution) is done in this process: a store that keeps plaintexts it sealed in memory
   * drops and zero-fills that call's. Optional: a store that keeps nothing has nothing to forget.
   */
  forget?(owner: string): void;
  /**
   * Deletes a blob no event names and none will: one sealed for an append that was refused (a claim another call
   * had taken). Never for a ref an event may name. Optional: a store without it keeps such a blob, unreferenced.
   */
  discard?(ref: string): Promise<void>;
  close(): Promise<void>;
}

export class SealedBlobError extends Error {
  readonly kind = 'sealed_blob_unreadable' as const;
  constructor(
    readonly ref: string,
    readonly reason: string,
  ) {
    super(`sealed blob ${ref}: ${reason}`);
    this.name = 'SealedBlobError';
  }
}

/**
 * Writes rows into the file through its owner's writer (the SQLite event store's writer thread, when the blobs
 * live in the events' file): each call is committed on its own, and resolves once durable.
 */
export interface SealedBlobWriter {
  writeRows(rows: ReadonlyArray<{ readonly sql: string; readonly params: readonly SQLInputValue[] }>): Promise<void>;
}

export interface SqliteSealedStoreOptions {
  readonly file: string;
  /** The key new blobs are sealed with; listed first. */
  readonly current: SealingKey;
  /** Older keys still accepted for opening. */
  readonly previous?: readonly SealingKey[];
  /**
   * Where blobs are written when the file is another store's (the event store's `events.db`): its writer, so a
   * blob never waits for that store's write lock on the calling thread; it is committed before (or with) any event
   * appended after `seal` resolves, and durable with it. Absent: this store's own connection writes them.
   */
  readonly writer?: SealedBlobWriter;
  /** Default `'FULL'`: a blob is durable before any event references it. Only for blobs written by this store's own connection. */
  readonly synchronous?: 'FULL' | 'NORMAL';
}

interface BlobRow {
  kind: SealedKind;
  owner: string;
  key_id: string;
  iv: Uint8Array;
  tag: Uint8Array;
  ciphertext: Uint8Array;
  digest: string;
}

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS sealed_blobs (
  ref TEXT PRIMARY KEY, kind TEXT NOT NULL, owner TEXT NOT NULL, key_id TEXT NOT NULL,
  iv BLOB NOT NULL, tag BLOB NOT NULL, ciphertext BLOB NOT NULL, digest TEXT NOT NULL, created_at TEXT NOT NULL)`;
const INSERT = 'INSERT INTO sealed_blobs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)';
const DELETE = 'DELETE FROM sealed_blobs WHERE ref = ?';

/** A plaintext's digest as blobs are named by it (`sha256:<hex>`). */
export function sealedDigest(plaintext: Uint8Array): string {
  return `sha256:${hash('sha256', plaintext, 'hex')}`;
}

/** What a blob's encryption is bound to: opening it under another ref, kind or owner fails. */
export function sealedAad(ref: string, kind: string, owner: string): Buffer {
  return Buffer.from(`${ref}\u0000${kind}\u0000${owner}`);
}

export class SqliteSealedStore implements SealedStore {
  private readonly db: DatabaseSync;
  private readonly cipher: BlobCipher;
  private readonly writer: SealedBlobWriter | undefined;
  /** Blobs handed to the writer and not yet answered, by ref: read from here until they are committed. */
  private readonly unwritten: Map<string, { readonly row: BlobRow; readonly written: Promise<void> }>;
  private readonly insert: StatementSync | undefined;
  private readonly select: StatementSync;

  constructor(options: SqliteSealedStoreOptions) {
    this.cipher = new BlobCipher(options.current, options.previous);
    this.writer = options.writer;
    this.unwritten = new Map();
    // better-sqlite3 waited 5 s for another connection's lock by default; node:sqlite waits not at all unless told.
    this.db = new DatabaseSync(options.file, { timeout: 5000 });
    this.db.exec('PRAGMA journal_mode = WAL');
    this.db.exec(`PRAGMA synchronous = ${options.synchronous ?? 'FULL'}`);
    // Created once in the file's life: a file with the table is only read by this connection when a writer is given.
    const exists = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sealed_blobs'").get() !== undefined;
    if (!exists) this.db.exec(CREATE_TABLE);
    this.insert = this.writer === undefined ? this.db.prepare(INSERT) : undefined;
    this.select = this.db.prepare(
      'SELECT kind, owner, key_id, iv, tag, ciphertext, digest FROM sealed_blobs WHERE ref = ?',
    );
  }

  /**
   * With a writer, the blob is handed to it and the ref returned at once: the writer commits in the order it is
   * given writes, so the blob's row is committed before (or with) any event appended after this resolves, and
   * durable with it; until the writer answers, `open` reads the blob from memory. The call's path waits for no
   * thread hand-off of its own. Should the row fail to commit, so does (the disk being full or failing) the append
   * that would reference it; the ref then opens as missing.
   */
  async seal(kind: SealedKind, owner: string, plaintext: Uint8Array): Promise<SealedRef> {
    // Time-ordered: the blobs' table grows at the end of its key's index, one page written a commit, not one a blob.
    const ref = `sealed_${newTimeOrderedId()}`;
    const sealed = this.cipher.seal(plaintext, sealedAad(ref, kind, owner));
    const digest = sealedDigest(plaintext);
    const params = [ref, kind, owner, sealed.keyId, sealed.iv, sealed.tag, sealed.ciphertext, digest, new Date().toISOString()];
    if (this.insert !== undefined) {
      this.insert.run(...params);
      return { ref, digest };
    }
    const row: BlobRow = { kind, owner, key_id: sealed.keyId, iv: sealed.iv, tag: sealed.tag, ciphertext: sealed.ciphertext, digest };
    const written = this.writer!.writeRows([{ sql: INSERT, params }]).finally(() => this.unwritten.delete(ref));
    this.unwritten.set(ref, { row, written });
    written.catch(() => undefined);
    return { ref, digest };
  }

  /** With a writer, the row's deletion follows its insert in the writer's order, whether that was committed yet or not. */
  async discard(ref: string): Promise<void> {
    this.unwritten.delete(ref);
    if (this.writer === undefined) this.db.prepare(DELETE).run(ref);
    else await this.writer.writeRows([{ sql: DELETE, params: [ref] }]);
  }

  async open(ref: string): Promise<OpenedBlob | undefined> {
    const row = this.unwritten.get(ref)?.row ?? (this.select.get(ref) as BlobRow | undefined);
    if (row === undefined) return undefined;
    try {
      const sealed = { keyId: row.key_id, iv: asBuffer(row.iv), tag: asBuffer(row.tag), ciphertext: asBuffer(row.ciphertext) };
      const plaintext = this.cipher.open(sealed, sealedAad(ref, row.kind, row.owner));
      return { kind: row.kind, owner: row.owner, plaintext, digest: row.digest };
    } catch (error) {
      if (error instanceof SealedValueError) throw new SealedBlobError(ref, error.reason);
      throw error;
    }
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.unwritten.values()].map((blob) => blob.written));
    this.db.close();
  }
}

import { createHash, randomUUID } from 'node:crypto';
import { escapeIdentifier, Pool, type PoolConfig } from 'pg';
import { surviveServerLoss, unavailableOr } from '@oncegate/event-store-postgres';
import { BlobCipher, SealedValueError, type SealingKey } from './blob-cipher';
import { SealedBlobError, sealedAad, type OpenedBlob, type SealedKind, type SealedRef, type SealedStore } from './sealed-store';

export interface PostgresSealedStoreOptions {
  /**
   * A node-postgres pool to borrow (left open by `close`), or `url` to connect with a pool of its own (ended by
   * `close`).
   */
  readonly pool?: Pool;
  /** Connection URL as node-postgres reads it; used when no `pool` is given. */
  readonly url?: string;
  /** Schema of the table `sealed_blobs`: the event store's, so every process on that store reads the blobs. Default `'oncegate'`. */
  readonly schema?: string;
  /** The key new blobs are sealed with. */
  readonly current: SealingKey;
  /** Older keys still accepted for opening. */
  readonly previous?: readonly SealingKey[];
}

interface BlobRow {
  kind: SealedKind;
  owner: string;
  key_id: string;
  iv: Buffer;
  tag: Buffer;
  ciphertext: Buffer;
  digest: string;
}

/** First key of the advisory lock that serialises creating the table ("seal"); the second is the schema's. */
const LOCK_CLASS = 0x7365616c;

/** Where the blobs are, for errors: server, database and schema, never the password. */
function describeLocation(url: string | undefined, schema: string): string {
  if (url === undefined) return `a PostgreSQL pool (schema ${schema})`;
  try {
    const shown = new URL(url);
    shown.password = '';
    shown.search = '';
    return `${shown.toString()} (schema ${schema})`;
  } catch {
    return `a PostgreSQL server (schema ${schema})`;
  }
}

/**
 * Sealed blobs in a PostgreSQL table beside the event store's, encrypted exactly as `SqliteSealedStore` does
 * (AES-256-GCM, bound to ref, kind and owner). A seal is one autocommitted INSERT: it is committed (visible) before
 * `seal` resolves, so before any event that references it is appended, and durable once that event is: the insert does
 * not wait for its own WAL flush, the event's append on the same server waits for a later one. A server that
 * cannot be reached is the event store's `EventStoreUnavailableError`, as for the journal beside it.
 */
export class PostgresSealedStore implements SealedStore {
  private readonly table: string;

  private constructor(
    private readonly pool: Pool,
    private readonly ownsPool: boolean,
    schema: string,
    private readonly location: string,
    private readonly cipher: BlobCipher,
  ) {
    this.table = `${escapeIdentifier(schema)}.sealed_blobs`;
  }

  /** Connects and creates the schema and the table when absent. */
  static async open(options: PostgresSealedStoreOptions): Promise<PostgresSealedStore> {
    if (options.pool === undefined && options.url === undefined) throw new TypeError('PostgresSealedStore needs `pool` or `url`');
    const cipher = new BlobCipher(options.current, options.previous);
    const config: PoolConfig = { connectionString: options.url, connectionTimeoutMillis: 5000, application_name: 'oncegate-sealed-store' };
    const pool = options.pool ?? surviveServerLoss(new Pool(config));
    const schema = options.schema ?? 'oncegate';
    const store = new PostgresSealedStore(pool, options.pool === undefined, schema, describeLocation(options.url, schema), cipher);
    try {
      await store.migrate(schema);
    } catch (error) {
      await store.close();
      throw unavailableOr(store.location, error);
    }
    return store;
  }

  private async migrate(schema: string): Promise<void> {
    const client = await this.pool.connect();
    // Ended by the server while held (a shutdown): the next query fails with the error; nothing else may throw it. (A
    // pool of its own hears this already; a borrowed one may not.)
    client.on('error', () => undefined);
    try {
      // Processes opening a new store together must not race to create the table.
      const key = createHash('sha256').update(schema).digest().readInt32BE(0);
      await client.query(`BEGIN; SELECT pg_advisory_xact_lock(${LOCK_CLASS}, ${key})`);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${escapeIdentifier(schema)}`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${this.table} (
        ref text PRIMARY KEY, kind text NOT NULL, owner text NOT NULL, key_id text NOT NULL,
        iv bytea NOT NULL, tag bytea NOT NULL, ciphertext bytea NOT NULL, digest text NOT NULL, created_at text NOT NULL)`);
      await client.query('COMMIT');
      client.release();
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release(true);
      throw error;
    }
  }

  async seal(kind: SealedKind, owner: string, plaintext: Uint8Array): Promise<SealedRef> {
    const ref = `sealed_${randomUUID()}`;
    const sealed = this.cipher.seal(plaintext, sealedAad(ref, kind, owner));
    const digest = `sha256:${createHash('sha256').update(plaintext).digest('hex')}`;
    await this.pool
      .query({
        // Committed without waiting for the WAL flush: the event that will reference the blob is appended after it
        // on the same server, whose WAL is written in order, and its append waits for a flush that covers this one.
        text: `WITH asynchronous AS (SELECT set_config('synchronous_commit', 'off', true))
          INSERT INTO ${this.table} (ref, kind, owner, key_id, iv, tag, ciphertext, digest, created_at)
          SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 FROM asynchronous`,
        values: [ref, kind, owner, sealed.keyId, sealed.iv, sealed.tag, sealed.ciphertext, digest, new Date().toISOString()],
      })
      .catch((error: unknown) => Promise.reject(unavailableOr(this.location, error)));
    return { ref, digest };
  }

  async open(ref: string): Promise<OpenedBlob | undefined> {
    const result = await this.pool
      .query<BlobRow>({ text: `SELECT kind, owner, key_id, iv, tag, ciphertext, digest FROM ${this.table} WHERE ref = $1`, values: [ref] })
      .catch((error: unknown) => Promise.reject(unavailableOr(this.location, error)));
    const row = result.rows[0];
    if (row === undefined) return undefined;
    try {
      const plaintext = this.cipher.open({ keyId: row.key_id, iv: row.iv, tag: row.tag, ciphertext: row.ciphertext }, sealedAad(ref, row.kind, row.owner));
      return { kind: row.kind, owner: row.owner, plaintext, digest: row.digest };
    } catch (error) {
      if (error instanceof SealedValueError) throw new SealedBlobError(ref, error.reason);
      throw error;
    }
  }

  async close(): Promise<void> {
    if (this.ownsPool) await this.pool.end().catch(() => undefined);
  }
}

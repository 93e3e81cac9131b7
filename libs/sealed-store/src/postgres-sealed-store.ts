import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { escapeIdentifier, Pool, type PoolConfig } from 'pg';
import { listenerConfig, PostgresListener, surviveServerLoss, unavailableOr } from '@oncegate/event-store-postgres';
import { newTimeOrderedId } from '@oncegate/event-store';
import { BlobCipher, SealedValueError, type SealingKey } from './blob-cipher';
import { SealedBlobError, sealedAad, sealedDigest, type OpenedBlob, type SealedKind, type SealedRef, type SealedStore } from './sealed-store';

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
  /**
   * The kinds of blob this process opens and other processes seal (the gateway apart from the dispatchers: results;
   * authorization and the dispatchers apart from the gateway: arguments). Every blob small enough travels, as stored
   * (encrypted), in a notification its insert sends; a store that hears its kind keeps the latest and opens them
   * without a read. Default: none heard, every open reads.
   */
  readonly hear?: readonly SealedKind[];
}

/** A blob as its insert's notification carried it: what the table holds, encrypted. */
interface HeardBlob {
  readonly kind: SealedKind;
  readonly owner: string;
  readonly keyId: string;
  readonly iv: Buffer;
  readonly tag: Buffer;
  readonly ciphertext: Buffer;
}

/** PostgreSQL refuses a notification payload of 8,000 bytes or more: a larger blob is only read. */
const MAX_CARRIED_BYTES = 7_900;
/** Heard blobs kept at most, and their ciphertexts' bytes together. */
const HEARD_ENTRIES = 2_048;
const HEARD_BYTES = 16 * 1024 * 1024;

/** The channel a kind's new blobs are told on, the same in every process on the schema. */
function channelOf(schema: string, kind: SealedKind): string {
  return `oncegate_sealed_${kind}_${createHash('sha256').update(schema).digest('hex').slice(0, 24)}`;
}

/** A heard payload, or `undefined` when it is not one (anyone may notify on any channel: it is checked, then opened). */
function heardBlob(payload: string): { ref: string; blob: HeardBlob } | undefined {
  try {
    const [ref, kind, owner, keyId, iv, tag, ciphertext] = JSON.parse(payload) as unknown[];
    if (typeof ref !== 'string' || (kind !== 'arguments' && kind !== 'result') || typeof owner !== 'string' || typeof keyId !== 'string') return undefined;
    if (typeof iv !== 'string' || typeof tag !== 'string' || typeof ciphertext !== 'string') return undefined;
    return { ref, blob: { kind, owner, keyId, iv: Buffer.from(iv, 'base64'), tag: Buffer.from(tag, 'base64'), ciphertext: Buffer.from(ciphertext, 'base64') } };
  } catch {
    return undefined;
  }
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
  /** The blobs heard of the kinds this store hears, by ref: encrypted, as the table holds them. */
  private readonly heard = new LRUCache<string, HeardBlob>({ max: HEARD_ENTRIES, maxSize: HEARD_BYTES, sizeCalculation: (blob) => Math.max(1, blob.ciphertext.byteLength) });
  /** The connection that hears the kinds this store hears; none when it hears none. */
  private readonly listener: PostgresListener | undefined;

  private constructor(
    private readonly pool: Pool,
    private readonly ownsPool: boolean,
    private readonly schema: string,
    private readonly location: string,
    private readonly cipher: BlobCipher,
    listenConfig: PoolConfig,
    hearing: readonly SealedKind[],
  ) {
    this.table = `${escapeIdentifier(schema)}.sealed_blobs`;
    this.listener =
      hearing.length === 0
        ? undefined
        : new PostgresListener(
            listenerConfig(listenConfig, 'oncegate-sealed-store'),
            hearing.map((kind) => channelOf(schema, kind)),
            (message) => {
              const heard = heardBlob(message.payload ?? '');
              if (heard !== undefined) this.heard.set(heard.ref, heard.blob);
            },
          );
  }

  /** Connects and creates the schema and the table when absent. */
  static async open(options: PostgresSealedStoreOptions): Promise<PostgresSealedStore> {
    if (options.pool === undefined && options.url === undefined) throw new TypeError('PostgresSealedStore needs `pool` or `url`');
    const cipher = new BlobCipher(options.current, options.previous);
    const config: PoolConfig = { connectionString: options.url, connectionTimeoutMillis: 5000, application_name: 'oncegate-sealed-store' };
    const pool = options.pool ?? surviveServerLoss(new Pool(config));
    const schema = options.schema ?? 'oncegate';
    const listenConfig = options.url === undefined ? (options.pool as Pool & { options: PoolConfig }).options : config;
    const store = new PostgresSealedStore(pool, options.pool === undefined, schema, describeLocation(options.url, schema), cipher, listenConfig, options.hear ?? []);
    try {
      await store.migrate(schema);
    } catch (error) {
      await store.close();
      throw unavailableOr(store.location, error);
    }
    // Until it listens (and while it does not: the next open makes another), every open reads.
    await store.listener?.ensure();
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
    // Time-ordered: the blobs' table grows at the end of its key's index, one page written a commit, not one a blob.
    const ref = `sealed_${newTimeOrderedId()}`;
    const sealed = this.cipher.seal(plaintext, sealedAad(ref, kind, owner));
    const digest = sealedDigest(plaintext);
    const values: unknown[] = [ref, kind, owner, sealed.keyId, sealed.iv, sealed.tag, sealed.ciphertext, digest, new Date().toISOString()];
    // The blob as stored (encrypted; never its digest) goes to the processes that hear its kind, in a notification
    // sent when the insert commits: before the event that names it is appended, let alone heard.
    const carried = JSON.stringify([ref, kind, owner, sealed.keyId, sealed.iv.toString('base64'), sealed.tag.toString('base64'), sealed.ciphertext.toString('base64')]);
    const told = Buffer.byteLength(carried) <= MAX_CARRIED_BYTES;
    if (told) values.push(channelOf(this.schema, kind), carried);
    await this.pool
      .query({
        // Committed without waiting for the WAL flush: the event that will reference the blob is appended after it
        // on the same server, whose WAL is written in order, and its append waits for a flush that covers this one.
        text: `WITH asynchronous AS (SELECT set_config('synchronous_commit', 'off', true)), stored AS (
            INSERT INTO ${this.table} (ref, kind, owner, key_id, iv, tag, ciphertext, digest, created_at)
            SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 FROM asynchronous RETURNING ref)
          SELECT ${told ? 'pg_notify($10, $11)' : 'ref'} FROM stored`,
        values,
      })
      .catch((error: unknown) => Promise.reject(unavailableOr(this.location, error)));
    return { ref, digest };
  }

  async discard(ref: string): Promise<void> {
    this.heard.delete(ref);
    await this.pool
      .query({ text: `DELETE FROM ${this.table} WHERE ref = $1`, values: [ref] })
      .catch((error: unknown) => Promise.reject(unavailableOr(this.location, error)));
  }

  async open(ref: string): Promise<OpenedBlob | undefined> {
    if (this.listener !== undefined && !this.listener.listening) void this.listener.ensure();
    const heard = this.heard.get(ref);
    if (heard !== undefined) {
      try {
        const plaintext = this.cipher.open({ keyId: heard.keyId, iv: heard.iv, tag: heard.tag, ciphertext: heard.ciphertext }, sealedAad(ref, heard.kind, heard.owner));
        return { kind: heard.kind, owner: heard.owner, plaintext, digest: sealedDigest(plaintext) };
      } catch {
        // Not what this store sealed under its keys (anyone may notify): the table says what the blob is.
        this.heard.delete(ref);
      }
    }
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
    await this.listener?.close();
    if (this.ownsPool) await this.pool.end().catch(() => undefined);
  }
}

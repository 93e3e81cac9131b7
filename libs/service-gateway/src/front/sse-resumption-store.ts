import type { EventStore as McpEventStore, StreamId } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { isUnwritableSqliteError as isUnwritable, sqliteOpenFailure as openFailure } from '@oncegate/event-store-sqlite';
import type { Clock } from '@oncegate/execution-journal';
import { asBuffer } from '@oncegate/event-store';
import type { BlobCipher } from '@oncegate/sealed-store';
import { parseEventId } from './sse-event-id';

/** Notified when a stored JSON-RPC message is sent again on a resumed stream. */
export type ReplayListener = (sessionId: string, message: JSONRPCMessage) => void;

/**
 * The tools/call requests one POST's response stream answers, and the journal position when they arrived: after
 * a restart, a client resuming that stream is answered from the journal (the executions carry the request ids).
 */
export interface StreamCalls {
  readonly requestIds: readonly (string | number)[];
  readonly journalPosition: number;
}

export interface SseResumptionStoreOptions {
  /** The SQLite file (`<data dir>/mcp-streams.db`). */
  readonly file: string;
  readonly cipher: BlobCipher;
  readonly clock: Clock;
  /** How long a stored message is kept; older ones are deleted by `sweep`. */
  readonly retentionMs: number;
  readonly onReplay?: ReplayListener;
  /**
   * A write that failed for a reason other than the file being unwritable now (a full disk, read-only): the
   * messages are sent all the same, only not kept for a resume, and the failure is reported here.
   */
  readonly onWriteFailed?: (error: unknown) => void;
}

interface MessageRow {
  seq: number;
  key_id: string;
  iv: Uint8Array;
  tag: Uint8Array;
  ciphertext: Uint8Array;
}

/**
 * The key id of a priming event's row: an empty message has nothing to keep secret, so it is stored unsealed, with
 * empty blobs (sealing it cost an AES-GCM pass and three buffers per call).
 */
const PRIMING_KEY_ID = '';
const PRIMING_ROW = { keyId: PRIMING_KEY_ID, iv: Buffer.alloc(0), tag: Buffer.alloc(0), ciphertext: Buffer.alloc(0) } as const;

/** A message sealed and waiting for the next write of the batch, with the caller waiting for its id. */
interface QueuedMessage {
  readonly row: [sessionId: string, streamId: string, storedAt: number, keyId: string, iv: Buffer, tag: Buffer, ciphertext: Buffer, calls: string | null];
  /** Its number once stored; `undefined` when it could not be stored (it is sent all the same). */
  readonly stored: (seq: number | undefined) => void;
}

/**
 * Messages are numbered in the transaction that writes them (`seq`, see `sse-event-id.ts`), under the file's write
 * lock, so processes sharing the file never hand out one number twice; the messages of one turn of the event loop
 * are written in one transaction. No AUTOINCREMENT (it writes its own table on every insert), and no index on
 * `stored_at`: a number is at least its write's clock in milliseconds times `SEQUENCES_PER_MS`, so the
 * sweep walks the primary key up to its cutoff's number (one index fewer to write for every message).
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS sse_messages (
  seq        INTEGER PRIMARY KEY,
  session_id TEXT    NOT NULL,
  stream_id  TEXT    NOT NULL,
  stored_at  INTEGER NOT NULL,
  key_id     TEXT    NOT NULL,
  iv         BLOB    NOT NULL,
  tag        BLOB    NOT NULL,
  ciphertext BLOB    NOT NULL,
  calls      TEXT
);
CREATE INDEX IF NOT EXISTS sse_messages_stream ON sse_messages (session_id, stream_id, seq);
DROP INDEX IF EXISTS sse_messages_stored_at;
`;

/** The table as versions before this one wrote it (sequence numbers by AUTOINCREMENT): its rows are kept as they are. */
const AUTOINCREMENT_TABLE = `SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sse_messages' AND sql LIKE '%AUTOINCREMENT%'`;

/** Tables of the event-store file earlier versions kept these messages in; they held nothing else. */
const LEGACY_TABLES = ['events', 'checkpoints', 'store_meta', 'leases', 'claims'];

/** Rows deleted per statement, so a large sweep never holds the write lock (or the event loop) for long. */
const SWEEP_BATCH = 500;

/**
 * A transaction numbers its messages after the greatest number stored and after its clock (this many per
 * millisecond), so a number is never handed out twice — even if every message was deleted since. Fifteen digits
 * at most (`sse-event-id.ts`) until the year 2286.
 */
const SEQUENCES_PER_MS = 100;

/**
 * SSE resumability for the MCP SDK (its `EventStore` interface), kept in a SQLite file of the data folder so
 * `Last-Event-ID` works after a gateway restart too (`synchronous=NORMAL`: messages must survive a process
 * restart, not a power cut). Messages can carry tool results, so each is sealed (AES-256-GCM, bound to its
 * session and stream) before it is written, and each is kept for the retention only: `sweep` deletes older ones,
 * at start and then periodically (`start`). The messages stored during one turn of the event loop are written in
 * one transaction right after it, and each is sent once that transaction is committed (every read of the file
 * writes the queue first). While the file cannot be written, messages are sent without being stored (a stream
 * never waits on storage) and a resume replays only what was stored.
 */
export class SseResumptionStore {
  private readonly db: DatabaseSync;
  private readonly statements: {
    insert: StatementSync;
    greatest: StatementSync;
    after: StatementSync;
    last: StatementSync;
    calls: StatementSync;
    sweep: StatementSync;
  };
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<number> | undefined;
  private queue: QueuedMessage[] = [];
  private flushScheduled = false;

  constructor(private readonly options: SseResumptionStoreOptions) {
    try {
      this.db = new DatabaseSync(options.file, { timeout: 5_000 });
      this.db.exec('PRAGMA journal_mode = WAL');
      this.db.exec('PRAGMA synchronous = NORMAL');
      this.db.exec('BEGIN IMMEDIATE');
      try {
        for (const table of LEGACY_TABLES) this.db.exec(`DROP TABLE IF EXISTS ${table}`);
        if (this.db.prepare(AUTOINCREMENT_TABLE).get() !== undefined) {
          this.db.exec('ALTER TABLE sse_messages RENAME TO sse_messages_autoincrement');
          this.db.exec('DROP INDEX IF EXISTS sse_messages_stream');
          this.db.exec('DROP INDEX IF EXISTS sse_messages_stored_at');
          this.db.exec(SCHEMA);
          this.db.exec('INSERT INTO sse_messages SELECT * FROM sse_messages_autoincrement');
          this.db.exec('DROP TABLE sse_messages_autoincrement');
        }
        this.db.exec(SCHEMA);
        this.db.exec('COMMIT');
      } catch (error) {
        if (this.db.isTransaction) this.db.exec('ROLLBACK');
        throw error;
      }
    } catch (error) {
      throw openFailure(options.file, error);
    }
    this.statements = {
      insert: this.db.prepare(
        'INSERT INTO sse_messages (seq, session_id, stream_id, stored_at, key_id, iv, tag, ciphertext, calls) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      greatest: this.db.prepare('SELECT max(seq) AS seq FROM sse_messages'),
      after: this.db.prepare(
        'SELECT seq, key_id, iv, tag, ciphertext FROM sse_messages WHERE session_id = ? AND stream_id = ? AND seq > ? ORDER BY seq',
      ),
      last: this.db.prepare('SELECT max(seq) AS seq FROM sse_messages WHERE session_id = ? AND stream_id = ?'),
      calls: this.db.prepare('SELECT calls FROM sse_messages WHERE session_id = ? AND stream_id = ? ORDER BY seq LIMIT 1'),
      // Every message stored before the cutoff has a number below the cutoff's (its write came after it was queued);
      // `stored_at` is still checked, for the rows of older versions, numbered from 1.
      sweep: this.db.prepare('DELETE FROM sse_messages WHERE seq IN (SELECT seq FROM sse_messages WHERE seq < ? AND stored_at < ? LIMIT ?)'),
    };
  }

  /** How long a stored message is kept (`listen.resumption_retention`). */
  get retentionMs(): number {
    return this.options.retentionMs;
  }

  /** How often `start` sweeps: a quarter of the retention, between a quarter of a second and five minutes. */
  get sweepEveryMs(): number {
    return Math.min(5 * 60_000, Math.max(250, Math.floor(this.options.retentionMs / 4)));
  }

  /** Deletes what is past the retention now, then every `sweepEveryMs` until `close`. */
  async start(): Promise<void> {
    await this.sweep();
    this.timer = setInterval(() => void this.sweep().catch(() => undefined), this.sweepEveryMs);
    this.timer.unref();
  }

  /**
   * Deletes every message stored longer ago than the retention, in batches; resolves with how many. A file that
   * cannot be written now (full disk) keeps them until a later sweep.
   */
  sweep(): Promise<number> {
    this.sweeping ??= this.sweepNow().finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  private async sweepNow(): Promise<number> {
    const cutoff = this.options.clock.now().getTime() - this.options.retentionMs;
    let deleted = 0;
    try {
      this.flush();
      for (;;) {
        const changes = Number(this.statements.sweep.run(cutoff * SEQUENCES_PER_MS, cutoff, SWEEP_BATCH).changes);
        deleted += changes;
        if (changes < SWEEP_BATCH || !this.db.isOpen) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
    } catch (error) {
      if (!isUnwritable(error) && this.db.isOpen) throw error;
    }
    return deleted;
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.sweeping?.catch(() => undefined);
    if (!this.db.isOpen) return;
    this.flush();
    this.db.close();
  }

  /** `callsOf` names the calls of the POST being handled, asked when its stream's priming event is stored. */
  forSession(sessionId: string, callsOf: () => StreamCalls | undefined = () => undefined): McpEventStore {
    const aad = (streamId: StreamId) => Buffer.from(`${sessionId}\u0000${streamId}`);
    return {
      storeEvent: async (streamId, message) => {
        // A priming event (`{}`) holds nothing to seal: its row has no key and empty blobs (`PRIMING_KEY_ID`).
        const priming = Object.keys(message).length === 0;
        const sealed = priming ? PRIMING_ROW : this.options.cipher.seal(Buffer.from(JSON.stringify(message)), aad(streamId));
        const calls = priming ? callsOf() : undefined;
        const seq = await new Promise<number | undefined>((stored) =>
          this.enqueue({
            row: [
              sessionId,
              streamId,
              this.options.clock.now().getTime(),
              sealed.keyId,
              sealed.iv,
              sealed.tag,
              sealed.ciphertext,
              calls !== undefined && calls.requestIds.length > 0 ? JSON.stringify(calls) : null,
            ],
            stored,
          }),
        );
        // Storage is unavailable: the message is still sent, only not kept for a resume. Its id names the last
        // stored message of the stream (-1: none), so a resume from it replays whatever is stored after it.
        return `${streamId}.${seq ?? this.lastStored(sessionId, streamId) ?? -1}`;
      },
      getStreamIdForEventId: async (eventId) => parseEventId(eventId)?.streamId,
      replayEventsAfter: async (lastEventId, { send }) => {
        const parsed = parseEventId(lastEventId);
        if (parsed === undefined) throw new Error('Invalid event ID format');
        this.flush();
        const rows = this.statements.after.all(sessionId, parsed.streamId, parsed.sequence) as unknown as MessageRow[];
        for (const row of rows) {
          if (row.key_id === PRIMING_KEY_ID) continue;
          const sealed = { keyId: row.key_id, iv: asBuffer(row.iv), tag: asBuffer(row.tag), ciphertext: asBuffer(row.ciphertext) };
          const plaintext = this.options.cipher.open(sealed, aad(parsed.streamId));
          const message = JSON.parse(plaintext.toString('utf8')) as JSONRPCMessage;
          // Priming events carry nothing to replay (versions before this one sealed them as `{}`).
          if (Object.keys(message).length === 0) continue;
          await send(`${parsed.streamId}.${row.seq}`, message);
          this.options.onReplay?.(sessionId, message);
        }
        return parsed.streamId;
      },
    };
  }

  /**
   * Queues a message for the transaction after this turn. That transaction is also where the calls of a busy turn
   * meet: it settles all their messages at once, so their answers and pipelines go on together, in one run of the
   * microtask queue (the store's `data_version` asked once for all, the responses' writes corked together). With each
   * message sent at once, or after a turn of its own, the calling thread spent a quarter more a call at concurrency 32,
   * far more than the writes cost (docs/benchmarks.md, "What the side files are worth once their rhythm is kept").
   */
  private enqueue(message: QueuedMessage): void {
    this.queue.push(message);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  /**
   * Writes the queued messages in one transaction, numbering them after the greatest stored number (under the
   * write lock) and after the clock, and gives each caller its number. A write that fails gives none: the
   * messages are sent, only not kept (a failure other than an unwritable file is reported, `onWriteFailed`).
   */
  private flush(): void {
    this.flushScheduled = false;
    if (this.queue.length === 0) return;
    const messages = this.queue;
    this.queue = [];
    if (!this.db.isOpen) {
      for (const message of messages) message.stored(undefined);
      return;
    }
    const numbers: number[] = [];
    try {
      this.db.exec('BEGIN IMMEDIATE');
      try {
        const greatest = (this.statements.greatest.get() as { seq: number | null }).seq ?? 0;
        let seq = Math.max(greatest, this.options.clock.now().getTime() * SEQUENCES_PER_MS - 1);
        for (const message of messages) {
          seq += 1;
          this.statements.insert.run(seq, ...message.row);
          numbers.push(seq);
        }
        this.db.exec('COMMIT');
      } catch (error) {
        if (this.db.isTransaction) this.db.exec('ROLLBACK');
        throw error;
      }
    } catch (error) {
      // Whatever the reason, the messages are sent: a store that failed would leave a call's answer unsent (the
      // SDK writes a message only once it is stored), and keeping it for a resume is the lesser promise.
      if (!isUnwritable(error)) this.options.onWriteFailed?.(error);
      for (const message of messages) message.stored(undefined);
      return;
    }
    messages.forEach((message, index) => message.stored(numbers[index]));
  }

  /** The calls a request stream answers, from its priming event; `undefined` for any other stream. */
  async callsOf(sessionId: string, streamId: StreamId): Promise<StreamCalls | undefined> {
    this.flush();
    const calls = (this.statements.calls.get(sessionId, streamId) as { calls: string | null } | undefined)?.calls;
    return calls === undefined || calls === null ? undefined : (JSON.parse(calls) as StreamCalls);
  }

  /** Whether any message of the stream is stored (none: never written, or past the retention). */
  async holds(sessionId: string, streamId: StreamId): Promise<boolean> {
    return this.lastStored(sessionId, streamId) !== undefined;
  }

  private lastStored(sessionId: string, streamId: StreamId): number | undefined {
    try {
      this.flush();
      return (this.statements.last.get(sessionId, streamId) as { seq: number | null } | undefined)?.seq ?? undefined;
    } catch {
      return undefined;
    }
  }
}

import { createHash } from 'node:crypto';
import { Client, Pool, type ClientConfig, type Notification, type PoolClient, type PoolConfig } from 'pg';
import { LRUCache } from 'lru-cache';
import {
  GENESIS_HASH,
  DEFERRED_WAIT_MS,
  GroupCommit,
  linkEvents,
  matchesFilter,
  newEventId,
  DuplicateEventIdError,
  EventStoreClosedError,
  EventStoreOpenError,
  InvalidEventStoreArgumentError,
  WrongExpectedRevisionError,
  expectedRevisionHolds,
  NotifiedSubscriptions,
  submitAppend,
  submitAppendMany,
  validateCount,
  validateFilter,
  validateInstant,
  validatePosition,
  validateStreamId,
  type AppendManyEntry,
  type AppendOptions,
  type AppendResult,
  type ChainTip,
  type CommitReport,
  type EventFilter,
  type EventHandler,
  type EventStore,
  type EventToAppend,
  type NotifiedSince,
  type Lease,
  type Claim,
  type ConsumerCheckpoint,
  type ReadAllOptions,
  type ReadAllPage,
  type ReadStreamOptions,
  type RecordedEvent,
  type SerialisedAppend,
  type SubscribeOptions,
  type Subscription,
} from '@oncegate/event-store';
import { isUnavailable, isUniqueViolation, openFailure, surviveServerLoss, unavailableOr, type PostgresServer } from './postgres-errors';
import { listenerConfig, PostgresListener } from './postgres-listener';
import { FLUSH_WAIT, JSON_TEXT_SEPARATOR, quotedSchema, schemaStatements, SCHEMA_VERSION, STREAM_MOVED } from './schema';

export interface PostgresEventStoreOptions {
  /**
   * Connection URL as node-postgres reads it (`postgres://user:password@host:5432/database?sslmode=require`).
   * Either `url` or `pool` (or both: the URL then overrides the pool's connection fields).
   */
  readonly url?: string;
  /**
   * node-postgres pool options, passed as given (host, port, user, password, database, ssl, `max`, …). Defaults are
   * node-postgres' own (at most 10 connections, idle ones closed after 10 s), except `connectionTimeoutMillis`: 5000
   * (node-postgres waits forever), so an unreachable server fails an append instead of hanging it.
   */
  readonly pool?: PoolConfig;
  /** Schema holding the store's tables; created when absent. Several stores may share a database. Default `'oncegate'`. */
  readonly schema?: string;
  /**
   * How often a waiting subscription checks for new events in case a notification was lost (the listening
   * connection dropped and reconnected). Subscriptions are woken by LISTEN/NOTIFY; this is only the fallback.
   * Default 5000 ms.
   */
  readonly pollIntervalMs?: number;
  /** Largest number of positions a filtered read scans in one call, so a rare filter never blocks long. Default 50,000. */
  readonly maxScan?: number;
  /** Most appends written in one transaction when many are issued together. Default 1000. */
  readonly maxGroup?: number;
  /**
   * How long an append made with `deferrable` waits for another append to share its transaction, when nothing else
   * is queued or being written; then it is written alone. Default 20 ms (`DEFERRED_WAIT_MS`).
   */
  readonly deferredWaitMs?: number;
  /** Clock for `recordedAt`. Default: the system clock. */
  readonly clock?: () => Date;
}

/** One caller's append: a single stream, or every entry of an `appendMany`, all committed or none. */
interface PendingAppend {
  readonly entries: readonly SerialisedAppend[];
  readonly resolve: (results: AppendResult[]) => void;
  readonly reject: (error: unknown) => void;
}

/** An event row in the order of {@link COLUMNS}; `position` arrives as text (node-postgres reads bigint so), data and metadata parsed. */
type EventRow = [
  position: string,
  streamId: string,
  revision: number,
  eventId: string,
  type: string,
  data: unknown,
  metadata: Record<string, unknown>,
  recordedAt: string,
  prevHash: string,
  hash: string,
];

const COLUMNS = 'position, stream_id, revision, event_id, type, data, metadata, recorded_at, prev_hash, hash';
const DEFAULT_READ_ALL_COUNT = 1000;
/** The first key of the store's advisory lock ("once"); the second is derived from the schema's name. */
const LOCK_CLASS = 0x6f6e6365;
/** The event types a commit notification names: as many as fit in a notification's payload, else none (wake all). */
function notifiedTypes(types: readonly string[]): string {
  const text = [...new Set(types)].join(',');
  return text.length < 7000 && !/[ ,]/.test([...new Set(types)].join('')) ? text : '*';
}

/** PostgreSQL refuses a notification payload of 8000 bytes or more (its default block size). */
const NOTIFICATION_BYTES = 7999;

/** The most digits a position has (a safe integer), for sizing a payload before the head is known. */
const POSITION_DIGITS = 16;

/**
 * A group's commit notification: `<last position> <types>`, then, when the whole of it fits, ` <the group's events>`
 * — `[base, recordedAt, [[streamId, revision, id, type, data, metadata, prev, hash], …]]` with data and metadata the
 * JSON texts stored — so that a listener learns the run of positions `(base, last]` without reading it. In its parts
 * around the two positions, which `notify_appended` fills in on the server: `<last><middle>` then `<base><tail>`
 * (`tail` `undefined`: the notification names the types only).
 */
function commitNotificationParts(recordedAt: string, rows: PlannedRows): { middle: string; tail: string | undefined } {
  const types = notifiedTypes(rows.types);
  if (types === '*') return { middle: ` ${types}`, tail: undefined };
  const events = rows.streamIds.map(
    (streamId, i) =>
      `[${JSON.stringify(streamId)},${rows.revisions[i]},${JSON.stringify(rows.ids[i])},${JSON.stringify(rows.types[i])},${rows.data[i]},${rows.metadata[i]},"${rows.prevs[i]}","${rows.hashes[i]}"]`,
  );
  const middle = ` ${types} [`;
  const tail = `,${JSON.stringify(recordedAt)},[${events.join(',')}]]`;
  return Buffer.byteLength(middle) + Buffer.byteLength(tail) + 2 * POSITION_DIGITS <= NOTIFICATION_BYTES ? { middle, tail } : { middle: ` ${types}`, tail: undefined };
}

/** The notification of a group whose head and base are known (see `commitNotificationParts`). */
function commitNotification(head: number, base: number, parts: { middle: string; tail: string | undefined }): string {
  return parts.tail === undefined ? `${head}${parts.middle}` : `${head}${parts.middle}${base}${parts.tail}`;
}

/** The run of events a commit notification carries (see `commitNotification`), or `undefined` when it carries none or is not one. */
function carriedEvents(last: number, text: string): { after: number; events: RecordedEvent[] } | undefined {
  try {
    const [base, recordedAt, rows] = JSON.parse(text) as [number, string, Array<[string, number, string, string, unknown, Record<string, unknown>, string, string]>];
    if (!Number.isSafeInteger(base) || typeof recordedAt !== 'string' || !Array.isArray(rows) || rows.length !== last - base) return undefined;
    const events = rows.map(([streamId, revision, id, type, data, metadata, prev, hash], i) =>
      toRecordedEvent([String(base + 1 + i), streamId, revision, id, type, data, metadata, recordedAt, prev, hash]),
    );
    return { after: base, events };
  } catch {
    return undefined;
  }
}

/** Larger than any position, for reads with no scan limit. */
const NO_LIMIT = Number.MAX_SAFE_INTEGER;

/** How many of the latest committed events a store object keeps to answer forward reads. */
const RECENT_LIMIT = 10_000;

/** How many commits a store object keeps past a gap in its latest commits, waiting for the gap to be filled. */
const AHEAD_LIMIT = 64;

/**
 * How long a commit kept past a gap waits for the gap to be filled before the run of latest commits starts again at
 * it: the notifications of commits come a moment apart, and one that never comes (its writer died between its
 * commit and its notification) must not hold the readers behind it.
 */
const GAP_WAIT_MS = 20;

/**
 * How long `notifiedSince` waits to hear the notification of the newest commit this object knows of before it says it
 * cannot tell: a notification follows its commit's flush, a few milliseconds at most on a healthy server; a read of
 * the server costs about one.
 */
const NOTIFIED_WAIT_MS = 20;

/** How long a store object trusts what it learnt of the role behind a server process id (see `writerRoles`). */
const WRITER_ROLE_TTL_MS = 60_000;

/** How many streams' tips a store object keeps as guesses. */
const TIPS_LIMIT = 10_000;

function toRecordedEvent([position, streamId, revision, id, type, data, metadata, recordedAt, prev, hash]: EventRow): RecordedEvent {
  return { streamId, revision, position: Number(position), id, type, data, metadata, recordedAt, prev, hash };
}

/** A stable 32-bit key and a channel name for the schema, the same in every process. */
function schemaKeys(schema: string): { lockKey: number; channel: string } {
  const digest = createHash('sha256').update(schema).digest();
  return { lockKey: digest.readInt32BE(0), channel: `oncegate_events_${digest.toString('hex').slice(0, 24)}` };
}

/** Where the store is, for errors and logs: host, port, database and schema, never the password. */
function describeLocation(config: PoolConfig, schema: string): string {
  if (config.connectionString !== undefined) {
    try {
      const url = new URL(config.connectionString);
      url.password = '';
      url.search = '';
      return `${url.toString()} (schema ${schema})`;
    } catch {
      return `a PostgreSQL server (schema ${schema})`;
    }
  }
  return `postgres://${config.host ?? 'localhost'}:${config.port ?? 5432}/${config.database ?? config.user ?? ''} (schema ${schema})`;
}

/** Where a configuration connects and as whom, resolved as node-postgres resolves it (the URL, then PG* variables, then defaults). */
export function postgresServerOf(config: ClientConfig): PostgresServer {
  // Made, never connected: only its resolved connection parameters are read.
  const client = new Client(config);
  return { host: client.host, port: client.port, user: client.user ?? '', database: client.database ?? client.user ?? '' };
}

/** A commit notification's position and types, and where the events it carries would start (see `commitNotification`). */
function notificationParts(payload: string): { position: string; types: string | undefined; eventsAt: number } {
  const [position = '', types] = payload.split(' ', 2);
  return { position, types, eventsAt: position.length + (types?.length ?? 0) + 2 };
}

/**
 * What the store's listening connection does with a commit notification, `<last position> <type>,<type>… <events>`
 * (see `commitNotification`; a bare position, from a writer of an earlier version, names no types): the events it
 * carries go to `carried` (with the server process that sent them), then the commit is reported, with the streams
 * of the events `carried` kept.
 */
function commitNotificationHandler(
  report: CommitReport,
  carried: (sender: number, last: number, events: string) => readonly RecordedEvent[] | undefined,
): (message: Notification) => void {
  return (message) => {
    const payload = message.payload ?? '';
    const { position, types, eventsAt } = notificationParts(payload);
    const last = Number(position);
    if (!Number.isSafeInteger(last)) return report(undefined);
    const events = payload.length > eventsAt ? carried(message.processId, last, payload.slice(eventsAt)) : undefined;
    report(last, types === undefined || types === '*' ? undefined : types.split(','), events === undefined ? undefined : streamsOf(events));
  };
}

/** Whether a commit notification carries its events (`commitNotificationHandler` hands them to `carried`). */
function carriesEvents(payload: string): boolean {
  return payload.length > notificationParts(payload).eventsAt;
}

/**
 * `handle`, with a notification that carries events from a server process whose role is not known yet (see
 * `heardEvents`) held, with every notification after it, until the server has said whose it is: its events are then
 * kept like any other's, instead of let go, which left a gap in what the store keeps and sent every reader behind it
 * to the server. Each connection of another process's pool is such a sender once, and again once its role is
 * forgotten. The notifications go on in the order they came; should the question fail, the held one is handled as
 * from an unknown sender (its readers read the server).
 */
function heldBehindRoles(
  handle: (message: Notification) => void,
  roles: LRUCache<number, boolean>,
): ((message: Notification) => void) & { readonly holding: () => boolean } {
  const held: Notification[] = [];
  /** Senders whose role question failed: their notification at the front is handled without waiting again. */
  const unanswered = new Set<number>();
  const waitsForRole = (message: Notification) =>
    roles.get(message.processId) === undefined && !unanswered.has(message.processId) && carriesEvents(message.payload ?? '');
  const release = () => {
    while (held.length > 0) {
      const next = held[0]!;
      if (waitsForRole(next)) {
        ask(next.processId);
        return;
      }
      held.shift();
      unanswered.delete(next.processId);
      handle(next);
    }
  };
  const ask = (sender: number) => {
    roles.fetch(sender).then(
      (trusted) => {
        if (trusted === undefined) unanswered.add(sender);
        release();
      },
      () => {
        unanswered.add(sender);
        release();
      },
    );
  };
  const hear = (message: Notification) => {
    if (held.length > 0) {
      held.push(message);
      return;
    }
    if (!waitsForRole(message)) {
      handle(message);
      return;
    }
    held.push(message);
    ask(message.processId);
  };
  return Object.assign(hear, { holding: () => held.length > 0 });
}

/** The streams a commit's events wrote, each once (a group holds up to `maxGroup` appends: a set, not a scan per event). */
function streamsOf(events: readonly RecordedEvent[]): string[] {
  return [...new Set(events.map((event) => event.streamId))];
}

/**
 * The event store on PostgreSQL. Every transaction that appends takes the store's transaction-scoped advisory lock
 * first and holds it until it commits, so positions (one more than the head, read under the lock) become visible
 * strictly in order: a reader that sees position N sees every position below it, which is what lets catch-up
 * subscriptions turn live with no gap (see docs/event-store.md).
 */
export class PostgresEventStore implements EventStore {
  private readonly pool: Pool;
  /** Subscriptions, woken by the notifications the listening connection hears (see `commitNotificationHandler`). */
  private readonly subscriptions: NotifiedSubscriptions;
  private readonly clock: () => Date;
  private readonly pollIntervalMs: number;
  private readonly maxScan: number;
  private readonly location: string;
  private readonly lockKey: number;
  private readonly channel: string;
  private readonly sql: ReturnType<typeof statements>;
  private readonly schema: string;
  private readonly groups: GroupCommit<PendingAppend>;
  /**
   * The latest commits this object knows, as one complete run of positions `(after, last]` (every event in it kept):
   * its own, and other processes' that their notifications carried. Kept to answer a forward read that starts in it
   * without a round trip, while nothing beyond `last` is known to be committed. At most {@link RECENT_LIMIT} events.
   */
  private recent: { after: number; last: number; events: RecordedEvent[] } | undefined;
  /**
   * Commits known past a gap after `recent`, by the position they follow. A commit's notification is sent by a
   * transaction of its own once the commit is durable, so notifications of different writers come in the order of
   * those transactions, not of the positions, and this process's own commit is answered on another connection than
   * the one that hears the others': a commit often comes just before the one it follows. Joined to `recent` when the
   * gap is filled; `recent` starts again at the oldest of them when a commit in the gap was heard but not kept, after
   * {@link GAP_WAIT_MS}, when more than {@link AHEAD_LIMIT} wait, or when the listener was lost.
   */
  private readonly ahead = new Map<number, { readonly last: number; readonly events: readonly RecordedEvent[] }>();
  /** The end of the latest commit heard but not kept, past `recent`: the run starts again at the commit after it. */
  private restartFrom = 0;
  /**
   * The notifications of the commits kept past a gap, in the order heard, told to the subscriptions once `recent`
   * reaches them: until then their readers would read the server.
   */
  private deferredReports: Array<{ readonly last: number; readonly types?: readonly string[]; readonly streams?: readonly string[] }> = [];
  private gapTimer: NodeJS.Timeout | undefined;
  /** How the listener tells the subscriptions of a commit (`NotifiedSubscriptions`). */
  private reportCommit: CommitReport = () => undefined;
  /** Whether notifications are held until the server says whose they are (see `heldBehindRoles`): they will come. */
  private notificationsHeld: () => boolean = () => false;
  /** The highest position this object knows is committed: its own commits, notifications, heads read. */
  private highestKnown = 0;
  /**
   * The newest event this object saw of each stream (read or committed), at most {@link TIPS_LIMIT}: the guess of the
   * stream's tip for the next append, which then needs no read before its transaction (see `commitGroup`).
   */
  private readonly tips = new LRUCache<string, ChainTip>({ max: TIPS_LIMIT });
  /**
   * Whether the server process with this id serves a role that may insert into the events table: the events its
   * notifications carry are kept only then (see `heardEvents`). Forgotten after {@link WRITER_ROLE_TTL_MS}, well
   * before the operating system could give a process id to another connection.
   */
  private readonly writerRoles = new LRUCache<number, boolean>({
    max: 1000,
    ttl: WRITER_ROLE_TTL_MS,
    // Asked once per process id: concurrent fetches of one id share this query.
    fetchMethod: async (sender) => (await this.query<[boolean]>(this.sql.writerRole, [sender, `${quotedSchema(this.schema)}.events`]))[0]?.[0] === true,
  });
  private closed = false;
  private readonly readAllStatements = new Map<string, string>();

  private constructor(options: PostgresEventStoreOptions) {
    if (options.url === undefined && options.pool === undefined) {
      throw new TypeError('openPostgresEventStore needs `url` or `pool`');
    }
    this.schema = options.schema ?? 'oncegate';
    validateStreamId(this.schema, 'schema');
    this.clock = options.clock ?? (() => new Date());
    this.pollIntervalMs = options.pollIntervalMs ?? 5000;
    this.maxScan = options.maxScan ?? 50_000;
    validateCount(this.pollIntervalMs, 'pollIntervalMs');
    validateCount(this.maxScan, 'maxScan');
    const maxGroup = options.maxGroup ?? 1000;
    validateCount(maxGroup, 'maxGroup');
    const deferredWaitMs = options.deferredWaitMs ?? DEFERRED_WAIT_MS;
    validatePosition(deferredWaitMs, 'deferredWaitMs');
    // Appends issued while a group is written share the next (group commit).
    this.groups = new GroupCommit(maxGroup, (group) => this.commitGroup(group), deferredWaitMs);
    const config: PoolConfig = {
      connectionTimeoutMillis: 5000,
      application_name: 'oncegate-event-store',
      ...options.pool,
      ...(options.url === undefined ? {} : { connectionString: options.url }),
      // A group's write and its notification go out together (see commitGroup); every other use of a connection
      // waits for each answer before it asks again, as without it.
      pipeline: true,
    };
    this.location = describeLocation(config, this.schema);
    ({ lockKey: this.lockKey, channel: this.channel } = schemaKeys(this.schema));
    this.sql = statements(quotedSchema(this.schema));
    this.pool = surviveServerLoss(new Pool(config));
    const listening = listenerConfig(config, 'oncegate-event-store');
    this.subscriptions = new NotifiedSubscriptions({
      source: this,
      head: () => this.head(),
      listen: (report) => {
        // The store's one listening connection: when it drops, every waiter is woken (a notification may have been
        // lost) and the next wait reconnects it.
        this.reportCommit = report;
        const reported: CommitReport = (last, types, streams) => {
          if (last === undefined) {
            // Notifications may have been lost: no gap is waited for any more.
            this.closeGaps();
            return report(last);
          }
          this.learnHead(last);
          // A commit kept past a gap is told once the gap is filled, so that its readers read it from memory.
          if (this.keptAhead(last)) this.deferredReports.push({ last, types, streams });
          else report(last, types, streams);
        };
        const handle = commitNotificationHandler(reported, (sender, last, events) => this.heardEvents(sender, last, events));
        const hear = heldBehindRoles(handle, this.writerRoles);
        this.notificationsHeld = hear.holding;
        return new PostgresListener(listening, [this.channel], hear, reported);
      },
      pollIntervalMs: this.pollIntervalMs,
      closed: () => this.closed,
      // Every commit notifies, after it is durable, naming its event types.
      heardIsComplete: true,
    });
  }

  /** Connects, creates or migrates the schema, and refuses a schema written by a newer version. */
  static async open(options: PostgresEventStoreOptions): Promise<PostgresEventStore> {
    const store = new PostgresEventStore(options);
    try {
      await store.migrate();
    } catch (error) {
      await store.pool.end().catch(() => undefined);
      throw openFailure(store.location, error, postgresServerOf(store.pool.options));
    }
    return store;
  }

  private async migrate(): Promise<void> {
    const schema = quotedSchema(this.schema);
    const client = await this.pool.connect();
    try {
      // The same lock as the writers': two processes opening a new store do not race to create it.
      await client.query(`BEGIN; SELECT pg_advisory_xact_lock(${LOCK_CLASS}, ${this.lockKey})`);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      const [meta] = (await client.query<[string | null]>({ text: 'SELECT to_regclass($1)::text', values: [`${schema}.store_meta`], rowMode: 'array' })).rows;
      const stored =
        meta?.[0] === null || meta === undefined
          ? undefined
          : (await client.query<[string]>({ text: `SELECT value FROM ${schema}.store_meta WHERE key = 'schema_version'`, rowMode: 'array' })).rows[0]?.[0];
      const version = stored === undefined ? undefined : Number(stored);
      if (version !== undefined && version > SCHEMA_VERSION) {
        throw new EventStoreOpenError(this.location, 'newer_schema', `schema version ${version}, this build reads ${SCHEMA_VERSION}`);
      }
      for (const statement of schemaStatements(schema)) await client.query(statement);
      if (version === undefined) {
        await client.query({ text: `INSERT INTO ${schema}.store_meta (key, value) VALUES ('schema_version', $1)`, values: [String(SCHEMA_VERSION)] });
      }
      await client.query('COMMIT');
      client.release();
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release(true);
      throw error;
    }
  }

  appendToStream(streamId: string, events: readonly EventToAppend[], options: AppendOptions = {}): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new EventStoreClosedError());
    return submitAppend(streamId, events, options, (entries) => this.enqueue(entries, options.deferrable ?? false));
  }

  appendMany(batch: readonly AppendManyEntry[]): Promise<AppendResult[]> {
    if (this.closed) return Promise.reject(new EventStoreClosedError());
    return submitAppendMany(batch, (entries) => this.enqueue(entries));
  }

  /** Queues an append for the next group; a `deferrable` one waits for another to share its transaction (see `GroupCommit`). */
  private enqueue(entries: readonly SerialisedAppend[], deferrable: boolean | AbortSignal = false): Promise<AppendResult[]> {
    return new Promise((resolve, reject) => {
      this.groups.add({ entries, resolve, reject }, deferrable);
    });
  }

  /**
   * Writes a group of appends in one transaction. The streams' tips and the given ids are read first, without a
   * lock, and the group is decided and hashed on them here (each append checked against the tips as the appends
   * before it in the group left them; one that fails writes nothing and harms no other). The write is then one
   * round trip, a prepared call of the schema's `append_events_joined` with the rows as parameters (the events' data,
   * and their metadata, as the JSON texts already serialised joined into one text, so none is escaped again): under
   * the store's advisory lock, a check that no written stream moved since the read, the insert at the head's next
   * positions and the commit; a notification follows in a transaction of its own. The lock is thus held for what the
   * server does, never across a round trip; global positions still become visible in order. A stream that moved
   * meanwhile (a writer in another process) makes the group be read and decided again.
   */
  private async commitGroup(group: readonly PendingAppend[]): Promise<void> {
    const recordedAt = this.clock().toISOString();
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      const failure = unavailableOr(this.location, error);
      for (const request of group) request.reject(failure);
      return;
    }
    let committing = false;
    let outcomes: Array<{ results: AppendResult[]; events: RecordedEvent[] } | { error: unknown }> = [];
    let lastPosition = 0;
    // The tips are first taken from what this object last saw of each stream, when it saw every one the group
    // writes; the check under the lock finds a guess that was wrong, and the group is then read and decided again.
    let guess = true;
    try {
      for (;;) {
        const streams = [...new Set(group.flatMap((request) => request.entries.map((entry) => entry.streamId)))];
        const guessed = guess ? this.guessedTips(group, streams) : undefined;
        let tips: Map<string, ChainTip>;
        let takenIds: string[] = [];
        if (guessed !== undefined) tips = guessed;
        else {
          const givenIds = group.flatMap((request) => request.entries.flatMap((entry) => entry.events.flatMap((event) => (event.id === undefined ? [] : [event.id]))));
          const state = await client.query<[Array<[string, number, string]>, string[]]>({
            text: this.sql.groupState,
            values: [streams, givenIds],
            rowMode: 'array',
          });
          const [tipRows, taken] = state.rows[0]!;
          tips = new Map(tipRows.map(([streamId, revision, hash]) => [streamId, { revision, hash }]));
          takenIds = taken;
        }
        // Positions are planned from 0 and moved to the head's once the insert has taken them.
        // Planning moves the tips it is given on; `tips` keeps them as read, for the check under the lock.
        const planned = planGroup(group, { head: 0, tips: new Map(tips), taken: new Set(takenIds), recordedAt });
        // An expected revision refused on a guess may only show that the guess is behind (another connection
        // appended since): refused only on tips read from the server.
        if (guessed !== undefined && planned.outcomes.some((outcome) => 'error' in outcome && outcome.error instanceof WrongExpectedRevisionError)) {
          for (const streamId of streams) this.tips.delete(streamId);
          guess = false;
          continue;
        }
        outcomes = planned.outcomes;
        if (planned.rows.positions.length === 0) break;
        const written = [...new Set(planned.rows.streamIds)];
        const rows = planned.rows;
        committing = true;
        // The server process behind this connection notifies only of this object's own writes (and its notification
        // may be heard before the write's answer is read): the events its notifications carry may be kept without
        // asking whose role it serves (see `heardEvents`).
        const serverProcess = (client as unknown as { processID?: number | null }).processID;
        if (typeof serverProcess === 'number') this.writerRoles.set(serverProcess, true);
        const parts = commitNotificationParts(recordedAt, rows);
        const appended = client
          .query<[string]>({
            name: 'oncegate-append-events-joined',
            text: this.sql.appendEvents,
            values: [
              LOCK_CLASS,
              this.lockKey,
              written,
              written.map((streamId) => tips.get(streamId)?.revision ?? null),
              rows.streamIds,
              rows.revisions,
              rows.ids,
              rows.types,
              rows.data.join(JSON_TEXT_SEPARATOR),
              rows.metadata.join(JSON_TEXT_SEPARATOR),
              recordedAt,
              rows.prevs,
              rows.hashes,
            ],
            rowMode: 'array',
          })
          .then((result) => Number(result.rows[0]![0]))
          .catch((error: unknown) => {
            // A guessed group also learns here whether one of its given ids is stored already (the unique index).
            const duplicate = guessed !== undefined && isUniqueViolation(error, 'events_event_id');
            if (!duplicate && !String((error as Error).message).includes(STREAM_MOVED)) throw error;
            return undefined;
          });
        // The transaction above commits without waiting for its WAL to reach the disk, so the lock is held only while
        // the server inserts. Its notification is a transaction of its own that does wait: its commit record comes
        // after the insert's, so once it is flushed the insert is durable, and only then are the appends answered and
        // the listeners told. Concurrent writers' flushes are shared by the server. It is sent right behind the write,
        // on the same connection, without waiting for the write's answer (the connection pipelines them), and notifies
        // only if that write committed (see `notify_appended` in schema.ts). Both are prepared: the server parses and
        // plans each once per connection, not once a group.
        const noted = client
          .query<[string | null]>({
            name: 'oncegate-notify-appended',
            text: this.sql.notifyAppended,
            values: [this.channel, rows.ids[0], planned.last, parts.middle, parts.tail ?? null],
            rowMode: 'array',
          })
          .then((result) => result.rows[0]![0]);
        const base = await appended.catch(async (error: unknown) => {
          // The write failed: the notification behind it wrote nothing, and the connection is dropped.
          await noted.catch(() => undefined);
          throw error;
        });
        const notedBase = await noted;
        if (base === undefined) {
          committing = false;
          for (const streamId of streams) this.tips.delete(streamId);
          guess = false;
          continue;
        }
        const head = base + planned.last;
        // Not told behind the write (the function made by a writer of the previous version leaves no setting): told now.
        if (notedBase === null || Number(notedBase) !== base) {
          await client.query({ name: 'oncegate-notify', text: this.sql.notifyDurable, values: [this.channel, commitNotification(head, base, parts)] });
        }
        committing = false;
        outcomes = shifted(outcomes, base);
        lastPosition = head;
        break;
      }
      client.release();
    } catch (error) {
      // No transaction is left open (each statement is one of its own); the connection is dropped in case it broke.
      client.release(true);
      await this.failGroup(group, outcomes, error, committing);
      return;
    }
    group.forEach((request, index) => {
      const outcome = outcomes[index]!;
      if ('results' in outcome) request.resolve(outcome.results);
      else request.reject(outcome.error);
    });
    if (lastPosition > 0) {
      const committed = outcomes.flatMap((outcome) => ('events' in outcome ? outcome.events : []));
      // Positions are dense: the group's events are exactly those after `lastPosition - committed.length`.
      const kept = this.remember(lastPosition - committed.length, lastPosition, committed);
      // Kept past a gap, while the listener is connected: the commit's own notification wakes the readers once the
      // gap is filled, so that they read it from memory rather than from the server.
      if (kept !== 'ahead' || !this.subscriptions.listening) {
        this.subscriptions.wake(lastPosition, [...new Set(committed.map((event) => event.type))], streamsOf(committed));
      }
    }
  }

  /**
   * Keeps a durable commit, this process's or one a notification carried, for forward reads (see `recent`): it
   * extends the run kept when it follows it, is kept `ahead` when it comes after a gap (a commit not heard of yet),
   * and is dropped when the run kept reaches past it already (a notification heard after the commit's own answer, or
   * after a later commit's). Answers which.
   */
  private remember(after: number, last: number, events: readonly RecordedEvent[]): 'kept' | 'ahead' | 'known' {
    this.learnHead(last);
    this.learnTips(events);
    const recent = this.recent;
    if (recent !== undefined && last <= recent.last) return 'known';
    if (recent !== undefined && after > recent.last && after !== this.restartFrom) {
      this.ahead.set(after, { last, events });
      if (this.ahead.size > AHEAD_LIMIT) this.closeGaps();
      else this.gapTimer ??= this.waitForGaps();
      return this.recent === recent ? 'ahead' : 'kept';
    }
    // Following the run, the first commit kept, or the one after a commit that was heard but not kept.
    if (recent === undefined || recent.last !== after) this.startRun(after, last, events);
    else this.extendRecent(last, events);
    return 'kept';
  }

  /** Starts the run kept again with the commit `(after, last]`, then the commits kept ahead that follow it. */
  private startRun(after: number, last: number, events: readonly RecordedEvent[]): void {
    this.recent = { after, last: after, events: [] };
    this.extendRecent(last, events);
  }

  /** Appends a commit that follows the run kept, then the commits kept ahead that follow it in turn. */
  private extendRecent(last: number, events: readonly RecordedEvent[]): void {
    const recent = this.recent!;
    recent.last = last;
    for (const event of events) recent.events.push(event);
    for (let next = this.ahead.get(recent.last); next !== undefined; next = this.ahead.get(recent.last)) {
      this.ahead.delete(recent.last);
      recent.last = next.last;
      for (const event of next.events) recent.events.push(event);
    }
    for (const start of this.ahead.keys()) if (start < recent.last) this.ahead.delete(start);
    if (recent.events.length > RECENT_LIMIT) {
      const dropped = recent.events.splice(0, recent.events.length - RECENT_LIMIT);
      recent.after = dropped.at(-1)!.position;
    }
    if (this.ahead.size === 0) {
      clearTimeout(this.gapTimer);
      this.gapTimer = undefined;
    }
    this.tellDeferred(recent.last);
  }

  /** Tells the subscriptions of the deferred notifications up to `through`, in the order heard. */
  private tellDeferred(through: number): void {
    if (this.deferredReports.length === 0) return;
    const told = this.deferredReports.filter((report) => report.last <= through);
    if (told.length === 0) return;
    this.deferredReports = this.deferredReports.filter((report) => report.last > through);
    for (const { last, types, streams } of told) this.reportCommit(last, types, streams);
  }

  /**
   * Whether the commit a notification at `last` told of is kept past a gap, to be told to the subscriptions when the
   * gap is filled. One past the run that is not kept (too large to carry its events, or from a sender whose events are not
   * kept) can never be joined to it: the run starts again at the commit after it.
   */
  private keptAhead(last: number): boolean {
    const recent = this.recent;
    if (recent === undefined || last <= recent.last) return false;
    for (const commit of this.ahead.values()) if (commit.last === last) return true;
    this.restartFrom = Math.max(this.restartFrom, last);
    const next = this.ahead.get(last);
    if (next !== undefined) {
      this.ahead.delete(last);
      this.startRun(last, next.last, next.events);
    }
    return false;
  }

  /** Waits {@link GAP_WAIT_MS} for the gaps to be filled, and longer while notifications are held: they will come. */
  private waitForGaps(): NodeJS.Timeout {
    return setTimeout(() => {
      this.gapTimer = undefined;
      if (this.ahead.size === 0) return;
      if (this.notificationsHeld() && !this.closed) this.gapTimer = this.waitForGaps();
      else this.closeGaps();
    }, GAP_WAIT_MS).unref();
  }

  /**
   * Gives up waiting for the gaps: the run starts again at the oldest commit kept ahead (and again past each further
   * gap), and the readers waiting for them are woken; those behind a gap read the server.
   */
  private closeGaps(): void {
    clearTimeout(this.gapTimer);
    this.gapTimer = undefined;
    while (this.ahead.size > 0) {
      const oldest = Math.min(...this.ahead.keys());
      const commit = this.ahead.get(oldest)!;
      this.ahead.delete(oldest);
      this.startRun(oldest, commit.last, commit.events);
    }
    this.tellDeferred(NO_LIMIT);
  }

  /**
   * The events a commit notification carried, kept like this process's own commits (see `remember`), so that the
   * reads the notification wakes are answered without a round trip. Any session of the database may notify on the
   * store's channel, whatever its privileges, so the events are kept only when the server process that sent them
   * serves a role that may insert into the events table (asked of the server once per process, see `writerRoles`);
   * until that is known, and otherwise, the notification only wakes the readers, who read the server. Answers the
   * events kept.
   */
  private heardEvents(sender: number, last: number, text: string): readonly RecordedEvent[] | undefined {
    const trusted = this.writerRoles.get(sender);
    if (trusted === undefined) {
      this.writerRoles.fetch(sender).catch(() => undefined);
      return undefined;
    }
    if (!trusted) return undefined;
    const carried = carriedEvents(last, text);
    if (carried === undefined) return undefined;
    this.remember(carried.after, last, carried.events);
    return carried.events;
  }

  /** Keeps the newest event seen of each stream as the guess of its tip (see `tips`). */
  private learnTips(events: readonly RecordedEvent[]): void {
    for (const event of events) {
      const known = this.tips.peek(event.streamId);
      if (known !== undefined && known.revision >= event.revision) continue;
      this.tips.set(event.streamId, { revision: event.revision, hash: event.hash });
    }
  }

  /**
   * The tips of a group's streams as this object last saw them, when it has a guess for each (a stream it never saw
   * is guessed absent only when every append to it expects no stream); otherwise `undefined`, and they are read.
   */
  private guessedTips(group: readonly PendingAppend[], streams: readonly string[]): Map<string, ChainTip> | undefined {
    const tips = new Map<string, ChainTip>();
    for (const streamId of streams) {
      const known = this.tips.peek(streamId);
      if (known !== undefined) tips.set(streamId, known);
      else if (!group.every((request) => request.entries.every((entry) => entry.streamId !== streamId || entry.expected === 'no_stream'))) return undefined;
    }
    return tips;
  }

  private learnHead(position: number): void {
    if (position > this.highestKnown) this.highestKnown = position;
  }

  /** The end of the latest commit kept past a gap (0 when none is). */
  private aheadLast(): number {
    let last = 0;
    for (const commit of this.ahead.values()) if (commit.last > last) last = commit.last;
    return last;
  }

  /**
   * A forward read answered from the latest commits kept: it starts in their run, before its end, and nothing beyond
   * it is known to be committed, so the answer is what a read would have returned just after the last of them
   * committed. A read from the run's end goes to the server: it would learn nothing from memory, and a caller
   * polling the head would otherwise never leave its microtasks for the notifications that move it on.
   */
  private readRecent(after: number, maxCount: number, filter: EventFilter | undefined): ReadAllPage | undefined {
    const recent = this.recent;
    if (recent === undefined || after < recent.after || after >= recent.last) return undefined;
    // Past the run only commits kept ahead, told to the readers when they join: the run's end is not taken for the head.
    if (this.highestKnown > recent.last && this.highestKnown > this.aheadLast()) return undefined;
    const events: RecordedEvent[] = [];
    for (let index = after - recent.after; index < recent.events.length && events.length < maxCount; index += 1) {
      const event = recent.events[index]!;
      if (filter === undefined || matchesFilter(filter, event)) events.push(event);
    }
    return { events, lastPosition: events.length === maxCount ? events.at(-1)!.position : recent.last };
  }

  /**
   * A group's transaction failed. When the connection broke while the commit was on its way, the commit may have
   * happened: one of its event ids is looked up, and the appends are answered as they were decided if it is there.
   */
  private async failGroup(
    group: readonly PendingAppend[],
    outcomes: ReadonlyArray<{ results: AppendResult[]; events: RecordedEvent[] } | { error: unknown }>,
    error: unknown,
    committing: boolean,
  ): Promise<void> {
    const written = outcomes.flatMap((outcome) => ('events' in outcome ? outcome.events : []));
    if (committing && isUnavailable(error) && written.length > 0) {
      const stored = await this.pool
        .query<[string]>({ text: this.sql.eventPosition, values: [written[0]!.id, this.channel], rowMode: 'array' })
        .then((result) => result.rows[0]?.[0])
        .catch(() => undefined);
      if (stored !== undefined) {
        // Planned positions are relative to the head the insert found; the stored event tells where that was.
        const base = Number(stored) - written[0]!.position;
        shifted(outcomes, base).forEach((outcome, index) => {
          const request = group[index]!;
          if ('results' in outcome) request.resolve(outcome.results);
          else request.reject(outcome.error);
        });
        this.subscriptions.wake(written.at(-1)!.position + base);
        return;
      }
    }
    let failure = unavailableOr(this.location, error);
    if (isUniqueViolation(error, 'events_event_id')) {
      // A generated id met a stored one (or a writer outside this adapter wrote without the lock).
      const id = /\(event_id\)=\((.*)\)/.exec(String((error as { detail?: string }).detail ?? ''))?.[1] ?? '';
      const owner = written.find((event) => event.id === id);
      failure = new DuplicateEventIdError(owner?.streamId ?? '', id);
    }
    for (const request of group) request.reject(failure);
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    validateStreamId(streamId);
    const direction = options.direction ?? 'forwards';
    if (options.fromRevision !== undefined) validatePosition(options.fromRevision, 'fromRevision');
    if (options.maxCount !== undefined) validateCount(options.maxCount, 'maxCount');
    const from = options.fromRevision ?? (direction === 'forwards' ? 0 : NO_LIMIT);
    const rows = await this.query<EventRow>(direction === 'forwards' ? this.sql.readForwards : this.sql.readBackwards, [
      streamId,
      from,
      options.maxCount ?? null,
    ]);
    const events = rows.map(toRecordedEvent);
    this.learnTips(events);
    return events;
  }

  async streamRevision(streamId: string): Promise<number | undefined> {
    this.assertOpen();
    validateStreamId(streamId);
    const [row] = await this.query<[number | null]>(this.sql.streamRevision, [streamId]);
    return row?.[0] ?? undefined;
  }

  seenPosition(): number {
    return this.highestKnown;
  }

  async headPosition(): Promise<number> {
    this.assertOpen();
    return this.head();
  }

  /**
   * From the listener's notifications: every commit notifies once it is durable, before its append is answered, and
   * the server delivers notifications in commit order. Once a commit at or past the highest position this object
   * knows is heard, so is every append answered before that commit was made. That notification is usually on its way
   * already (this object's own commit, or the one whose event it just read); after {@link NOTIFIED_WAIT_MS} without
   * it, the caller reads instead.
   */
  async notifiedSince(after: number, types: readonly string[]): Promise<NotifiedSince | undefined> {
    this.assertOpen();
    return this.subscriptions.heardSince(after, this.highestKnown, types, NOTIFIED_WAIT_MS);
  }

  private async head(): Promise<number> {
    const [row] = await this.query<[string]>(this.sql.head, []);
    const head = Number(row![0]);
    this.learnHead(head);
    return head;
  }

  /** Runs one statement on any pooled connection, rows as arrays; an unavailable server is `store_unavailable`. */
  private async query<Row extends unknown[]>(text: string, values: unknown[]): Promise<Row[]> {
    try {
      const result = await this.pool.query<Row>({ text, values, rowMode: 'array' });
      return result.rows;
    } catch (error) {
      throw unavailableOr(this.location, error);
    }
  }

  /**
   * One statement reads the page and the head together, so both come from one snapshot: a page that is not full
   * has read everything up to that head, and `lastPosition` may move there without skipping anything.
   */
  async readAll(options: ReadAllOptions = {}): Promise<ReadAllPage> {
    this.assertOpen();
    const direction = options.direction ?? 'forwards';
    const maxCount = options.maxCount ?? DEFAULT_READ_ALL_COUNT;
    validateCount(maxCount, 'maxCount');
    validateFilter(options.filter);
    const filtered = options.filter !== undefined;
    const window = filtered ? Math.max(this.maxScan, maxCount) : NO_LIMIT;
    if (direction === 'forwards') {
      const after = options.after ?? 0;
      validatePosition(after, 'after');
      const recent = this.readRecent(after, maxCount, options.filter);
      if (recent !== undefined) return recent;
      const { sql, params } = this.readAllQuery(direction, options.filter);
      const limit = filtered ? after + window : NO_LIMIT;
      const rows = await this.query<[string, ...Partial<EventRow>]>(sql, [after, limit, maxCount, ...params]);
      const head = Number(rows[0]![0]);
      this.learnHead(head);
      const events = eventsOf(rows);
      this.learnTips(events);
      const high = Math.min(head, limit);
      const full = events.length === maxCount;
      return { events, lastPosition: full ? events.at(-1)!.position : Math.max(after, high) };
    }
    if (options.before !== undefined) validatePosition(options.before, 'before');
    const { sql, params } = this.readAllQuery(direction, options.filter);
    const rows = await this.query<[string, ...Partial<EventRow>]>(sql, [options.before ?? null, filtered ? window : NO_LIMIT, maxCount, ...params]);
    const head = Number(rows[0]![0]);
    const events = eventsOf(rows);
    const high = (options.before ?? head + 1) - 1;
    const low = Math.max(0, high - (filtered ? window : NO_LIMIT));
    if (high <= low) return { events: [], lastPosition: high + 1 };
    const full = events.length === maxCount;
    return { events, lastPosition: full ? events.at(-1)!.position : low + 1 };
  }

  private readAllQuery(direction: 'forwards' | 'backwards', filter: EventFilter | undefined): { sql: string; params: unknown[] } {
    const where: string[] = [];
    const params: unknown[] = [];
    // $1–$3 are the range and the count.
    for (const prefix of filter?.streamPrefixes ?? []) params.push(prefix);
    const prefixes = params.length;
    if (prefixes > 0) where.push(`(${params.map((_, i) => `starts_with(stream_id, $${4 + i})`).join(' OR ')})`);
    const types = filter?.eventTypes ?? [];
    if (types.length > 0) {
      params.push(types);
      where.push(`type = ANY($${4 + prefixes}::text[])`);
    }
    const key = `${direction}:${prefixes}:${types.length > 0}`;
    let sql = this.readAllStatements.get(key);
    if (sql === undefined) {
      sql = this.sql.readAll(direction, where);
      this.readAllStatements.set(key, sql);
    }
    return { sql, params };
  }

  subscribeToAll(handler: EventHandler, options: SubscribeOptions = {}): Subscription {
    this.assertOpen();
    return this.subscriptions.subscribe(handler, options);
  }

  async readCheckpoint(consumer: string): Promise<number | undefined> {
    this.assertOpen();
    validateStreamId(consumer, 'consumer');
    const [row] = await this.query<[string]>(this.sql.readCheckpoint, [consumer]);
    return row === undefined ? undefined : Number(row[0]);
  }

  async storeCheckpoint(consumer: string, position: number): Promise<void> {
    this.assertOpen();
    validateStreamId(consumer, 'consumer');
    validatePosition(position, 'position');
    await this.query(this.sql.storeCheckpoint, [consumer, position, this.clock().toISOString()]);
  }

  async storeCheckpoints(checkpoints: readonly ConsumerCheckpoint[]): Promise<void> {
    this.assertOpen();
    const last = new Map<string, number>();
    checkpoints.forEach(({ consumer, position }, index) => {
      validateStreamId(consumer, `checkpoints[${index}].consumer`);
      validatePosition(position, `checkpoints[${index}].position`);
      last.set(consumer, position);
    });
    if (last.size === 0) return;
    // In one order, so two writers of overlapping sets lock their rows alike.
    const consumers = [...last.keys()].sort();
    await this.query(this.sql.storeCheckpoints, [consumers, consumers.map((consumer) => last.get(consumer)!), this.clock().toISOString()]);
  }

  async renewLease(holder: string, expiresAt: string): Promise<void> {
    this.assertOpen();
    validateStreamId(holder, 'holder');
    validateInstant(expiresAt, 'expiresAt');
    await this.query(this.sql.renewLease, [holder, expiresAt, this.clock().toISOString()]);
  }

  async renewLeases(holders: readonly string[], expiresAt: string): Promise<void> {
    this.assertOpen();
    holders.forEach((holder, index) => validateStreamId(holder, `holders[${index}]`));
    if (new Set(holders).size !== holders.length) throw new InvalidEventStoreArgumentError('holders', 'must be distinct');
    validateInstant(expiresAt, 'expiresAt');
    if (holders.length === 0) return;
    // In one order, so two writers of overlapping sets lock their rows alike.
    await this.query(this.sql.renewLeases, [[...holders].sort(), expiresAt, this.clock().toISOString()]);
  }

  async releaseLeases(holders: readonly string[]): Promise<void> {
    this.assertOpen();
    holders.forEach((holder, index) => validateStreamId(holder, `holders[${index}]`));
    if (holders.length === 0) return;
    await this.query(this.sql.releaseLeases, [[...holders]]);
  }

  async readLease(holder: string): Promise<Lease | undefined> {
    this.assertOpen();
    validateStreamId(holder, 'holder');
    const [row] = await this.query<[string, string]>(this.sql.readLease, [holder]);
    return row === undefined ? undefined : { holder: row[0], expiresAt: row[1] };
  }

  async releaseLease(holder: string): Promise<void> {
    this.assertOpen();
    validateStreamId(holder, 'holder');
    await this.query(this.sql.releaseLease, [holder]);
  }

  async readLeases(prefix: string): Promise<Lease[]> {
    this.assertOpen();
    validateStreamId(prefix, 'prefix');
    const rows = await this.query<[string, string]>(this.sql.readLeases, [prefix]);
    return rows.map(([holder, expiresAt]) => ({ holder, expiresAt }));
  }

  async claim(name: string, owner: string, expiresAt: string, now: string): Promise<Claim> {
    this.assertOpen();
    validateStreamId(name, 'name');
    validateStreamId(owner, 'owner');
    validateInstant(expiresAt, 'expiresAt');
    validateInstant(now, 'now');
    for (;;) {
      // A claim another transaction inserted after this statement's snapshot took it is neither taken nor seen:
      // the statement runs again on a newer snapshot.
      const [row] = await this.query<[string, string, string]>(this.sql.takeClaim, [name, owner, expiresAt, now]);
      if (row !== undefined) return { name: row[0], owner: row[1], expiresAt: row[2] };
    }
  }

  async claimAll(names: readonly string[], owner: string, expiresAt: string, now: string): Promise<Claim[]> {
    this.assertOpen();
    names.forEach((name, index) => validateStreamId(name, `names[${index}]`));
    if (new Set(names).size !== names.length) throw new InvalidEventStoreArgumentError('names', 'must be distinct');
    validateStreamId(owner, 'owner');
    validateInstant(expiresAt, 'expiresAt');
    validateInstant(now, 'now');
    if (names.length === 0) return [];
    // In one order, so two members claiming overlapping sets lock their rows alike.
    const rows = await this.query<[string, string, string]>(this.sql.takeClaims, [[...names].sort(), owner, expiresAt, now]);
    const found = new Map(rows.map(([name, holder, until]) => [name, { name, owner: holder, expiresAt: until }]));
    const claims: Claim[] = [];
    for (const name of names) {
      // A claim another transaction inserted after the statement's snapshot was neither taken nor seen: alone again.
      claims.push(found.get(name) ?? (await this.claim(name, owner, expiresAt, now)));
    }
    return claims;
  }

  async releaseClaim(name: string, owner: string): Promise<void> {
    this.assertOpen();
    validateStreamId(name, 'name');
    validateStreamId(owner, 'owner');
    await this.query(this.sql.releaseClaim, [name, owner]);
  }

  async readClaims(prefix: string): Promise<Claim[]> {
    this.assertOpen();
    validateStreamId(prefix, 'prefix');
    const rows = await this.query<[string, string, string]>(this.sql.readClaims, [prefix]);
    return rows.map(([name, owner, expiresAt]) => ({ name, owner, expiresAt }));
  }

  private assertOpen(): void {
    if (this.closed) throw new EventStoreClosedError();
  }

  /** Appends already issued are written first; then subscriptions stop and every connection is closed. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.groups.drained();
    clearTimeout(this.gapTimer);
    await this.subscriptions.close();
    await this.pool.end().catch(() => undefined);
  }
}

function eventsOf(rows: ReadonlyArray<[string, ...Partial<EventRow>]>): RecordedEvent[] {
  const events: RecordedEvent[] = [];
  for (const row of rows) {
    // The head comes with every row; a read that found nothing returns one row with the head alone.
    if (row[1] === null || row[1] === undefined) continue;
    events.push(toRecordedEvent(row.slice(1) as EventRow));
  }
  return events;
}

interface GroupState {
  head: number;
  readonly tips: Map<string, ChainTip>;
  readonly taken: Set<string>;
  readonly recordedAt: string;
}

interface PlannedRows {
  readonly positions: number[];
  readonly streamIds: string[];
  readonly revisions: number[];
  readonly ids: string[];
  readonly types: string[];
  readonly data: string[];
  readonly metadata: string[];
  readonly prevs: string[];
  readonly hashes: string[];
}

/**
 * Decides every append of a group against the state read under the lock, in order: an append whose expected
 * revision does not hold or whose event id is taken is refused alone and changes nothing; the others take the next
 * positions and continue their streams' chains.
 */
function planGroup(
  group: readonly PendingAppend[],
  state: GroupState,
): { outcomes: Array<PlannedAppend | { error: unknown }>; rows: PlannedRows; last: number } {
  const rows: PlannedRows = { positions: [], streamIds: [], revisions: [], ids: [], types: [], data: [], metadata: [], prevs: [], hashes: [] };
  const outcomes = group.map((request) => {
    try {
      return planAppend(request.entries, state);
    } catch (error) {
      return { error };
    }
  });
  for (const outcome of outcomes) {
    if (!('events' in outcome)) continue;
    outcome.events.forEach((event, i) => {
      rows.positions.push(event.position);
      rows.streamIds.push(event.streamId);
      rows.revisions.push(event.revision);
      rows.ids.push(event.id);
      rows.types.push(event.type);
      rows.data.push(outcome.texts[i]!.data);
      rows.metadata.push(outcome.texts[i]!.metadata);
      rows.prevs.push(event.prev);
      rows.hashes.push(event.hash);
    });
  }
  return { outcomes, rows, last: rows.positions.length > 0 ? state.head : 0 };
}

/** An append decided: its answers, its events, and their data and metadata as the JSON text stored. */
interface PlannedAppend {
  readonly results: AppendResult[];
  readonly events: RecordedEvent[];
  readonly texts: ReadonlyArray<{ readonly data: string; readonly metadata: string }>;
}

/** One append (every entry of it, or none): checks, then moves the group's state on only when all entries hold. */
function planAppend(entries: readonly SerialisedAppend[], state: GroupState): PlannedAppend {
  const tips = new Map<string, ChainTip>();
  const ids: string[] = [];
  const events: RecordedEvent[] = [];
  const texts: Array<{ data: string; metadata: string }> = [];
  const results: AppendResult[] = [];
  let position = state.head;
  for (const entry of entries) {
    const from = events.length;
    const tip = state.tips.get(entry.streamId);
    const actual = tip?.revision;
    if (!expectedRevisionHolds(entry.expected, actual)) throw new WrongExpectedRevisionError(entry.streamId, entry.expected, actual);
    const withIds = entry.events.map((event) => ({ ...event, id: event.id ?? newEventId() }));
    const links = linkEvents(entry.streamId, tip, withIds, state.recordedAt);
    let revision = actual ?? -1;
    let prev = tip?.hash ?? GENESIS_HASH;
    withIds.forEach((event, i) => {
      const { id } = event;
      if (state.taken.has(id)) throw new DuplicateEventIdError(entry.streamId, id);
      ids.push(id);
      position += 1;
      revision = links[i]!.revision;
      prev = links[i]!.hash;
      events.push({
        streamId: entry.streamId,
        revision,
        id,
        type: event.type,
        data: event.dataValue,
        metadata: event.metadataValue,
        recordedAt: state.recordedAt,
        position,
        prev: links[i]!.prev,
        hash: links[i]!.hash,
      });
      texts.push({ data: event.data, metadata: event.metadata });
    });
    tips.set(entry.streamId, { revision, hash: prev });
    results.push({ streamId: entry.streamId, nextExpectedRevision: revision, position, events: events.slice(from) });
  }
  for (const [streamId, tip] of tips) state.tips.set(streamId, tip);
  for (const id of ids) state.taken.add(id);
  state.head = position;
  return { results, events, texts };
}

type GroupOutcome = { results: AppendResult[]; events: RecordedEvent[] } | { error: unknown };

/**
 * A group's outcomes planned from position 0, moved to the positions the insert took (`base` added): each event
 * moved once, and each result given its entry's part of them (an append's results hold its events in order).
 */
function shifted(outcomes: readonly GroupOutcome[], base: number): GroupOutcome[] {
  return outcomes.map((outcome) => {
    if (!('results' in outcome)) return outcome;
    const events = outcome.events.map((event) => ({ ...event, position: event.position + base }));
    let from = 0;
    const results = outcome.results.map((result) => ({ ...result, position: result.position + base, events: events.slice(from, (from += result.events.length)) }));
    return { results, events };
  });
}


/** The store's statements for one schema (already quoted). */
function statements(schema: string) {
  return {
    /** Before the lock: the tip of each stream named in `$1`, and which of the ids in `$2` are stored. */
    groupState: `SELECT
        (SELECT coalesce(json_agg(json_build_array(s.id, t.revision, t.hash)), '[]'::json)
           FROM unnest($1::text[]) AS s(id)
           CROSS JOIN LATERAL (SELECT revision, hash FROM ${schema}.events WHERE stream_id = s.id ORDER BY revision DESC LIMIT 1) t),
        (SELECT coalesce(array_agg(event_id), '{}') FROM ${schema}.events WHERE event_id = ANY($2::text[]))`,
    /** A group's write (see `append_events_joined` in schema.ts): the head the rows were inserted after. */
    appendEvents: `SELECT ${schema}.append_events_joined($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)::text`,
    // With a notification, so that the event found is durable once the answer comes (see commitGroup).
    eventPosition: `SELECT position::text, pg_notify($2, position::text || ' *'), ${FLUSH_WAIT} FROM ${schema}.events WHERE event_id = $1`,
    /** The notification of a group's commit, in a transaction that waits for a WAL flush covering it (see commitGroup). */
    notifyDurable: `SELECT pg_notify($1, $2), ${FLUSH_WAIT}`,
    /** The same, sent behind the write without its answer: see `notify_appended` in schema.ts. */
    notifyAppended: `SELECT ${schema}.notify_appended($1, $2, $3, $4, $5)::text`,
    readForwards: `SELECT ${COLUMNS} FROM ${schema}.events WHERE stream_id = $1 AND revision >= $2::bigint ORDER BY revision ASC LIMIT $3`,
    readBackwards: `SELECT ${COLUMNS} FROM ${schema}.events WHERE stream_id = $1 AND revision <= $2::bigint ORDER BY revision DESC LIMIT $3`,
    streamRevision: `SELECT max(revision) FROM ${schema}.events WHERE stream_id = $1`,
    head: `SELECT coalesce(max(position), 0)::text FROM ${schema}.events`,
    /**
     * Forwards: `$1` after, `$2` the highest position to scan; backwards: `$1` before (null: from the head), `$2` how
     * many positions to scan; `$3` the count; then the filter's parameters.
     */
    readAll(direction: 'forwards' | 'backwards', filter: readonly string[]): string {
      const where = filter.map((clause) => ` AND ${clause}`).join('');
      const range =
        direction === 'forwards'
          ? 'position > $1::bigint AND position <= least(h.head, $2::bigint)'
          : `position <= coalesce($1::bigint - 1, h.head) AND position > greatest(0, coalesce($1::bigint - 1, h.head) - $2::bigint)`;
      const order = direction === 'forwards' ? 'ASC' : 'DESC';
      return `SELECT h.head::text, e.* FROM (SELECT coalesce(max(position), 0) AS head FROM ${schema}.events) h
        LEFT JOIN LATERAL (SELECT ${COLUMNS} FROM ${schema}.events WHERE ${range}${where} ORDER BY position ${order} LIMIT $3) e ON true
        ORDER BY e.position ${order}`;
    },
    readCheckpoint: `SELECT position::text FROM ${schema}.checkpoints WHERE consumer = $1`,
    storeCheckpoint: `INSERT INTO ${schema}.checkpoints (consumer, position, updated_at) VALUES ($1, $2, $3)
      ON CONFLICT (consumer) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at`,
    storeCheckpoints: `INSERT INTO ${schema}.checkpoints (consumer, position, updated_at)
      SELECT consumer, position, $3 FROM unnest($1::text[], $2::bigint[]) AS given(consumer, position)
      ON CONFLICT (consumer) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at`,
    renewLease: `INSERT INTO ${schema}.leases (holder, expires_at, renewed_at) VALUES ($1, $2, $3)
      ON CONFLICT (holder) DO UPDATE SET expires_at = excluded.expires_at, renewed_at = excluded.renewed_at`,
    renewLeases: `INSERT INTO ${schema}.leases (holder, expires_at, renewed_at) SELECT holder, $2, $3 FROM unnest($1::text[]) AS given(holder)
      ON CONFLICT (holder) DO UPDATE SET expires_at = excluded.expires_at, renewed_at = excluded.renewed_at`,
    releaseLeases: `DELETE FROM ${schema}.leases WHERE holder = ANY($1::text[])`,
    readLease: `SELECT holder, expires_at FROM ${schema}.leases WHERE holder = $1`,
    releaseLease: `DELETE FROM ${schema}.leases WHERE holder = $1`,
    /** Whether the server process `$1` serves a role that may insert into the table `$2` (no row: no such process). */
    writerRole: `SELECT has_table_privilege(usename, $2, 'INSERT') FROM pg_stat_activity WHERE pid = $1 AND usename IS NOT NULL`,
    readLeases: `SELECT holder, expires_at FROM ${schema}.leases WHERE left(holder, length($1)) = $1 ORDER BY holder COLLATE "C"`,
    // Takes the claim when it is free, expired, or the owner's already; another owner's live claim is left alone.
    takeClaim: `WITH taken AS (
        INSERT INTO ${schema}.claims (name, owner, expires_at) VALUES ($1, $2, $3)
        ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
        WHERE ${schema}.claims.owner = excluded.owner OR ${schema}.claims.expires_at <= $4
        RETURNING name, owner, expires_at)
      SELECT name, owner, expires_at FROM taken
      UNION ALL SELECT name, owner, expires_at FROM ${schema}.claims WHERE name = $1 AND NOT EXISTS (SELECT 1 FROM taken)`,
    // takeClaim for each name of $1 at once.
    takeClaims: `WITH taken AS (
        INSERT INTO ${schema}.claims (name, owner, expires_at) SELECT name, $2, $3 FROM unnest($1::text[]) AS wanted(name)
        ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
        WHERE ${schema}.claims.owner = excluded.owner OR ${schema}.claims.expires_at <= $4
        RETURNING name, owner, expires_at)
      SELECT name, owner, expires_at FROM taken
      UNION ALL SELECT name, owner, expires_at FROM ${schema}.claims
        WHERE name = ANY($1::text[]) AND name NOT IN (SELECT name FROM taken)`,
    releaseClaim: `DELETE FROM ${schema}.claims WHERE name = $1 AND owner = $2`,
    readClaims: `SELECT name, owner, expires_at FROM ${schema}.claims WHERE left(name, length($1)) = $1 ORDER BY name COLLATE "C"`,
  };
}

/**
 * Opens the event store on PostgreSQL: connects, creates the schema and its tables when absent (a schema version
 * row in `store_meta`), and refuses a schema written by a newer version (`store_open_failed`, `newer_schema`).
 * An unreachable server is `store_unavailable`.
 */
export function openPostgresEventStore(options: PostgresEventStoreOptions): Promise<PostgresEventStore> {
  return PostgresEventStore.open(options);
}

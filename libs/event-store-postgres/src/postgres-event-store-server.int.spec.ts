import { createHash, randomBytes } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { Client, Pool } from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  DEFERRED_WAIT_MS,
  DuplicateEventIdError,
  eventHash,
  GENESIS_HASH,
  subscribeAsGroupMember,
  WrongExpectedRevisionError,
  type EventStore,
  type RecordedEvent,
} from '@oncegate/event-store';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-PostgreSQL harness
import { startPostgres, type PostgresHandle } from '../../../test/support/postgres';
import { openPostgresEventStore, type PostgresEventStoreOptions } from './postgres-event-store';

let server: PostgresHandle;
const opened: EventStore[] = [];

beforeAll(async () => {
  server = await startPostgres();
});
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close().catch(() => undefined);
});
afterAll(async () => {
  await server?.stop();
});

const freshSchema = () => `server_${randomBytes(6).toString('hex')}`;
/** The channel a store on `schema` notifies its commits on. */
const channelOf = (schema: string) => `oncegate_events_${createHash('sha256').update(schema).digest('hex').slice(0, 24)}`;

async function open(schema: string, options: Partial<PostgresEventStoreOptions> = {}): Promise<EventStore> {
  const store = await openPostgresEventStore({ url: server.url(), schema, ...options });
  opened.push(store);
  return store;
}

/** Runs statements on a connection of its own, as an operator or another program would. */
async function sql(text: string, url = server.url()): Promise<unknown[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const event = (type: string, data: unknown = {}) => ({ type, data });

describe('postgres: reads that follow its own commits', () => {
  it('given a store object that has just committed, when it reads forwards from inside its own latest commits, then it answers without asking the server', async () => {
    const store = await open(freshSchema());
    const first = (await store.appendToStream('s-1', [event('One'), event('Two')])).position - 1;
    await store.appendToStream('s-2', [event('Three')]);
    const queries = vi.spyOn(Pool.prototype, 'query');
    try {
      const page = await store.readAll({ after: first });
      const filtered = await store.readAll({ after: 0, filter: { eventTypes: ['Three'] } });
      expect(queries).not.toHaveBeenCalled();
      expect(page.events.map((e) => e.type)).toEqual(['Two', 'Three']);
      expect(page.lastPosition).toBe(first + 2);
      expect(filtered.events.map((e) => [e.type, e.position])).toEqual([['Three', first + 2]]);
      // The same events a read of the server returns, field for field.
      const fromServer = await openPostgresEventStore({ url: server.url(), schema: (store as unknown as { schema: string }).schema });
      opened.push(fromServer);
      expect((await fromServer.readAll({ after: first })).events).toEqual(page.events);
    } finally {
      queries.mockRestore();
    }
  });

  it('given another writer commits after it, when it reads forwards again, then it reads the server and misses nothing, before and after its own next commit', async () => {
    const schema = freshSchema();
    const [mine, theirs] = [await open(schema), await open(schema)];
    const subscribed: string[] = [];
    const subscription = mine.subscribeToAll((e) => void subscribed.push(e.type), { from: 'start' });
    await subscription.caughtUp;
    const mine1 = (await mine.appendToStream('s-1', [event('Mine1')])).position;
    await theirs.appendToStream('s-2', [event('Theirs')]);
    // Told by the notification: its latest commit is no longer the head, so the next read goes to the server.
    await eventually(async () => (await mine.readAll({ after: mine1 })).events.some((e) => e.type === 'Theirs'), 'the other writer\'s event is read');
    await mine.appendToStream('s-1', [event('Mine2')]);
    expect((await mine.readAll({ after: mine1 })).events.map((e) => e.type)).toEqual(['Theirs', 'Mine2']);
    await eventually(() => subscribed.length === 3, 'the subscription has all three');
    expect(subscribed).toEqual(['Mine1', 'Theirs', 'Mine2']);
    await subscription.stop();
  });
});

describe('postgres: commits that their notifications carry', () => {
  /** The reader's own statements, told from the writer's: `Pool.prototype.query` calls made on the reader's pool. */
  const queriesOf = (store: EventStore, spy: { mock: { contexts: unknown[] } }) => spy.mock.contexts.filter((pool) => pool === (store as unknown as { pool: Pool }).pool).length;

  /**
   * A writer and a reader on a new schema, the reader subscribed from the end and past the writer's first event
   * (`first`, on `stream`): the first commit heard from a server process makes the reader ask the server whose it is,
   * and the pause lets that answer come.
   */
  async function followed(stream: string, first: string) {
    const schema = freshSchema();
    const [writer, reader] = [await open(schema), await open(schema)];
    const received: RecordedEvent[] = [];
    const subscription = reader.subscribeToAll((e) => void received.push(e), { from: 'end' });
    await subscription.caughtUp;
    const head = (await writer.appendToStream(stream, [event(first)])).position;
    await eventually(() => received.length === 1, 'the first event is received');
    await new Promise((resolve) => setTimeout(resolve, 100));
    return { schema, writer, reader, received, subscription, head };
  }

  it('given the first commit heard from a server process, then its events are kept once the server has said whose it is: the subscriber and the reads after it ask the server nothing else', async () => {
    const schema = freshSchema();
    const [writer, reader] = [await open(schema), await open(schema)];
    const received: RecordedEvent[] = [];
    const subscription = reader.subscribeToAll((e) => void received.push(e), { from: 'end' });
    await subscription.caughtUp;
    const queries = vi.spyOn(Pool.prototype, 'query');
    /** The reader's statements other than the question of the sender's role. */
    const readerStatements = () =>
      queries.mock.calls.filter((call, i) => queries.mock.contexts[i] === (reader as unknown as { pool: Pool }).pool && !JSON.stringify(call[0]).includes('has_table_privilege'));
    try {
      const { position } = await writer.appendToStream('first-heard', [event('One'), event('Two')]);
      await eventually(() => received.length === 2, 'the subscriber receives the group');
      const page = await reader.readAll({ after: position - 2 });
      expect(readerStatements()).toEqual([]);
      expect(received.map((e) => e.type)).toEqual(['One', 'Two']);
      const fromServer = await openPostgresEventStore({ url: server.url(), schema });
      opened.push(fromServer);
      const stored = (await fromServer.readAll({ after: position - 2 })).events;
      expect(page.events).toEqual(stored);
      expect(received).toEqual(stored);
    } finally {
      queries.mockRestore();
      await subscription.stop();
    }
  });

  /**
   * The reader's statements on its pool (reads, and the question of whose a server process is), as texts; the
   * question takes `roleDelayMs`, so that a notification waiting behind it is heard after what the reader does next.
   */
  function readerStatements(reader: EventStore, roleDelayMs: number) {
    const pool = (reader as unknown as { pool: Pool }).pool;
    const original = Pool.prototype.query as (...args: unknown[]) => unknown;
    const texts: string[] = [];
    const spy = vi.spyOn(Pool.prototype, 'query').mockImplementation(function (this: Pool, ...args: unknown[]) {
      if (this !== pool) return original.apply(this, args);
      const text = JSON.stringify(args[0]);
      texts.push(text);
      if (!text.includes('has_table_privilege')) return original.apply(this, args);
      return new Promise((resolve) => setTimeout(resolve, roleDelayMs)).then(() => original.apply(this, args));
    } as never);
    return { reads: () => texts.filter((text) => !text.includes('has_table_privilege')), restore: () => spy.mockRestore() };
  }

  /** A writer and a reader on a new schema, the reader's own first commit `warm` kept and its subscriber at the end. */
  async function warmReader() {
    const schema = freshSchema();
    const [writer, reader] = [await open(schema), await open(schema)];
    const warm = (await reader.appendToStream('mine', [event('Warm')])).position;
    const received: RecordedEvent[] = [];
    const subscription = reader.subscribeToAll((e) => void received.push(e), { from: 'end' });
    await subscription.caughtUp;
    return { schema, writer, reader, warm, received, subscription };
  }

  it('given its own commit answered before the notification of another writer\'s earlier commit is heard, then both are kept: the subscriber and the reads from before them ask the server nothing', async () => {
    const { schema, writer, reader, warm, received, subscription } = await warmReader();
    const statements = readerStatements(reader, 300);
    try {
      // The writer's notification waits behind the question of whose its server process is; the reader commits meanwhile.
      const theirs = (await writer.appendToStream('theirs', [event('Theirs')])).position;
      const mine = (await reader.appendToStream('mine', [event('Mine')])).position;
      expect([theirs, mine]).toEqual([warm + 1, warm + 2]);
      await eventually(() => received.length === 2, 'the subscriber receives both commits');
      const page = await reader.readAll({ after: warm });
      expect(received.map((e) => e.type)).toEqual(['Theirs', 'Mine']);
      expect(page.events.map((e) => e.type)).toEqual(['Theirs', 'Mine']);
      expect(statements.reads()).toEqual([]);
      const fromServer = await openPostgresEventStore({ url: server.url(), schema });
      opened.push(fromServer);
      expect(page.events).toEqual((await fromServer.readAll({ after: warm })).events);
    } finally {
      statements.restore();
      await subscription.stop();
    }
  });

  it('given a commit that is never notified (its writer died between its commit and its notification), when the reader commits after it, then its readers wait only a moment and miss nothing', async () => {
    const { writer, reader, warm, received, subscription } = await warmReader();
    // The writer's notification is not sent: its function answers as a writer of the previous version's would, and
    // the notification it would then send is swallowed.
    const original = Client.prototype.query as (...args: unknown[]) => unknown;
    const silenced = vi.spyOn(Client.prototype, 'query').mockImplementation(function (this: Client, ...args: unknown[]) {
      const name = (args[0] as { name?: string } | undefined)?.name;
      if (name === 'oncegate-notify-appended') return Promise.resolve({ rows: [[null]] });
      if (name === 'oncegate-notify') return Promise.resolve({ rows: [] });
      return original.apply(this, args);
    } as never);
    let theirs: number;
    try {
      theirs = (await writer.appendToStream('theirs', [event('Unheard')])).position;
    } finally {
      silenced.mockRestore();
    }
    const mine = (await reader.appendToStream('mine', [event('Mine')])).position;
    expect([theirs, mine]).toEqual([warm + 1, warm + 2]);
    await eventually(() => received.length === 2, 'the subscriber receives both commits', 2_000);
    expect(received.map((e) => e.type)).toEqual(['Unheard', 'Mine']);
    // The run of latest commits starts again at the reader's own commit.
    const statements = readerStatements(reader, 0);
    try {
      expect((await reader.readAll({ after: theirs })).events.map((e) => e.type)).toEqual(['Mine']);
      expect(statements.reads()).toEqual([]);
    } finally {
      statements.restore();
      await subscription.stop();
    }
  });

  it('given its own commit after another writer\'s group too large to carry, then the reads of that group go to the server, and once its own commit is heard the reads after the group are answered from memory', async () => {
    const schema = freshSchema();
    const [writer, reader] = [await open(schema), await open(schema)];
    await writer.appendToStream('warm', [event('Warm')]);
    const received: RecordedEvent[] = [];
    const subscription = reader.subscribeToAll((e) => void received.push(e), { from: 'start' });
    await eventually(() => received.length === 1, 'the subscriber has the first event');
    await reader.appendToStream('mine', [event('MineFirst')]);
    await eventually(() => received.length === 2, 'the subscriber has the reader\'s first commit');
    const big = (await writer.appendToStream('big', Array.from({ length: 5 }, (_, i) => event('Big', { i, padding: 'x'.repeat(2000) })))).position;
    const mine = (await reader.appendToStream('mine', [event('Mine')])).position;
    expect(mine).toBe(big + 1);
    await eventually(() => received.length === 8, 'the subscriber receives the large group and the reader\'s commit');
    expect(received.map((e) => e.type)).toEqual(['Warm', 'MineFirst', 'Big', 'Big', 'Big', 'Big', 'Big', 'Mine']);
    // Its own commit's notification heard: what follows the large group is kept again.
    await eventually(() => reader.seenPosition!() >= mine, 'the reader hears its own commit');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const statements = readerStatements(reader, 0);
    try {
      const page = await reader.readAll({ after: big });
      expect(page.events.map((e) => e.type)).toEqual(['Mine']);
      expect(statements.reads()).toEqual([]);
    } finally {
      statements.restore();
      await subscription.stop();
    }
  });

  it('given a subscriber in another store object, when a writer commits a group, then the subscriber and the reads after it get the group from the notification, field for field as the server has it', async () => {
    const { schema, writer, reader, received, subscription } = await followed('warm', 'Warm');
    const queries = vi.spyOn(Pool.prototype, 'query');
    try {
      const data = { text: 'é ✓ \u0000 "quoted" \\', nested: [{ deep: [1, 2.5, null, true] }], empty: {} };
      const before = (await writer.appendToStream('s-1', [event('One', data), event('Two')])).position - 2;
      await writer.appendMany([{ streamId: 's-2', events: [event('Three')] }, { streamId: 's-1', events: [event('Four')] }]);
      await eventually(() => received.length === 5, 'the subscriber receives both groups');
      const page = await reader.readAll({ after: before });
      expect(queriesOf(reader, queries)).toBe(0);
      expect(received.slice(1).map((e) => e.type)).toEqual(['One', 'Two', 'Three', 'Four']);
      expect(page.events.map((e) => e.type)).toEqual(['One', 'Two', 'Three', 'Four']);
      const fromServer = await openPostgresEventStore({ url: server.url(), schema });
      opened.push(fromServer);
      const stored = (await fromServer.readAll({ after: before })).events;
      expect(page.events).toEqual(stored);
      expect(received.slice(1)).toEqual(stored);
      for (const e of received.slice(1)) expect(eventHash(e.prev, e)).toBe(e.hash);
    } finally {
      queries.mockRestore();
      await subscription.stop();
    }
  });

  it('given a subscriber of one stream prefix, when commits of other streams are heard, its own or another store object\'s, then it reads nothing; a commit of its streams is delivered', async () => {
    const { writer, reader, subscription: warm } = await followed('warm', 'Warm');
    await warm.stop();
    const received: RecordedEvent[] = [];
    const agents = reader.subscribeToAll((e) => void received.push(e), { from: 'end', filter: { streamPrefixes: ['agent-'] } });
    await agents.caughtUp;
    const reads = vi.spyOn(reader, 'readAll');
    try {
      const last = (await writer.appendToStream('execution-1', [event('Accepted')])).position;
      await reader.appendToStream('execution-2', [event('Accepted')]);
      await eventually(() => reader.seenPosition!() >= last + 1, 'the reader hears both commits');
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(reads).not.toHaveBeenCalled();
      await writer.appendToStream('agent-ada', [event('AgentAdded')]);
      await eventually(() => received.length === 1, 'the agent event is delivered');
      expect(received.map((e) => e.streamId)).toEqual(['agent-ada']);
    } finally {
      reads.mockRestore();
      await agents.stop();
    }
  });

  it('given commits of its own and of another store object, then the position it has seen follows them without a statement, never past the head', async () => {
    const { writer, reader, subscription, head } = await followed('seen', 'Seen');
    const queries = vi.spyOn(Pool.prototype, 'query');
    try {
      expect(reader.seenPosition?.()).toBe(head);
      const { position } = await writer.appendToStream('seen', [event('Next')]);
      expect(writer.seenPosition?.()).toBe(position);
      await eventually(() => reader.seenPosition?.() === position, 'the reader hears the commit');
      expect(queriesOf(reader, queries)).toBe(0);
    } finally {
      queries.mockRestore();
      await subscription.stop();
    }
    expect(reader.seenPosition?.()).toBeLessThanOrEqual(await reader.headPosition());
  });

  it('given a group too large for a notification, when it commits, then the subscriber reads it from the server, whole and in order', async () => {
    const { writer, reader, received, subscription } = await followed('warm', 'Warm');
    const queries = vi.spyOn(Pool.prototype, 'query');
    try {
      await writer.appendToStream('big', Array.from({ length: 5 }, (_, i) => event('Big', { i, padding: 'x'.repeat(2000) })));
      await eventually(() => received.length === 6, 'the subscriber receives the large group');
      expect(queriesOf(reader, queries)).toBeGreaterThan(0);
      expect(received.slice(1).map((e) => (e.data as { i: number }).i)).toEqual([0, 1, 2, 3, 4]);
    } finally {
      queries.mockRestore();
      await subscription.stop();
    }
  });

  it('given a role that may connect but not write, when it notifies on the store\'s channel with events of its own making, then no reader keeps them', async () => {
    const { schema, writer, reader, received, subscription, head } = await followed('real', 'Real');
    const role = `forger_${randomBytes(4).toString('hex')}`;
    await sql(`CREATE ROLE ${role} LOGIN; GRANT USAGE ON SCHEMA "${schema}" TO ${role}; GRANT SELECT ON ALL TABLES IN SCHEMA "${schema}" TO ${role}`);
    const channel = channelOf(schema);
    const url = new URL(server.url());
    url.username = role;
    const forger = new Client({ connectionString: url.toString() });
    await forger.connect();
    try {
      const forged = `${head + 1} Forged [${head},"2026-01-01T00:00:00.000Z",[["real",1,"forged-id","Forged",{"paid":true},{},"x","y"]]]`;
      // Twice, the second after the reader has had time to ask who sent the first.
      for (let i = 0; i < 2; i += 1) {
        await forger.query('SELECT pg_notify($1, $2)', [channel, forged]);
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      expect((await reader.readAll({ after: head })).events).toEqual([]);
      expect(received.map((e) => e.type)).toEqual(['Real']);
      await writer.appendToStream('real', [event('Next')]);
      await eventually(() => received.length === 2, 'the next real event is received');
      expect(received.map((e) => [e.type, e.position])).toEqual([['Real', head], ['Next', head + 1]]);
    } finally {
      await forger.end();
      await subscription.stop();
    }
  });
});

describe('postgres: appends on the tips a store object saw', () => {
  const stateReads = (spy: { mock: { calls: unknown[][] } }) => spy.mock.calls.filter(([config]) => String((config as { text?: string })?.text ?? config).includes('json_agg')).length;

  it('given the tip of a stream it read or wrote, when it appends after it, then no read precedes the transaction and the chain continues', async () => {
    const schema = freshSchema();
    const [store, other] = [await open(schema), await open(schema)];
    await other.appendToStream('s-1', [event('One')]);
    const [read] = await store.readStream('s-1');
    const queries = vi.spyOn(Client.prototype, 'query');
    try {
      const first = await store.appendToStream('s-1', [event('Two')], { expectedRevision: read!.revision });
      await store.appendToStream('s-1', [event('Three')], { expectedRevision: first.nextExpectedRevision });
      await store.appendToStream('s-new', [event('Fresh')], { expectedRevision: 'no_stream' });
      expect(stateReads(queries)).toBe(0);
    } finally {
      queries.mockRestore();
    }
    const events = await other.readStream('s-1');
    expect(events.map((e) => e.type)).toEqual(['One', 'Two', 'Three']);
    expect(events[1]!.prev).toBe(events[0]!.hash);
    expect(events[2]!.prev).toBe(events[1]!.hash);
  });

  it('given its guess is stale (another writer appended since), when it appends, then the expected revision is judged on the stream as it is and the chain links to the other writer\'s event', async () => {
    const schema = freshSchema();
    const [store, other] = [await open(schema), await open(schema)];
    const mine = await store.appendToStream('s-1', [event('Mine')]);
    await other.appendToStream('s-1', [event('Theirs')], { expectedRevision: mine.nextExpectedRevision });
    const refused = await store.appendToStream('s-1', [event('Late')], { expectedRevision: mine.nextExpectedRevision }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(WrongExpectedRevisionError);
    expect((refused as WrongExpectedRevisionError).actual).toBe(1);
    await store.appendToStream('s-1', [event('Any')], { expectedRevision: 'any' });
    const events = await other.readStream('s-1');
    expect(events.map((e) => e.type)).toEqual(['Mine', 'Theirs', 'Any']);
    expect(events[2]!.prev).toBe(events[1]!.hash);
  });

  it('given an event id already stored, when it appends on a guessed tip, then the append alone is refused as a duplicate and nothing of it is written', async () => {
    const store = await open(freshSchema());
    const id = '0192f3a0-0000-7000-8000-000000000001';
    const first = await store.appendToStream('s-1', [{ ...event('One'), id }]);
    const [duplicate, other] = await Promise.allSettled([
      store.appendToStream('s-1', [{ ...event('Again'), id }], { expectedRevision: first.nextExpectedRevision }),
      store.appendToStream('s-2', [event('Other')], { expectedRevision: 'no_stream' }),
    ]);
    expect(duplicate.status === 'rejected' && duplicate.reason).toBeInstanceOf(DuplicateEventIdError);
    expect(other.status).toBe('fulfilled');
    expect((await store.readStream('s-1')).map((e) => e.type)).toEqual(['One']);
  });
});

describe('postgres: group commit', () => {
  it('given an append that may wait, when another append follows within its wait, then both commit in one transaction; alone, it commits once it has waited, durable like any other; a close writes it at once', async () => {
    const schema = freshSchema();
    let tick = 0;
    // Each transaction takes its own recordedAt: one a second apart, so a shared one means a shared transaction.
    const clock = () => new Date(Date.UTC(2026, 0, 1) + (tick += 1000));
    const patient = await open(schema, { clock, deferredWaitMs: 60_000 });
    const deferred = patient.appendToStream('delivered-1', [event('Delivered')], { deferrable: true });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const next = await patient.appendToStream('accepted-2', [event('Accepted')]);
    const first = await deferred;
    expect(first.events[0]!.recordedAt).toBe(next.events[0]!.recordedAt);
    expect(next.position).toBe(first.position + 1);

    const store = await open(schema, { clock });
    const asked = performance.now();
    const alone = await store.appendToStream('delivered-2', [event('Delivered')], { deferrable: true });
    expect(performance.now() - asked).toBeGreaterThanOrEqual(DEFERRED_WAIT_MS - 2);
    expect(alone.events[0]!.recordedAt).not.toBe(next.events[0]!.recordedAt);
    const other = await openPostgresEventStore({ url: server.url(), schema });
    opened.push(other);
    expect((await other.readStream('delivered-2')).map((e) => e.type)).toEqual(['Delivered']);
    // A deferrable append still waiting when the store closes is written first.
    const last = patient.appendToStream('delivered-3', [event('Delivered')], { deferrable: true });
    await patient.close();
    await expect(last).resolves.toMatchObject({ streamId: 'delivered-3' });
    expect((await other.readStream('delivered-3')).map((e) => e.type)).toEqual(['Delivered']);
  });

  it('given an append that may wait with a signal, then it is held like one marked true, and committed as soon as the signal aborts', async () => {
    const schema = freshSchema();
    const patient = await open(schema, { deferredWaitMs: 60_000 });
    const other = await openPostgresEventStore({ url: server.url(), schema });
    opened.push(other);
    const hurry = new AbortController();
    const deferred = patient.appendToStream('delivered-4', [event('Delivered')], { deferrable: hurry.signal });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await other.readStream('delivered-4')).toEqual([]);
    hurry.abort();
    const asked = performance.now();
    await deferred;
    expect(performance.now() - asked).toBeLessThan(5_000);
    expect((await other.readStream('delivered-4')).map((e) => e.type)).toEqual(['Delivered']);
  });

  it('given 64 appends issued together, one expecting a revision its stream does not have, when they commit, then that one alone is refused with the facts and the others are written in one transaction, in the order issued', async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await store.appendToStream('busy', [event('E')]);
    const issued = Array.from({ length: 64 }, (_, i) =>
      i === 20
        ? store.appendToStream('busy', [event('Wrong')], { expectedRevision: 5 })
        : store.appendToStream(`quiet-${i}`, [event('Q', { i }), event('R', { i })], { expectedRevision: 'no_stream' }),
    );
    const results = await Promise.allSettled(issued);
    const refused = results[20]!;
    expect(refused.status === 'rejected' && refused.reason).toBeInstanceOf(WrongExpectedRevisionError);
    expect((refused as PromiseRejectedResult).reason).toMatchObject({ streamId: 'busy', expected: 5, actual: 0 });
    const written = results.filter((result, i) => i !== 20).map((result) => (result.status === 'fulfilled' ? result.value.position : undefined));
    // Each two-event append takes two consecutive positions after the first event, in the order issued.
    expect(written).toEqual(Array.from({ length: 63 }, (_, i) => 3 + 2 * i));
    expect(await store.streamRevision('busy')).toBe(0);
    // Rows inserted by one transaction share its id (xmin).
    const [row] = (await sql(`SELECT count(DISTINCT xmin::text)::int AS transactions FROM "${schema}".events WHERE stream_id LIKE 'quiet-%'`)) as Array<{ transactions: number }>;
    expect(row!.transactions).toBe(1);
  });

  it('given a group being written, when the server runs its statement, then the events travel as parameters: the statement text holds none of their data, so the server neither parses them as SQL nor logs them with a failed statement', async () => {
    const schema = freshSchema();
    const store = await open(schema);
    await store.appendToStream('warm-up', [event('E')]);
    // The statement the client sent, as the server holds it (never cut short, unlike pg_stat_activity's copy).
    await sql(`CREATE TABLE "${schema}".statements (text text);
      CREATE FUNCTION "${schema}".keep_statement() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO "${schema}".statements VALUES (current_query()); RETURN NULL; END $$;
      CREATE TRIGGER keep_statement AFTER INSERT ON "${schema}".events FOR EACH STATEMENT EXECUTE FUNCTION "${schema}".keep_statement();`);
    await Promise.all([
      store.appendToStream('s-1', [event('Noted', { note: 'marker-in-the-data' })]),
      store.appendToStream('s-2', [{ ...event('Noted'), metadata: { note: 'marker-in-the-metadata' } }]),
    ]);
    const statements = (await sql(`SELECT text FROM "${schema}".statements`)) as Array<{ text: string }>;
    expect(statements).toHaveLength(1);
    expect(statements[0]!.text).not.toContain('marker-in-the');
    expect((await store.readStream('s-1'))[0]!.data).toEqual({ note: 'marker-in-the-data' });
  });
  it('given a group whose data and metadata hold quotes, backslashes, escapes, control characters, lone surrogates and deep nesting, when it is written, then the stored texts are byte for byte what the writer serialised and every hash recomputes', async () => {
    const schema = freshSchema();
    const store = await open(schema);
    let deep: unknown = { leaf: 'bottom "of" it \\' };
    for (let depth = 0; depth < 100; depth += 1) deep = depth % 2 === 0 ? { [`level-${depth}`]: deep, quote: '"' } : [deep, depth, '\\'];
    const payloads: unknown[] = [
      { text: 'say "hi" \\ back\\slash \\\\ \\" end', path: 'C:\\temp\\"x"', '"key"': 1, 'key\\': 2, '': 3 },
      // U+001E is the character between the texts on their way to the server: inside a string it travels escaped.
      { nul: '\u0000', controls: '\u0001\u001e\u001f\b\f\n\r\t\u007f', literal: '\\u0000 \\u001e \\n stays text' },
      { unicode: 'naïve ✓ 日本語 😀', loneHigh: '\ud800', loneLow: 'x\udc00', separators: '\u2028\u2029', bom: '\ufeff' },
      { numbers: [0, -0, 0.1, 1e21, 1e-7, -123.456e-10, Number.MAX_SAFE_INTEGER, 5e-324], flags: [true, false, null] },
      deep,
      'a top-level "string" with \u0000 and \\',
      1e21,
      null,
      [],
      {},
    ];
    const metadata = { causationId: 'c-"1"\\', correlation: { note: '\u0000\u001e\ud83d' }, nested: deep };
    // Issued together, so they are one group and one call of the server's function.
    const written = await Promise.all([
      ...payloads.map((data, i) => store.appendToStream(`bytes-${i}`, [{ type: 'Bytes', data, metadata }])),
      store.appendMany([
        { streamId: 'bytes-many-1', events: [{ type: 'Bytes "many"', data: payloads[1], metadata: { i: '\\' } }, { type: 'Bytes', data: payloads[2] }] },
        { streamId: 'bytes-many-2', events: [{ type: 'Bytes', data: payloads[0] }] },
      ]),
    ]);
    expect(written).toHaveLength(payloads.length + 1);
    const [row] = (await sql(`SELECT count(DISTINCT xmin::text)::int AS transactions FROM "${schema}".events`)) as Array<{ transactions: number }>;
    expect(row!.transactions).toBe(1);
    const stored = (await sql(`SELECT stream_id, data::text AS data, metadata::text AS metadata FROM "${schema}".events ORDER BY position`)) as Array<{
      stream_id: string;
      data: string;
      metadata: string;
    }>;
    expect(stored.map((r) => [r.stream_id, r.data, r.metadata])).toEqual([
      ...payloads.map((data, i) => [`bytes-${i}`, JSON.stringify(data), JSON.stringify(metadata)]),
      ['bytes-many-1', JSON.stringify(payloads[1]), JSON.stringify({ i: '\\' })],
      ['bytes-many-1', JSON.stringify(payloads[2]), '{}'],
      ['bytes-many-2', JSON.stringify(payloads[0]), '{}'],
    ]);
    // Read back by another store object (nothing from this one's memory), each event's hash is its fields' as read.
    const reader = await open(schema);
    const events = (await reader.readAll()).events;
    expect(events).toHaveLength(stored.length);
    for (const e of events) {
      expect(e.hash).toBe(eventHash(e.prev, { streamId: e.streamId, revision: e.revision, id: e.id, type: e.type, data: e.data, metadata: e.metadata, recordedAt: e.recordedAt }));
    }
    expect(events.slice(0, payloads.length).map((e) => e.data)).toEqual(payloads.map((data) => JSON.parse(JSON.stringify(data))));
    const [many1, many2] = events.filter((e) => e.streamId === 'bytes-many-1');
    expect([many1!.prev, many2!.prev]).toEqual([GENESIS_HASH, many1!.hash]);
  });

  it('given a writer of the previous version beside this one, when it writes its group with the previous function, then this version reads its events and continues their chains', async () => {
    const schema = freshSchema();
    const store = await open(schema);
    const mine = await store.appendToStream('shared', [event('Mine', { by: 'this version' })]);
    const [tip] = await store.readStream('shared');
    // What a process of the previous version sends: data and metadata as json[] parameters of `append_events`.
    const id = '0192f3a0-0000-7000-8000-0000000000aa';
    const data = { by: 'the previous version', text: '"\\\u0000' };
    const recordedAt = new Date().toISOString();
    const hash = eventHash(tip!.hash, { streamId: 'shared', revision: 1, id, type: 'Theirs', data, metadata: {}, recordedAt });
    const client = new Client({ connectionString: server.url() });
    await client.connect();
    try {
      await client.query({
        text: `SELECT "${schema}".append_events($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
        // The store's lock: "once" and a key from the schema's name.
        values: [0x6f6e6365, createHash('sha256').update(schema).digest().readInt32BE(0), ['shared'], [mine.nextExpectedRevision], ['shared'], [1], [id], ['Theirs'], [JSON.stringify(data)], ['{}'], recordedAt, [tip!.hash], [hash]],
      });
    } finally {
      await client.end();
    }
    await store.appendToStream('shared', [event('MineAgain')], { expectedRevision: 1 });
    const events = await (await open(schema)).readStream('shared');
    expect(events.map((e) => [e.type, e.revision])).toEqual([
      ['Mine', 0],
      ['Theirs', 1],
      ['MineAgain', 2],
    ]);
    expect(events[1]!.data).toEqual(data);
    expect(events[2]!.prev).toBe(hash);
  });
});

describe('postgres: a group\'s write and its notification sent together', () => {
  /** Every notification on the store's channel, heard by a connection of its own. */
  async function listen(schema: string): Promise<{ payloads: string[]; close: () => Promise<void> }> {
    const client = new Client({ connectionString: server.url() });
    await client.connect();
    const payloads: string[] = [];
    client.on('notification', (message) => payloads.push(message.payload ?? ''));
    await client.query(`LISTEN ${channelOf(schema)}`);
    return { payloads, close: () => client.end() };
  }

  /** The statements a store's connections are asked, by name, as `asked` when sent and `answered` when their answer is read. */
  function statementsSeen() {
    const seen: string[] = [];
    const original = Client.prototype.query;
    const spy = vi.spyOn(Client.prototype, 'query').mockImplementation(function (this: Client, ...args: unknown[]) {
      const name = (args[0] as { name?: string } | undefined)?.name;
      const result = (original as (...a: unknown[]) => unknown).apply(this, args);
      if (name === undefined || !(result instanceof Promise)) return result as never;
      seen.push(`asked ${name}`);
      return result.finally(() => seen.push(`answered ${name}`)) as never;
    });
    return { seen, restore: () => spy.mockRestore() };
  }

  it('given a group to write, then its notification is asked on the same connection before the write is answered, and the append is answered once both are', async () => {
    const store = await open(freshSchema());
    await store.appendToStream('warm', [event('Warm')]);
    const { seen, restore } = statementsSeen();
    let answered: number;
    try {
      await store.appendToStream('s-1', [event('One')]);
      answered = seen.length;
    } finally {
      restore();
    }
    expect(seen.slice(0, 2)).toEqual(['asked oncegate-append-events-joined', 'asked oncegate-notify-appended']);
    expect(seen.slice(2).sort()).toEqual(['answered oncegate-append-events-joined', 'answered oncegate-notify-appended']);
    expect(answered).toBe(4);
  });

  it('given a write refused under the lock (a stale guess of the tip), then nothing is notified for it: each commit is notified once, with its own events', async () => {
    const schema = freshSchema();
    const [store, other] = [await open(schema), await open(schema)];
    const heard = await listen(schema);
    try {
      await store.appendToStream('s-1', [event('Mine')]);
      await other.appendToStream('s-1', [event('Theirs')], { expectedRevision: 0 });
      const { seen, restore } = statementsSeen();
      try {
        // Guessed at revision 0, refused under the lock, decided again on the tip read.
        await store.appendToStream('s-1', [event('Later')], { expectedRevision: 'any' });
      } finally {
        restore();
      }
      expect(seen.filter((step) => step === 'asked oncegate-append-events-joined')).toHaveLength(2);
      await eventually(() => heard.payloads.length >= 3, 'three notifications');
      await new Promise((resolve) => setTimeout(resolve, 100));
      const stored = (await other.readAll({ after: 0 })).events;
      expect(stored.map((e) => e.type)).toEqual(['Mine', 'Theirs', 'Later']);
      expect(heard.payloads).toHaveLength(3);
      for (const [i, payload] of heard.payloads.entries()) {
        const e = stored[i]!;
        expect(payload.startsWith(`${e.position} ${e.type} [${e.position - 1},`)).toBe(true);
        expect(payload).toContain(JSON.stringify(e.id));
      }
    } finally {
      await heard.close();
    }
  });

  it('given the write function made by a writer of the previous version (no setting left for the notification), then the append is still notified, after its answer, and a reader gets it', async () => {
    const schema = freshSchema();
    const [writer, reader] = [await open(schema), await open(schema)];
    const [definition] = (await sql(`SELECT pg_get_functiondef('"${schema}".append_events_joined'::regproc) AS text`)) as Array<{ text: string }>;
    const previous = definition!.text.replace(/PERFORM set_config\('oncegate\.appended'[^;]*;/, '');
    expect(previous).not.toBe(definition!.text);
    await sql(previous);
    const heard = await listen(schema);
    const received: RecordedEvent[] = [];
    const subscription = reader.subscribeToAll((e) => void received.push(e), { from: 'end' });
    await subscription.caughtUp;
    try {
      const { seen, restore } = statementsSeen();
      try {
        await writer.appendToStream('s-1', [event('One')]);
      } finally {
        restore();
      }
      expect(seen).toContain('asked oncegate-notify');
      await eventually(() => received.length === 1, 'the reader gets the event');
      expect(received[0]!.type).toBe('One');
      expect(heard.payloads).toHaveLength(1);
    } finally {
      await subscription.stop();
      await heard.close();
    }
  });
});

describe('postgres: durability of an acknowledged append', () => {
  it('given a server with its durable defaults, when appends are answered one after another, then the WAL was flushed for each before its answer', async () => {
    const durable = await startPostgres({ fast: false });
    try {
      const syncs = async () => Number(((await sql('SELECT wal_sync FROM pg_stat_wal', durable.url())) as Array<{ wal_sync: string }>)[0]!.wal_sync);
      const store = await openPostgresEventStore({ url: durable.url(), schema: freshSchema() });
      await store.appendToStream('warm-up', [event('E')]);
      const before = await syncs();
      for (let i = 0; i < 20; i += 1) await store.appendToStream(`durable-${i}`, [event('E', { i })]);
      // A backend reports its WAL statistics when it ends at the latest.
      await store.close();
      await eventually(async () => (await syncs()) - before >= 20, 'the server counts a WAL flush for each append', 3000).catch(() => undefined);
      expect((await syncs()) - before).toBeGreaterThanOrEqual(20);
    } finally {
      await durable.stop();
    }
  });

  it('given a server with its durable defaults and many writers, when their appends are answered, then the server counted a WAL flush for each group written', async () => {
    const durable = await startPostgres({ fast: false });
    try {
      const syncs = async () => Number(((await sql('SELECT wal_sync FROM pg_stat_wal', durable.url())) as Array<{ wal_sync: string }>)[0]!.wal_sync);
      const schema = freshSchema();
      const store = await openPostgresEventStore({ url: durable.url(), schema });
      await store.appendToStream('warm-up', [event('E')]);
      const before = await syncs();
      await Promise.all(
        Array.from({ length: 16 }, async (_, writer) => {
          for (let i = 0; i < 8; i += 1) await store.appendToStream(`writer-${writer}`, [event('E', { i })]);
        }),
      );
      await store.close();
      // Each group is one transaction, its rows sharing its id (xmin); the writers' appends were grouped.
      const [row] = (await sql(`SELECT count(DISTINCT xmin::text)::int AS groups FROM "${schema}".events WHERE stream_id LIKE 'writer-%'`, durable.url())) as Array<{ groups: number }>;
      const groups = row!.groups;
      expect(groups).toBeLessThan(16 * 8);
      await eventually(async () => (await syncs()) - before >= groups, 'the server counts a WAL flush for each group', 3000).catch(() => undefined);
      expect((await syncs()) - before).toBeGreaterThanOrEqual(groups);
    } finally {
      await durable.stop();
    }
  });
});

describe('postgres: gap safety', () => {
  it('given writers on separate connections whose transactions are held open after taking a position, when a reader follows them, then it ends with every position exactly once and in order', async () => {
    const schema = freshSchema();
    const writers = await Promise.all(Array.from({ length: 6 }, () => open(schema, { pool: { max: 3 } })));
    // Some transactions sleep at their commit, after their rows (and positions) are in and before they are visible:
    // a later position may be ready to commit while an earlier one is still open.
    await sql(`CREATE FUNCTION "${schema}".hold_open() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF random() < 0.1 THEN PERFORM pg_sleep(random() * 0.02); END IF; RETURN NULL; END $$;
      CREATE CONSTRAINT TRIGGER hold_open AFTER INSERT ON "${schema}".events DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW EXECUTE FUNCTION "${schema}".hold_open();`);
    const reader = await open(schema, { pool: { max: 2 } });
    const subscribed: RecordedEvent[] = [];
    const subscription = reader.subscribeToAll((e) => void subscribed.push(e), { pageSize: 7 });
    await subscription.caughtUp;
    const polled: number[] = [];
    let writing = true;
    const polling = (async () => {
      let after = 0;
      while (writing || after < (await reader.headPosition())) {
        const page = await reader.readAll({ after, maxCount: 13 });
        for (const e of page.events) polled.push(e.position);
        after = page.lastPosition;
      }
    })();

    await Promise.all(
      writers.flatMap((writer, w) =>
        Array.from({ length: 4 }, async (_, lane) => {
          for (let i = 0; i < 15; i += 1) {
            if (i % 3 === 0) {
              await writer.appendMany([
                { streamId: `gap-${w}-${lane}-a`, events: [event('Batched'), event('Batched')] },
                { streamId: `gap-${w}-b`, events: [event('Batched')] },
              ]);
            } else {
              await writer.appendToStream(`gap-${w}-${lane}`, [event('Single')]);
            }
          }
        }),
      ),
    );
    writing = false;
    await polling;
    const head = await reader.headPosition();
    await eventually(() => subscription.position >= head, 'the subscription reached the head');
    await subscription.stop();

    const expected = Array.from({ length: head }, (_, i) => i + 1);
    expect(head).toBe(6 * 4 * (10 + 5 * 3));
    expect(polled).toEqual(expected);
    expect(subscribed.map((e) => e.position)).toEqual(expected);
  });

  it('given a transaction held open after taking a position, when another writer appends, then its event waits behind it and no reader ever sees the later position first', async () => {
    const schema = freshSchema();
    const first = await open(schema);
    const second = await open(schema);
    await first.appendToStream('warm-up', [event('E')]);
    await sql(`CREATE FUNCTION "${schema}".hold_once() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF EXISTS (SELECT 1 FROM new_rows WHERE stream_id = 'slow') THEN PERFORM pg_sleep(0.5); END IF; RETURN NULL; END $$;
      CREATE TRIGGER hold_once AFTER INSERT ON "${schema}".events REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION "${schema}".hold_once();`);
    const reader = await open(schema);
    const slow = first.appendToStream('slow', [event('Slow')]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const fast = second.appendToStream('fast', [event('Fast')]);
    const seen: number[][] = [];
    while (seen.length < 10) {
      seen.push((await reader.readAll()).events.map((e) => e.position));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const [slowResult, fastResult] = await Promise.all([slow, fast]);
    expect(slowResult.position).toBe(2);
    expect(fastResult.position).toBe(3);
    for (const positions of seen) expect(positions).toEqual(positions.map((_, i) => i + 1));
  });
});

describe('postgres: notifications', () => {
  it('given a subscriber at the head and a poll too slow to matter, when another store object appends, then the notification wakes it', async () => {
    const schema = freshSchema();
    const reader = await open(schema, { pollIntervalMs: 600_000 });
    const writer = await open(schema);
    const seen: RecordedEvent[] = [];
    const subscription = reader.subscribeToAll((e) => void seen.push(e));
    await subscription.caughtUp;
    await writer.appendToStream('s', [event('Notified')]);
    await eventually(() => seen.length === 1, 'the event was delivered', 3000);
    await subscription.stop();
  });

  it('given the listening connection is killed, when another store object appends, then the subscriber still receives it and listens again', async () => {
    const schema = freshSchema();
    const reader = await open(schema, { pollIntervalMs: 600_000, pool: { application_name: `reader-${schema}` } });
    const writer = await open(schema);
    const seen: RecordedEvent[] = [];
    const subscription = reader.subscribeToAll((e) => void seen.push(e));
    await subscription.caughtUp;
    const killed = (await sql(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'reader-${schema}-listener'`,
    )) as unknown[];
    expect(killed).toHaveLength(1);
    await writer.appendToStream('s', [event('WhileReconnecting')]);
    await eventually(() => seen.length === 1, 'the event appended while the listener was gone was delivered', 3000);
    await eventually(
      async () => ((await sql(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'reader-${schema}-listener'`)) as unknown[]).length === 1,
      'the store listens again',
      3000,
    );
    await writer.appendToStream('s', [event('AfterReconnect')]);
    await eventually(() => seen.length === 2, 'the event appended after the reconnect was delivered', 3000);
    await subscription.stop();
  });
});

/**
 * A TCP proxy in front of the server. While `holding`, a connection's bytes from the first that hold `marker` on (an
 * application name in a start-up message, a statement) are held back: nothing more of it reaches the server until
 * `release`.
 */
async function holdingProxy(port: number, marker: string) {
  const held: Array<() => void> = [];
  const sockets = new Set<Socket>();
  let holding = false;
  const server: Server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    sockets.add(client).add(upstream);
    let waiting: Buffer[] | undefined;
    client.on('data', (chunk: Buffer) => {
      if (waiting === undefined && holding && chunk.includes(marker)) {
        waiting = [];
        held.push(() => {
          for (const buffered of waiting!) upstream.write(buffered);
          waiting = undefined;
        });
      }
      if (waiting === undefined) upstream.write(chunk);
      else waiting.push(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) socket.on('error', cut).on('close', cut);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    held: () => held.length,
    hold: () => void (holding = true),
    release() {
      holding = false;
      for (const resume of held.splice(0)) resume();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('postgres: a stop while the store connects to listen', () => {
  it('given a subscriber at the head whose listening connection is being made again, when it is stopped, then the stop ends at once', async () => {
    const schema = freshSchema();
    const proxy = await holdingProxy(server.port, `held-${schema}-listener`);
    try {
      const reader = await open(schema, { url: `postgres://postgres@127.0.0.1:${proxy.port}/postgres`, pollIntervalMs: 600_000, pool: { application_name: `held-${schema}` } });
      const subscription = reader.subscribeToAll(() => undefined);
      await subscription.caughtUp;
      proxy.hold();
      const killed = await sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'held-${schema}-listener'`);
      expect(killed).toHaveLength(1);
      // The subscriber, woken by the lost connection, reads and then waits for the store to listen again.
      await eventually(() => proxy.held() === 1, 'the store connects to listen again');
      const stopped = await Promise.race([subscription.stop().then(() => 'stopped'), new Promise((resolve) => setTimeout(() => resolve('still stopping after 3 s'), 3000))]);
      expect(stopped).toBe('stopped');
    } finally {
      proxy.release();
      await proxy.close();
    }
  });

  it('given the server never answers the listening connection\'s LISTEN, when the store is closed, then it closes once that statement times out', async () => {
    const schema = freshSchema();
    const proxy = await holdingProxy(server.port, 'LISTEN');
    try {
      const reader = await openPostgresEventStore({ url: `postgres://postgres@127.0.0.1:${proxy.port}/postgres`, schema, pollIntervalMs: 600_000 });
      proxy.hold();
      const subscription = reader.subscribeToAll(() => undefined);
      await eventually(() => proxy.held() === 1, 'the store asks to listen');
      await subscription.stop();
      const closed = await Promise.race([reader.close().then(() => 'closed'), new Promise((resolve) => setTimeout(() => resolve('still closing after 15 s'), 15_000))]);
      expect(closed).toBe('closed');
    } finally {
      proxy.release();
      await proxy.close();
    }
  }, 30_000);
});

describe('postgres: an unavailable server', () => {
  it('given no server on the port, when a store is opened, then it fails as store_unavailable naming the location', async () => {
    const error = await openPostgresEventStore({ url: 'postgres://postgres@127.0.0.1:1/postgres', schema: 'absent' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'store_unavailable' });
    expect(String((error as Error).message)).toContain('127.0.0.1:1');
  });

  it('given a server that stops, when appending, then the append fails as store_unavailable with nothing written, and succeeds once the server is back', async () => {
    const own = await startPostgres();
    try {
      const store = await openPostgresEventStore({ url: own.url(), schema: 'restart' });
      opened.push(store);
      await store.appendToStream('s', [event('Before')]);
      await own.shutdown();
      await expect(store.appendToStream('s', [event('While')])).rejects.toMatchObject({ kind: 'store_unavailable' });
      await expect(store.readStream('s')).rejects.toMatchObject({ kind: 'store_unavailable' });
      await own.start();
      await store.appendToStream('s', [event('After')], { expectedRevision: 0 });
      expect((await store.readStream('s')).map((e) => e.type)).toEqual(['Before', 'After']);
    } finally {
      await own.stop();
    }
  });
});

describe('postgres: subscriptions across a server outage', () => {
  it('given a subscription and a consumer group member, when the server stops and starts again, then both go on and deliver what is appended after (the subscription nothing twice, the member at least once)', async () => {
    const own = await startPostgres();
    try {
      const store = await openPostgresEventStore({ url: own.url(), schema: 'outage' });
      opened.push(store);
      const seen: string[] = [];
      const grouped: string[] = [];
      const subscription = store.subscribeToAll((e) => void seen.push(e.type), { filter: { streamPrefixes: ['execution-'] } });
      const member = subscribeAsGroupMember(store, (e) => void grouped.push(e.type), { group: 'outage', member: 'only', leaseMs: 900, partitions: 4, filter: { streamPrefixes: ['execution-'] } });
      await store.appendToStream('execution-1', [event('Before')]);
      await eventually(() => seen.length === 1 && grouped.length === 1, 'the first event was delivered', 5000);
      await own.shutdown();
      // Longer than the member's claims last: it must take them again once the server is back.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await own.start();
      await eventually(async () => (await store.appendToStream('execution-1', [event('After')]).then(() => true, () => false)), 'an append once the server is back', 10_000);
      await eventually(() => seen.length === 2 && grouped.at(-1) === 'After', 'the event appended after the outage was delivered', 10_000);
      expect(seen).toEqual(['Before', 'After']);
      // The member's claims lapsed: it took them again from the partition's last written checkpoint, so what it
      // handled after that may come again (at least once), in order, and nothing is lost.
      expect(grouped.filter((type) => type === 'After')).toEqual(['After']);
      expect(new Set(grouped)).toEqual(new Set(['Before', 'After']));
      await subscription.stop();
      await member.stop();
    } finally {
      await own.stop();
    }
  });
});

describe('postgres: schema', () => {
  it('given a schema written by a newer version, when opened, then it is refused as newer_schema', async () => {
    const schema = freshSchema();
    const store = await openPostgresEventStore({ url: server.url(), schema });
    await store.close();
    await sql(`UPDATE "${schema}".store_meta SET value = '99' WHERE key = 'schema_version'`);
    await expect(openPostgresEventStore({ url: server.url(), schema })).rejects.toMatchObject({ kind: 'store_open_failed', problem: 'newer_schema' });
  });

  it('given a new schema, when several processes open it at once, then each opens it and one schema version row is written', async () => {
    const schema = freshSchema();
    await Promise.all(Array.from({ length: 5 }, () => open(schema)));
    expect(await sql(`SELECT value FROM "${schema}".store_meta`)).toEqual([{ value: '1' }]);
  });
});

describe('postgres: a group member\'s claims and checkpoints in one statement each', () => {
  it('given claims of several owners, when an owner claims many at once, then each is taken, renewed or left to its live holder as a lone claim would be', async () => {
    const store = await open(freshSchema());
    const now = '2026-11-30T06:00:00.000Z';
    await store.claim('g/p1', 'b', '2026-11-30T06:00:10.000Z', now);
    await store.claim('g/p2', 'b', '2026-11-30T05:59:59.000Z', '2026-11-30T05:59:00.000Z');
    await store.claim('g/p3', 'a', '2026-11-30T06:00:05.000Z', now);
    const claims = await store.claimAll!(['g/p4', 'g/p3', 'g/p2', 'g/p1'], 'a', '2026-11-30T06:00:20.000Z', now);
    expect(claims).toEqual([
      { name: 'g/p4', owner: 'a', expiresAt: '2026-11-30T06:00:20.000Z' },
      { name: 'g/p3', owner: 'a', expiresAt: '2026-11-30T06:00:20.000Z' },
      // Expired: taken over.
      { name: 'g/p2', owner: 'a', expiresAt: '2026-11-30T06:00:20.000Z' },
      // Another owner's live claim: left as it stands.
      { name: 'g/p1', owner: 'b', expiresAt: '2026-11-30T06:00:10.000Z' },
    ]);
    expect((await store.readClaims('g/')).map((claim) => `${claim.name}=${claim.owner}`)).toEqual(['g/p1=b', 'g/p2=a', 'g/p3=a', 'g/p4=a']);
    await expect(store.claimAll!(['g/p1', 'g/p1'], 'a', '2026-11-30T06:00:20.000Z', now)).rejects.toMatchObject({ argument: 'names' });
    await store.storeCheckpoints!([
      { consumer: 'w#000', position: 3 },
      { consumer: 'w#001', position: 5 },
      { consumer: 'w#000', position: 7 },
    ]);
    expect([await store.readCheckpoint('w#000'), await store.readCheckpoint('w#001')]).toEqual([7, 5]);
    await expect(store.storeCheckpoints!([{ consumer: '', position: 1 }])).rejects.toMatchObject({ argument: 'checkpoints[0].consumer' });
  });

  it('given a member holding all 48 partitions of a new group, when it renews and checkpoints while handling, then it writes each in one statement, never one per partition', async () => {
    const store = await open(freshSchema());
    const handled: RecordedEvent[] = [];
    const claimOne = vi.spyOn(store, 'claim');
    const checkpointOne = vi.spyOn(store, 'storeCheckpoint');
    const batched = store as EventStore & Required<Pick<EventStore, 'claimAll' | 'storeCheckpoints'>>;
    const claimAll = vi.spyOn(batched, 'claimAll');
    const checkpointAll = vi.spyOn(batched, 'storeCheckpoints');
    const member = subscribeAsGroupMember(store, (event) => void handled.push(event), {
      group: 'workers',
      member: 'm1',
      leaseMs: 300,
      checkpointEveryMs: 0,
      filter: { streamPrefixes: ['execution-'] },
    });
    try {
      await member.caughtUp;
      expect(member.partitions).toHaveLength(48);
      // Taking the partitions is one claim each; from then on only renewals and checkpoints are written.
      claimOne.mockClear();
      for (let i = 0; i < 64; i += 1) await store.appendToStream(`execution-${i}`, [event('Step')]);
      await eventually(() => handled.length === 64, 'every event is handled');
      // A few rounds (every 100 ms) renew all 48 claims.
      await new Promise((resolve) => setTimeout(resolve, 450));
      expect(claimOne).not.toHaveBeenCalled();
      expect(checkpointOne).not.toHaveBeenCalled();
      expect(claimAll.mock.calls.length).toBeGreaterThanOrEqual(3);
      for (const [names] of claimAll.mock.calls) expect(names).toHaveLength(48);
      expect(checkpointAll).toHaveBeenCalled();
    } finally {
      await member.stop();
    }
    // Stopped: every partition's checkpoint is where the reader got to, the head.
    const head = await store.headPosition();
    for (let partition = 0; partition < 48; partition += 1) expect(await store.readCheckpoint(`workers#${String(partition).padStart(3, '0')}`)).toBe(head);
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DatabaseSync as Database, StatementSync } from 'node:sqlite';
import { describe, expect, it, vi } from 'vitest';
import { describeEventStoreContract } from '@oncegate/event-store/testing';
import { eventHash, GENESIS_HASH } from '@oncegate/event-store';
import { openSqliteEventStore } from './sqlite-event-store';

describeEventStoreContract<string>('sqlite', {
  async createLocation() {
    return join(mkdtempSync(join(tmpdir(), 'oncegate-sqlite-')), 'events.db');
  },
  async open(file) {
    return openSqliteEventStore({ file, pollIntervalMs: 10 });
  },
  async disposeLocation(file) {
    rmSync(join(file, '..'), { recursive: true, force: true });
  },
  childProcess: {
    module: fileURLToPath(new URL('./index.ts', import.meta.url)),
    config: (file) => ({ file, pollIntervalMs: 10 }),
  },
});

describe('sqlite store migration', () => {
  it('given a version 1 store without a hash chain, when opened, then every event is linked and new appends continue the chain', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-sqlite-v1-'));
    const file = join(dir, 'events.db');
    const v1 = new Database(file);
    v1.exec(`CREATE TABLE events (position INTEGER PRIMARY KEY, stream_id TEXT NOT NULL, revision INTEGER NOT NULL,
      event_id TEXT NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, recorded_at TEXT NOT NULL);
      CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      INSERT INTO store_meta VALUES ('schema_version', '1');`);
    const insert = v1.prepare('INSERT INTO events (stream_id, revision, event_id, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
    insert.run('s', 0, 'e1', 'A', '{"n":1}', '{}', '2026-11-30T06:00:00.000Z');
    insert.run('s', 1, 'e2', 'B', '{"n":2}', '{}', '2026-11-30T06:00:01.000Z');
    v1.close();
    const store = openSqliteEventStore({ file });
    await store.appendToStream('s', [{ type: 'C', data: {} }], { expectedRevision: 1 });
    const events = await store.readStream('s');
    expect(events.map((e) => e.prev)).toEqual([GENESIS_HASH, events[0]!.hash, events[1]!.hash]);
    expect(events[0]!.hash).toBe(
      eventHash(GENESIS_HASH, { streamId: 's', revision: 0, id: 'e1', type: 'A', data: { n: 1 }, metadata: {}, recordedAt: '2026-11-30T06:00:00.000Z' }),
    );
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('sqlite store: reads that follow its own commits', () => {
  /** Blocks this thread until the file's head reaches `position` (the writer thread commits meanwhile). */
  function spinUntilHead(file: string, position: number): void {
    const look = new Database(file, { readOnly: true });
    const head = look.prepare('SELECT max(position) AS head FROM events');
    const deadline = Date.now() + 10_000;
    while (((head.get() as { head: number }).head ?? 0) < position) {
      if (Date.now() > deadline) throw new Error(`the head never reached ${position}`);
    }
    look.close();
  }

  it('given its writes committed by the writer thread and not yet answered, and another connection appending, then every read in that moment still shows the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-sqlite-tails-'));
    const file = join(dir, 'events.db');
    const store = openSqliteEventStore({ file, pollIntervalMs: 10 });
    const other = openSqliteEventStore({ file, pollIntervalMs: 10 });
    try {
      await store.appendToStream('s', [{ type: 'S0', data: {} }]);
      await store.appendToStream('t', [{ type: 'T0', data: {} }]);
      const types = (events: { type: string }[]) => events.map((e) => e.type);

      // Committed in the file, the answer still queued for this thread: the stream it touched reads from the file.
      const pendingS = store.appendToStream('s', [{ type: 'S1', data: {} }], { expectedRevision: 0 });
      await new Promise((resolve) => setImmediate(resolve));
      spinUntilHead(file, 3);
      const [s, t] = [store.readStream('s'), store.readStream('t', { fromRevision: 1 })];
      expect(types(await s)).toEqual(['S0', 'S1']);
      expect(await t).toEqual([]);
      await pendingS;

      // The same, after another connection's event on a stream this store keeps a tail of.
      await other.appendToStream('t', [{ type: 'T1', data: {} }], { expectedRevision: 0 });
      const pendingS2 = store.appendToStream('s', [{ type: 'S2', data: {} }], { expectedRevision: 1 });
      await new Promise((resolve) => setImmediate(resolve));
      spinUntilHead(file, 5);
      const [s2, t2, tRevision] = [store.readStream('s', { fromRevision: 2 }), store.readStream('t', { fromRevision: 1 }), store.streamRevision('t')];
      expect(types(await s2)).toEqual(['S2']);
      expect(types(await t2)).toEqual(['T1']);
      expect(await tRevision).toBe(1);
      await pendingS2;
      expect(types(await store.readStream('t'))).toEqual(['T0', 'T1']);
      expect(types(await store.readStream('s'))).toEqual(['S0', 'S1', 'S2']);

      // Another connection's event while nothing of this store is in flight.
      await other.appendToStream('t', [{ type: 'T2', data: {} }], { expectedRevision: 1 });
      expect(types(await store.readStream('t', { fromRevision: 2 }))).toEqual(['T2']);
      expect(types(await store.readStream('s', { fromRevision: 2 }))).toEqual(['S2']);
    } finally {
      await other.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('sqlite store: unhurried subscribers', () => {
  it('given an unhurried subscriber, when this process commits, then it is woken after what the commit set off, requests sent included; a prompt one before', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-sqlite-unhurried-'));
    const store = openSqliteEventStore({ file: join(dir, 'events.db'), pollIntervalMs: 10 });
    try {
      const order: string[] = [];
      const prompt = store.subscribeToAll((event) => void order.push(`prompt ${event.type}`), { from: 'end' });
      const unhurried = store.subscribeToAll((event) => void order.push(`unhurried ${event.type}`), { from: 'end', unhurried: true });
      await Promise.all([prompt.caughtUp, unhurried.caughtUp]);
      for (const type of ['Accepted', 'Succeeded']) {
        await store.appendToStream('execution-a', [{ type, data: {} }]).then(() => {
          order.push(`appended ${type}`);
          // What an HTTP client does with a request on an idle kept-alive socket: it writes it one turn later.
          setImmediate(() => order.push(`request after ${type}`));
        });
        await vi.waitFor(() => expect(order).toContain(`unhurried ${type}`));
      }
      // Both see every event in order; the prompt one before the request goes out, the unhurried one after it.
      for (const type of ['Accepted', 'Succeeded']) {
        const at = (entry: string) => order.indexOf(`${entry} ${type}`);
        expect(at('prompt')).toBeGreaterThanOrEqual(0);
        expect(at('prompt')).toBeLessThan(at('request after'));
        expect(at('request after')).toBeLessThan(at('unhurried'));
      }
      expect(order.filter((entry) => entry.startsWith('unhurried'))).toEqual(['unhurried Accepted', 'unhurried Succeeded']);
      await Promise.all([prompt.stop(), unhurried.stop()]);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('sqlite store: appends that may wait', () => {
  const fresh = () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-sqlite-deferred-'));
    return { dir, file: join(dir, 'events.db') };
  };
  /** What another connection reads of a stream: what is committed in the file. */
  const committed = (file: string, streamId: string) => {
    const look = new Database(file, { readOnly: true });
    try {
      return (look.prepare('SELECT type FROM events WHERE stream_id = ? ORDER BY revision').all(streamId) as Array<{ type: string }>).map((row) => row.type);
    } finally {
      look.close();
    }
  };

  it('given an append that may wait, when another append follows within its wait, then it is not committed before it and both are written together, in the order issued, a later append to its stream included', async () => {
    const { dir, file } = fresh();
    const store = openSqliteEventStore({ file, deferredWaitMs: 60_000 });
    try {
      await store.appendToStream('warm', [{ type: 'Warm', data: {} }]);
      const deferred = store.appendToStream('execution-a', [{ type: 'Delivered', data: {} }], { expectedRevision: 'no_stream', deferrable: true });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(committed(file, 'execution-a')).toEqual([]);
      // Issued after it on the same stream, expecting it: the held append goes first.
      const next = await store.appendToStream('execution-a', [{ type: 'RetryAttached', data: {} }], { expectedRevision: 0 });
      const first = await deferred;
      expect(next.position).toBe(first.position + 1);
      expect(committed(file, 'execution-a')).toEqual(['Delivered', 'RetryAttached']);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('given an append that may wait and nothing after it, then it is committed alone once it has waited, and a close writes one still waiting at once', async () => {
    const { dir, file } = fresh();
    const store = openSqliteEventStore({ file, deferredWaitMs: 40 });
    const patient = openSqliteEventStore({ file, deferredWaitMs: 60_000 });
    try {
      const asked = performance.now();
      await store.appendToStream('execution-b', [{ type: 'Delivered', data: {} }], { deferrable: true });
      expect(performance.now() - asked).toBeGreaterThanOrEqual(38);
      expect(committed(file, 'execution-b')).toEqual(['Delivered']);
      const last = patient.appendToStream('execution-c', [{ type: 'Delivered', data: {} }], { deferrable: true });
      await patient.close();
      await expect(last).resolves.toMatchObject({ streamId: 'execution-c' });
      expect(committed(file, 'execution-c')).toEqual(['Delivered']);
    } finally {
      await store.close();
      await patient.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('given an append that may wait with a signal, then it is held like one marked true, and committed as soon as the signal aborts', async () => {
    const { dir, file } = fresh();
    const store = openSqliteEventStore({ file, deferredWaitMs: 60_000 });
    try {
      const hurry = new AbortController();
      const deferred = store.appendToStream('execution-d', [{ type: 'Delivered', data: {} }], { deferrable: hurry.signal });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(committed(file, 'execution-d')).toEqual([]);
      hurry.abort();
      const asked = performance.now();
      await deferred;
      expect(performance.now() - asked).toBeLessThan(5_000);
      expect(committed(file, 'execution-d')).toEqual(['Delivered']);
      // A signal aborted already: not held at all.
      await store.appendToStream('execution-e', [{ type: 'Delivered', data: {} }], { deferrable: AbortSignal.abort() });
      expect(committed(file, 'execution-e')).toEqual(['Delivered']);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

type SqliteStore = ReturnType<typeof openSqliteEventStore>;

/** Two store objects on one new file (each its own connections and writer thread, as two processes), removed after `body`. */
async function withTwoStoresOnOneFile(body: (store: SqliteStore, operator: SqliteStore) => Promise<void>): Promise<void> {
  const { dir, file } = freshFile();
  const store = openSqliteEventStore({ file });
  const operator = openSqliteEventStore({ file });
  try {
    await body(store, operator);
  } finally {
    await operator.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A new folder, and a store file's path in it. */
function freshFile(): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'oncegate-sqlite-'));
  return { dir, file: join(dir, 'events.db') };
}

/** Counts the statements this thread runs from now on (`get` and `all`) whose text starts with one of `texts`. */
function statementsRun(...texts: string[]) {
  const spies = [vi.spyOn(StatementSync.prototype, 'get'), vi.spyOn(StatementSync.prototype, 'all')];
  return {
    count: () =>
      spies.reduce(
        (sum, spy) => sum + spy.mock.contexts.filter((statement) => texts.some((text) => (statement as StatementSync).sourceSQL.startsWith(text))).length,
        0,
      ),
    restore: () => spies.forEach((spy) => spy.mockRestore()),
  };
}

describe('sqlite store: the event types committed since a position (notifiedSince)', () => {
  const fresh = freshFile;
  /** The range reads of event types this thread runs meanwhile. */
  const typeReads = () => statementsRun('SELECT position, type');

  it('given its own commits, then it tells which types came after a position, nothing before its opening, and asked again with nothing committed since it reads no event', async () => {
    const { dir, file } = fresh();
    const before = openSqliteEventStore({ file });
    await before.appendToStream('vault', [{ type: 'VaultLocked', data: {} }]);
    await before.close();
    const store = openSqliteEventStore({ file });
    try {
      const opened = await store.headPosition();
      expect(await store.notifiedSince(opened - 1, ['VaultLocked'])).toBeUndefined();
      expect(await store.notifiedSince(opened, ['VaultLocked'])).toEqual({ changed: false, through: opened });
      const call = await store.appendToStream('execution-1', [{ type: 'ExecutionAccepted', data: {} }]);
      const run = await store.appendToStream('run-1', [{ type: 'RunEnded', data: {} }]);
      const later = await store.appendToStream('execution-2', [{ type: 'ExecutionAccepted', data: {} }]);
      expect(await store.notifiedSince(opened, ['RunEnded', 'RunGranted'])).toEqual({ changed: true, through: later.position });
      const reads = typeReads();
      try {
        expect(await store.notifiedSince(call.position, ['RunEnded'])).toMatchObject({ changed: true });
        expect(await store.notifiedSince(run.position, ['RunEnded'])).toEqual({ changed: false, through: later.position });
        expect(await store.notifiedSince(opened, ['VaultLocked'])).toMatchObject({ changed: false });
        expect(reads.count()).toBe(0);
      } finally {
        reads.restore();
      }
      expect(store.seenPosition()).toBe(later.position);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('given commits of another connection, between its own or after everything it knows of, then their types count at once', () =>
    withTwoStoresOnOneFile(async (store, operator) => {
      const start = (await store.appendToStream('execution-0', [{ type: 'ExecutionAccepted', data: {} }])).position;
      expect(await store.notifiedSince(start, ['VaultLocked'])).toEqual({ changed: false, through: start });
      // Between two commits of its own.
      await operator.appendToStream('vault', [{ type: 'VaultLocked', data: {} }]);
      const own = await store.appendToStream('execution-1', [{ type: 'ExecutionAccepted', data: {} }]);
      expect(await store.notifiedSince(start, ['VaultLocked'])).toEqual({ changed: true, through: own.position });
      expect(await store.notifiedSince(own.position, ['VaultLocked'])).toEqual({ changed: false, through: own.position });
      // After everything this store object knows of (a command that returned a moment ago): counted all the same.
      const ended = await operator.appendToStream('run-1', [{ type: 'RunEnded', data: {} }]);
      expect(await store.notifiedSince(own.position, ['RunEnded'])).toEqual({ changed: true, through: ended.position });
      expect(await store.notifiedSince(own.position, ['RunGranted'])).toEqual({ changed: false, through: ended.position });
    }));
});

describe("sqlite store: its own commits told from another connection's by the WAL index header", () => {
  const fresh = freshFile;
  /** What this thread asks the file to learn whether somebody else committed: `data_version`, and the events above. */
  const lookups = () => statementsRun('PRAGMA data_version', 'SELECT position, stream_id, type');

  it('given only its own commits, when it reads the revisions of what it wrote and the types since, then it asks the file nothing to tell them apart', async () => {
    const { dir, file } = fresh();
    const store = openSqliteEventStore({ file });
    const asked = lookups();
    try {
      for (let n = 0; n < 20; n++) {
        const written = await store.appendToStream(`execution-${n}`, [{ type: 'ExecutionAccepted', data: { n } }]);
        expect(await store.streamRevision(`execution-${n}`)).toBe(0);
        expect(await store.notifiedSince(written.position, ['RunEnded'])).toEqual({ changed: false, through: written.position });
      }
      expect(asked.count()).toBe(0);
    } finally {
      asked.restore();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("given another connection's commit right after its own, to the same stream, then the next reads see it", () =>
    withTwoStoresOnOneFile(async (store, operator) => {
      for (let n = 0; n < 5; n++) {
        const own = await store.appendToStream(`run-${n}`, [{ type: 'RunGranted', data: {} }]);
        expect(await store.streamRevision(`run-${n}`)).toBe(0);
        const ended = await operator.appendToStream(`run-${n}`, [{ type: 'RunEnded', data: {} }], { expectedRevision: 0 });
        expect(await store.streamRevision(`run-${n}`)).toBe(1);
        expect(await store.notifiedSince(own.position, ['RunEnded'])).toEqual({ changed: true, through: ended.position });
        await expect(store.appendToStream(`run-${n}`, [{ type: 'RunGranted', data: {} }], { expectedRevision: 0 })).rejects.toThrow();
      }
    }));

  it("given another connection's commit, when reads awaited one after another in one run of the microtask queue ask whether somebody committed, then the file is asked once, and again in the next run", () =>
    withTwoStoresOnOneFile(async (store, operator) => {
      await store.appendToStream('run-0', [{ type: 'RunGranted', data: {} }]);
      expect(await store.streamRevision('run-0')).toBe(0);
      await operator.appendToStream('vault', [{ type: 'VaultLocked', data: {} }]);
      const asked = statementsRun('PRAGMA data_version');
      try {
        // Nothing between these reads hands the event loop a callback: they are one run of the microtask queue.
        for (let n = 0; n < 5; n++) expect(await store.streamRevision('run-0')).toBe(0);
        expect(asked.count()).toBe(1);
        await new Promise((resolve) => setImmediate(resolve));
        expect(await store.streamRevision('run-0')).toBe(0);
        expect(asked.count()).toBe(2);
      } finally {
        asked.restore();
      }
    }));
});

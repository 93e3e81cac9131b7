import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Client } from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acceptExecution, attachRetry, authorize, delivered, dispatch, observe, requireReview, unknownOutcome } from '@oncegate/domain/testing';
import type { EventStore, ReadAllOptions } from '@oncegate/event-store';
import { openPostgresEventStore } from '@oncegate/event-store-postgres';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-PostgreSQL harness
import { sharedPostgres } from '../../../test/support/shared-servers';
import { ExecutionsIndex } from './executions-index';
import { foldBatch } from './fold-batch';
import type { IndexTables } from './index-tables';
import { PostgresIndexTables } from './postgres-index-tables';
import { SqliteIndexTables } from './sqlite-index-tables';
import { appendHistory, executionIdOf, historyFor } from './test-support/histories';

/** Where one test's store and index live, and how to open each again (a restarted process). */
interface Place {
  readonly store: EventStore;
  openTables(): Promise<IndexTables>;
  dispose(): Promise<void>;
}

const irreversible = (actor: string) =>
  acceptExecution({ operationClass: 'irreversible', redeliveryGraceMs: null, record: { ...acceptExecution().record, actor, tool: 'send_payment' } });

/** A journal of 12 executions: agents a and b, irreversible and idempotent, settled and unknown. */
async function writeJournal(store: EventStore): Promise<void> {
  for (let n = 0; n < 12; n += 1) {
    const id = executionIdOf(n);
    const actor = n % 2 === 0 ? 'agent:a' : 'agent:b';
    const accept = n % 3 === 0 ? irreversible(actor) : acceptExecution({ record: { ...acceptExecution().record, actor }, now: new Date(Date.parse('2026-07-22T10:00:00Z') + n * 1000).toISOString() });
    const events =
      n % 3 === 0
        ? historyFor(id, { ...accept, now: new Date(Date.parse('2026-07-22T10:00:00Z') + n * 1000).toISOString() }, authorize(), dispatch(), unknownOutcome(), requireReview())
        : historyFor(id, accept, authorize(), dispatch(), attachRetry(), observe(), delivered());
    await appendHistory(store, id, events);
  }
}

/** What folding the whole journal in one go gives: the rows every index must end with. */
async function expectedRows(store: EventStore) {
  const { events } = await store.readAll({ maxCount: 10_000 });
  return foldBatch(events, new Map()).rows.sort((a, b) => (a.executionId < b.executionId ? 1 : -1));
}

async function allRows(tables: IndexTables) {
  return (await tables.select({}, 10_000)).sort((a, b) => (a.executionId < b.executionId ? 1 : -1));
}

function describeIndexOn(adapter: string, place: () => Promise<Place>): void {
  describe(`the executions index on ${adapter}`, () => {
    let at: Place;
    const opened: { close(): Promise<void> }[] = [];
    const tablesOf = async () => {
      const tables = await at.openTables();
      opened.push(tables);
      return tables;
    };
    const indexOf = (tables: IndexTables, owner: string, store = at.store) => {
      const index = new ExecutionsIndex({ store, tables, owner, batchSize: 7, claimTtlMs: 60_000 });
      opened.unshift({ close: () => index.stop() });
      return index;
    };

    beforeEach(async () => {
      at = await place();
      await writeJournal(at.store);
    });
    afterEach(async () => {
      for (const item of opened.splice(0)) await item.close();
      await at.dispose();
    });

    it(`[${adapter}] given a journal, the index folds it in batches and answers the analyst's question page by page, newest first`, async () => {
      const index = indexOf(await tablesOf(), 'gateway-1');
      const caught = await index.catchUp();
      expect(caught).toMatchObject({ claimed: true, lag: { behind: 0 } });
      expect(await allRows(await tablesOf())).toEqual(await expectedRows(at.store));

      const question = { actors: ['agent:a'], classes: ['irreversible' as const], states: ['needs_review' as const, 'outcome_unknown' as const], sinceMs: Date.parse('2026-07-22T09:00:00Z') };
      const first = await index.page({ ...question, limit: 1 });
      const second = await index.page({ ...question, limit: 1, after: decode(first.nextCursor) });
      const ids = [first, second].flatMap((page) => page.executions.map((row) => row.executionId));
      expect(ids).toEqual([executionIdOf(6), executionIdOf(0)]);
      expect(first.nextCursor).not.toBeNull();
      expect(second.nextCursor).toBeNull();
      expect((await index.page({ tools: ['deploy_release'], limit: 100 })).executions).toHaveLength(8);
    });

    it(`[${adapter}] given a crash in the middle of a batch, the restarted index folds it once: nothing lost, nothing counted twice`, async () => {
      // The second batch carries an event the index's table refuses half-way through writing it (a negative attempt):
      // its transaction is rolled back as a crash would leave it.
      let poisoned = false;
      const store = at.store;
      const failing = {
        headPosition: () => store.headPosition(),
        claim: (...args: Parameters<EventStore['claim']>) => store.claim(...args),
        releaseClaim: (...args: Parameters<EventStore['releaseClaim']>) => store.releaseClaim(...args),
        readAll: async (options: ReadAllOptions) => {
          const page = await store.readAll(options);
          if ((options.after ?? 0) === 0 || poisoned) return page;
          poisoned = true;
          const events = page.events.map((event, i) =>
            i === page.events.length - 1 ? { ...event, type: 'Dispatched', data: { attempt: -1, dispatcherId: 'x', idempotencyKey: 'x', dispatchedAt: '2026-07-22T10:00:00Z' } } : event,
          );
          return { ...page, events };
        },
      } as unknown as EventStore;
      const crashed = indexOf(await tablesOf(), 'gateway-1', failing);
      await expect(crashed.catchUp()).rejects.toThrow();
      const afterCrash = await tablesOf();
      expect(await afterCrash.position()).toBeGreaterThan(0);
      expect((await crashed.lag()).behind).toBeGreaterThan(0);
      await crashed.stop();

      const restarted = indexOf(await tablesOf(), 'gateway-1');
      expect(await restarted.catchUp()).toMatchObject({ claimed: true, lag: { behind: 0 } });
      expect(await allRows(afterCrash)).toEqual(await expectedRows(at.store));
    });

    it(`[${adapter}] given two instances on one index, only the claim's holder folds, and the other takes over once it lets go`, async () => {
      const one = indexOf(await tablesOf(), 'gateway-1');
      const two = indexOf(await tablesOf(), 'gateway-2');
      const [a, b] = await Promise.all([one.catchUp(), two.catchUp()]);
      expect([a.claimed, b.claimed].sort()).toEqual([false, true]);
      expect(await allRows(await tablesOf())).toEqual(await expectedRows(at.store));

      const [holder, standby] = a.claimed ? [one, two] : [two, one];
      const id = executionIdOf(40);
      await appendHistory(at.store, id, historyFor(id, acceptExecution()));
      expect((await standby.catchUp()).claimed).toBe(false);
      expect((await standby.lag()).behind).toBeGreaterThan(0);
      await holder.stop();
      expect(await standby.catchUp()).toMatchObject({ claimed: true, lag: { behind: 0 } });
      expect(await allRows(await tablesOf())).toEqual(await expectedRows(at.store));
    });

    it(`[${adapter}] given a stale instance whose claim ran out, its batch is refused whole: the checkpoint only moves from where it is`, async () => {
      const tables = await tablesOf();
      await indexOf(tables, 'gateway-1').catchUp();
      const { events } = await at.store.readAll({ maxCount: 3 });
      const stale = foldBatch(events, new Map());
      expect(stale.rows.length).toBeGreaterThan(0);
      expect(await tables.commit({ from: 0, to: 3, ...stale })).toBe(false);
      expect(await allRows(tables)).toEqual(await expectedRows(at.store));
      expect(await tables.position()).toBe(await at.store.headPosition());
    });

    it(`[${adapter}] given one instance folding the journal from its start, it asks the index for no folded state (every execution it meets began in a batch it wrote) and reads its checkpoint once; a restarted instance asks for the executions it did not write`, async () => {
      const tables = await tablesOf();
      const asked: string[][] = [];
      let checkpointReads = 0;
      const counting: IndexTables = {
        location: tables.location,
        position: () => {
          checkpointReads += 1;
          return tables.position();
        },
        foldedStates: (ids) => {
          asked.push([...ids]);
          return tables.foldedStates(ids);
        },
        commit: (batch) => tables.commit(batch),
        select: (query, limit) => tables.select(query, limit),
        reset: () => tables.reset(),
        close: async () => undefined,
      };
      const index = indexOf(counting, 'gateway-1');
      // Seven events a batch: most executions of the journal run over two batches.
      expect(await index.catchUp()).toMatchObject({ claimed: true, lag: { behind: 0 } });
      expect(asked).toEqual([]);
      // One read to start from, one for the lag the catch-up reports.
      expect(checkpointReads).toBe(2);
      // A new execution's first events, then, after a restart, the rest of them.
      const id = executionIdOf(43);
      const history = historyFor(id, acceptExecution(), authorize(), dispatch());
      await appendHistory(at.store, id, history.slice(0, 2));
      expect(await index.catchUp()).toMatchObject({ claimed: true, events: 2 });
      expect(asked).toEqual([]);
      expect(checkpointReads).toBe(3);
      await index.stop();
      await appendHistory(at.store, id, history.slice(2));
      const restarted = indexOf(counting, 'gateway-1');
      expect(await restarted.catchUp()).toMatchObject({ claimed: true, events: 1, lag: { behind: 0 } });
      expect(asked).toEqual([[id]]);
      expect(await allRows(tables)).toEqual(await expectedRows(at.store));
    });

    it(`[${adapter}] given an instance whose claim ran out while another folded on, its next batch (folded on what it wrote last) is refused whole, and it folds again from the index's own checkpoint and rows`, async () => {
      let now = Date.parse('2026-07-22T12:00:00Z');
      const clock = () => now;
      const tables = await tablesOf();
      const one = new ExecutionsIndex({ store: at.store, tables, owner: 'gateway-1', batchSize: 7, claimTtlMs: 1000, now: clock });
      const two = new ExecutionsIndex({ store: at.store, tables: await tablesOf(), owner: 'gateway-2', batchSize: 7, claimTtlMs: 1000, now: clock });
      opened.unshift({ close: () => one.stop() }, { close: () => two.stop() });
      const id = executionIdOf(42);
      const history = historyFor(id, acceptExecution(), authorize(), dispatch(), attachRetry(), observe(), delivered());
      await appendHistory(at.store, id, history.slice(0, 3));
      expect((await one.catchUp()).claimed).toBe(true);
      now += 2_000;
      await appendHistory(at.store, id, history.slice(3, 4));
      expect(await two.catchUp()).toMatchObject({ claimed: true, events: 1, lag: { behind: 0 } });
      now += 2_000;
      await appendHistory(at.store, id, history.slice(4));
      // Its batch would fold the retry that the other instance folded already: the checkpoint moved, nothing is written.
      expect((await one.catchUp()).claimed).toBe(false);
      expect((await allRows(tables)).find((row) => row.executionId === id)).toMatchObject({ retriesAttached: 1, state: 'dispatched' });
      expect(await one.catchUp()).toMatchObject({ claimed: true, events: 2, lag: { behind: 0 } });
      expect(await allRows(tables)).toEqual(await expectedRows(at.store));
      expect((await allRows(tables)).find((row) => row.executionId === id)).toMatchObject({ retriesAttached: 1, state: 'delivered' });
    });

    it(`[${adapter}] given a running index, what is appended after its start is folded from its subscription's deliveries (the store, read past them, gives nothing more), to the rows a fold of the whole journal gives`, async () => {
      const tables = await tablesOf();
      const store = at.store;
      // How many execution events each of the index's reads of the store returned.
      const reads: number[] = [];
      const watched = new Proxy(store, {
        get(target, property) {
          if (property === 'readAll') {
            return async (options: ReadAllOptions = {}) => {
              const page = await target.readAll(options);
              if (options.filter?.streamPrefixes?.includes('execution-') === true) reads.push(page.events.length);
              return page;
            };
          }
          const value: unknown = Reflect.get(target, property, target);
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        },
      });
      // A batch is gathered for half a second after the first new event: all ten executions below are delivered by then.
      const index = new ExecutionsIndex({ store: watched, tables, owner: 'gateway-1', settleMs: 500, pollMs: 60_000, batchSize: 7 });
      opened.unshift({ close: () => index.stop() });
      index.start();
      // The journal written before the start is read from the store.
      await expect.poll(async () => (await index.lag()).behind, { timeout: 10_000 }).toBe(0);
      expect(reads.reduce((sum, count) => sum + count, 0)).toBeGreaterThan(0);
      reads.length = 0;
      for (let n = 50; n < 60; n += 1) {
        const id = executionIdOf(n);
        await appendHistory(store, id, historyFor(id, acceptExecution(), authorize(), dispatch(), observe(), delivered()));
      }
      // The last event is another stream's: the checkpoint still reaches the head.
      await store.appendToStream('session-heard', [{ type: 'SessionClosed', data: {} }]);
      await expect.poll(async () => (await index.lag()).behind, { timeout: 10_000 }).toBe(0);
      // The store is still read past the last event heard (to the head, over other streams' events), and finds nothing.
      expect(reads.length).toBeGreaterThan(0);
      expect(reads.reduce((sum, count) => sum + count, 0)).toBe(0);
      expect(await allRows(tables)).toEqual(await expectedRows(store));
      // Stopped, it hears nothing: a rebuild reads the whole journal again.
      await index.stop();
      reads.length = 0;
      expect(await index.rebuild()).toMatchObject({ claimed: true, lag: { behind: 0 } });
      expect(reads.reduce((sum, count) => sum + count, 0)).toBeGreaterThan(50);
      expect(await allRows(tables)).toEqual(await expectedRows(store));
    });

    it(`[${adapter}] given a running index, new calls are folded without being asked, and a rebuild folds the journal again to the same rows`, async () => {
      const tables = await tablesOf();
      const index = new ExecutionsIndex({ store: at.store, tables, owner: 'gateway-1', settleMs: 10, pollMs: 200 });
      opened.unshift({ close: () => index.stop() });
      index.start();
      const id = executionIdOf(41);
      await appendHistory(at.store, id, historyFor(id, acceptExecution(), authorize()));
      await expect.poll(async () => (await index.page({ states: ['authorized'] })).executions.map((row) => row.executionId), { timeout: 10_000 }).toContain(id);
      await index.stop();
      expect(await index.rebuild()).toMatchObject({ claimed: true, lag: { behind: 0 } });
      expect(await allRows(tables)).toEqual(await expectedRows(at.store));
    });
  });
}

function decode(cursor: string | null) {
  if (cursor === null) return undefined;
  const [ms, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('.');
  return { acceptedMs: Number(ms), executionId: id! };
}

describeIndexOn('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'executions-index-'));
  const store = await openSqliteEventStore({ file: join(dir, 'events.db') });
  return {
    store,
    openTables: async () => new SqliteIndexTables({ file: join(dir, 'executions-index.db') }),
    async dispose() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('the executions index on sqlite: no folded state kept', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'executions-index-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const tablesIn = (db: DatabaseSync) => (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((row) => row.name);

  it('given an index file of version 1 (rows, checkpoint and folded states), when it is opened again, then its states are gone, its rows and checkpoint kept, and the later events of an execution it folded are folded onto the execution read again from its stream', async () => {
    const store = openSqliteEventStore({ file: join(dir, 'events.db') });
    const file = join(dir, 'executions-index.db');
    try {
      await writeJournal(store);
      const id = executionIdOf(42);
      const history = historyFor(id, acceptExecution(), authorize(), dispatch(), attachRetry(), observe(), delivered());
      await appendHistory(store, id, history.slice(0, 3));
      const first = new SqliteIndexTables({ file });
      const index = new ExecutionsIndex({ store, tables: first, owner: 'gateway-1', batchSize: 7 });
      expect(await index.catchUp()).toMatchObject({ claimed: true, lag: { behind: 0 } });
      await index.stop();
      await first.close();
      const position = await store.headPosition();
      // What version 1 left beside the rows: a folded state of every execution, and its version in the meta table.
      const v1 = new DatabaseSync(file);
      v1.exec('CREATE TABLE IF NOT EXISTS executions_index_fold (execution_id TEXT PRIMARY KEY, position INTEGER NOT NULL, last_change_at TEXT NOT NULL, state TEXT NOT NULL)');
      v1.prepare("INSERT OR REPLACE INTO executions_index_fold VALUES (?, 1, '2026-07-22T10:00:00.000Z', '{}')").run(id);
      v1.exec("UPDATE executions_index_meta SET value = '1' WHERE key = 'schema_version'");
      v1.close();

      const reopened = new SqliteIndexTables({ file });
      const check = new DatabaseSync(file, { readOnly: true });
      try {
        expect(tablesIn(check)).toEqual(['executions_index', 'executions_index_meta']);
        expect(check.prepare("SELECT value FROM executions_index_meta WHERE key = 'schema_version'").get()).toEqual({ value: '2' });
      } finally {
        check.close();
      }
      expect(await reopened.position()).toBe(position);
      expect((await allRows(reopened)).find((row) => row.executionId === id)).toMatchObject({ state: 'dispatched', attempts: 1 });
      // The retry, the outcome and the delivery fold onto the execution as its stream tells it up to the checkpoint.
      await appendHistory(store, id, history.slice(3));
      const restarted = new ExecutionsIndex({ store, tables: reopened, owner: 'gateway-1', batchSize: 7 });
      expect(await restarted.catchUp()).toMatchObject({ claimed: true, events: 3, lag: { behind: 0 } });
      expect((await allRows(reopened)).find((row) => row.executionId === id)).toMatchObject({ state: 'delivered', attempts: 1, retriesAttached: 1 });
      expect(await allRows(reopened)).toEqual(await expectedRows(store));
      await restarted.stop();
      await reopened.close();
    } finally {
      await store.close();
    }
  });
});

describeIndexOn('postgres', async () => {
  const url = (await sharedPostgres()).url();
  const schema = `index_${randomBytes(6).toString('hex')}`;
  const store = await openPostgresEventStore({ url, schema, pollIntervalMs: 200 });
  return {
    store,
    openTables: () => PostgresIndexTables.open({ url, schema }),
    async dispose() {
      await store.close();
      const client = new Client({ connectionString: url });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    },
  };
});

describe('the executions index on postgres, its server going away', () => {
  it('given a connection the index holds between two statements, when the server ends it (a shutdown), then the process goes on and the next statement reconnects', async () => {
    const url = (await sharedPostgres()).url();
    const schema = `index_${randomBytes(6).toString('hex')}`;
    const tables = await PostgresIndexTables.open({ url, schema });
    const admin = new Client({ connectionString: url });
    await admin.connect();
    try {
      // A transaction's client, held between its statements, as a fold holds it.
      const pool = (tables as unknown as { pool: import('pg').Pool }).pool;
      const held = await pool.connect();
      const pid = ((await held.query('SELECT pg_backend_pid() AS pid')).rows[0] as { pid: number }).pid;
      const ended = new Promise((resolve) => held.once('end', resolve));
      // What a server shutdown sends each connection (FATAL 57P01); unheard, it ended the gateway's process.
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      await ended;
      held.release(true);
      expect(await tables.position()).toBe(0);
    } finally {
      await tables.close();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.end();
    }
  });
});

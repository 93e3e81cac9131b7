import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { Client } from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the real SQLite adapter
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-PostgreSQL harness
import { sharedPostgres } from '../../../test/support/shared-servers';
import { runsByActor } from './builtin/runs-by-actor';
import { openExecutions } from './builtin/open-executions';
import { projectInto, ProjectionClaimedError, ProjectionClaimLostError, type ProjectionBatch } from './follow-projection';
import { loadProjectionModule } from './load-projection';
import type { Projection } from './projection';
import { ProjectionCheckpointError, ProjectionStateError } from './run-projection';
import { planTableWrite, ProjectionColumnTypeError, writtenTable } from './sql-table-plan';
import { CHECKPOINT_TABLE, parseSqlTarget, ProjectionTableConflictError, SqlTarget } from './sql-target';
import { fold } from './test-support/fold';
import type { FollowTask } from './test-support/follow-child';
import { droppedConnectionThenAttach, newExecutionAfterGrace, twoActors } from './test-support/gateway-scenarios';

const EVENTS_BY_TYPE = fileURLToPath(new URL('./test-support/events-by-type.ts', import.meta.url));
const FOLLOW_CHILD = fileURLToPath(new URL('./test-support/follow-child.ts', import.meta.url));

type Cell = string | number | null;

/** A count that turns into text past 3: a column that changes type. */
const changingCount: Projection<{ count: number }> = {
  name: 'changing-type',
  description: 'a count that turns into text past 3',
  key: ['name'],
  initialState: () => ({ count: 0 }),
  evolve: (state) => ({ count: state.count + 1 }),
  rows: (state) => [{ name: 'events', value: state.count > 3 ? 'many' : state.count }],
};

/** A SQL database the tests write into: a SQLite file, or a database of the shared PostgreSQL server. */
interface Target {
  readonly name: 'sqlite' | 'postgres';
  /** The `--into` of a fresh database. */
  fresh(dir: string): Promise<string>;
  query(into: string, sql: string): Promise<Record<string, unknown>[]>;
}

const sqliteTarget: Target = {
  name: 'sqlite',
  fresh: async (dir) => `sqlite:${join(dir, `analysis-${randomBytes(3).toString('hex')}.db`)}`,
  async query(into, sql) {
    const db = new DatabaseSync(into.slice('sqlite:'.length), { readOnly: true });
    try {
      return db.prepare(sql).all() as Record<string, unknown>[];
    } finally {
      db.close();
    }
  },
};

const databases: string[] = [];
const postgresTarget: Target = {
  name: 'postgres',
  async fresh() {
    const server = await sharedPostgres();
    const database = `projections_${randomBytes(6).toString('hex')}`;
    const admin = new Client({ connectionString: server.url() });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();
    databases.push(database);
    return server.url(database);
  },
  async query(into, sql) {
    const client = new Client({ connectionString: into });
    await client.connect();
    try {
      return (await client.query(sql)).rows as Record<string, unknown>[];
    } finally {
      await client.end();
    }
  },
};

afterAll(async () => {
  if (databases.length === 0) return;
  const server = await sharedPostgres();
  const admin = new Client({ connectionString: server.url() });
  await admin.connect();
  for (const database of databases) await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.end();
});

/** Cells as both databases can be compared with the projection's: as text, booleans as 1 and 0 (as SQLite holds them). */
function normalised(rows: readonly Record<string, unknown>[], columns: readonly string[]): Record<string, Cell>[] {
  return rows
    .map((row) => Object.fromEntries(columns.map((column) => [column, cellOf(row[column])])))
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

function cellOf(value: unknown): Cell {
  if (value === null || value === undefined) return null;
  if (typeof value === 'boolean') return value ? '1' : '0';
  return String(value);
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

for (const target of [sqliteTarget, postgresTarget]) {
  describe(`projectInto a ${target.name} table (events from a SQLite store)`, () => {
    let dir: string;
    let store: EventStore;
    let into: string;

    beforeEach(async () => {
      dir = mkdtempSync(join(tmpdir(), 'oncegate-follow-'));
      store = openSqliteEventStore({ file: join(dir, 'events.db') });
      into = await target.fresh(dir);
    });

    afterEach(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });

    async function appendAll(events: readonly RecordedEvent[]): Promise<void> {
      for (const event of events) {
        const { eventId: _eventId, ...metadata } = event.metadata;
        await store.appendToStream(event.streamId, [{ type: event.type, data: event.data, metadata }]);
      }
    }

    /** `count` events over a few execution and intent streams, in batches. */
    async function appendMany(count: number, prefix = 'x'): Promise<void> {
      const types = ['ExecutionAccepted', 'Dispatched', 'OutcomeObserved', 'IntentClaimed'];
      for (let start = 0; start < count; start += 100) {
        const batch = new Map<string, { type: string; data: unknown }[]>();
        for (let n = start; n < Math.min(count, start + 100); n += 1) {
          const streamId = `${n % 3 === 0 ? 'intent' : 'execution'}-${prefix}${n % 7}`;
          batch.set(streamId, [...(batch.get(streamId) ?? []), { type: types[n % types.length]!, data: { n } }]);
        }
        await store.appendMany([...batch].map(([streamId, events]) => ({ streamId, events })));
      }
    }

    async function table(name: string, columns: readonly string[]): Promise<Record<string, Cell>[]> {
      return normalised(await target.query(into, `SELECT * FROM ${name}`), columns);
    }

    async function checkpoint(name: string): Promise<Record<string, unknown> | undefined> {
      return (await target.query(into, `SELECT * FROM ${CHECKPOINT_TABLE} WHERE table_name = '${name}'`))[0];
    }

    const RUN_COLUMNS = ['actor', 'run', 'runSource', 'executions', 'retriesAttached', 'tools', 'sessions', 'firstAcceptedAt', 'lastAcceptedAt'];
    const expectedRuns = async () => normalised(runsByActor.rows(fold(runsByActor, (await store.readAll({ maxCount: 10_000 })).events as RecordedEvent[]), {}), RUN_COLUMNS);

    it(`given the gateway's history, when runs-by-actor runs into ${target.name} once, then the table holds the fold's rows and the checkpoint its state and position; a later run resumes and writes only what changed`, async () => {
      await appendAll(twoActors().history.events);
      const first = await projectInto({ projection: runsByActor, store, into });
      expect(first).toMatchObject({ table: 'runs_by_actor', position: await store.headPosition(), resumedFrom: undefined, stopped: 'head', batches: 1 });
      expect(await table('runs_by_actor', RUN_COLUMNS)).toEqual(await expectedRuns());
      const saved = await checkpoint('runs_by_actor');
      expect(saved).toMatchObject({ projection: 'runs-by-actor', params: '{}', key_columns: '["actor","run"]' });
      expect(Number(saved!['position'])).toBe(first.position);
      expect(JSON.parse(String(saved!['state']))).toHaveProperty('runs');

      await appendAll(newExecutionAfterGrace().history.events);
      const batches: ProjectionBatch[] = [];
      const second = await projectInto({ projection: runsByActor, store, into, onBatch: (batch) => batches.push(batch) });
      expect(second.resumedFrom).toBe(first.position);
      expect(await table('runs_by_actor', RUN_COLUMNS)).toEqual(await expectedRuns());
      expect(batches).toHaveLength(1);
      expect(batches[0]!.upserted).toBeLessThan(second.rows);
      expect(batches[0]!.deleted).toBe(0);

      // Nothing new: nothing written.
      expect((await projectInto({ projection: runsByActor, store, into })).batches).toBe(0);
    });

    it(`given a follow run on ${target.name}, when events are appended after it caught up, then the table picks them up; stopped, it checkpoints where it stopped`, async () => {
      await appendAll(twoActors().history.events);
      const stopper = new AbortController();
      let caughtUp!: (position: number) => void;
      const atHead = new Promise<number>((resolve) => (caughtUp = resolve));
      const running = projectInto({ projection: runsByActor, store, into, follow: true, batchMs: 50, signal: stopper.signal, onCaughtUp: caughtUp });
      expect(await atHead).toBe(await store.headPosition());
      expect(await table('runs_by_actor', RUN_COLUMNS)).toEqual(await expectedRuns());

      await appendAll(droppedConnectionThenAttach().history.events);
      await appendAll(newExecutionAfterGrace().history.events);
      const expected = await expectedRuns();
      await until(() => table('runs_by_actor', RUN_COLUMNS), (rows) => JSON.stringify(rows) === JSON.stringify(expected), 'the appended runs in the table');

      const lastRunEvent = await store.headPosition();
      await appendMany(5, 'tail');
      stopper.abort();
      const result = await running;
      expect(result.stopped).toBe('signal');
      expect(result.position).toBeGreaterThanOrEqual(lastRunEvent);
      expect(Number((await checkpoint('runs_by_actor'))!['position'])).toBe(result.position);
    });

    it(`given a follow run holding the table on ${target.name}, when a second run asks for it, then it is refused naming the holder and until when; with wait it runs once the first stops; another table is free`, async () => {
      await appendAll(twoActors().history.events);
      const stopper = new AbortController();
      let caughtUp!: () => void;
      const atHead = new Promise<void>((resolve) => (caughtUp = resolve));
      const first = projectInto({ projection: runsByActor, store, into, follow: true, owner: 'analyst-a', signal: stopper.signal, onCaughtUp: () => caughtUp() });
      await atHead;

      const refused = projectInto({ projection: runsByActor, store, into, owner: 'analyst-b' });
      await expect(refused).rejects.toThrow(ProjectionClaimedError);
      await expect(refused).rejects.toThrow(/^projection:runs_by_actor is held by analyst-a until \d{4}-\d\d-\d\dT[\d:.]+Z: another run writes that table/);
      expect((await projectInto({ projection: runsByActor, store, into, table: 'runs_copy', owner: 'analyst-b' })).rows).toBeGreaterThan(0);

      const waited: string[] = [];
      const waiting = projectInto({ projection: runsByActor, store, into, owner: 'analyst-b', wait: true, onWaiting: (claim) => waited.push(claim.owner) });
      await until(async () => waited.length, (count) => count > 0, 'the second run to wait');
      stopper.abort();
      await first;
      expect((await waiting).stopped).toBe('head');
      expect(waited).toEqual(['analyst-a']);
      expect(await store.readClaims('projection:')).toEqual([]);
    });

    it(`given a follow run on ${target.name} whose claim another takes, then it stops writing and fails saying so`, async () => {
      await appendAll(twoActors().history.events);
      const stopper = new AbortController();
      let caughtUp!: () => void;
      const atHead = new Promise<void>((resolve) => (caughtUp = resolve));
      const running = projectInto({ projection: runsByActor, store, into, follow: true, claimMs: 600, batchMs: 50, owner: 'analyst-a', signal: stopper.signal, onCaughtUp: () => caughtUp() });
      running.catch(() => undefined);
      await atHead;
      const written = await checkpoint('runs_by_actor');
      // As if analyst-a's clock had stalled past its claim: a run that believes it lapsed takes it over.
      const later = new Date(Date.now() + 60_000);
      expect(await store.claim('projection:runs_by_actor', 'analyst-b', new Date(later.getTime() + 60_000).toISOString(), later.toISOString())).toMatchObject({ owner: 'analyst-b' });
      await expect(running).rejects.toThrow(ProjectionClaimLostError);
      await expect(running).rejects.toThrow(/^projection:runs_by_actor: analyst-b holds it now \(until .+\); this run stopped writing$/);
      await appendAll(newExecutionAfterGrace().history.events);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await checkpoint('runs_by_actor')).toEqual(written);
      stopper.abort();
    });

    it(`given a run that last wrote a table on ${target.name}, when another run has written it since, then its next batch is refused inside the transaction`, async () => {
      await appendMany(2);
      await projectInto({ projection: changingCount, store, into });
      const spec = parseSqlTarget(into);
      const sql = await SqlTarget.open(spec);
      try {
        const { checkpoint: saved } = await sql.read('changing_type');
        const plan = planTableWrite('changing_type', [{ name: 'events', value: 3 }], writtenTable([{ name: 'events', value: 2 }], saved!.columns, saved!.key, 'changing_type'), ['name']);
        const stale = { table: 'changing_type', dropFirst: false, plan, checkpoint: { projection: 'changing-type', params: {}, position: 9, events: 9, state: '{"count":9}', writtenAt: new Date().toISOString() } };
        await expect(sql.commit({ ...stale, expectedGeneration: saved!.generation - 1 })).rejects.toThrow(ProjectionTableConflictError);
        await expect(sql.commit({ ...stale, expectedGeneration: saved!.generation - 1 })).rejects.toThrow(/another run \(of changing-type\) wrote it since this run last did/);
        expect(await table('changing_type', ['name', 'value'])).toEqual([{ name: 'events', value: '2' }]);
        expect(await sql.commit({ ...stale, expectedGeneration: saved!.generation })).toBe(saved!.generation + 1);
        expect(await table('changing_type', ['name', 'value'])).toEqual([{ name: 'events', value: '3' }]);
      } finally {
        await sql.close();
      }
    });

    it(`given a projection whose column changes type, when its run reaches that row on ${target.name}, then it stops naming the column and both types, and the table and checkpoint keep the last batch`, async () => {
      const changing = changingCount;
      await appendMany(2);
      await projectInto({ projection: changing, store, into });
      await appendMany(4);
      const error = await projectInto({ projection: changing, store, into }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ProjectionColumnTypeError);
      expect((error as Error).message).toBe(
        'table changing_type, column "value": it holds numeric, but row 1 of 1 has the text "many"; a column keeps one type: make rows() give it one (e.g. String(value)), or rebuild into a new table',
      );
      expect(await table('changing_type', ['name', 'value'])).toEqual([{ name: 'events', value: '2' }]);
      expect(Number((await checkpoint('changing_type'))!['position'])).toBe(2);
    });

    it(`given a module projection with params on ${target.name}, when it resumes with other params, into another projection's table, or into a table no run made, then it is refused; rebuild folds anew`, async () => {
      const { projection } = await loadProjectionModule(EVENTS_BY_TYPE);
      await appendMany(40);
      await projectInto({ projection, store, into, params: { prefix: 'execution-' } });
      const columns = ['type', 'label', 'events', 'lastPosition', 'many'];
      const all = (await store.readAll({ maxCount: 10_000 })).events as RecordedEvent[];
      expect(await table('events_by_type', columns)).toEqual(normalised(projection.rows(fold(projection, all, { prefix: 'execution-', label: 'all' }), { prefix: 'execution-', label: 'all' }), columns));

      await expect(projectInto({ projection, store, into, params: { prefix: 'intent-' } })).rejects.toThrow(/its state was folded with label=all prefix=execution-, not prefix=intent- label=all; rebuild/);
      await expect(projectInto({ projection: openExecutions, store, into, table: 'events_by_type' })).rejects.toThrow(ProjectionCheckpointError);
      await expect(projectInto({ projection: openExecutions, store, into, table: 'events_by_type' })).rejects.toThrow(/belongs to projection "events-by-type", not "open-executions"/);

      const rebuilt = await projectInto({ projection, store, into, params: { prefix: 'intent-', label: 'intents' }, rebuild: true });
      expect(rebuilt.resumedFrom).toBeUndefined();
      const intents = { prefix: 'intent-', label: 'intents' };
      expect(await table('events_by_type', columns)).toEqual(normalised(projection.rows(fold(projection, all, intents), intents), columns));

      await projectInto({ projection, store, into, params: { prefix: 'execution-' }, table: 'by_type_unkeyed' });
      const unkeyed = { ...projection, name: 'events-by-type-unkeyed', key: undefined } as Projection<unknown>;
      const mine = await target.fresh(dir);
      const own = target.name === 'sqlite' ? new DatabaseSync(mine.slice('sqlite:'.length)) : undefined;
      own?.exec('CREATE TABLE mine (note TEXT)');
      own?.close();
      if (target.name === 'postgres') {
        const client = new Client({ connectionString: mine });
        await client.connect();
        await client.query('CREATE TABLE mine (note TEXT)');
        await client.end();
      }
      await expect(projectInto({ projection: unkeyed, store, into: mine, table: 'mine', params: { prefix: 'execution-' } })).rejects.toThrow(ProjectionTableConflictError);
      await expect(projectInto({ projection: unkeyed, store, into: mine, table: 'mine', params: { prefix: 'execution-' } })).rejects.toThrow(/no projection checkpoint names it/);

      // Without a key, each batch replaces the rows: the same table as with one.
      await projectInto({ projection: unkeyed, store, into, params: { prefix: 'execution-' }, table: 'unkeyed' });
      await appendMany(9, 'more');
      await projectInto({ projection: unkeyed, store, into, params: { prefix: 'execution-' }, table: 'unkeyed' });
      await projectInto({ projection, store, into, params: { prefix: 'execution-' }, table: 'by_type_unkeyed' });
      expect(await table('unkeyed', columns)).toEqual(await table('by_type_unkeyed', columns));
    });

    it(`given a state that is not JSON, when its batch is checkpointed on ${target.name}, then the run stops naming where`, async () => {
      const mapped: Projection<{ seen: Map<string, number> }> = {
        name: 'mapped',
        description: 'keeps a Map',
        initialState: () => ({ seen: new Map() }),
        evolve: (state, event) => (state.seen.set(event.type, 1), state),
        rows: (state) => [...state.seen.keys()].map((type) => ({ type })),
      };
      await appendMany(3);
      await expect(projectInto({ projection: mapped, store, into })).rejects.toThrow(ProjectionStateError);
      await expect(projectInto({ projection: mapped, store, into })).rejects.toThrow(/state\.seen is a Map/);
      expect(await checkpoint('mapped')).toBeUndefined();
    });

    it(`given a follow run killed with SIGKILL mid-run on ${target.name}, when the projection resumes, then the table holds exactly the rows of a single run`, { timeout: 90_000 }, async () => {
      await appendMany(1500);
      const head = await store.headPosition();
      const task: FollowTask = { storeFile: join(dir, 'events.db'), projection: EVENTS_BY_TYPE, into, params: { prefix: 'execution-', label: 'killed' }, batchEvents: 5, claimMs: 1_500 };
      const child = spawn(process.execPath, ['--import', 'tsx', FOLLOW_CHILD, JSON.stringify(task)], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', () => resolve());
        child.once('exit', (code) => reject(new Error(`the follow child ended (${code}) before a batch: ${stderr}`)));
      });
      child.kill('SIGKILL');
      await exited;
      const killedAt = Number((await checkpoint('events_by_type'))!['position']);
      expect(killedAt).toBeGreaterThan(0);
      expect(killedAt).toBeLessThan(head);

      const { projection } = await loadProjectionModule(EVENTS_BY_TYPE);
      // The killed run's claim lapses (it had 1.5 s); the resumed run waits for it.
      const resumed = await projectInto({ projection, store, into, params: { prefix: 'execution-', label: 'killed' }, wait: true });
      expect(resumed.resumedFrom).toBe(killedAt);
      await projectInto({ projection, store, into, params: { prefix: 'execution-', label: 'killed' }, table: 'single_run' });
      const columns = ['type', 'label', 'events', 'lastPosition', 'many'];
      const single = await table('single_run', columns);
      expect(single.length).toBeGreaterThan(0);
      expect(await table('events_by_type', columns)).toEqual(single);
      expect(Number((await checkpoint('events_by_type'))!['position'])).toBe(head);
    });
  });
}

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { systemClock } from '@oncegate/execution-journal';
import { acceptedPayment } from '@oncegate/host-decisions/testing';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the CLI runs as its own process, as the end-to-end suites run it
import type { GatewayFolder } from '../../../../../test/support/gateway-process';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-PostgreSQL harness
import { sharedPostgres } from '../../../../../test/support/shared-servers';
import { runCliHere } from '../testing/cli-in-process';

const LAUNCHER = fileURLToPath(new URL('../../../../../bin/oncegate.mjs', import.meta.url));

/** An analyst's module projection with a parameter and a key, as docs/journal.md shows one (no import needed). */
const EVENTS_BY_TYPE = `export const projection = {
  name: 'events-by-type',
  description: 'events of the streams under a prefix, by type',
  params: { prefix: { description: 'stream id prefix' } },
  key: ['type'],
  initialState: () => ({ byType: {} }),
  evolve(state, event, params) {
    if (!event.streamId.startsWith(params.prefix)) return state;
    return { byType: { ...state.byType, [event.type]: (state.byType[event.type] ?? 0) + 1 } };
  },
  rows: (state) => Object.entries(state.byType).map(([type, events]) => ({ type, events })),
};
`;

describe('oncegate projection run --into (the CLI on a SQLite data folder)', () => {
  let folder: GatewayFolder;
  let store: EventStore;
  const here = (...args: string[]) => runCliHere([...args, '--config', folder.configFile]);
  const rows = (file: string, sql: string) => {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      return db.prepare(sql).all();
    } finally {
      db.close();
    }
  };

  beforeAll(() => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-projection-cli-'));
    const dataDir = join(dir, 'data');
    const configFile = join(dir, 'oncegate.yaml');
    writeFileSync(join(dir, 'tools.yaml'), 'tools: []\n');
    writeFileSync(configFile, `data_dir: ${dataDir}\ncontracts: ${join(dir, 'tools.yaml')}\n`);
    mkdirSync(dataDir, { recursive: true });
    folder = { dir, dataDir, journal: dataDir, configFile, port: 0, url: '', dispose: () => rmSync(dir, { recursive: true, force: true }) };
    store = openSqliteEventStore({ file: join(dataDir, 'events.db') });
    writeFileSync(join(dir, 'events-by-type.mjs'), EVENTS_BY_TYPE);
  });

  afterAll(async () => {
    await store.close();
    folder.dispose();
  });

  it('given recorded calls, when runs-by-actor runs into a SQLite file, then the table holds a row per actor and run; the next run resumes; a module with a parameter writes its own table', async () => {
    await acceptedPayment(store, systemClock, { actor: 'agent:billing-bot', runId: 'run-1' });
    await acceptedPayment(store, systemClock, { actor: 'agent:refund-bot', runId: 'run-2' });
    const file = join(folder.dir, 'analysis.db');
    const first = await here('projection', 'run', 'runs-by-actor', '--into', file);
    expect(first.code).toBe(0);
    const head = await store.headPosition();
    expect(first.stderr).toContain(`runs-by-actor: 2 events to position ${head}; table runs_by_actor in sqlite:${file} holds 2 rows\n`);
    expect(rows(file, 'SELECT actor, run, executions FROM runs_by_actor ORDER BY actor')).toEqual([
      { actor: 'agent:billing-bot', run: 'run-1', executions: 1 },
      { actor: 'agent:refund-bot', run: 'run-2', executions: 1 },
    ]);

    await acceptedPayment(store, systemClock, { actor: 'agent:billing-bot', runId: 'run-1' });
    const second = await here('projection', 'run', 'runs-by-actor', '--into', `sqlite:${file}`);
    expect(second.code).toBe(0);
    expect(second.stderr).toContain(`(resumed after ${head})`);
    expect(rows(file, "SELECT executions FROM runs_by_actor WHERE actor = 'agent:billing-bot'")).toEqual([{ executions: 2 }]);

    const module = await here('projection', 'run', join(folder.dir, 'events-by-type.mjs'), '--param', 'prefix=execution-', '--into', file, '--table', 'by_type');
    expect(module.code).toBe(0);
    expect(rows(file, 'SELECT type, events FROM by_type')).toEqual([{ type: 'ExecutionAccepted', events: 3 }]);
    expect(rows(file, "SELECT projection, params FROM oncegate_projection_checkpoints WHERE table_name = 'by_type'")).toEqual([
      { projection: 'events-by-type', params: '{"prefix":"execution-"}' },
    ]);
  });

  it('given another run holding the table, when a run asks for it, then it is refused naming the holder and until when (exit 1)', async () => {
    const now = new Date();
    const until = new Date(now.getTime() + 60_000).toISOString();
    await store.claim('projection:held_runs', 'projection run on host-a pid 4242', until, now.toISOString());
    try {
      const refused = await here('projection', 'run', 'runs-by-actor', '--into', join(folder.dir, 'analysis.db'), '--table', 'held_runs');
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`projection:held_runs is held by projection run on host-a pid 4242 until ${until}: another run writes that table; stop it, wait for its claim to lapse, or pass --wait\n`);
    } finally {
      await store.releaseClaim('projection:held_runs', 'projection run on host-a pid 4242');
    }
  });

  it('given mistakes on the command line, when run, then each is a usage error naming the fix', async () => {
    expect(await here('projection', 'run', 'runs-by-actor', '--follow')).toMatchObject({ code: 2, stderr: '--follow needs --into <target>: a run is kept current, and claimed, as a SQL table\n' });
    expect((await here('projection', 'run', 'runs-by-actor', '--into', 'a.db', '--out', 'a.csv')).code).toBe(2);
    expect(await here('projection', 'run', 'runs-by-actor', '--into', 'analysis.xlsx')).toMatchObject({
      code: 2,
      stderr: '--into analysis.xlsx: give sqlite:<file>, a file ending .db or .sqlite, or postgres://user@host:5432/database\n',
    });
    expect(await here('projection', 'run', 'runs-by-actor', '--into', join(folder.dir, 'a.db'), '--table', 'runs-by-actor')).toMatchObject({ code: 2, stderr: expect.stringContaining('"runs-by-actor" cannot be a table name') });
    const journal = await here('projection', 'run', 'runs-by-actor', '--into', join(folder.dir, 'a.db'), '--follow', '--journal', join(folder.dir, 'journal.ndjson'));
    expect(journal).toMatchObject({ code: 2, stderr: '--follow reads the store as it grows; an exported journal (--journal) does not grow\n' });
    expect(await here('projection', 'run', 'runs-by-actor', '--into', join(folder.dataDir, 'events.db'))).toMatchObject({
      code: 2,
      stderr: `--into ${join(folder.dataDir, 'events.db')}: that is the event store's file; write the table into a file of its own (e.g. analysis.db)\n`,
    });
    const unreachable = await here('projection', 'run', 'runs-by-actor', '--into', 'postgres://analyst:pa55word@127.0.0.1:1/analysis');
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr).toMatch(/^--into postgres:\/\/analyst@127\.0\.0\.1:1\/analysis: cannot connect: /);
    expect(unreachable.stderr).not.toContain('pa55word');
  });

  it('given a PostgreSQL URL with a password, when the run writes there, then the table is in that database and nothing printed holds the password', async () => {
    const server = await sharedPostgres();
    const database = `projection_cli_${randomBytes(5).toString('hex')}`;
    const admin = new Client({ connectionString: server.url() });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    try {
      // The shared server trusts postgres from loopback: the password is carried, and must never be shown.
      const url = `postgres://postgres:s3cret-word@127.0.0.1:${server.port}/${database}`;
      const run = await here('projection', 'run', 'runs-by-actor', '--into', url);
      expect(run.code).toBe(0);
      expect(run.stderr).toContain(`table runs_by_actor in postgres://postgres@127.0.0.1:${server.port}/${database} holds 2 rows`);
      expect(`${run.stdout}${run.stderr}`).not.toContain('s3cret-word');
      const client = new Client({ connectionString: server.url(database) });
      await client.connect();
      expect((await client.query('SELECT actor, executions FROM runs_by_actor ORDER BY actor')).rows).toEqual([
        { actor: 'agent:billing-bot', executions: '2' },
        { actor: 'agent:refund-bot', executions: '1' },
      ]);
      await client.end();
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
    }
  });

  it('given a follow run as its own process, when calls are recorded, then its table picks them up; SIGINT checkpoints, says where it stopped and exits 0', { timeout: 60_000 }, async () => {
    const file = join(folder.dir, 'live.db');
    const child = spawn(process.execPath, [LAUNCHER, 'projection', 'run', 'runs-by-actor', '--into', file, '--follow', '--config', folder.configFile], {
      cwd: folder.dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const following = new Promise<void>((resolve, reject) => {
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes('following (Ctrl-C or SIGTERM to stop)')) resolve();
      });
      void exited.then((code) => reject(new Error(`the follow run ended (${code}): ${stderr}`)));
    });
    await following;
    expect(stderr).toContain(`runs-by-actor: caught up at position ${await store.headPosition()}; following`);

    await acceptedPayment(store, systemClock, { actor: 'agent:live-bot', runId: 'run-live' });
    const head = await store.headPosition();
    const deadline = Date.now() + 20_000;
    while (rows(file, "SELECT run FROM runs_by_actor WHERE actor = 'agent:live-bot'").length === 0) {
      if (Date.now() > deadline) throw new Error(`the live row never came: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(stderr).toContain(`runs-by-actor: stopped at position ${head}; checkpointed; table runs_by_actor in sqlite:${file} holds 3 rows\n`);
    expect(rows(file, "SELECT position FROM oncegate_projection_checkpoints WHERE table_name = 'runs_by_actor'")).toEqual([{ position: head }]);
    expect(await store.readClaims('projection:')).toEqual([]);
  });
});

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptExecution, authorize, delivered, dispatch, observe, requireReview, unknownOutcome } from '@oncegate/domain/testing';
import type { EventStore } from '@oncegate/event-store';
import { openPostgresEventStore } from '@oncegate/event-store-postgres';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { ExecutionsIndex, SqliteIndexTables } from '@oncegate/executions-index';
import { appendHistory, executionIdOf, historyFor } from '@oncegate/executions-index/testing';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-PostgreSQL harness
import { sharedPostgres } from '../../../../../test/support/shared-servers';
import { runCliHere } from '../testing/cli-in-process';
import { localTime } from './executions-commands';

/** The moment the histories are written from, fixed once: a minute that turns during the run changes no expectation. */
const startedAt = Date.now();
const minutesAgo = (minutes: number) => new Date(startedAt - minutes * 60_000).toISOString();
const call = (actor: string, operationClass: 'irreversible' | 'idempotent_write', tool: string, minutes: number) =>
  acceptExecution({
    operationClass,
    redeliveryGraceMs: operationClass === 'irreversible' ? null : 60_000,
    now: minutesAgo(minutes),
    record: { ...acceptExecution().record, actor, tool, target: 'payments.example:8443/v1' },
  });

describe('oncegate executions (the CLI in process, on a SQLite data folder)', () => {
  let dir: string;
  let configFile: string;
  let store: EventStore;
  const run = (...args: string[]) => runCliHere([...args, '--config', configFile]);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-executions-cli-'));
    const dataDir = join(dir, 'data');
    configFile = join(dir, 'oncegate.yaml');
    writeFileSync(join(dir, 'tools.yaml'), 'tools: []\n');
    writeFileSync(configFile, `data_dir: ${dataDir}\ncontracts: ${join(dir, 'tools.yaml')}\n`);
    mkdirSync(dataDir, { recursive: true });
    store = openSqliteEventStore({ file: join(dataDir, 'events.db') });
    // 1, 2: agent:payments, irreversible, lost outcome, within the hour; 3: the same, two hours ago; 4: another agent;
    // 5: agent:payments, idempotent and delivered.
    const histories = [
      [1, call('agent:payments', 'irreversible', 'send_payment', 20), 'unknown'],
      [2, call('agent:payments', 'irreversible', 'refund', 10), 'review'],
      [3, call('agent:payments', 'irreversible', 'send_payment', 120), 'unknown'],
      [4, call('agent:other', 'irreversible', 'send_payment', 5), 'unknown'],
      [5, call('agent:payments', 'idempotent_write', 'set_limit', 1), 'delivered'],
    ] as const;
    for (const [n, accept, end] of histories) {
      const id = executionIdOf(n);
      const tail = end === 'delivered' ? [observe(), delivered()] : end === 'review' ? [unknownOutcome(), requireReview()] : [unknownOutcome()];
      await appendHistory(store, id, historyFor(id, accept, authorize(), dispatch(), ...tail));
    }
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("given no gateway running, the analyst's question is answered by one command, the index caught up first", async () => {
    const answer = await run('executions', 'list', '--actor', 'agent:payments', '--class', 'irreversible', '--state', 'outcome_unknown,needs_review', '--since', '1h');
    expect(answer).toMatchObject({ code: 0, stderr: '' });
    const lines = answer.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ACCEPTED\s+EXECUTION\s+TOOL\s+ACTOR\s+CLASS\s+STATE\s+ATTEMPTS\s+HOST\s+RUN\s+LAST CHANGE$/);
    expect(lines.slice(1).map((line) => line.split(/\s{2,}/)[1])).toEqual([executionIdOf(2), executionIdOf(1)]);
    expect(lines[1]).toContain('needs_review');
    expect(lines[1]).toContain(localTime(minutesAgo(10)).slice(0, 16));
    expect(lines[1]).toContain('payments.example:8443');
  });

  it('given --json, --csv and a limit, every column comes out and the next page follows the printed cursor', async () => {
    const first = JSON.parse((await run('executions', 'list', '--actor', 'agent:payments', '--limit', '2', '--json')).stdout);
    expect(first.executions.map((row: { executionId: string }) => row.executionId)).toEqual([executionIdOf(5), executionIdOf(2)]);
    expect(first.index).toMatchObject({ behind: 0 });
    const second = JSON.parse((await run('executions', 'list', '--actor', 'agent:payments', '--limit', '2', '--json', '--cursor', first.nextCursor)).stdout);
    expect(second.executions.map((row: { executionId: string }) => row.executionId)).toEqual([executionIdOf(1), executionIdOf(3)]);
    expect(second.nextCursor).toBeNull();
    const table = await run('executions', 'list', '--actor', 'agent:payments', '--limit', '2');
    expect(table.stdout).toContain(`next page: --cursor ${first.nextCursor}`);
    const csv = await run('executions', 'list', '--tool', 'set_limit', '--csv');
    expect(csv.stdout.split('\r\n')[0]).toBe(
      'executionId,tool,actor,operationClass,state,runId,channel,target,targetHost,attempts,retriesAttached,acceptedAt,lastChangeAt,lastPosition,firstDispatchedAt,targetStatus,exitCode,errorAnswer,reviewReason,denialBasis,approval,fingerprint',
    );
    expect(csv.stdout).toContain(`${executionIdOf(5)},set_limit,agent:payments,idempotent_write,delivered`);
  });

  it('given a state, class or time that is not one, exit 2 naming it, with the closest name', async () => {
    const state = await run('executions', 'list', '--state', 'outcome_unknwn');
    expect(state.code).toBe(2);
    expect(state.stderr).toContain("--state 'outcome_unknwn' is not an execution state — did you mean 'outcome_unknown'?");
    expect((await run('executions', 'list', '--class', 'irreversable')).stderr).toContain("did you mean 'irreversible'?");
    expect((await run('executions', 'list', '--since', 'last tuesday')).stderr).toContain('30m, 1h, 2d');
  });

  it('given a damaged index file, the command says so and how to fold it again; once deleted, it is', async () => {
    const file = join(dir, 'data', 'executions-index.db');
    for (const part of ['', '-wal', '-shm']) rmSync(`${file}${part}`, { force: true });
    writeFileSync(file, 'not a database\n'.repeat(100));
    const damaged = await run('executions', 'list');
    expect(damaged.code).toBe(1);
    expect(damaged.stderr).toContain(`the executions index could not be opened: `);
    expect(damaged.stderr).toContain(`delete ${file} and run the command again`);
    rmSync(file);
    expect(JSON.parse((await run('executions', 'list', '--json')).stdout).executions).toHaveLength(5);
  });

  it('given a gateway holding the index, the command answers from it as it is and says how far behind it is', async () => {
    const tables = new SqliteIndexTables({ file: join(dir, 'data', 'executions-index.db') });
    const holder = new ExecutionsIndex({ store, tables, owner: 'gateway@test', claimTtlMs: 60_000 });
    await holder.catchUp();
    const id = executionIdOf(6);
    await appendHistory(store, id, historyFor(id, call('agent:payments', 'irreversible', 'send_payment', 0)));
    const answer = await run('executions', 'list', '--actor', 'agent:payments', '--json');
    expect(answer.code).toBe(0);
    expect(JSON.parse(answer.stdout).executions.map((row: { executionId: string }) => row.executionId)).not.toContain(id);
    expect(answer.stderr).toContain('the executions index is 1 event(s) behind the journal');
    expect(answer.stderr).toContain('a running gateway holds the index');
    expect((await run('executions', 'rebuild')).code).toBe(1);
    await holder.stop();
    await tables.close();

    const rebuilt = await run('executions', 'rebuild');
    expect(rebuilt).toMatchObject({ code: 0 });
    expect(rebuilt.stdout).toMatch(/^rebuilt the executions index from \d+ event\(s\)/);
    expect(JSON.parse((await run('executions', 'list', '--actor', 'agent:payments', '--json')).stdout).executions[0].executionId).toBe(id);
  });
});

describe('oncegate executions (the CLI in process, on a PostgreSQL store)', () => {
  let dir: string;
  let configFile: string;
  let store: EventStore;
  let database: string;
  let serverUrl: (database?: string) => string;
  const run = (...args: string[]) => runCliHere([...args, '--config', configFile]);

  beforeAll(async () => {
    const server = await sharedPostgres();
    serverUrl = server.url;
    database = `executions_cli_${randomBytes(5).toString('hex')}`;
    const admin = new Client({ connectionString: server.url() });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${database}"`);
    await admin.end();
    dir = mkdtempSync(join(tmpdir(), 'oncegate-executions-cli-pg-'));
    configFile = join(dir, 'oncegate.yaml');
    writeFileSync(join(dir, 'tools.yaml'), 'tools: []\n');
    writeFileSync(configFile, `data_dir: ${join(dir, 'data')}\ncontracts: ${join(dir, 'tools.yaml')}\nstore: { driver: postgres, url: '${server.url(database)}' }\n`);
    store = await openPostgresEventStore({ url: server.url(database) });
    for (const n of [1, 2]) {
      const id = executionIdOf(n);
      await appendHistory(store, id, historyFor(id, call('agent:payments', 'irreversible', 'send_payment', 30 - n), authorize(), dispatch(), unknownOutcome(), requireReview()));
    }
  });

  afterAll(async () => {
    await store.close();
    const admin = new Client({ connectionString: serverUrl() });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await admin.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it("given a journal on PostgreSQL and no gateway, the index's tables are made beside it and the question is answered", async () => {
    const answer = await run('executions', 'list', '--actor', 'agent:payments', '--state', 'needs_review', '--since', '1h', '--json');
    expect(answer).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(answer.stdout).executions.map((row: { executionId: string }) => row.executionId)).toEqual([executionIdOf(2), executionIdOf(1)]);
    const tables = new Client({ connectionString: serverUrl(database) });
    await tables.connect();
    const { rows } = await tables.query("SELECT count(*)::int AS n FROM oncegate.executions_index WHERE state = 'needs_review'");
    await tables.end();
    expect(rows[0].n).toBe(2);
  });
});

/**
 * The executions index (docs/executions-search.md): how fast it folds the journal, and how fast it answers filtered
 * pages over a million executions, on the SQLite file and on PostgreSQL 15.
 *
 * The million rows are written directly (the rows a fold would give, spread over 30 days, 50 agents, 40 tools, the
 * five classes and the states in realistic proportions): folding a million executions' events would only measure
 * the fold again, which the first table measures on its own from generated events.
 */
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { ExecutionId, ExecutionStatus, OperationClass } from '@oncegate/domain';
import { acceptExecution, authorize, delivered, denyExecution, dispatch, observe, requestApproval, requireReview, unknownOutcome } from '@oncegate/domain/testing';
import type { RecordedEvent } from '@oncegate/event-store';
import {
  ExecutionsIndex,
  executionIdsOf,
  foldBatch,
  PostgresIndexTables,
  SqliteIndexTables,
  type ExecutionRow,
  type ExecutionsQuery,
  type FoldedExecution,
  type IndexTables,
} from '@oncegate/executions-index';
import { executionIdOf, historyFor, recorded } from '@oncegate/executions-index/testing';
import { startPostgres } from '../test/support/postgres';
import { machineLine, ms, percentile, printTable, rate } from './table';

const DAY_MS = 86_400_000;
const AGENTS = 50;
const TOOLS = 40;
const HOSTS = 30;
const CLASSES: readonly OperationClass[] = ['read_only', 'idempotent_write', 'conditional_write', 'irreversible', 'remote_command'];
/** Most executions end delivered; a few are held, unknown, denied or waiting. */
const STATES: readonly [ExecutionStatus, number][] = [
  ['delivered', 0.8],
  ['completed_result_not_delivered', 0.06],
  ['completed', 0.04],
  ['failed', 0.03],
  ['denied', 0.02],
  ['needs_review', 0.015],
  ['outcome_unknown', 0.01],
  ['awaiting_approval', 0.01],
  ['expired', 0.01],
  ['cancelled', 0.005],
];

/** A small deterministic generator, so every run builds the same index. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function stateOf(draw: number): ExecutionStatus {
  let sum = 0;
  for (const [state, share] of STATES) {
    sum += share;
    if (draw < sum) return state;
  }
  return 'delivered';
}

/** The `n`-th of `count` rows, accepted in order over the 30 days before `nowMs`. */
function syntheticRow(n: number, count: number, nowMs: number, next: () => number): ExecutionRow {
  const acceptedMs = nowMs - 30 * DAY_MS + Math.floor(((n + next()) * 30 * DAY_MS) / count);
  const acceptedAt = new Date(acceptedMs).toISOString();
  const host = `api-${Math.floor(next() * HOSTS)}.internal.example`;
  const state = stateOf(next());
  return {
    executionId: executionIdOf(n),
    tool: `tool_${Math.floor(next() * TOOLS)}`,
    actor: `agent:bot-${Math.floor(next() * AGENTS)}`,
    operationClass: CLASSES[Math.floor(next() * CLASSES.length)]!,
    state,
    runId: next() < 0.5 ? `run-${Math.floor(n / 20)}` : null,
    channel: next() < 0.8 ? 'http' : 'ssh',
    target: `${host}/v1/things`,
    targetHost: host,
    attempts: state === 'denied' || state === 'awaiting_approval' ? 0 : 1,
    retriesAttached: next() < 0.1 ? 1 : 0,
    acceptedAt,
    lastChangeAt: new Date(acceptedMs + 800).toISOString(),
    lastPosition: n * 5 + 4,
    firstDispatchedAt: state === 'denied' ? null : new Date(acceptedMs + 300).toISOString(),
    targetStatus: state === 'delivered' ? 200 : null,
    exitCode: null,
    errorAnswer: false,
    reviewReason: state === 'needs_review' ? 'irreversible_outcome_unknown' : null,
    denialBasis: state === 'denied' ? 'policy' : null,
    approval: null,
    fingerprint: `hmac-sha256:k1:${n.toString(16).padStart(64, '0')}`,
  };
}

async function buildRows(tables: SqliteIndexTables | PostgresIndexTables, count: number, nowMs: number): Promise<number> {
  const next = random(7);
  const chunk = 10_000;
  const start = process.hrtime.bigint();
  for (let first = 0; first < count; first += chunk) {
    const rows = Array.from({ length: Math.min(chunk, count - first) }, (_, i) => syntheticRow(first + i, count, nowMs, next));
    await tables.insertRows(rows);
  }
  if (tables instanceof PostgresIndexTables) await tables.analyze();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** Generated journals: histories of the domain's fixtures, `window` executions interleaved, as a busy gateway writes them. */
function generatedJournal(executions: number, window = 200): RecordedEvent[] {
  const templates = [
    (id: ReturnType<typeof executionIdOf>) => historyFor(id, acceptExecution(), authorize(), dispatch(), observe(), delivered()),
    (id: ReturnType<typeof executionIdOf>) =>
      historyFor(id, acceptExecution({ operationClass: 'irreversible', redeliveryGraceMs: null }), authorize(), dispatch(), unknownOutcome(), requireReview()),
    (id: ReturnType<typeof executionIdOf>) => historyFor(id, acceptExecution(), denyExecution()),
    (id: ReturnType<typeof executionIdOf>) => historyFor(id, acceptExecution(), requestApproval()),
  ];
  const events: RecordedEvent[] = [];
  for (let first = 0; first < executions; first += window) {
    const histories = Array.from({ length: Math.min(window, executions - first) }, (_, i) => {
      const id = executionIdOf(first + i);
      return recorded(id, templates[(first + i) % templates.length]!(id), 0);
    });
    for (let step = 0; histories.some((history) => step < history.length); step += 1) {
      for (const history of histories) {
        const event = history[step];
        if (event !== undefined) events.push({ ...event, position: events.length + 1 });
      }
    }
  }
  return events;
}

/**
 * Folds the generated journal into `tables` as the running index does: the states the last batch folded are kept,
 * the rest looked up in the tables (PostgreSQL; the SQLite file keeps none, and every execution here has an event in
 * each batch its events span), the batch folded, one commit per batch of 1000.
 */
async function foldRate(tables: IndexTables, events: readonly RecordedEvent[]): Promise<{ seconds: number }> {
  const start = process.hrtime.bigint();
  let from = await tables.position();
  let last = new Map<ExecutionId, FoldedExecution>();
  for (let at = 0; at < events.length; at += 1000) {
    const batch = events.slice(at, at + 1000);
    const known = await tables.foldedStates(executionIdsOf(batch).filter((id) => !last.has(id)));
    for (const [id, state] of last) known.set(id, state);
    const { folded, rows } = foldBatch(batch, known);
    const to = batch.at(-1)!.position;
    await tables.commit({ from, to, folded, rows });
    from = to;
    last = folded;
  }
  return { seconds: Number(process.hrtime.bigint() - start) / 1e9 };
}

interface Case {
  readonly name: string;
  /** The query of the i-th sample. */
  readonly query: (i: number) => ExecutionsQuery;
}

function cases(nowMs: number): Case[] {
  return [
    {
      name: 'agent + class + state + last hour',
      query: (i) => ({ actors: [`agent:bot-${i % AGENTS}`], classes: ['irreversible'], states: ['outcome_unknown', 'needs_review'], sinceMs: nowMs - 3_600_000 }),
    },
    {
      name: 'agent + class + state + last 7 days',
      query: (i) => ({ actors: [`agent:bot-${i % AGENTS}`], classes: ['irreversible'], states: ['outcome_unknown', 'needs_review'], sinceMs: nowMs - 7 * DAY_MS }),
    },
    { name: 'agent + last day', query: (i) => ({ actors: [`agent:bot-${i % AGENTS}`], sinceMs: nowMs - DAY_MS }) },
    { name: 'tool', query: (i) => ({ tools: [`tool_${i % TOOLS}`] }) },
    { name: 'state only (needs_review)', query: () => ({ states: ['needs_review'] }) },
    { name: 'state only (two states)', query: () => ({ states: ['outcome_unknown', 'needs_review'] }) },
    { name: 'class + state (irreversible, unknown)', query: () => ({ classes: ['irreversible'], states: ['outcome_unknown'] }) },
    { name: 'host + last day', query: (i) => ({ hosts: [`api-${i % HOSTS}.internal.example`], sinceMs: nowMs - DAY_MS }) },
    { name: 'newest, no filter', query: () => ({}) },
  ];
}

/** p50/p95 of `samples` pages of 50 for each case, then a deep page: the 200th page of a tool, reached by cursor. */
async function timeQueries(index: ExecutionsIndex, store: string, nowMs: number, samples: number): Promise<Record<string, string | number>[]> {
  const rows: Record<string, string | number>[] = [];
  const timed = async (name: string, query: (i: number) => ExecutionsQuery) => {
    const times: number[] = [];
    let found = 0;
    for (let i = 0; i < samples; i += 1) {
      const start = process.hrtime.bigint();
      const page = await index.page({ ...query(i), limit: 50 });
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
      found += page.executions.length;
    }
    times.sort((a, b) => a - b);
    rows.push({ store, query: name, 'rows/page': Math.round(found / samples), p50_ms: ms(percentile(times, 50)), p95_ms: ms(percentile(times, 95)) });
  };
  for (const entry of cases(nowMs)) await timed(entry.name, entry.query);
  // Deep pages: the cursor of the 200th page of each tool, found once, then that page timed.
  const deep: ExecutionsQuery[] = [];
  for (let t = 0; t < Math.min(samples, TOOLS); t += 1) {
    let query: ExecutionsQuery = { tools: [`tool_${t}`], limit: 50 };
    for (let page = 0; page < 199; page += 1) {
      const answer = await index.page(query);
      const last = answer.executions.at(-1);
      if (answer.nextCursor === null || last === undefined) break;
      query = { ...query, after: { acceptedMs: Date.parse(last.acceptedAt), executionId: last.executionId } };
    }
    deep.push(query);
  }
  await timed('tool, 200th page via cursor', (i) => deep[i % deep.length]!);
  return rows;
}

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    allowNegative: true,
    options: {
      dir: { type: 'string', default: '.oncegate/bench' },
      executions: { type: 'string', default: '1000000' },
      'fold-executions': { type: 'string', default: '20000' },
      samples: { type: 'string', default: '40' },
      postgres: { type: 'boolean', default: true },
      sqlite: { type: 'boolean', default: true },
    },
  });
  const dir = resolve(values.dir!, `executions-search-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const count = Number(values.executions);
  const samples = Number(values.samples);
  const nowMs = Date.now();
  process.stdout.write(`Executions search benchmark — ${machineLine()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, data in ${dir}\n`);

  const journal = generatedJournal(Number(values['fold-executions']));
  const foldRows: Record<string, string | number>[] = [];
  const buildRowsTable: Record<string, string | number>[] = [];
  const queryRows: Record<string, string | number>[] = [];
  const printTables = (store: string) => {
    const of = (rows: Record<string, string | number>[]) => rows.filter((row) => row['store'] === store);
    printTable(`${store} — fold: generated execution events into the index (look-up, evolve, one transaction per 1000 events; store reads not included)`, of(foldRows));
    printTable(`${store} — building the index: rows written directly, 10,000 per transaction`, of(buildRowsTable));
    printTable(`${store} — filtered pages of 50, newest first, over ${count.toLocaleString('en-US')} executions (${samples} samples each)`, of(queryRows));
  };
  const noStore = { headPosition: async () => 0 } as unknown as ConstructorParameters<typeof ExecutionsIndex>[0]['store'];
  try {
    if (values.sqlite) {
      const folding = new SqliteIndexTables({ file: join(dir, 'fold.db') });
      const { seconds } = await foldRate(folding, journal);
      foldRows.push({ store: 'sqlite', executions: Number(values['fold-executions']), events: journal.length, seconds: seconds.toFixed(2), 'events/s': rate(journal.length, seconds) });
      await folding.close();

      const file = join(dir, 'executions-index.db');
      const tables = new SqliteIndexTables({ file });
      const seconds1m = await buildRows(tables, count, nowMs);
      buildRowsTable.push({ store: 'sqlite', rows: count, seconds: seconds1m.toFixed(1), 'rows/s': rate(count, seconds1m), size_MiB: Math.round(statSync(file).size / 2 ** 20) });
      queryRows.push(...(await timeQueries(new ExecutionsIndex({ store: noStore, tables, owner: 'bench' }), 'sqlite', nowMs, samples)));
      await tables.close();
      rmSync(file, { force: true });
      // Printed as soon as they are taken: a PostgreSQL run that fails later does not lose them.
      printTables('sqlite');
    }
    if (values.postgres) {
      // PostgreSQL 15 on loopback with its durable defaults, data in the temporary folder.
      const server = await startPostgres({ fast: false });
      try {
        const folding = await PostgresIndexTables.open({ url: server.url(), schema: 'bench_fold' });
        const { seconds } = await foldRate(folding, journal);
        foldRows.push({ store: 'postgres 15', executions: Number(values['fold-executions']), events: journal.length, seconds: seconds.toFixed(2), 'events/s': rate(journal.length, seconds) });
        await folding.close();

        const tables = await PostgresIndexTables.open({ url: server.url(), schema: 'bench' });
        const seconds1m = await buildRows(tables, count, nowMs);
        buildRowsTable.push({ store: 'postgres 15', rows: count, seconds: seconds1m.toFixed(1), 'rows/s': rate(count, seconds1m), size_MiB: '-' });
        queryRows.push(...(await timeQueries(new ExecutionsIndex({ store: noStore, tables, owner: 'bench' }), 'postgres 15', nowMs, samples)));
        await tables.close();
      } finally {
        await server.stop();
      }
      printTables('postgres 15');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The index's tables, one port with an adapter per store: a SQLite file beside the events database, or tables in
 * the PostgreSQL store's schema. Both hold
 *
 * - `executions_index`: one row per execution (`ExecutionRow`), with the indexes that keep filtered pages, newest
 *   first, a walk down one index;
 * - `executions_index_meta`: the checkpoint (`position`), written in the same transaction as the rows;
 *
 * and on PostgreSQL `executions_index_fold` too: each execution's folded domain state (JSON) and the position it was
 * folded to, which the next event of that execution is folded onto (there, reading an execution's stream again is a
 * round trip to the server). The SQLite file keeps none: a state the folding instance no longer holds is folded
 * again from the execution's stream (`ExecutionsIndex`).
 */
import type { ExecutionId } from '@oncegate/domain';
import type { ExecutionRow, FoldedExecution } from './execution-row';
import type { ExecutionsQuery } from './executions-query';

/**
 * One batch's writes: rows and folded states of the executions it touched (the states where the tables keep them), and
 * the checkpoint's move from `from` to `to`.
 */
export interface IndexBatch {
  readonly from: number;
  readonly to: number;
  readonly folded: ReadonlyMap<ExecutionId, FoldedExecution>;
  readonly rows: readonly ExecutionRow[];
}

export interface IndexTables {
  /** Where the index is, as it may be printed (never a password). */
  readonly location: string;
  /** The checkpoint: the last global position folded (0 for an empty index). */
  position(): Promise<number>;
  /** The folded states of these executions that the tables keep (none on SQLite). */
  foldedStates(ids: readonly ExecutionId[]): Promise<Map<ExecutionId, FoldedExecution>>;
  /**
   * Writes the batch in one transaction, only when the checkpoint is still `from`: another instance that moved it
   * first wins, and this returns false with nothing written.
   */
  commit(batch: IndexBatch): Promise<boolean>;
  /** Up to `limit + 1` rows matching the query, newest first (accepted at, then execution id). */
  select(query: ExecutionsQuery, limit: number): Promise<ExecutionRow[]>;
  /** Drops every row (and folded state) and sets the checkpoint back to 0: the next catch-up folds the journal again. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/** A column of `executions_index`: its name, the row's field, and its SQL type (SQLite, PostgreSQL). */
interface Column {
  readonly name: string;
  readonly field: keyof ExecutionRow;
  readonly sqlite: string;
  readonly postgres: string;
}

const column = (name: string, field: keyof ExecutionRow, sqlite: string, postgres: string): Column => ({ name, field, sqlite, postgres });

/** The row's columns in table order; `accepted_ms` (derived from `acceptedAt`) follows them. */
export const ROW_COLUMNS: readonly Column[] = [
  column('execution_id', 'executionId', 'TEXT PRIMARY KEY', 'text PRIMARY KEY'),
  column('tool', 'tool', 'TEXT NOT NULL', 'text NOT NULL'),
  column('actor', 'actor', 'TEXT NOT NULL', 'text NOT NULL'),
  column('operation_class', 'operationClass', 'TEXT NOT NULL', 'text NOT NULL'),
  column('state', 'state', 'TEXT NOT NULL', 'text NOT NULL'),
  column('run_id', 'runId', 'TEXT', 'text'),
  column('channel', 'channel', 'TEXT NOT NULL', 'text NOT NULL'),
  column('target', 'target', 'TEXT NOT NULL', 'text NOT NULL'),
  column('target_host', 'targetHost', 'TEXT NOT NULL', 'text NOT NULL'),
  column('attempts', 'attempts', 'INTEGER NOT NULL CHECK (attempts >= 0)', 'integer NOT NULL CHECK (attempts >= 0)'),
  column('retries_attached', 'retriesAttached', 'INTEGER NOT NULL', 'integer NOT NULL'),
  column('accepted_at', 'acceptedAt', 'TEXT NOT NULL', 'text NOT NULL'),
  column('last_change_at', 'lastChangeAt', 'TEXT NOT NULL', 'text NOT NULL'),
  column('last_position', 'lastPosition', 'INTEGER NOT NULL', 'bigint NOT NULL'),
  column('first_dispatched_at', 'firstDispatchedAt', 'TEXT', 'text'),
  column('target_status', 'targetStatus', 'INTEGER', 'integer'),
  column('exit_code', 'exitCode', 'INTEGER', 'integer'),
  column('error_answer', 'errorAnswer', 'INTEGER NOT NULL', 'boolean NOT NULL'),
  column('review_reason', 'reviewReason', 'TEXT', 'text'),
  column('denial_basis', 'denialBasis', 'TEXT', 'text'),
  column('approval', 'approval', 'TEXT', 'text'),
  column('fingerprint', 'fingerprint', 'TEXT NOT NULL', 'text NOT NULL'),
];

/**
 * The secondary indexes: each filter an analyst starts from, then newest first, so a page reads its rows in order
 * and stops at the limit. The time range alone walks the primary order index.
 */
export const ROW_INDEXES: readonly { readonly name: string; readonly columns: readonly string[]; readonly where?: string }[] = [
  { name: 'executions_index_newest', columns: ['accepted_ms', 'execution_id'] },
  { name: 'executions_index_actor', columns: ['actor', 'accepted_ms', 'execution_id'] },
  { name: 'executions_index_actor_class_state', columns: ['actor', 'operation_class', 'state', 'accepted_ms', 'execution_id'] },
  { name: 'executions_index_tool', columns: ['tool', 'accepted_ms', 'execution_id'] },
  { name: 'executions_index_state', columns: ['state', 'accepted_ms', 'execution_id'] },
  { name: 'executions_index_class_state', columns: ['operation_class', 'state', 'accepted_ms', 'execution_id'] },
  { name: 'executions_index_run', columns: ['run_id', 'accepted_ms', 'execution_id'], where: 'run_id IS NOT NULL' },
  { name: 'executions_index_host', columns: ['target_host', 'accepted_ms', 'execution_id'] },
];

/** The row's values in `ROW_COLUMNS` order, then `accepted_ms`. */
export function rowValues(row: ExecutionRow, acceptedMs: number): (string | number | boolean | null)[] {
  return [...ROW_COLUMNS.map((col) => row[col.field] as string | number | boolean | null), acceptedMs];
}

/** A row read back: SQL names to the row's fields (SQLite's 0/1 back to a boolean). */
export function rowFromRecord(record: Readonly<Record<string, unknown>>): ExecutionRow {
  const row: Record<string, unknown> = {};
  for (const col of ROW_COLUMNS) row[col.field] = record[col.name] ?? null;
  row['errorAnswer'] = row['errorAnswer'] === true || row['errorAnswer'] === 1;
  row['lastPosition'] = Number(row['lastPosition']);
  return row as unknown as ExecutionRow;
}

/** The WHERE clause and its values for a query, with `?`-style (SQLite) or `$n`-style (PostgreSQL) parameters. */
export function whereOf(query: ExecutionsQuery, placeholder: (index: number) => string): { sql: string; values: (string | number)[] } {
  const values: (string | number)[] = [];
  const clauses: string[] = [];
  const param = (value: string | number): string => {
    values.push(value);
    return placeholder(values.length);
  };
  const anyOf = (name: string, list: readonly string[] | undefined) => {
    if (list === undefined || list.length === 0) return;
    clauses.push(list.length === 1 ? `${name} = ${param(list[0]!)}` : `${name} IN (${list.map((value) => param(value)).join(', ')})`);
  };
  anyOf('tool', query.tools);
  anyOf('actor', query.actors);
  anyOf('operation_class', query.classes);
  anyOf('state', query.states);
  anyOf('run_id', query.runIds);
  anyOf('channel', query.channels);
  anyOf('target_host', query.hosts);
  if (query.sinceMs !== undefined) clauses.push(`accepted_ms >= ${param(query.sinceMs)}`);
  if (query.untilMs !== undefined) clauses.push(`accepted_ms < ${param(query.untilMs)}`);
  if (query.after !== undefined) {
    // Keyset paging: strictly after the cursor in (accepted_ms DESC, execution_id DESC) order. A row value, so both
    // planners start the index range at the cursor instead of filtering every newer entry.
    clauses.push(`(accepted_ms, execution_id) < (${param(query.after.acceptedMs)}, ${param(query.after.executionId)})`);
  }
  return { sql: clauses.length === 0 ? '' : `WHERE ${clauses.join(' AND ')}`, values };
}

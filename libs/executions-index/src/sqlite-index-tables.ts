/**
 * The executions index on the embedded store: a SQLite file of its own beside `events.db`, so that folding and
 * analysts' queries never take the event writer's lock. It keeps the rows and the checkpoint only, no folded states:
 * an execution's state that the folding instance no longer holds is folded again from its stream, which the journal
 * beside it reads in microseconds (`ExecutionsIndex`). Kept, the states were more than half of the file (about
 * 1.5 KiB of JSON an execution, against 1.2 KiB for its row and the row's indexes) and of the pages every batch wrote.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import type { ExecutionId } from '@oncegate/domain';
import { instantMs, type FoldedExecution } from './execution-row';
import type { ExecutionsQuery } from './executions-query';
import { ROW_COLUMNS, ROW_INDEXES, rowFromRecord, rowValues, whereOf, type IndexBatch, type IndexTables } from './index-tables';
import type { ExecutionRow } from './execution-row';

/** The index file's name in the data folder. */
export const SQLITE_INDEX_FILE = 'executions-index.db';

/** 2: no folded states (`executions_index_fold`, which version 1 kept, is dropped at open). */
const SCHEMA_VERSION = '2';

export interface SqliteIndexTablesOptions {
  readonly file: string;
}

export class SqliteIndexTables implements IndexTables {
  readonly location: string;
  private readonly db: DatabaseSync;
  /** The statements every batch runs, prepared once (the fold commits a batch every few calls under load). */
  private readonly statements: { position: StatementSync; upsertRow: StatementSync; movePosition: StatementSync };

  constructor(options: SqliteIndexTablesOptions) {
    this.location = options.file;
    mkdirSync(dirname(options.file), { recursive: true, mode: 0o700 });
    this.db = new DatabaseSync(options.file);
    // WAL: analysts read while the gateway folds. NORMAL: a power cut may lose the last batches, never half of one,
    // and the checkpoint goes back with them, so they are folded again.
    this.db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 10000;');
    this.createSchema();
    const placeholders = [...ROW_COLUMNS, 'accepted_ms'].map(() => '?').join(', ');
    const updates = [...ROW_COLUMNS.slice(1).map((col) => col.name), 'accepted_ms'].map((name) => `${name} = excluded.${name}`).join(', ');
    this.statements = {
      position: this.db.prepare("SELECT value FROM executions_index_meta WHERE key = 'position'"),
      upsertRow: this.db.prepare(
        `INSERT INTO executions_index (${[...ROW_COLUMNS.map((col) => col.name), 'accepted_ms'].join(', ')}) VALUES (${placeholders})
         ON CONFLICT (execution_id) DO UPDATE SET ${updates}`,
      ),
      movePosition: this.db.prepare("UPDATE executions_index_meta SET value = ? WHERE key = 'position'"),
    };
  }

  private createSchema(): void {
    const columns = [...ROW_COLUMNS.map((col) => `${col.name} ${col.sqlite}`), 'accepted_ms INTEGER NOT NULL'].join(',\n  ');
    this.db.exec(`CREATE TABLE IF NOT EXISTS executions_index (\n  ${columns}\n)`);
    for (const index of ROW_INDEXES) {
      const ordered = index.columns.map((name) => (name === 'accepted_ms' || name === 'execution_id' ? `${name} DESC` : name));
      this.db.exec(`CREATE INDEX IF NOT EXISTS ${index.name} ON executions_index (${ordered.join(', ')})${index.where === undefined ? '' : ` WHERE ${index.where}`}`);
    }
    // An index of version 1 keeps its rows and checkpoint; its folded states go (their pages are reused by later rows).
    this.db.exec('DROP TABLE IF EXISTS executions_index_fold');
    this.db.exec('CREATE TABLE IF NOT EXISTS executions_index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
    this.db.exec(`INSERT OR IGNORE INTO executions_index_meta (key, value) VALUES ('position', '0'), ('schema_version', '${SCHEMA_VERSION}')`);
    this.db.exec(`UPDATE executions_index_meta SET value = '${SCHEMA_VERSION}' WHERE key = 'schema_version' AND value <> '${SCHEMA_VERSION}'`);
  }

  async position(): Promise<number> {
    const row = this.statements.position.get() as { value: string } | undefined;
    return Number(row?.value ?? 0);
  }

  /** None: this index keeps no folded state (the journal beside it gives each execution's stream). */
  async foldedStates(): Promise<Map<ExecutionId, FoldedExecution>> {
    return new Map();
  }

  async commit(batch: IndexBatch): Promise<boolean> {
    const { upsertRow, movePosition } = this.statements;
    // IMMEDIATE: the checkpoint is read under the write lock, so two processes cannot both move it from `from`.
    this.db.exec('BEGIN IMMEDIATE');
    try {
      if ((await this.position()) !== batch.from) {
        this.db.exec('ROLLBACK');
        return false;
      }
      for (const row of batch.rows) upsertRow.run(...(rowValues(row, instantMs(row.acceptedAt)).map(sqliteValue)));
      movePosition.run(String(batch.to));
      this.db.exec('COMMIT');
      return true;
    } catch (error) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw error;
    }
  }

  async select(query: ExecutionsQuery, limit: number): Promise<ExecutionRow[]> {
    const { sql, values } = whereOf(query, () => '?');
    const rows = this.db
      .prepare(`SELECT * FROM executions_index ${sql} ORDER BY accepted_ms DESC, execution_id DESC LIMIT ${limit + 1}`)
      .all(...values) as Record<string, unknown>[];
    return rows.map(rowFromRecord);
  }

  async reset(): Promise<void> {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      this.db.exec("DELETE FROM executions_index; UPDATE executions_index_meta SET value = '0' WHERE key = 'position'");
      this.db.exec('COMMIT');
    } catch (error) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw error;
    }
  }

  /** Bulk load of ready rows for the benchmark: one transaction, no folds, checkpoint untouched. */
  insertRows(rows: readonly ExecutionRow[]): void {
    const names = [...ROW_COLUMNS.map((col) => col.name), 'accepted_ms'];
    const insert = this.db.prepare(`INSERT INTO executions_index (${names.join(', ')}) VALUES (${names.map(() => '?').join(', ')})`);
    this.db.exec('BEGIN');
    for (const row of rows) insert.run(...rowValues(row, instantMs(row.acceptedAt)).map(sqliteValue));
    this.db.exec('COMMIT');
  }

  /** The planner's choice for a query (for the benchmark's notes and tests of the indexes). */
  plan(query: ExecutionsQuery, limit: number): string {
    const { sql, values } = whereOf(query, () => '?');
    const rows = this.db
      .prepare(`EXPLAIN QUERY PLAN SELECT * FROM executions_index ${sql} ORDER BY accepted_ms DESC, execution_id DESC LIMIT ${limit + 1}`)
      .all(...values) as { detail: string }[];
    return rows.map((row) => row.detail).join('; ');
  }

  async close(): Promise<void> {
    if (this.db.isOpen) this.db.close();
  }
}

function sqliteValue(value: string | number | boolean | null): SQLInputValue {
  return typeof value === 'boolean' ? (value ? 1 : 0) : value;
}

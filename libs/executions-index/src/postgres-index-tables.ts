/**
 * The executions index on PostgreSQL: tables in the store's own schema, so every gateway of a split layout reads
 * the same index, and the one instance that folds (the store's claim) writes it.
 */
import { Pool, type PoolClient } from 'pg';
import type { ExecutionId } from '@oncegate/domain';
import { surviveServerLoss } from '@oncegate/event-store-postgres';
import { instantMs, type ExecutionRow, type FoldedExecution } from './execution-row';
import type { ExecutionsQuery } from './executions-query';
import { ROW_COLUMNS, ROW_INDEXES, rowFromRecord, whereOf, type IndexBatch, type IndexTables } from './index-tables';

export interface PostgresIndexTablesOptions {
  readonly url: string;
  /** The event store's schema. Default `oncegate`. */
  readonly schema?: string;
  /** Where the index is, for messages (the URL without its password). */
  readonly location?: string;
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

export class PostgresIndexTables implements IndexTables {
  readonly location: string;
  private readonly pool: Pool;
  private readonly schema: string;
  private commitText: string | undefined;

  private constructor(options: PostgresIndexTablesOptions) {
    const schema = options.schema ?? 'oncegate';
    if (!SCHEMA_NAME.test(schema)) throw new Error(`the executions index's schema '${schema.slice(0, 64)}' is not a plain SQL name`);
    this.schema = `"${schema}"`;
    this.location = `${options.location ?? 'PostgreSQL'} (schema ${schema}, table executions_index)`;
    this.pool = surviveServerLoss(new Pool({ connectionString: options.url, max: 4 }));
  }

  /** Connects and creates the tables when they are missing. */
  static async open(options: PostgresIndexTablesOptions): Promise<PostgresIndexTables> {
    const tables = new PostgresIndexTables(options);
    try {
      await tables.createSchema();
    } catch (error) {
      await tables.pool.end();
      throw error;
    }
    return tables;
  }

  private async createSchema(): Promise<void> {
    const s = this.schema;
    const columns = [...ROW_COLUMNS.map((col) => `${col.name} ${col.postgres}`), 'accepted_ms bigint NOT NULL'].join(', ');
    const statements = [
      `CREATE SCHEMA IF NOT EXISTS ${s}`,
      `CREATE TABLE IF NOT EXISTS ${s}.executions_index (${columns})`,
      ...ROW_INDEXES.map((index) => `CREATE INDEX IF NOT EXISTS ${index.name} ON ${s}.executions_index (${index.columns.join(', ')})${index.where === undefined ? '' : ` WHERE ${index.where}`}`),
      `CREATE TABLE IF NOT EXISTS ${s}.executions_index_fold (execution_id text PRIMARY KEY, position bigint NOT NULL, last_change_at text NOT NULL, state jsonb NOT NULL)`,
      `CREATE TABLE IF NOT EXISTS ${s}.executions_index_meta (key text PRIMARY KEY, value text NOT NULL)`,
      `INSERT INTO ${s}.executions_index_meta (key, value) VALUES ('position', '0'), ('schema_version', '1') ON CONFLICT (key) DO NOTHING`,
    ];
    await this.transaction(async (client) => {
      // Two processes creating the tables at once would trip over each other's catalog rows: one at a time.
      await client.query("SELECT pg_advisory_xact_lock(hashtext('oncegate.executions_index'))");
      for (const statement of statements) await client.query(statement);
    });
  }

  /** Runs `work` in one transaction on a client of the pool: committed when it resolves, rolled back when it throws. */
  private async transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async position(): Promise<number> {
    const result = await this.pool.query<{ value: string }>(`SELECT value FROM ${this.schema}.executions_index_meta WHERE key = 'position'`);
    return Number(result.rows[0]?.value ?? 0);
  }

  async foldedStates(ids: readonly ExecutionId[]): Promise<Map<ExecutionId, FoldedExecution>> {
    const found = new Map<ExecutionId, FoldedExecution>();
    if (ids.length === 0) return found;
    const result = await this.pool.query<{ execution_id: ExecutionId; position: string; last_change_at: string; state: FoldedExecution['state'] }>(
      `SELECT execution_id, position, last_change_at, state FROM ${this.schema}.executions_index_fold WHERE execution_id = ANY($1::text[])`,
      [ids],
    );
    for (const row of result.rows) found.set(row.execution_id, { position: Number(row.position), lastChangeAt: row.last_change_at, state: row.state });
    return found;
  }

  /**
   * One statement: the checkpoint moves from `from` to `to` only where it still is `from` (a second instance's
   * commit waits on the row, then finds it moved), and the rows and folds are written only when it moved, so a
   * batch is written whole with its checkpoint or not at all.
   */
  async commit(batch: IndexBatch): Promise<boolean> {
    const folds = [...batch.folded].map(([id, folded]) => ({ execution_id: id, position: folded.position, last_change_at: folded.lastChangeAt, state: folded.state }));
    const result = await this.pool.query<{ moved: string }>({
      name: 'oncegate-index-commit',
      text: (this.commitText ??= this.commitStatement()),
      values: [String(batch.from), String(batch.to), JSON.stringify(batch.rows.map(recordOf)), JSON.stringify(folds)],
    });
    return Number(result.rows[0]?.moved ?? 0) === 1;
  }

  private commitStatement(): string {
    const s = this.schema;
    return `WITH moved AS (
        UPDATE ${s}.executions_index_meta SET value = $2 WHERE key = 'position' AND value = $1 RETURNING 1
      ), written_rows AS (
        ${this.upsertRowsStatement('$3', 'update', 'WHERE EXISTS (SELECT FROM moved)')}
      ), written_folds AS (
        INSERT INTO ${s}.executions_index_fold (execution_id, position, last_change_at, state)
        SELECT execution_id, position, last_change_at, state FROM jsonb_to_recordset($4::jsonb) AS f(execution_id text, position bigint, last_change_at text, state jsonb)
        WHERE EXISTS (SELECT FROM moved)
        ON CONFLICT (execution_id) DO UPDATE SET position = excluded.position, last_change_at = excluded.last_change_at, state = excluded.state
      )
      SELECT count(*) AS moved FROM moved`;
  }

  /** Rows from one JSON array parameter, spread by `jsonb_populate_recordset`. */
  private upsertRowsStatement(parameter: string, conflict: 'update' | 'none', where = ''): string {
    const s = this.schema;
    const names = [...ROW_COLUMNS.map((col) => col.name), 'accepted_ms'];
    const onConflict =
      conflict === 'update'
        ? `ON CONFLICT (execution_id) DO UPDATE SET ${names.slice(1).map((name) => `${name} = excluded.${name}`).join(', ')}`
        : '';
    return `INSERT INTO ${s}.executions_index (${names.join(', ')})
       SELECT ${names.join(', ')} FROM jsonb_populate_recordset(NULL::${s}.executions_index, ${parameter}::jsonb) ${where} ${onConflict}`;
  }

  async select(query: ExecutionsQuery, limit: number): Promise<ExecutionRow[]> {
    const { sql, values } = whereOf(query, (index) => `$${index}`);
    const result = await this.pool.query(`SELECT * FROM ${this.schema}.executions_index ${sql} ORDER BY accepted_ms DESC, execution_id DESC LIMIT ${limit + 1}`, values);
    return result.rows.map(rowFromRecord);
  }

  async reset(): Promise<void> {
    const s = this.schema;
    await this.transaction(async (client) => {
      await client.query(`SELECT value FROM ${s}.executions_index_meta WHERE key = 'position' FOR UPDATE`);
      await client.query(`TRUNCATE ${s}.executions_index, ${s}.executions_index_fold`);
      await client.query(`UPDATE ${s}.executions_index_meta SET value = '0' WHERE key = 'position'`);
    });
  }

  /** Bulk load of ready rows for the benchmark: no folds, checkpoint untouched. */
  async insertRows(rows: readonly ExecutionRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.pool.query(this.upsertRowsStatement('$1', 'none'), [JSON.stringify(rows.map(recordOf))]);
  }

  /** Refreshes the planner's statistics (after a bulk load). */
  async analyze(): Promise<void> {
    await this.pool.query(`ANALYZE ${this.schema}.executions_index`);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** A row as the table's record: its columns, and `accepted_ms` from `acceptedAt`. */
function recordOf(row: ExecutionRow): Record<string, unknown> {
  const record: Record<string, unknown> = { accepted_ms: instantMs(row.acceptedAt) };
  for (const col of ROW_COLUMNS) record[col.name] = row[col.field];
  return record;
}

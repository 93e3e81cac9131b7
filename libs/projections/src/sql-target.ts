/**
 * Where `--into` writes a projection's table: a SQLite file (node:sqlite) or a PostgreSQL database (pg). Each batch
 * is one transaction that brings the table to the projection's rows and writes the projection's checkpoint (state,
 * position, parameters) into `oncegate_projection_checkpoints` of the same database, so the table and the checkpoint
 * never disagree, whatever stops the run.
 */
import { isAbsolute, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Client, escapeIdentifier } from 'pg';
import type { ProjectionCell, ProjectionParams, ProjectionRow } from './projection';
import type { ColumnType, TableColumn, TablePlan } from './sql-table-plan';

/** The table in each target database that holds one checkpoint per projection table. */
export const CHECKPOINT_TABLE = 'oncegate_projection_checkpoints';

/** What `--into` names, told apart by its text. */
export type SqlTargetSpec = { readonly kind: 'sqlite'; readonly file: string } | { readonly kind: 'postgres'; readonly url: string };

/** A target that cannot be used: not one we can tell, or one that cannot be opened. Never holds a password. */
export class ProjectionTargetError extends Error {
  readonly kind = 'projection_target_invalid' as const;
  constructor(
    readonly target: string,
    readonly reason: string,
  ) {
    super(`--into ${target}: ${reason}`);
    this.name = 'ProjectionTargetError';
  }
}

/**
 * The table was written by another run since this one last wrote it (the checkpoint's generation moved on), or
 * belongs to another projection: this run stops without writing.
 */
export class ProjectionTableConflictError extends Error {
  readonly kind = 'projection_table_conflict' as const;
  constructor(
    readonly table: string,
    readonly reason: string,
  ) {
    super(`table ${table}: ${reason}`);
    this.name = 'ProjectionTableConflictError';
  }
}

/** `sqlite:<path>`, a path ending .db, .sqlite or .sqlite3, or `postgres://…` / `postgresql://…`. */
export function parseSqlTarget(text: string, cwd = process.cwd()): SqlTargetSpec {
  if (/^postgres(ql)?:\/\//i.test(text)) {
    try {
      new URL(text);
    } catch {
      throw new ProjectionTargetError(shownTarget(text), 'not a valid PostgreSQL URL (postgres://user@host:5432/database)');
    }
    return { kind: 'postgres', url: text };
  }
  const path = text.startsWith('sqlite:') ? text.slice('sqlite:'.length) : /\.(db|sqlite3?)$/i.test(text) ? text : undefined;
  if (path === undefined || path.length === 0) {
    throw new ProjectionTargetError(text, 'give sqlite:<file>, a file ending .db or .sqlite, or postgres://user@host:5432/database');
  }
  return { kind: 'sqlite', file: isAbsolute(path) ? path : resolve(cwd, path) };
}

/** A target as it may be shown: a URL without its password or query (which may hold one). */
export function shownTarget(text: string): string {
  if (!/^postgres(ql)?:\/\//i.test(text)) return text;
  try {
    const url = new URL(text);
    url.password = '';
    url.search = '';
    return url.toString();
  } catch {
    return 'a PostgreSQL URL that cannot be parsed';
  }
}

/** A checkpoint row: what the table was last brought to. */
export interface SqlCheckpoint {
  readonly projection: string;
  readonly params: ProjectionParams;
  readonly key: readonly string[] | undefined;
  readonly columns: readonly TableColumn[];
  /** Global position of the last event folded into `state`. */
  readonly position: number;
  readonly events: number;
  /** The state, as the JSON text it was stored as. */
  readonly state: string;
  /** Grows by one with each batch written: a run writes only while it is the one it last wrote. */
  readonly generation: number;
  readonly writtenAt: string;
}

/** One batch: what to bring the table to and the checkpoint to write with it. */
export interface TableCommit {
  readonly table: string;
  /** The generation this run last wrote (or read at its start; 0 when there was no checkpoint). */
  readonly expectedGeneration: number;
  /** Drop the table first (a rebuild's first batch). */
  readonly dropFirst: boolean;
  readonly plan: TablePlan;
  readonly checkpoint: Omit<SqlCheckpoint, 'generation' | 'columns' | 'key'>;
}

interface Session {
  query(sql: string, params?: readonly unknown[]): Promise<Record<string, unknown>[]>;
}

interface Dialect {
  readonly name: 'sqlite' | 'postgres';
  /** The n-th (1-based) parameter of a statement, for a value of this type. */
  placeholder(n: number, type: ColumnType | 'integer'): string;
  columnType(type: ColumnType): string;
  readonly integerType: string;
  bind(cell: ProjectionCell | undefined): unknown;
  /** Parameters in one statement, at most. */
  readonly maxParams: number;
  /** Locks the checkpoint row (PostgreSQL); SQLite's `BEGIN IMMEDIATE` has locked the database already. */
  readonly forUpdate: string;
  tableExists(session: Session, table: string): Promise<boolean>;
}

const sqliteDialect: Dialect = {
  name: 'sqlite',
  placeholder: () => '?',
  // NUMERIC keeps whole numbers as integers and the rest as reals; booleans are 0 and 1, as SQLite has no other.
  columnType: (type) => ({ text: 'TEXT', numeric: 'NUMERIC', boolean: 'BOOLEAN' })[type],
  integerType: 'INTEGER',
  bind: (cell) => (cell === undefined ? null : typeof cell === 'boolean' ? (cell ? 1 : 0) : cell),
  maxParams: 30_000,
  forUpdate: '',
  tableExists: async (session, table) => (await session.query("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", [table])).length > 0,
};

const postgresDialect: Dialect = {
  name: 'postgres',
  // Typed, so that a parameter in a VALUES list compares with its column without a guess.
  placeholder: (n, type) => `$${n}::${type === 'integer' ? 'bigint' : postgresDialect.columnType(type)}`,
  columnType: (type) => ({ text: 'text', numeric: 'numeric', boolean: 'boolean' })[type],
  integerType: 'bigint',
  bind: (cell) => (cell === undefined ? null : cell),
  maxParams: 60_000,
  forUpdate: ' FOR UPDATE',
  tableExists: async (session, table) =>
    (await session.query('SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1::text', [table])).length > 0,
};

interface Connection {
  readonly dialect: Dialect;
  transaction<T>(work: (session: Session) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** An open target: reads and writes projection tables and their checkpoints. */
export class SqlTarget {
  private constructor(
    /** Where, as it may be shown (never a password). */
    readonly description: string,
    private readonly connection: Connection,
  ) {}

  static async open(spec: SqlTargetSpec): Promise<SqlTarget> {
    const connection = spec.kind === 'sqlite' ? openSqlite(spec.file) : await openPostgres(spec.url);
    const target = new SqlTarget(spec.kind === 'sqlite' ? `sqlite:${spec.file}` : shownTarget(spec.url), connection);
    try {
      await target.ensureCheckpointTable();
    } catch (error) {
      await connection.close();
      throw error;
    }
    return target;
  }

  get dialect(): 'sqlite' | 'postgres' {
    return this.connection.dialect.name;
  }

  private async ensureCheckpointTable(): Promise<void> {
    const integer = this.connection.dialect.integerType;
    // Two runs into one new PostgreSQL database may create it at once: the one that loses finds it made.
    const madeMeanwhile = (error: unknown) => ['23505', '42P07'].includes(String((error as { code?: unknown }).code));
    await this.connection.transaction((session) =>
      session.query(
        `CREATE TABLE IF NOT EXISTS ${CHECKPOINT_TABLE} (
          table_name TEXT PRIMARY KEY,
          projection TEXT NOT NULL,
          params TEXT NOT NULL,
          key_columns TEXT,
          columns TEXT NOT NULL,
          position ${integer} NOT NULL,
          events ${integer} NOT NULL,
          state TEXT NOT NULL,
          generation ${integer} NOT NULL,
          written_at TEXT NOT NULL
        )`,
      ),
    ).catch((error: unknown) => {
      if (!madeMeanwhile(error)) throw error;
    });
  }

  /** The table's checkpoint and whether the table exists. */
  async read(table: string): Promise<{ checkpoint: SqlCheckpoint | undefined; tableExists: boolean }> {
    const { dialect } = this.connection;
    return this.connection.transaction(async (session) => {
      const [row] = await session.query(`SELECT * FROM ${CHECKPOINT_TABLE} WHERE table_name = ${dialect.placeholder(1, 'text')}`, [table]);
      return { checkpoint: row === undefined ? undefined : checkpointOf(row), tableExists: await dialect.tableExists(session, table) };
    });
  }

  /** Writes one batch and its checkpoint in one transaction; returns the checkpoint's new generation. */
  async commit(commit: TableCommit): Promise<number> {
    const { dialect } = this.connection;
    const { table, plan, checkpoint } = commit;
    const name = quote(table);
    const p = (n: number, type: ColumnType | 'integer') => dialect.placeholder(n, type);
    return this.connection.transaction(async (session) => {
      const [current] = await session.query(`SELECT projection, generation FROM ${CHECKPOINT_TABLE} WHERE table_name = ${p(1, 'text')}${dialect.forUpdate}`, [table]);
      const generation = current === undefined ? 0 : Number(current['generation']);
      if (generation !== commit.expectedGeneration) {
        throw new ProjectionTableConflictError(
          table,
          `another run (of ${String(current?.['projection'] ?? 'a projection')}) wrote it since this run last did (batch ${generation}, this run expected ${commit.expectedGeneration}); this run stops without writing`,
        );
      }
      if (commit.dropFirst) await session.query(`DROP TABLE IF EXISTS ${name}`);
      const created = plan.columns.length > plan.addColumns.length && !commit.dropFirst;
      if (plan.addColumns.length > 0) {
        if (!created) {
          const key = plan.next.key;
          const definitions = plan.columns.map((column) => `${quote(column.name)} ${dialect.columnType(column.type)}${key?.includes(column.name) === true ? ' NOT NULL' : ''}`);
          if (key !== undefined) definitions.push(`PRIMARY KEY (${key.map(quote).join(', ')})`);
          await session.query(`CREATE TABLE ${name} (${definitions.join(', ')})`);
        } else {
          for (const column of plan.addColumns) await session.query(`ALTER TABLE ${name} ADD COLUMN ${quote(column.name)} ${dialect.columnType(column.type)}`);
        }
      }
      if (plan.columns.length > 0) {
        if (plan.replace !== undefined) {
          await session.query(`DELETE FROM ${name}`);
          await this.insert(session, table, plan.columns, plan.replace, undefined);
        }
        await this.remove(session, table, plan, plan.deletes);
        await this.insert(session, table, plan.columns, plan.upserts, plan.next.key);
      }
      const next = generation + 1;
      const values = [
        table,
        checkpoint.projection,
        JSON.stringify(checkpoint.params),
        plan.next.key === undefined ? null : JSON.stringify(plan.next.key),
        JSON.stringify(plan.columns),
        checkpoint.position,
        checkpoint.events,
        checkpoint.state,
        next,
        checkpoint.writtenAt,
      ];
      const types: Array<ColumnType | 'integer'> = ['text', 'text', 'text', 'text', 'text', 'integer', 'integer', 'text', 'integer', 'text'];
      const fields = ['table_name', 'projection', 'params', 'key_columns', 'columns', 'position', 'events', 'state', 'generation', 'written_at'];
      await session.query(
        `INSERT INTO ${CHECKPOINT_TABLE} (${fields.join(', ')}) VALUES (${types.map((type, at) => p(at + 1, type)).join(', ')})
         ON CONFLICT (table_name) DO UPDATE SET ${fields.slice(1).map((field) => `${field} = excluded.${field}`).join(', ')}`,
        values,
      );
      return next;
    });
  }

  /** Inserts rows in statements of as many rows as the parameter limit allows; with a key, an existing row is updated. */
  private async insert(session: Session, table: string, columns: readonly TableColumn[], rows: readonly ProjectionRow[], key: readonly string[] | undefined): Promise<void> {
    const { dialect } = this.connection;
    const perStatement = Math.max(1, Math.floor(dialect.maxParams / columns.length));
    const names = columns.map((column) => quote(column.name)).join(', ');
    const others = columns.filter((column) => key?.includes(column.name) !== true);
    const onConflict =
      key === undefined
        ? ''
        : ` ON CONFLICT (${key.map(quote).join(', ')}) DO ${others.length === 0 ? 'NOTHING' : `UPDATE SET ${others.map((column) => `${quote(column.name)} = excluded.${quote(column.name)}`).join(', ')}`}`;
    for (let start = 0; start < rows.length; start += perStatement) {
      const chunk = rows.slice(start, start + perStatement);
      const params: unknown[] = [];
      const tuples = chunk.map((row) => `(${columns.map((column) => (params.push(dialect.bind(row[column.name])), dialect.placeholder(params.length, column.type))).join(', ')})`);
      await session.query(`INSERT INTO ${quote(table)} (${names}) VALUES ${tuples.join(', ')}${onConflict}`, params);
    }
  }

  private async remove(session: Session, table: string, plan: TablePlan, keys: readonly (readonly ProjectionCell[])[]): Promise<void> {
    const key = plan.next.key;
    if (key === undefined || keys.length === 0) return;
    const { dialect } = this.connection;
    const types = key.map((name) => plan.columns.find((column) => column.name === name)!.type);
    const perStatement = Math.max(1, Math.floor(dialect.maxParams / key.length));
    for (let start = 0; start < keys.length; start += perStatement) {
      const params: unknown[] = [];
      const tuples = keys
        .slice(start, start + perStatement)
        .map((values) => `(${values.map((value, at) => (params.push(dialect.bind(value)), dialect.placeholder(params.length, types[at]!))).join(', ')})`);
      await session.query(`DELETE FROM ${quote(table)} WHERE (${key.map(quote).join(', ')}) IN (VALUES ${tuples.join(', ')})`, params);
    }
  }

  async close(): Promise<void> {
    await this.connection.close();
  }
}

/** A SQL identifier, quoted (both databases take double quotes, doubled inside). */
function quote(name: string): string {
  return escapeIdentifier(name);
}

function checkpointOf(row: Record<string, unknown>): SqlCheckpoint {
  const keyColumns = row['key_columns'];
  return {
    projection: String(row['projection']),
    params: JSON.parse(String(row['params'])) as ProjectionParams,
    key: keyColumns === null || keyColumns === undefined ? undefined : (JSON.parse(String(keyColumns)) as string[]),
    columns: JSON.parse(String(row['columns'])) as TableColumn[],
    position: Number(row['position']),
    events: Number(row['events']),
    state: String(row['state']),
    generation: Number(row['generation']),
    writtenAt: String(row['written_at']),
  };
}

function openSqlite(file: string): Connection {
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(file, { timeout: 5_000 });
    // Analysts read while the run writes: WAL lets them, and lets the run write while they read.
    db.exec('PRAGMA journal_mode = WAL');
  } catch (error) {
    throw new ProjectionTargetError(`sqlite:${file}`, `cannot be opened: ${(error as Error).message}`);
  }
  const session: Session = {
    query: async (sql, params = []) => db.prepare(sql).all(...(params as never[])) as Record<string, unknown>[],
  };
  return {
    dialect: sqliteDialect,
    async transaction(work) {
      db.exec('BEGIN IMMEDIATE');
      try {
        const result = await work(session);
        db.exec('COMMIT');
        return result;
      } catch (error) {
        if (db.isTransaction) db.exec('ROLLBACK');
        throw error;
      }
    },
    close: async () => db.close(),
  };
}

async function openPostgres(url: string): Promise<Connection> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 10_000, application_name: 'oncegate-projection' });
  // A connection the server ends is reported by the next query; without a listener the event would end the process.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => undefined);
    // pg's messages name the host and the user, never the password.
    throw new ProjectionTargetError(shownTarget(url), `cannot connect: ${(error as Error).message}`);
  }
  const session: Session = { query: async (sql, params = []) => (await client.query(sql, params as unknown[])).rows as Record<string, unknown>[] };
  return {
    dialect: postgresDialect,
    async transaction(work) {
      await client.query('BEGIN');
      try {
        const result = await work(session);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    },
    close: () => client.end(),
  };
}

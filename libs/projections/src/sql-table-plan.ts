/**
 * What a batch changes in a projection's SQL table (`--into`), worked out without I/O: the columns and their types
 * (inferred from the cells), and, for a projection that declares `key`, the rows to upsert and to delete against the
 * rows last written; without `key`, the whole set of rows when any of it changed.
 */
import type { ProjectionCell, ProjectionRow } from './projection';

/** What a column holds: the three kinds of cell a row has besides null. */
export type ColumnType = 'text' | 'numeric' | 'boolean';

export interface TableColumn {
  readonly name: string;
  readonly type: ColumnType;
}

/** The table as last written (committed with its checkpoint), to plan the next batch against. */
export interface WrittenTable {
  /** The columns the table has, in the order they were added; empty while the table does not exist. */
  readonly columns: readonly TableColumn[];
  readonly key: readonly string[] | undefined;
  /**
   * The rows, canonical: with a key, by the key's JSON; without one, a single entry (`''`) holding all of them.
   * Comparing canonical text is what tells a changed row from an unchanged one.
   */
  readonly rows: ReadonlyMap<string, string>;
}

export interface TablePlan {
  /** Columns the batch adds (in first-appearance order); the table is created with them when it has none yet. */
  readonly addColumns: readonly TableColumn[];
  /** Every column after the batch. */
  readonly columns: readonly TableColumn[];
  /** With a key: rows new or changed. */
  readonly upserts: readonly ProjectionRow[];
  /** With a key: the key values of rows gone. */
  readonly deletes: readonly (readonly ProjectionCell[])[];
  /** Without a key: all rows, when they differ from those written; `undefined` when nothing changed. */
  readonly replace: readonly ProjectionRow[] | undefined;
  /** The table as it stands once the plan is committed. */
  readonly next: WrittenTable;
}

/** A column whose cells change type (or a cell no column can hold): names the table, the column, both types and where. */
export class ProjectionColumnTypeError extends Error {
  readonly kind = 'projection_column_type' as const;
  constructor(
    readonly table: string,
    readonly column: string,
    readonly reason: string,
  ) {
    super(`table ${table}, column ${JSON.stringify(column)}: ${reason}`);
    this.name = 'ProjectionColumnTypeError';
  }
}

/** Rows that a declared key cannot identify: a key cell without a value, or two rows with one key. */
export class ProjectionKeyError extends Error {
  readonly kind = 'projection_key_invalid' as const;
  constructor(
    readonly table: string,
    reason: string,
  ) {
    super(`table ${table}: ${reason}`);
    this.name = 'ProjectionKeyError';
  }
}

export const EMPTY_TABLE: WrittenTable = { columns: [], key: undefined, rows: new Map() };

/** The table that rows written with `columns` and `key` make: what a resumed run plans its first batch against. */
export function writtenTable(rows: readonly ProjectionRow[], columns: readonly TableColumn[], key: readonly string[] | undefined, table: string): WrittenTable {
  return { columns, key, rows: canonicalRows(rows, key, table) };
}

/**
 * Plans a batch: `rows` (the projection's rows now) against `written`. A cell whose type differs from its column's
 * (or from another cell's of the same column in this batch) is a {@link ProjectionColumnTypeError}, never coerced.
 * A column holding only nulls so far gets no type and is not created until a cell gives it one.
 */
export function planTableWrite(table: string, rows: readonly ProjectionRow[], written: WrittenTable, key: readonly string[] | undefined): TablePlan {
  const known = new Map(written.columns.map((column) => [column.name, column.type]));
  const added = new Map<string, ColumnType>();
  for (const [index, row] of rows.entries()) {
    for (const [name, cell] of Object.entries(row)) {
      const type = cellType(table, name, cell, index);
      if (type === undefined) continue;
      const had = known.get(name) ?? added.get(name);
      if (had === undefined) added.set(name, type);
      else if (had !== type) {
        throw new ProjectionColumnTypeError(
          table,
          name,
          `it holds ${had}, but row ${index + 1} of ${rows.length} has the ${type} ${JSON.stringify(cell)}; a column keeps one type: make rows() give it one (e.g. String(value)), or rebuild into a new table`,
        );
      }
    }
  }
  for (const column of key ?? []) {
    if (!known.has(column) && !added.has(column) && rows.length > 0) {
      throw new ProjectionKeyError(table, `key column ${JSON.stringify(column)} has no value in any row`);
    }
  }
  const addColumns = [...added].map(([name, type]) => ({ name, type }));
  const columns = [...written.columns, ...addColumns];
  const nextRows = canonicalRows(rows, key, table);
  const next: WrittenTable = { columns, key, rows: nextRows };
  if (key === undefined) {
    const changed = nextRows.get('') !== written.rows.get('');
    return { addColumns, columns, upserts: [], deletes: [], replace: changed ? rows : undefined, next };
  }
  const upserts: ProjectionRow[] = [];
  for (const row of rows) {
    const id = keyOf(row, key, table);
    if (written.rows.get(id) !== nextRows.get(id)) upserts.push(row);
  }
  const deletes: ProjectionCell[][] = [];
  for (const id of written.rows.keys()) if (!nextRows.has(id)) deletes.push(JSON.parse(id) as ProjectionCell[]);
  return { addColumns, columns, upserts, deletes, replace: undefined, next };
}

function cellType(table: string, column: string, cell: unknown, index: number): ColumnType | undefined {
  if (cell === null || cell === undefined) return undefined;
  if (typeof cell === 'string') return 'text';
  if (typeof cell === 'boolean') return 'boolean';
  if (typeof cell === 'number') {
    if (Number.isFinite(cell)) return 'numeric';
    throw new ProjectionColumnTypeError(table, column, `row ${index + 1} holds ${cell}, which no SQL numeric column holds`);
  }
  throw new ProjectionColumnTypeError(table, column, `row ${index + 1} holds a ${Array.isArray(cell) ? 'list' : typeof cell}: a cell is text, a number, a boolean or null`);
}

/** A row as text that two equal rows share: its non-null cells by column name (a missing cell and a null are alike). */
function canonical(row: ProjectionRow): string {
  return JSON.stringify(
    Object.keys(row)
      .filter((name) => row[name] !== null && row[name] !== undefined)
      .sort()
      .map((name) => [name, row[name]]),
  );
}

function keyOf(row: ProjectionRow, key: readonly string[], table: string): string {
  return JSON.stringify(
    key.map((column) => {
      const cell = row[column];
      if (cell === null || cell === undefined) throw new ProjectionKeyError(table, `a row has no value in key column ${JSON.stringify(column)}: ${JSON.stringify(row)}`);
      return cell;
    }),
  );
}

function canonicalRows(rows: readonly ProjectionRow[], key: readonly string[] | undefined, table: string): Map<string, string> {
  if (key === undefined) return new Map([['', JSON.stringify(rows.map(canonical))]]);
  const byKey = new Map<string, string>();
  for (const row of rows) {
    const id = keyOf(row, key, table);
    if (byKey.has(id)) throw new ProjectionKeyError(table, `two rows have the key ${key.map((column, at) => `${column}=${JSON.stringify((JSON.parse(id) as unknown[])[at])}`).join(', ')}: a key names one row`);
    byKey.set(id, canonical(row));
  }
  return byKey;
}

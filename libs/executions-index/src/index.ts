// Public surface of @oncegate/executions-index: explicit named exports only.
export {
  evolveIndexed,
  executionEventOf,
  initialIndexedState,
  rowOf,
  targetHostOf,
  type ExecutionRow,
  type FoldedExecution,
  type IndexedState,
} from './execution-row';
export { executionIdsOf, foldBatch, type FoldedBatch } from './fold-batch';
export {
  DEFAULT_PAGE_LIMIT,
  InvalidExecutionsQueryError,
  MAX_PAGE_LIMIT,
  QUERY_PARAMETERS,
  decodeCursor,
  encodeCursor,
  parseExecutionsQuery,
  parseInstant,
  type ExecutionsPage,
  type ExecutionsQuery,
  type IndexLag,
  type PageCursor,
  type QueryParameters,
} from './executions-query';
export { ROW_COLUMNS, type IndexBatch, type IndexTables } from './index-tables';
export { SQLITE_INDEX_FILE, SqliteIndexTables, type SqliteIndexTablesOptions } from './sqlite-index-tables';
export { PostgresIndexTables, type PostgresIndexTablesOptions } from './postgres-index-tables';
export { openIndexTables, type IndexLocation } from './open-index-tables';
export { ExecutionsIndex, INDEX_CLAIM, type CatchUp, type ExecutionsIndexOptions } from './executions-index';

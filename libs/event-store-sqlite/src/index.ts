export { limitWriterPages, SqliteEventStore, openSqliteEventStore } from './sqlite-event-store';
export type { SqliteEventStoreOptions, SqliteRowWriter } from './sqlite-event-store';
export type { SqlRow } from './writer-protocol';
export { openSqliteEventStore as openEventStore } from './sqlite-event-store';
export { isUnwritable as isUnwritableSqliteError, openFailure as sqliteOpenFailure, sqliteCode } from './sqlite-errors';

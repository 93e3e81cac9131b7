export { SqliteEventStore, openSqliteEventStore } from './sqlite-event-store';
export type { SqliteEventStoreOptions } from './sqlite-event-store';
export { openSqliteEventStore as openEventStore } from './sqlite-event-store';
export { isUnwritable as isUnwritableSqliteError, openFailure as sqliteOpenFailure, sqliteCode } from './sqlite-errors';

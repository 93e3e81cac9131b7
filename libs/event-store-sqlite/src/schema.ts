export const SCHEMA_VERSION = 2;

/** Idempotent DDL; positions are rowids, so they grow in commit order and are never reused (no deletes). */
export const SCHEMA_STATEMENTS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS events (
     position    INTEGER PRIMARY KEY,
     stream_id   TEXT    NOT NULL,
     revision    INTEGER NOT NULL,
     event_id    TEXT    NOT NULL,
     type        TEXT    NOT NULL,
     data        TEXT    NOT NULL,
     metadata    TEXT    NOT NULL,
     recorded_at TEXT    NOT NULL,
     prev_hash   TEXT    NOT NULL,
     hash        TEXT    NOT NULL
   )`,
  'CREATE UNIQUE INDEX IF NOT EXISTS events_stream_revision ON events (stream_id, revision)',
  'CREATE UNIQUE INDEX IF NOT EXISTS events_event_id ON events (event_id)',
  `CREATE TABLE IF NOT EXISTS checkpoints (
     consumer   TEXT    PRIMARY KEY,
     position   INTEGER NOT NULL,
     updated_at TEXT    NOT NULL
   )`,
  'CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)',
  // Liveness leases of the processes on this store (not events: outside the journal and its hash chain).
  `CREATE TABLE IF NOT EXISTS leases (
     holder     TEXT PRIMARY KEY,
     expires_at TEXT NOT NULL,
     renewed_at TEXT NOT NULL
   )`,
  // Exclusive claims (a consumer group's partitions): one owner at a time until expiry. Not events either.
  `CREATE TABLE IF NOT EXISTS claims (
     name       TEXT PRIMARY KEY,
     owner      TEXT NOT NULL,
     expires_at TEXT NOT NULL
   )`,
];

import { escapeIdentifier } from 'pg';

export const SCHEMA_VERSION = 1;

/**
 * Idempotent DDL for one store, all in the store's own schema (`schema` is already quoted). Positions are assigned
 * by the writers under the store's advisory lock (one more than the head), not by a sequence, so they are dense and
 * in commit order; data and metadata are `json`, which keeps the text exactly as written (the hash covers it parsed).
 */
export function schemaStatements(schema: string): readonly string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${schema}.events (
       position    bigint  PRIMARY KEY,
       stream_id   text    NOT NULL,
       revision    integer NOT NULL,
       event_id    text    NOT NULL,
       type        text    NOT NULL,
       data        json    NOT NULL,
       metadata    json    NOT NULL,
       recorded_at text    NOT NULL,
       prev_hash   text    NOT NULL,
       hash        text    NOT NULL,
       CONSTRAINT events_stream_revision UNIQUE (stream_id, revision),
       CONSTRAINT events_event_id UNIQUE (event_id)
     )`,
    `CREATE TABLE IF NOT EXISTS ${schema}.checkpoints (
       consumer   text   PRIMARY KEY,
       position   bigint NOT NULL,
       updated_at text   NOT NULL
     )`,
    `CREATE TABLE IF NOT EXISTS ${schema}.store_meta (key text PRIMARY KEY, value text NOT NULL)`,
    // Liveness leases of the processes on this store (not events: outside the journal and its hash chain).
    `CREATE TABLE IF NOT EXISTS ${schema}.leases (
       holder     text PRIMARY KEY,
       expires_at text NOT NULL,
       renewed_at text NOT NULL
     )`,
    // Raised by a writer under the lock when a stream it read moved meanwhile: a function, so that the check is one
    // plain statement (not compiled again for every append) and the error is never raised while planning it.
    `CREATE OR REPLACE FUNCTION ${schema}.stream_moved(message text) RETURNS integer LANGUAGE plpgsql VOLATILE AS $body$
     BEGIN RAISE EXCEPTION '%', message; END $body$`,
    // Exclusive claims (a consumer group's partitions): one owner at a time until expiry. Not events either.
    `CREATE TABLE IF NOT EXISTS ${schema}.claims (
       name       text PRIMARY KEY,
       owner      text NOT NULL,
       expires_at text NOT NULL
     )`,
  ];
}

/** The schema name as an SQL identifier. */
export function quotedSchema(schema: string): string {
  return escapeIdentifier(schema);
}

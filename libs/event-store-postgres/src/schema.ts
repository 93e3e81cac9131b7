import { escapeIdentifier, escapeLiteral } from 'pg';

/** Raised under the lock when a stream written by a group moved since the group read it: the group is decided again. */
export const STREAM_MOVED = 'oncegate: a stream moved since it was read';

export const SCHEMA_VERSION = 1;

/**
 * The session setting in which `append_events_joined` leaves the first event id and the head of the group it wrote,
 * for `notify_appended` (a setting made in a transaction that fails is undone with it).
 */
export const APPENDED_SETTING = 'oncegate.appended';

/**
 * Makes the transaction it is in write WAL of its own (a transactional logical-decoding message, which no table
 * keeps): PostgreSQL commits a transaction that wrote none, as one that only notifies, without waiting for any
 * flush, whatever `synchronous_commit` says. With it, the commit waits until the WAL up to its record is on disk.
 */
export const FLUSH_WAIT = "pg_logical_emit_message(true, 'oncegate', '')";

/** Between the JSON texts of a group's data (and of its metadata) for `append_events_joined`: U+001E, `chr(30)`. */
export const JSON_TEXT_SEPARATOR = '\u001e';

/**
 * Idempotent DDL for one store, all in the store's own schema (`schema` is already quoted). Positions are assigned
 * by the writers under the store's advisory lock (one more than the head), not by a sequence, so they are dense and
 * in commit order; data and metadata are `json`, which keeps the text exactly as written (the hash covers it parsed).
 */
export function schemaStatements(schema: string): readonly string[] {
  // How a group's write begins, in both its functions: without waiting for its WAL flush, under the store's lock,
  // refusing a group whose streams moved since they were read (STREAM_MOVED), at the head it then finds (`base`).
  const lockedHead = `     DECLARE base bigint;
     BEGIN
       PERFORM set_config('synchronous_commit', 'off', true);
       PERFORM pg_advisory_xact_lock(lock_class, lock_key);
       IF EXISTS (SELECT 1 FROM unnest(written, read_revisions) AS w(stream, revision)
                   WHERE (SELECT max(e.revision) FROM ${schema}.events e WHERE e.stream_id = w.stream) IS DISTINCT FROM w.revision) THEN
         RAISE EXCEPTION '%', ${escapeLiteral(STREAM_MOVED)};
       END IF;
       SELECT coalesce(max(position), 0) INTO base FROM ${schema}.events;
`;
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
    // Raised under the lock by the writers of the previous version (their check is a statement of its own); kept
    // while such a process may still write to the store beside this one.
    `CREATE OR REPLACE FUNCTION ${schema}.stream_moved(message text) RETURNS integer LANGUAGE plpgsql VOLATILE AS $body$
     BEGIN RAISE EXCEPTION '%', message; END $body$`,
    // A group's write, called as one prepared statement, so the server neither parses nor plans the group's rows as
    // SQL text: under the store's lock, it checks that no stream written moved since the writer read its tip (then
    // raises STREAM_MOVED and writes nothing), inserts the rows at the head's next positions in their order, and
    // returns the head it found. Each statement in it takes a new snapshot (a VOLATILE function), so the head is
    // read after the lock is held. The commit does not wait for its WAL flush (transaction-local, so outlasting the
    // function): the writer waits for a later flush instead (see docs/event-store.md).
    // The rows' data and metadata come as two texts, the writer's JSON texts joined by the character U+001E, which no
    // JSON text holds (JSON has it escaped inside a string and allows it nowhere else): nothing escapes the texts on
    // their way, as array literals need, and the server reads each once, when it checks that it is JSON.
    // Were a text ever to hold one, the rows would not line up and the insert would fail on the NULLs that
    // `ROWS FROM` pads the shorter columns with. (JSON arrays unpacked by `json_array_elements` keep the texts exact
    // too, but are read twice; `->` and `json_to_recordset` decode every string inside and refuse a `\u0000`.)
    `CREATE OR REPLACE FUNCTION ${schema}.append_events_joined(
       lock_class integer, lock_key integer, written text[], read_revisions integer[],
       stream_ids text[], revisions integer[], event_ids text[], types text[], payloads text, metadatas text,
       recorded text, prev_hashes text[], hashes text[]) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $body$
${lockedHead}       INSERT INTO ${schema}.events (position, stream_id, revision, event_id, type, data, metadata, recorded_at, prev_hash, hash)
         SELECT base + u.n, u.s, u.r, u.i, u.t, u.d::json, u.m::json, recorded, u.pr, u.h
           FROM ROWS FROM (unnest(stream_ids), unnest(revisions), unnest(event_ids), unnest(types),
                           string_to_table(payloads, chr(30)), string_to_table(metadatas, chr(30)),
                           unnest(prev_hashes), unnest(hashes)) WITH ORDINALITY AS u(s, r, i, t, d, m, pr, h, n);
       PERFORM set_config(${escapeLiteral(APPENDED_SETTING)}, event_ids[1] || ' ' || base, false);
       RETURN base;
     END $body$`,
    // The notification of the write just made on this connection, sent right behind it without waiting for its answer
    // (the writer's connection pipelines the two): a transaction of its own that waits for a WAL flush covering the
    // write (see FLUSH_WAIT). It notifies only when the session's last write was the group
    // whose first event is `first_id` (`append_events_joined` leaves the group's first id and head in a setting of
    // the session, which a write that failed does not change), and answers the head the write found, or NULL when it
    // did not notify (the write failed, or a writer of the previous version made the function without the setting:
    // the writer then notifies as before). The payload is `<head + last_offset><middle>`, then, when `tail` is
    // given, `<head><tail>` (see `commitNotification`).
    `CREATE OR REPLACE FUNCTION ${schema}.notify_appended(
       channel text, first_id text, last_offset bigint, middle text, tail text) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $body$
     DECLARE
       appended text := coalesce(current_setting(${escapeLiteral(APPENDED_SETTING)}, true), '');
       base bigint;
     BEGIN
       IF split_part(appended, ' ', 1) IS DISTINCT FROM first_id THEN RETURN NULL; END IF;
       PERFORM set_config(${escapeLiteral(APPENDED_SETTING)}, '', false);
       base := split_part(appended, ' ', 2)::bigint;
       PERFORM pg_notify(channel, (base + last_offset)::text || middle || CASE WHEN tail IS NULL THEN '' ELSE base::text || tail END);
       PERFORM ${FLUSH_WAIT};
       RETURN base;
     END $body$`,
    // The same write with data and metadata as json[], as writers of the previous version call it; kept while such
    // a process may still write to the store beside this one.
    `CREATE OR REPLACE FUNCTION ${schema}.append_events(
       lock_class integer, lock_key integer, written text[], read_revisions integer[],
       stream_ids text[], revisions integer[], event_ids text[], types text[], payloads json[], metadatas json[],
       recorded text, prev_hashes text[], hashes text[]) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $body$
${lockedHead}       INSERT INTO ${schema}.events (position, stream_id, revision, event_id, type, data, metadata, recorded_at, prev_hash, hash)
         SELECT base + u.n, u.s, u.r, u.i, u.t, u.d, u.m, recorded, u.pr, u.h
           FROM unnest(stream_ids, revisions, event_ids, types, payloads, metadatas, prev_hashes, hashes) WITH ORDINALITY AS u(s, r, i, t, d, m, pr, h, n);
       RETURN base;
     END $body$`,
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
